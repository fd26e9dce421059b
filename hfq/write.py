"""The one write operator: sort -> encode -> put to the replica nodes -> stage -> commit, or
clean up.

Every writer -- append, CSV load, compaction, rebalance, minute bars -- goes through
:class:`Write`: it opens the one :class:`~hfq.catalog.Transaction` of the change, stages
fragments, and either commits them as one new version or removes every file the change wrote,
on every node, before the error propagates (files are named after the transaction, so even a
fragment a worker thread finished after the failure is found).

:class:`FileWriter` is the picklable part that runs where rows are (the driver, or a node
running a CSV load or a bars task): it sorts one partition's rows, encodes them once and puts
the same bytes on every replica node.  :class:`PartitionWriter` routes rows to partitions,
buffers them within a memory budget and spills sorted fragments through a FileWriter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from hfq import faults
from hfq.catalog import history
from hfq.catalog.catalog import Catalog, FileNamer, Transaction
from hfq.catalog.evolution import Layouts
from hfq.catalog.files import begin_transaction, end_transaction
from hfq.catalog.records import Fragment, Manifest, fragment_from
from hfq.change.dedup import NO_DEDUP, dedup_key, settle
from hfq.config import Settings, check_compression
from hfq.errors import HfqError, ManifestError, WriteError
from hfq.partition import key_path
from hfq.runtime.nodes import Nodes
from hfq.runtime.task import NodeContext
from hfq.session import Session
from hfq.storage.encoding import SMALL_ROWS
from hfq.storage.fragment import Encoded, encode_fragment, prepare_fragments, put_file
from hfq.storage.sort import sort_keys, sort_rows

__all__ = ["Added", "FileWriter", "PartitionWriter", "Write", "compact_dictionaries",
           "merge_small_fragments", "stats_columns", "table_settings"]

log = logging.getLogger(__name__)

Added = dict[str, tuple[tuple[Any, ...], list[Fragment]]]
"""Fragments written, by partition path: (partition key, fragments)."""

_Job = tuple[str, tuple[Any, ...], list[tuple[pa.Table, np.ndarray | None]]]
"""A partition to write: its path, key and rows (blocks, with row indices or all rows)."""

THIN_ROWS = SMALL_ROWS
"""Partitions of up to this many rows in a spill are written together
(:meth:`FileWriter.write_thin`): a file each, the work per column done once for all."""


def stats_columns(manifest: Manifest) -> list[str]:
    """The columns whose per-batch min/max the catalog keeps: sort and partition columns."""
    return list(dict.fromkeys([*manifest.sort_by,
                               *(lvl.column for lvl in manifest.partition_by.levels())]))


@dataclass(frozen=True)
class FileWriter:
    """Writes one partition's rows as a fragment file on its replica nodes (picklable)."""

    table: str
    namer: FileNamer
    sort_by: tuple[str, ...]
    stats_columns: tuple[str, ...]
    settings: Settings
    replicas: int | None
    sync: bool = False
    hints: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    """Column encodings chosen so far by this write (shared by its threads): thin partitions
    reuse them instead of measuring each candidate again."""
    thin_hints: dict[int, dict[str, str]] = field(default_factory=dict, compare=False,
                                                  repr=False)
    """The encodings of :meth:`write_thin`'s files, by size class (a factor of 4 in rows):
    chosen once a class, then kept (:class:`Write` keeps them for the table's writes in this
    process, where measuring them would cost a thin append ~5% of its time)."""
    alike: bool = False
    """The files of this write are alike (the bars of partitions of one table): each column
    takes the encoding chosen for an earlier file whatever its size, measured only when that
    one does not hold (see :func:`hfq.storage.encoding.encode`)."""
    layout: int = 0
    """The table's column layout the files are written in (:mod:`hfq.catalog.evolution`)."""

    def write(self, nodes: Nodes, partition: str, key: Sequence[Any], rows: pa.Table, *,
              near: Sequence[str] = (), presorted: bool = False) -> Fragment:
        """Sort, encode once, put the same bytes on every node the partition goes to
        (``near`` first: the nodes already holding the partition).  Nothing is staged."""
        rows = compact_dictionaries(rows)
        if not presorted:
            rows = sort_rows(rows, self.sort_by)
        encoded = encode_fragment(rows, settings=self.settings,
                                  stats_columns=self.stats_columns, hints=self.hints,
                                  alike=self.alike)
        targets = nodes.targets(partition, near, self.replicas, self.table)
        rel = self.namer.new_file(partition)
        try:
            nodes.put(rel, encoded.data, targets, sync=self.sync)
        except OSError as exc:
            if isinstance(exc, HfqError):
                raise
            raise WriteError(f"table {self.table!r}, partition {partition}: writing {rel} on "
                             f"node {', '.join(targets)} failed: {exc}",
                             errno=exc.errno) from exc
        faults.point("write.fragment.after_put")
        return fragment_from(rel, rows=encoded.rows, size=encoded.size, crc32=encoded.crc32,
                             batches=encoded.batches, nodes=targets, layout=self.layout)

    def write_thin(self, nodes: Nodes, partitions: Sequence[tuple[str, Sequence[str]]],
                   rows: pa.Table, bounds: Sequence[int] | np.ndarray, *,
                   pool: ThreadPoolExecutor | None = None) -> list[Fragment]:
        """Write rows ``bounds[i]`` to ``bounds[i + 1]`` of ``rows`` (each run sorted, at most
        a record batch) as a fragment of ``partitions[i]`` = (partition, nodes already holding
        it): what :meth:`write` does for each, with the work per column done once for all
        (:func:`~hfq.storage.fragment.prepare_fragments`), the files encoded (and put, when
        they stay on this node) in ``pool``'s threads (``settings.threads`` of them), and
        one call per other node."""
        typical = max(1, int(np.median(np.diff(bounds)))) if len(bounds) > 1 else 1
        hints = self.thin_hints.setdefault(typical.bit_length() // 2, {})
        makers = prepare_fragments(rows, bounds, settings=self.settings,
                                   stats_columns=self.stats_columns, hints=hints)
        names = [self.namer.new_file(partition) for partition, _ in partitions]
        targets = [nodes.targets(partition, near, self.replicas, self.table)
                   for partition, near in partitions]
        here = all(t == [nodes.local] for t in targets)
        context = nodes.context() if here else None

        def make(share: range) -> list[Encoded]:
            made = [makers[i]() for i in share]
            if context is not None:
                _put_files(context, self.table, [(partitions[i][0], names[i], made[k].data)
                                                 for k, i in enumerate(share)], self.sync)
            return made

        ways = self.settings.threads if pool is not None else 1
        shares = [range(k, len(makers), ways) for k in range(min(ways, len(makers)))]
        encoded: list[Encoded] = [None] * len(makers)   # type: ignore[list-item]
        for share, made in zip(shares, (pool.map if pool else map)(make, shares)):
            for i, one in zip(share, made):
                encoded[i] = one
        if context is None:
            by_node: dict[str, list[tuple[str, str, pa.Buffer]]] = {}
            for (partition, _), rel, nodes_of, one in zip(partitions, names, targets, encoded):
                for node in nodes_of:
                    by_node.setdefault(node, []).append((partition, rel, one.data))
            nodes.call_each(_put_files, names=list(by_node), strict=True,
                            args_for=lambda node: (self.table, by_node[node], self.sync))
        out = []
        for rel, nodes_of, one in zip(names, targets, encoded):
            faults.point("write.fragment.after_put")
            out.append(fragment_from(rel, rows=one.rows, size=one.size, crc32=one.crc32,
                                     batches=one.batches, nodes=nodes_of, layout=self.layout))
        return out


def _put_files(node: NodeContext, table: str, files: list[tuple[str, str, pa.Buffer]],
               sync: bool) -> int:
    """Write ``files`` (partition, path, bytes) on this node (:meth:`FileWriter.write_thin`)."""
    for partition, rel, data in files:
        try:
            put_file(node.store, rel, data, sync=sync, fresh=True)
        except OSError as exc:
            if isinstance(exc, HfqError):
                raise
            raise WriteError(f"table {table!r}, partition {partition}: writing {rel} on node "
                             f"{node.name} failed: {exc}", errno=exc.errno) from exc
    return len(files)


def compact_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with each dictionary column holding only the values its rows use.

    A partition's rows come from blocks whose dictionaries hold every symbol of the block (a
    CSV block, a day of 2,000 symbols): a thin partition would otherwise store, sort, compress
    and check all of them in each of its files.
    """
    columns, changed = [], False
    for column in table.columns:
        if pa.types.is_dictionary(column.type) and column.num_chunks == 1:
            array = column.chunk(0)
            used = pc.unique(array.indices).drop_null()
            if len(used) < len(array.dictionary):
                codes = used.to_numpy(zero_copy_only=False)
                remap = np.zeros(len(array.dictionary), dtype=np.int32)
                remap[codes] = np.arange(len(codes), dtype=np.int32)
                mask = array.is_null().cast(pa.uint8()).to_numpy().astype(bool) \
                    if array.null_count else None   # (a boolean to_numpy imports pandas)
                indices = pa.array(remap[array.indices.fill_null(0).to_numpy(
                    zero_copy_only=False)], mask=mask)
                column = pa.chunked_array([pa.DictionaryArray.from_arrays(
                    indices.cast(array.type.index_type), array.dictionary.take(used))],
                    type=column.type)
                changed = True
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema) if changed else table


_THIN_HINTS: dict[tuple[str, str, str], dict[int, dict[str, str]]] = {}


def _thin_hints(catalog: Catalog, base: Manifest) -> dict[int, dict[str, str]]:
    """The encodings of thin files chosen so far in this process for this table and schema
    (see :attr:`FileWriter.thin_hints`); a hint is a guess, checked on every value."""
    if len(_THIN_HINTS) > 256:   # a process making many databases (tests) stays small
        _THIN_HINTS.clear()
    return _THIN_HINTS.setdefault((catalog.store.url, base.table, str(base.schema.arrow)), {})


def table_settings(settings: Settings, manifest: Manifest) -> Settings:
    """``settings`` with the table's own codec (``create_table(..., compression=...)``) in
    place of the database's: every writer of the table (append, CSV load, compaction, minute
    bars) writes its files with it.  A manifest naming no known codec is a
    :class:`~hfq.errors.ManifestError`."""
    codec = manifest.options.get("compression")
    if codec is None or codec == settings.compression:
        return settings
    try:
        return settings.replace(compression=check_compression(codec))
    except ValueError as exc:
        raise ManifestError(f"table {manifest.table!r} version {manifest.version}: its "
                            f"manifest's compression option is invalid: {exc}",
                            table=manifest.table, version=manifest.version) from exc


class Write:
    """One change of one table, committed as one version or not at all.

    Use as a context manager: leaving it with an exception removes everything the change
    wrote (here and on every node) before the exception propagates -- unless its commit got
    as far as publishing its version (:meth:`abort`).  Workers writing for it
    (a :class:`PartitionWriter`'s threads, the nodes of a CSV load) are finished before:
    nothing they write lands after the removal.  Until it commits or aborts, the transaction
    is registered as running in this process (:func:`hfq.catalog.files.begin_transaction`);
    after an abort, ``vacuum()`` in this same process removes whatever the removal missed.

    >>> import hfq, tempfile, pyarrow as pa
    >>> db = hfq.connect(tempfile.mkdtemp())
    >>> t = db.create_table("t", hfq.schema.Schema({"x": hfq.schema.LONG}),
    ...                     partition_by=hfq.Hash("x", 2))
    >>> with Write(db.session, t.snapshot()) as w:
    ...     f = w.files.write(w.nodes, "h0", [0], pa.table({"x": [2, 4]}))
    ...     w.stage("h0", [0], f)
    ...     w.commit("append").version
    1
    """

    def __init__(self, session: Session, base: Manifest, *, sync: bool = False,
                 transaction: Callable[[Catalog, Manifest], Transaction] = Transaction
                 ) -> None:
        self.session = session
        self.catalog = session.catalog
        self.nodes = session.nodes
        self.base = base
        self.sync = sync
        settings = table_settings(session.settings, base)
        catalog = self.catalog
        # ``transaction``: a Transaction subclass that records more than files (the live
        # write-down records the live rows its files hold, hfq.live.cut)
        self.txn = transaction(catalog, base)
        begin_transaction(self.txn.id)
        layouts = Layouts.of(base.options)
        self.files = FileWriter(base.table, self.txn.namer, base.sort_by,
                                tuple(stats_columns(base)), settings,
                                base.options.get("replicas"), sync,
                                thin_hints=_thin_hints(catalog, base),
                                layout=layouts.current if layouts is not None else 0)
        self.committed: Manifest | None = None
        self.settled = False
        """True once the change's rows were checked against the table's dedup key (or the
        change needs none): :meth:`commit` then publishes as it is."""

    def __enter__(self) -> Write:
        return self

    def rows(self, *, budget: int | None = None) -> PartitionWriter:
        """A :class:`PartitionWriter` for this change's rows (stage its :meth:`flush`)."""
        return PartitionWriter(self.files, self.nodes, self.base, self.files.settings,
                               budget=budget)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None and self.committed is None:
            self.abort()

    # -- staging ----------------------------------------------------------------------------
    def stage(self, partition: str, key: Sequence[Any], fragment: Fragment) -> None:
        self.txn.add(partition, key, fragment)

    def stage_all(self, added: Added) -> None:
        for path, (key, fragments) in added.items():
            for fragment in fragments:
                self.txn.add(path, key, fragment)

    def replace(self, partition: str, files: Iterable[str]) -> None:
        """The partition's ``files`` go in this version (compaction, a rerun of bars)."""
        self.txn.replace(partition, files)

    def move(self, file: str, nodes: Iterable[str]) -> None:
        """``file`` (copied there already) is held by ``nodes`` from this version on."""
        self.txn.move(file, nodes)

    # -- the end ------------------------------------------------------------------------------
    def commit(self, op: str, *, args: Any = None, message: str | None = None) -> Manifest:
        """Publish the change as the next version (see :meth:`hfq.catalog.Catalog.commit`).

        Its history entry (:mod:`hfq.catalog.history`) records the session's user, ``op``,
        ``args`` (made JSON-safe), ``message`` (default: :func:`hfq.catalog.history.annotate`'s)
        and the job id.

        A table with a dedup key (``create_table(..., unique=...)``) gets it kept first, on
        every partition the change staged rows for (:func:`hfq.change.dedup.settle`): an
        append, a CSV load, a live write-down."""
        if not self.settled and op not in NO_DEDUP and dedup_key(self.base.options) and \
                self.txn.added:
            self.settled = True
            return settle(self, op, args=args, message=message)
        note = history.current()
        txn = self.txn
        txn.user = self.session.user
        txn.args = history.jsonable(args) if args else {}
        txn.message = message if message is not None else note.message
        txn.job = history.job_id()
        faults.point("write.before_commit")
        try:
            self.committed = self.catalog.commit(self.txn, op, sync=self.sync)
        except OSError as exc:
            if isinstance(exc, HfqError):
                raise
            what = f"publishing the next version of this {op} failed" \
                if self.txn.published is False else \
                f"this {op} failed after (or while) publishing its version (its files are kept)"
            raise WriteError(f"table {self.base.table!r}: {what}: {exc}",
                             errno=exc.errno) from exc
        end_transaction(self.txn.id)
        return self.committed

    def abort(self) -> int:
        """Remove every file this change wrote, on every live node; returns how many.

        Every file of the change is named after its transaction (:attr:`files`), so one
        sweep by name finds the staged fragments and any a worker finished after the error.

        The rule: files go only while the transaction's version is known not to be on record
        (:attr:`hfq.catalog.Transaction.published` is False, as the catalog's commit leaves
        it).  A commit that failed after its publish (reading the head back, writing its
        claim) or during it (the record may have landed) left a version that names these
        files: nothing is removed (0), and ``vacuum()`` takes any of them no version names.
        """
        if self.txn.published is not False:
            log.warning("table %s: a write failed after (or while) publishing its version; "
                        "its files are kept", self.base.table)
            end_transaction(self.txn.id)
            return 0
        self.txn.added.clear()
        try:
            faults.point("write.abort.before_remove")
            return self.nodes.remove_prefix(self.base.table, self.txn.id)
        except Exception as exc:  # noqa: BLE001 - the original error matters more
            log.warning("table %s: cleaning up after a failed write left files behind (%s); "
                        "vacuum() removes them", self.base.table, exc)
            return 0
        finally:
            end_transaction(self.txn.id)


class PartitionWriter:
    """Routes rows to partitions, buffers them within a memory budget, writes sorted
    fragments through a :class:`FileWriter`; use as a context manager.

    Rows are routed by the partition scheme and buffered per partition (as row indices into
    the blocks given, not copies); when the blocks held pass the budget, every partition is
    written out as a sorted *spill* fragment and the blocks freed.  :meth:`flush` writes what
    is left and merges each partition's spills into one sorted fragment when it fits in the
    budget.  It commits nothing: the fragments go to a :class:`Write`.
    """

    def __init__(self, files: FileWriter, nodes: Nodes, base: Manifest, settings: Settings, *,
                 budget: int | None = None) -> None:
        self.files = files
        self.nodes = nodes
        self.base = base
        self.budget = budget if budget is not None else settings.memory_budget // 2
        self.rows = 0
        self.added: Added = {}
        self._buffers: dict[str, tuple[tuple[Any, ...],
                                       list[tuple[pa.Table, np.ndarray | None]]]] = {}
        self._blocks: list[pa.Table] = []
        """The blocks the buffers point into, in the order they came."""
        self._buffered = 0
        self._pool = ThreadPoolExecutor(max_workers=settings.threads)

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None:
            self._buffers.clear()
            self._blocks.clear()
        self._pool.shutdown(wait=True, cancel_futures=exc_type is not None)

    def write(self, table: pa.Table) -> None:
        """Add conformed rows (the table's exact Arrow schema).

        Rows are not copied here: each partition keeps (block, row indices) and the gather
        happens when the partition is written, in the writer's threads.
        """
        if table.num_rows == 0:
            return
        if any(column.num_chunks > 1 for column in table.columns):
            table = table.combine_chunks()   # a take from many chunks costs the whole table
        codes, keys = self.base.partition_by.route(table)
        self.rows += table.num_rows
        self._blocks.append(table)
        if len(keys) == 1:
            self._buffer(keys[0], table, None)
        else:
            # stable: rows keep their order in each partition; int16 keys sort by radix, O(n)
            small = len(keys) <= np.iinfo(np.int16).max
            order = (codes.astype(np.int16) if small else codes).argsort(kind="stable")
            start = 0
            for key, count in zip(keys, np.bincount(codes, minlength=len(keys)).tolist()):
                if count:
                    self._buffer(key, table, order[start:start + count])
                start += count
        self._buffered += table.nbytes
        if self._buffered > self.budget:
            self._spill()

    def flush(self) -> Added:
        """Write every buffer and merge spills; the fragments written, by partition."""
        self._spill()
        self._merge_spills()
        return self.added

    # -- internals ----------------------------------------------------------------------------
    def _buffer(self, key: tuple[Any, ...], table: pa.Table, rows: np.ndarray | None) -> None:
        path = key_path(self.base.partition_by, key)
        self._buffers.setdefault(path, (tuple(key), []))[1].append((table, rows))

    def _spill(self) -> None:
        """Write every partition's buffer as a sorted fragment; frees every block held.

        Thin partitions (up to :data:`THIN_ROWS` rows, and a record batch) are written
        together (:meth:`_write_thin`); the others one by one in the writer's threads.
        """
        limit = min(THIN_ROWS, self.files.settings.batch_rows)
        jobs: list[_Job] = []
        thin: list[_Job] = []
        for path, (key, parts) in self._buffers.items():
            rows = sum(t.num_rows if r is None else len(r) for t, r in parts)
            (thin if rows <= limit else jobs).append((path, key, parts))
        if len(thin) < 2:
            jobs, thin = jobs + thin, []
        blocks = self._blocks
        self._buffers.clear()
        self._blocks = []
        self._buffered = 0
        if thin:
            for (path, key, _), fragment in zip(thin, self._write_thin(thin, blocks)):
                self.added.setdefault(path, (key, []))[1].append(fragment)
        for path, key, fragment in self._pool.map(self._gather_and_write, jobs):
            self.added.setdefault(path, (key, []))[1].append(fragment)

    def _write_thin(self, jobs: list[_Job], blocks: list[pa.Table]) -> list[Fragment]:
        """The partitions of ``jobs`` written together: their rows gathered and sorted by
        (partition, sort columns) at once, each partition's run a fragment
        (:meth:`FileWriter.write_thin`).  Rows keep the order of :meth:`_gather_and_write`:
        by block, then by row, wherever the sort columns tie."""
        picks: dict[int, tuple[list[np.ndarray], list[int]]] = {}
        for job, (_, _, parts) in enumerate(jobs):
            for table, rows in parts:
                idx, runs = picks.setdefault(id(table), ([], []))
                idx.append(np.arange(table.num_rows) if rows is None else rows)
                runs.append(job)
        used = [(table, *picks.pop(id(table))) for table in blocks if id(table) in picks]
        run_of = np.concatenate([np.repeat(np.array(runs, dtype=np.int64),
                                           [len(i) for i in idx]) for _, idx, runs in used])
        if len(used) == 1:   # one gather, of the rows in their final order
            source, rows_of = used[0][0], np.concatenate(used[0][1])
        else:
            source = pa.concat_tables([table.take(pa.array(np.concatenate(idx)))
                                       for table, idx, _ in used])
            source = source.unify_dictionaries().combine_chunks()
            rows_of = np.arange(source.num_rows)
        sort_by = list(self.files.sort_by)
        keys = [run_of, *sort_keys(source.select(sort_by).take(pa.array(rows_of)), sort_by)]
        frame = pl.DataFrame({f"k{i}": k for i, k in enumerate(keys)})
        order = frame.select(pl.arg_sort_by(frame.columns, maintain_order=True)).to_series()
        rows = source.take(pa.array(rows_of[order.to_numpy()]))
        counts = np.bincount(keys[0], minlength=len(jobs))
        partitions = [(path, self._near(path)) for path, _, _ in jobs]
        return self.files.write_thin(self.nodes, partitions, rows,
                                     np.concatenate([[0], np.cumsum(counts)]), pool=self._pool)

    def _gather_and_write(self, job: _Job) -> tuple[str, tuple[Any, ...], Fragment]:
        path, key, parts = job
        tables = [t if rows is None else t.take(pa.array(rows)) for t, rows in parts]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        return path, key, self._write(path, key, table)

    def _write(self, path: str, key: tuple[Any, ...], table: pa.Table) -> Fragment:
        return self.files.write(self.nodes, path, key, table, near=self._near(path))

    def _near(self, path: str) -> list[str]:
        """The nodes holding the partition already (where its new files go first)."""
        existing = self.base.partitions.get(path)
        return self.nodes.holders(existing.fragments[0]) if existing else []

    def _merge_spills(self) -> None:
        """One fragment per partition per transaction where it fits in the budget."""
        logical = self.base.schema.arrow
        merges = [(path, key, fragments) for path, (key, fragments) in self.added.items()
                  if len(fragments) > 1 and self._decoded_size(fragments) <= self.budget]

        def merge(item: tuple[str, tuple[Any, ...], list[Fragment]]
                  ) -> tuple[str, list[Fragment], Fragment]:
            path, key, fragments = item
            table = pa.concat_tables(self.nodes.read_file(f, logical) for f in fragments)
            return path, fragments, self._write(path, key, table)

        for path, old, new in self._pool.map(merge, merges):
            self.added[path] = (self.added[path][0], [new])
            self.nodes.remove(old)

    def _decoded_size(self, fragments: list[Fragment]) -> int:
        """A generous estimate of the fragments' size in memory (8 bytes a value)."""
        return sum(f.rows for f in fragments) * 8 * len(self.base.schema)


# -- the compaction policy of small appends -----------------------------------------------------
def _small_tail(fragments: Sequence[Fragment], limit: int) -> list[Fragment]:
    """The fragments of fewer than ``limit`` rows at the end of ``fragments``, in order."""
    tail: list[Fragment] = []
    for f in reversed(fragments):
        if f.rows >= limit:
            break
        tail.append(f)
    return tail[::-1]


def merge_small_fragments(write: Write) -> Manifest | None:
    """After ``write`` committed (an append, a CSV load): merge the small fragments of the
    partitions it touched, if its table asks for it; the new manifest, or None.

    The policy, per table (``create_table(..., compact_after=n)``, off when unset): a
    partition holding ``n`` or more fragments of fewer than ``batch_rows`` rows each (less
    than one record batch) gets those merged into one sorted fragment, in a commit of its own
    ("compact") right after the write.  Reads pay per file, so a table appended in thin
    slices (an hour of a live day at a time) reads like one appended at once with
    ``compact_after=2``: every thin partition stays one file, for one extra commit and a
    rewrite of at most one record batch per touched partition per append.  Fragments of a
    batch or more are never rewritten here (:meth:`hfq.Table.compact` merges everything).

    Only the run of small fragments at the end of a partition (where appends arrive) is
    merged, and the merged fragment takes their place: rows whose sort keys are equal keep
    their arrival order (``first``/``last`` of a table not sorted by time, the quality
    report's out-of-order count).

    Best effort: the write is already committed, so a compaction that loses a race (another
    writer replaced those fragments) or fails is logged, cleaned up and left to the next
    write or to ``compact()``.
    """
    committed = write.committed
    threshold = committed.options.get("compact_after") if committed is not None else None
    if committed is None or not threshold:
        return None
    limit = write.files.settings.batch_rows
    due: dict[str, tuple[tuple[Any, ...], list[Fragment]]] = {}
    for path in write.txn.added:
        entry = committed.partitions.get(path)
        if entry is None:
            continue
        small = _small_tail(entry.fragments, limit)
        if any(f.layout != write.files.layout for f in small):   # older columns: compact()
            continue
        if len(small) >= threshold:
            due[path] = (tuple(entry.key), small)
    if not due:
        return None
    logical = committed.schema.arrow
    nodes = write.nodes
    try:
        with Write(write.session, committed) as merge:
            for path, (key, small) in due.items():
                rows = pa.concat_tables(nodes.read_file(f, logical) for f in small)
                merge.stage(path, key, merge.files.write(nodes, path, key, rows,
                                                         near=nodes.holders(small[0])))
                merge.replace(path, [f.file for f in small])
            faults.point("compact.before_commit")
            return merge.commit("compact")
    except HfqError as exc:   # the write stands; the next one (or compact()) merges
        log.warning("table %s: merging small fragments after %s failed (%s); the next write "
                    "or compact() merges them", committed.table, committed.op, exc)
        return None
