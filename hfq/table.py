"""A handle on one table: append, scan, partitions, maintenance."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hfq.catalog import Manifest
from hfq.errors import CorruptPartitionError, SchemaMismatchError
from hfq.ingest.frames import iter_arrow_batches
from hfq.ingest.writer import PartitionWriter
from hfq.query.plan import Filters, default_columns, normalize_dates
from hfq.query.scan import Scan
from hfq.storage.fragment import verify_fragment

if TYPE_CHECKING:
    import polars as pl

    from hfq.db import Database

__all__ = ["Table"]


class Table:
    """One table of a :class:`~hfq.Database`; get it with ``db["name"]``.

    Every read starts from the newest committed version (or ``version=``) and sees only that
    version, whatever other writers commit meanwhile.
    """

    def __init__(self, db: Database, name: str) -> None:
        self.db = db
        self.name = name
        db.catalog.snapshot(name)  # raises TableNotFoundError for an unknown name

    def __repr__(self) -> str:
        m = self.snapshot()
        return (f"<hfq.Table {self.name!r} version {m.version}: {m.rows:,} rows in "
                f"{len(m.partitions)} partitions>")

    # -- metadata -----------------------------------------------------------------------------
    def snapshot(self, version: int | None = None) -> Manifest:
        """The manifest of the newest (or the given) version."""
        return self.db.catalog.snapshot(self.name, version)

    @property
    def schema(self):
        return self.snapshot().schema

    @property
    def version(self) -> int:
        return self.snapshot().version

    def versions(self) -> list[int]:
        return self.db.catalog.versions(self.name)

    def __len__(self) -> int:
        return self.snapshot().rows

    def partitions(self, *, version: int | None = None):
        """One row per partition: key, rows, bytes, files, the nodes holding every file,
        version, checksum (polars)."""
        import polars as pl
        m = self.snapshot(version)
        rows = []
        for path, part in m.partitions.items():
            frags = part["fragments"]
            rows.append({
                "partition": path,
                "key": [str(k) for k in part["key"]],
                "rows": sum(f["rows"] for f in frags),
                "bytes": sum(f["bytes"] for f in frags),
                "files": len(frags),
                "nodes": self.db.nodes.common_holders(frags),
                "version": m.version,
                "checksum": ",".join(f"{f['crc32']:08x}" for f in frags),
            })
        schema = {"partition": pl.String, "key": pl.List(pl.String), "rows": pl.Int64,
                  "bytes": pl.Int64, "files": pl.Int64, "nodes": pl.List(pl.String),
                  "version": pl.Int64,
                  "checksum": pl.String}
        return pl.DataFrame(rows, schema=schema)

    # -- writing ------------------------------------------------------------------------------
    def append(self, data: Any, *, sync: bool = False) -> int:
        """Append a pandas / polars / pyarrow Table or RecordBatchReader; returns the version.

        All rows become visible at once in one new version, or none do (an error, or the
        process dying, leaves the table as it was).  Column order does not matter; types are
        cast when no information can be lost, otherwise :class:`SchemaMismatchError` lists
        every difference.  ``sync=True`` fsyncs the files before the commit.
        """
        base = self.snapshot()
        with PartitionWriter(self.db.catalog, self.db.nodes, base, self.db.settings,
                             sync=sync) as writer:
            for batch in iter_arrow_batches(data):
                writer.write(base.schema.conform(batch, where=f"append to {self.name!r}"))
            return writer.finish("append").version

    def compact(self) -> int:
        """Merge each partition's files into one sorted file; returns the new version."""
        base = self.snapshot()
        multi = {p: v for p, v in base.partitions.items() if len(v["fragments"]) > 1}
        if not multi:
            return base.version
        with PartitionWriter(self.db.catalog, self.db.nodes, base, self.db.settings) as writer:
            for path, part in multi.items():
                table = Scan(self.db.nodes, _only(base, path), self.db.settings, columns=None,
                             where=None, filters=Filters()).to_arrow()
                writer.write(table)
                writer.txn.replace(path, [f["file"] for f in part["fragments"]])
            return writer.finish("compact").version

    def verify(self) -> int:
        """Check every copy of every file, on every live node that holds it, against the
        catalog's size and CRC-32; returns the copies checked.

        Raises :class:`~hfq.errors.CorruptPartitionError` listing every bad copy.
        """
        m = self.snapshot()
        nodes = self.db.nodes
        alive = set(nodes.alive())
        by_node: dict[str, list[dict]] = {}
        for part in m.partitions.values():
            for fragment in part["fragments"]:
                for name in nodes.holders(fragment):
                    if name in alive:
                        by_node.setdefault(name, []).append(fragment)
        problems: list[str] = []
        refs = []
        for name, fragments in by_node.items():
            if name == nodes.local:
                for fragment in fragments:
                    try:
                        verify_fragment(nodes.store, fragment)
                    except CorruptPartitionError as exc:
                        problems.append(f"{name}: {exc}")
            else:
                refs.append(nodes.runtime.server(name).verify.remote(fragments))
        if refs:
            import ray
            for found in ray.get(refs):
                problems.extend(found)
        if problems:
            raise CorruptPartitionError(f"table {self.name!r}: {len(problems)} bad file "
                                        "copies:\n" + "\n".join(problems))
        return sum(len(f) for f in by_node.values())

    def vacuum(self, *, keep_versions: int | None = None, grace_s: float | None = None) -> dict:
        """Delete files of writers that died, copies no version places on their node any more
        (after a rebalance) and, optionally, all but the newest ``keep_versions`` versions.

        Each live node lists its files first; only then are the kept versions read, so a file
        committed meanwhile is never touched.
        """
        grace = self.db.settings.orphan_grace_s if grace_s is None else grace_s
        catalog, nodes = self.db.catalog, self.db.nodes
        forgotten = 0
        if keep_versions is not None:
            forgotten = catalog.forget_versions(self.name, keep_versions, grace)
        alive = nodes.alive()
        listings = {n: self._on_node(n, "list_files", self.name) for n in alive}
        listings = {n: (v if n == nodes.local else _get(v)) for n, v in listings.items()}
        referenced: dict[str, set[str]] = {n: set() for n in alive}
        committed: set[str] = set()
        for m in catalog.kept_manifests(self.name):
            for part in m.partitions.values():
                for fragment in part["fragments"]:
                    committed.add(fragment["file"])
                    for name in nodes.holders(fragment):
                        if name in referenced:
                            referenced[name].add(fragment["file"])
        removed = [self._on_node(n, "sweep", self.name, referenced[n], grace, listings[n],
                                 committed) for n in alive]
        removed = sum(v if isinstance(v, int) else _get(v) for v in removed)
        return {"files_removed": removed, "versions_forgotten": forgotten}

    def _on_node(self, name: str, method: str, *args):
        """Call a server method, or do the same here when ``name`` is this process's node."""
        nodes = self.db.nodes
        if name == nodes.local:
            from hfq.catalog import list_table_files, sweep
            fn = {"list_files": list_table_files, "sweep": sweep}[method]
            return fn(nodes.store, *args)
        return getattr(nodes.runtime.server(name), method).remote(*args)

    # -- compute ------------------------------------------------------------------------------
    def map_reduce(self, map_fn: Callable[[pl.DataFrame], Any], reduce: Any, *,
                   columns: Sequence[str] | None = None, where: pl.Expr | None = None,
                   dates: Any = None, symbols: Iterable[str] | str | None = None,
                   version: int | None = None, progress: bool | None = None) -> Any:
        """Run ``map_fn`` on every matching partition, on a node that holds it; merge.

        ``map_fn`` gets one partition as a polars DataFrame (``columns`` only, rows passing
        ``where``/``dates``/``symbols``) and returns a small value -- a reducer state such as
        ``hfq.reduce.Sum().of(df["bid"])``, a number, or a small DataFrame.  ``reduce`` is an
        :mod:`hfq.reduce` reducer or a binary function.  Partial results are merged in
        partition order as they arrive, so the answer does not depend on scheduling or on
        nodes failing: a partition whose node dies runs again on a replica, and if no copy of
        some partition is alive, :class:`~hfq.errors.PartitionUnavailableError` names them.
        """
        from hfq.reduce import as_reducer
        reducer = as_reducer(reduce)
        scan = self.scan(columns=columns, where=where, dates=dates, symbols=symbols,
                         version=version)
        units = scan.plan.units
        state = reducer.identity()
        if not units:
            return reducer.finalize(state)
        nodes = self.db.cluster_nodes()
        results: dict[int, Any] = {}
        nxt = 0

        def arrive(i: int, value: Any) -> None:
            nonlocal state, nxt
            results[i] = value
            while nxt in results:   # merge in partition order: deterministic answers
                state = reducer.merge(state, results.pop(nxt))
                nxt += 1

        progress = self.db.settings.show_progress(progress)
        nodes.map_units(scan.spec, units, map_fn, arrive, progress=progress,
                        label=f"map {self.name}")
        return reducer.finalize(state)

    # -- reading ------------------------------------------------------------------------------
    def scan(self, *, columns: Sequence[str] | None = None, where: pl.Expr | None = None,
             dates: Any = None, symbols: Iterable[str] | str | None = None,
             version: int | None = None) -> Scan:
        """Plan a read; call ``to_arrow()``, ``to_polars()``, ``to_pandas()`` or ``explain()``.

        Parameters
        ----------
        columns
            Columns to return (default: all), in this order.
        where
            A polars boolean expression, evaluated partition by partition.
        dates
            A date or an inclusive ``(first, last)`` pair on the table's date column; prunes
            partitions and record batches.
        symbols
            Symbols on the table's symbol column; prunes partitions and record batches.
        version
            Read this committed version instead of the newest.
        """
        m = self.snapshot(version)
        date_col, symbol_col = self._filter_columns(m)
        lo, hi = normalize_dates(dates)
        if (lo or hi) and date_col is None:
            raise SchemaMismatchError(f"table {self.name!r} has no DATE column for dates=")
        if isinstance(symbols, str):
            symbols = [symbols]
        syms = None if symbols is None else tuple(dict.fromkeys(symbols))
        if syms is not None and symbol_col is None:
            raise SchemaMismatchError(f"table {self.name!r} has no SYMBOL column for symbols=")
        filters = Filters(date_col, lo, hi, symbol_col, syms)
        return Scan(self.db.nodes, m, self.db.settings, columns=columns, where=where,
                    filters=filters)

    def to_arrow(self, **scan_args) -> pa.Table:
        return self.scan(**scan_args).to_arrow()

    def to_polars(self, **scan_args):
        return self.scan(**scan_args).to_polars()

    def to_pandas(self, **scan_args):
        return self.scan(**scan_args).to_pandas()

    @staticmethod
    def _filter_columns(m: Manifest) -> tuple[str | None, str | None]:
        date_col, symbol_col = default_columns(m.schema, m.sort_by)
        return (m.options.get("date_column", date_col),
                m.options.get("symbol_column", symbol_col))


def _get(ref):
    import ray
    return ray.get(ref)


def _only(m: Manifest, path: str) -> Manifest:
    return Manifest(m.table, m.version, m.schema, m.partition_by, m.sort_by,
                    {path: m.partitions[path]}, m.op, m.committed_at, m.options)
