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
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa

from hfq.catalog.catalog import Catalog, FileNamer, Transaction
from hfq.catalog.records import Fragment, Manifest, fragment_from
from hfq.config import Settings
from hfq.partition import key_path
from hfq.runtime.nodes import Nodes
from hfq.storage.fragment import encode_fragment
from hfq.storage.sort import sort_rows

__all__ = ["Added", "FileWriter", "PartitionWriter", "Write", "stats_columns"]

log = logging.getLogger("hfq")

Added = dict[str, tuple[tuple[Any, ...], list[Fragment]]]
"""Fragments written, by partition path: (partition key, fragments)."""


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

    def write(self, nodes: Nodes, partition: str, key: Sequence[Any], rows: pa.Table, *,
              near: Sequence[str] = (), presorted: bool = False) -> Fragment:
        """Sort, encode once, put the same bytes on every node the partition goes to
        (``near`` first: the nodes already holding the partition).  Nothing is staged."""
        if not presorted:
            rows = sort_rows(rows, self.sort_by)
        encoded = encode_fragment(rows, settings=self.settings,
                                  stats_columns=self.stats_columns)
        targets = nodes.targets(partition, near, self.replicas, self.table)
        rel = self.namer.new_file(partition)
        nodes.put(rel, encoded.data, targets, sync=self.sync)
        return fragment_from(rel, rows=encoded.rows, size=encoded.size, crc32=encoded.crc32,
                             batches=encoded.batches, nodes=targets)


class Write:
    """One change of one table, committed as one version or not at all.

    Use as a context manager: leaving it with an exception removes everything the change
    wrote (here and on every node) before the exception propagates.

    >>> import hfq, tempfile, pyarrow as pa
    >>> db = hfq.connect(tempfile.mkdtemp())
    >>> t = db.create_table("t", hfq.schema.Schema({"x": hfq.schema.LONG}),
    ...                     partition_by=hfq.Hash("x", 2))
    >>> with Write(db.catalog, db.nodes, t.snapshot(), db.settings) as w:
    ...     f = w.files.write(db.nodes, "h0", [0], pa.table({"x": [2, 4]}))
    ...     w.stage("h0", [0], f)
    ...     w.commit("append").version
    1
    """

    def __init__(self, catalog: Catalog, nodes: Nodes, base: Manifest, settings: Settings, *,
                 sync: bool = False) -> None:
        self.catalog = catalog
        self.nodes = nodes
        self.base = base
        self.sync = sync
        self.txn = Transaction(catalog, base)
        self.files = FileWriter(base.table, self.txn.namer, base.sort_by,
                                tuple(stats_columns(base)), settings,
                                base.options.get("replicas"), sync)
        self.committed: Manifest | None = None

    def __enter__(self) -> Write:
        return self

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
    def commit(self, op: str) -> Manifest:
        """Publish the change as the next version (see :meth:`hfq.catalog.Catalog.commit`)."""
        self.committed = self.catalog.commit(self.txn, op, sync=self.sync)
        return self.committed

    def abort(self) -> int:
        """Remove every file this change wrote, on every live node; returns how many.

        Every file of the change is named after its transaction (:attr:`files`), so one
        sweep by name finds the staged fragments and any a worker finished after the error.
        """
        self.txn.added.clear()
        try:
            return self.nodes.remove_prefix(self.base.table, self.txn.id)
        except Exception as exc:  # noqa: BLE001 - the original error matters more
            log.warning("table %s: cleaning up after a failed write left files behind (%s); "
                        "vacuum() removes them", self.base.table, exc)
            return 0


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
        self._buffered = 0
        self._pool = ThreadPoolExecutor(max_workers=settings.threads)

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None:
            self._buffers.clear()
        self._pool.shutdown(wait=True, cancel_futures=exc_type is not None)

    def write(self, table: pa.Table) -> None:
        """Add conformed rows (the table's exact Arrow schema).

        Rows are not copied here: each partition keeps (block, row indices) and the gather
        happens when the partition is written, in the writer's threads.
        """
        if table.num_rows == 0:
            return
        codes, keys = self.base.partition_by.route(table)
        self.rows += table.num_rows
        if len(keys) == 1:
            self._buffer(keys[0], table, None)
        else:
            order = codes.argsort(kind="stable")
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
        """Write every partition's buffer as a sorted fragment; frees every block held."""
        jobs = [(path, key, parts) for path, (key, parts) in self._buffers.items()]
        self._buffers.clear()
        self._buffered = 0
        for path, key, fragment in self._pool.map(self._gather_and_write, jobs):
            self.added.setdefault(path, (key, []))[1].append(fragment)

    def _gather_and_write(self, job: tuple[str, tuple[Any, ...],
                                           list[tuple[pa.Table, np.ndarray | None]]]
                          ) -> tuple[str, tuple[Any, ...], Fragment]:
        path, key, parts = job
        tables = [t if rows is None else t.take(pa.array(rows)) for t, rows in parts]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        return path, key, self._write(path, key, table)

    def _write(self, path: str, key: tuple[Any, ...], table: pa.Table) -> Fragment:
        existing = self.base.partitions.get(path)
        near = self.nodes.holders(existing.fragments[0]) if existing else []
        return self.files.write(self.nodes, path, key, table, near=near)

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
