"""A handle on one table: append, scan, partitions, maintenance."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from hfq import faults
from hfq.catalog import list_table_files, sweep
from hfq.catalog.files import live_writer
from hfq.catalog.records import Fragment, Manifest
from hfq.engine import make_query
from hfq.errors import CorruptPartitionError, SchemaMismatchError
from hfq.ingest.frames import iter_arrow_batches
from hfq.quality import QualityReport, quality_report
from hfq.query.plan import Filters, default_columns, normalize_dates
from hfq.query.read import MapTask, PartitionFunction
from hfq.reduce import as_reducer
from hfq.runtime.task import StoreCall
from hfq.scan import Scan
from hfq.schema import Schema
from hfq.write import PartitionWriter, Write, merge_small_fragments

if TYPE_CHECKING:
    import pandas

    from hfq.db import Database
    from hfq.engine.query import Query

__all__ = ["Table"]


class Table:
    """One table of a :class:`~hfq.Database`; get it with ``db["name"]``.

    A handle is pinned to one committed version (the newest when it was made, or the newest
    committed through its database since): ``schema``, ``version``, ``len()``,
    ``partitions()``, ``scan()`` and ``map_reduce()`` all see that version, whatever other
    processes commit meanwhile, until :meth:`refresh` moves it to the newest.
    ``scan(version=n)`` reads any version still on record (time travel).
    """

    def __init__(self, db: Database, name: str, manifest: Manifest | None = None) -> None:
        self.db = db
        self.name = name
        # raises TableNotFoundError for an unknown name
        self._manifest = manifest or db.catalog.snapshot(name)

    def __repr__(self) -> str:
        m = self._manifest
        return (f"<hfq.Table {self.name!r} version {m.version}: {m.rows:,} rows in "
                f"{len(m.partitions)} partitions>")

    # -- metadata -----------------------------------------------------------------------------
    def refresh(self) -> Table:
        """Move this handle to the newest committed version; returns the handle."""
        self._manifest = self.db.catalog.snapshot(self.name)
        return self

    def refresh_to(self, manifest: Manifest) -> None:
        """Pin this handle to ``manifest`` (a version of this table just committed)."""
        self._manifest = manifest

    def snapshot(self, version: int | None = None) -> Manifest:
        """The manifest of this handle's version (or of ``version``)."""
        if version is None or version == self._manifest.version:
            return self._manifest
        return self.db.catalog.snapshot(self.name, version)

    @property
    def schema(self) -> Schema:
        return self._manifest.schema

    @property
    def version(self) -> int:
        return self._manifest.version

    def versions(self) -> list[int]:
        """Every committed version still on record."""
        return self.db.catalog.versions(self.name)

    def __len__(self) -> int:
        return self._manifest.rows

    def partitions(self, *, version: int | None = None) -> pl.DataFrame:
        """One row per partition: key, rows, bytes, files, the nodes holding every file,
        version, checksum (polars)."""
        m = self.snapshot(version)
        rows = [{
            "partition": path,
            "key": [str(k) for k in part.key],
            "rows": part.rows,
            "bytes": part.bytes,
            "files": len(part.fragments),
            "nodes": self.db.nodes.common_holders(part.fragments),
            "version": m.version,
            "checksum": ",".join(f"{f.crc32:08x}" for f in part.fragments),
        } for path, part in m.partitions.items()]
        schema: dict[str, pl.DataType | type[pl.DataType]] = {
            "partition": pl.String, "key": pl.List(pl.String), "rows": pl.Int64,
            "bytes": pl.Int64, "files": pl.Int64, "nodes": pl.List(pl.String),
            "version": pl.Int64, "checksum": pl.String}
        return pl.DataFrame(rows, schema=schema)

    # -- writing ------------------------------------------------------------------------------
    def append(self, data: Any, *, sync: bool = False) -> int:
        """Append a pandas / polars / pyarrow Table or RecordBatchReader; returns the version.

        All rows become visible at once in one new version, or none do (an error, or the
        process dying, leaves the table as it was).  Column order does not matter; types are
        cast when no information can be lost, otherwise :class:`SchemaMismatchError` lists
        every difference.  ``sync=True`` fsyncs the files before the commit.  A float NaN
        (pandas' "missing" in float columns included) is stored as NaN, not null; nulls come
        from ``None``/``pd.NA`` in object or nullable columns (:mod:`hfq.ingest.frames`).
        """
        base = self._manifest
        with self._write(base, sync=sync) as write, \
                PartitionWriter(write.files, self.db.nodes, base, self.db.settings) as rows:
            for batch in iter_arrow_batches(data):
                rows.write(base.schema.conform(batch, where=f"append to {self.name!r}"))
            write.stage_all(rows.flush())
            self._manifest = write.commit("append")
        self._manifest = merge_small_fragments(write) or self._manifest   # compact_after
        return self._manifest.version

    def compact(self) -> int:
        """Merge each partition's files into one sorted file; returns the new version."""
        base = self.refresh()._manifest
        multi = {p: v for p, v in base.partitions.items() if len(v.fragments) > 1}
        if not multi:
            return base.version
        with self._write(base) as write, \
                PartitionWriter(write.files, self.db.nodes, base, self.db.settings) as rows:
            for path, part in multi.items():
                rows.write(Scan(self.db.nodes, base.only(path), self.db.settings, columns=None,
                                where=None, filters=Filters()).to_arrow())
                write.replace(path, [f.file for f in part.fragments])
            write.stage_all(rows.flush())
            faults.point("compact.before_commit")
            self._manifest = write.commit("compact")
        return self._manifest.version

    def _write(self, base: Manifest, *, sync: bool = False) -> Write:
        return Write(self.db.catalog, self.db.nodes, base, self.db.settings, sync=sync)

    # -- maintenance --------------------------------------------------------------------------
    def verify(self) -> int:
        """Check every copy of every file, on every live node that holds it, against the
        catalog's size and CRC-32; returns the copies checked.

        Raises :class:`~hfq.errors.CorruptPartitionError` listing every bad copy.
        """
        m = self.refresh()._manifest
        nodes = self.db.nodes
        alive = set(nodes.alive())
        by_node: dict[str, list[Fragment]] = {}
        for fragment in m.fragments():
            for name in nodes.holders(fragment):
                if name in alive:
                    by_node.setdefault(name, []).append(fragment)
        checked, problems = nodes.verify(by_node)   # copies on dead nodes are left out
        if problems:
            raise CorruptPartitionError(f"table {self.name!r}: {len(problems)} bad file "
                                        "copies (db.repair() replaces them from good "
                                        "ones):\n" + "\n".join(problems))
        return checked

    def vacuum(self, *, keep_versions: int | None = None,
               grace_s: float | None = None) -> dict[str, int]:
        """Delete files of writers that died, copies no version places on their node any more
        (after a rebalance) and, optionally, all but the newest ``keep_versions`` versions.

        Each live node lists its files first; only then are the kept versions read, so a file
        committed meanwhile is never touched.  Files of this process's own failed writes go
        too, although the process is alive (it knows which of its transactions still run).
        """
        grace = self.db.settings.orphan_grace_s if grace_s is None else grace_s
        catalog, nodes = self.db.catalog, self.db.nodes
        forgotten = 0
        if keep_versions is not None:
            forgotten = catalog.forget_versions(self.name, keep_versions, grace)
        listings = nodes.call_each(StoreCall(list_table_files), self.name)
        writer = live_writer()   # after the listing: files of this process's failed writes go
        referenced: dict[str, set[str]] = {n: set() for n in listings}
        committed: set[str] = set()
        for m in catalog.kept_manifests(self.name):
            for fragment in m.fragments():
                committed.add(fragment.file)
                for name in nodes.holders(fragment):
                    if name in referenced:
                        referenced[name].add(fragment.file)
        faults.point("vacuum.before_remove")
        removed = nodes.call_each(StoreCall(sweep), names=list(listings),
                                  args_for=lambda n: (self.name, referenced[n], grace,
                                                      listings[n], committed, writer))
        pieces = catalog.sweep_pieces(self.name, grace)   # manifest pieces no version uses
        return {"files_removed": sum(removed.values()) + pieces,
                "versions_forgotten": forgotten}

    # -- compute ------------------------------------------------------------------------------
    def map_reduce(self, map_fn: Callable[[pl.DataFrame], Any] | PartitionFunction | None,
                   reduce: Any, *,
                   columns: Sequence[str] | None = None, where: pl.Expr | None = None,
                   dates: Any = None, symbols: Iterable[str] | str | None = None,
                   version: int | None = None, progress: bool | None = None) -> Any:
        """Run ``map_fn`` on every matching partition, on a node that holds it; merge.

        ``map_fn`` gets one partition as a polars DataFrame (``columns`` only, rows passing
        ``where``/``dates``/``symbols``) and returns a small value -- a reducer state such as
        ``hfq.reduce.Sum(on="bid").accumulate(df)``, a number, or a small DataFrame.
        ``reduce`` is an :mod:`hfq.reduce` reducer or a binary function; with ``map_fn=None``
        the reducer's own ``accumulate`` is the map function.  Partial results are merged in
        partition order as they arrive, so the answer does not depend on scheduling or on
        nodes failing: a partition whose node dies runs again on a replica, and if no copy of
        some partition is alive, :class:`~hfq.errors.PartitionUnavailableError` names them.
        """
        reducer = as_reducer(reduce)
        if map_fn is None:
            map_fn = reducer.accumulate
            if columns is None:
                columns = reducer.columns() or None
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

        nodes.run_units(MapTask(scan.spec, map_fn), units, arrive,
                        progress=self.db.settings.show_progress(progress),
                        label=f"map {self.name}")
        return reducer.finalize(state)

    # -- quality (hfq.quality) ----------------------------------------------------------------
    def quality(self, dates: Any = None, symbols: Iterable[str] | str | None = None, *,
                version: int | None = None, progress: bool | None = None,
                **rules: Any) -> QualityReport:
        """Market-data quality per symbol-day, computed next to the data: rows, clean rows,
        zero/negative and sentinel prices, crossed, locked and wide quotes, times out of
        order or outside the session, duplicates, gap minutes, robust mid jumps.

        ``dates``/``symbols`` select as in :meth:`scan`; keywords set the
        :class:`hfq.quality.Rules` (``session=("09:30", "16:00")``, ``max_ratio=1.2``,
        ``jump_k=10``, ``sentinels=(214748.3647,)``, column names ``bid``/``ofr``/``time``).
        Returns a :class:`hfq.quality.QualityReport`: ``by_symbol_day`` (polars),
        ``summary()``, ``plot(path)`` (PNG), ``str()``.  See :mod:`hfq.quality` for each rule.

        Examples
        --------
        >>> from hfq.demo import example_quotes
        >>> quotes = example_quotes(days=2, rows_per_day=5000, symbols=20)
        >>> report = quotes.quality(dates="2007-08-01")     # no Ray needed when embedded
        >>> report.by_symbol_day.height, report.rows         # symbol-days, rows
        (19, 5000)
        >>> report.summary().filter(check="crossed")["count"].item()
        26
        """
        return quality_report(self, dates, symbols, version=version, progress=progress,
                              **rules)

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
            Read this committed version instead of the handle's.
        """
        m = self.snapshot(version)
        date_col, symbol_col = self.filter_columns(m)
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

    # -- queries (hfq.engine) -----------------------------------------------------------------
    def query(self, *, dates: Any = None, symbols: Iterable[str] | str | None = None,
              version: int | None = None) -> Query:
        """A lazy query over this table (polars-flavoured: ``filter``, ``with_columns``,
        ``group_by(...).agg(...)``, ``sort``, ``head``, joins...); ``dates``/``symbols``
        as for :meth:`scan`.  Nothing runs until ``collect()``; ``explain()`` shows what
        runs on the nodes and what on the driver."""
        m = self.snapshot(version)
        date_col, symbol_col = self.filter_columns(m)
        return make_query(self.db, self.name, m, date_col, symbol_col, dates=dates,
                          symbols=symbols)

    def to_arrow(self, **scan_args: Any) -> pa.Table:
        return self.scan(**scan_args).to_arrow()

    def to_polars(self, **scan_args: Any) -> pl.DataFrame:
        return self.scan(**scan_args).to_polars()

    def to_pandas(self, **scan_args: Any) -> pandas.DataFrame:
        return self.scan(**scan_args).to_pandas()

    @staticmethod
    def filter_columns(m: Manifest) -> tuple[str | None, str | None]:
        """The columns ``dates=`` and ``symbols=`` filter on (None: the table has none)."""
        date_col, symbol_col = default_columns(m.schema, m.sort_by)
        return (m.options.get("date_column", date_col),
                m.options.get("symbol_column", symbol_col))
