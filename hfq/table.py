"""A handle on one table: append, scan, partitions, maintenance."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hfq.catalog import Manifest
from hfq.errors import SchemaMismatchError
from hfq.ingest.frames import iter_arrow_batches
from hfq.ingest.writer import PartitionWriter
from hfq.query.plan import Filters, default_columns, normalize_dates
from hfq.query.scan import Scan
from hfq.storage.fragment import verify_fragment
from hfq.storage.store import Store

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
        """One row per partition: key, rows, bytes, files, version, checksum (polars)."""
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
                "version": m.version,
                "checksum": ",".join(f"{f['crc32']:08x}" for f in frags),
            })
        schema = {"partition": pl.String, "key": pl.List(pl.String), "rows": pl.Int64,
                  "bytes": pl.Int64, "files": pl.Int64, "version": pl.Int64,
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
        with PartitionWriter(self.db.catalog, base, self.db.settings, sync=sync) as writer:
            for batch in iter_arrow_batches(data):
                writer.write(base.schema.conform(batch, where=f"append to {self.name!r}"))
            return writer.finish("append").version

    def compact(self) -> int:
        """Merge each partition's files into one sorted file; returns the new version."""
        base = self.snapshot()
        multi = {p: v for p, v in base.partitions.items() if len(v["fragments"]) > 1}
        if not multi:
            return base.version
        store: Store = self.db.catalog.store
        with PartitionWriter(self.db.catalog, base, self.db.settings) as writer:
            for path, part in multi.items():
                table = Scan(store, _only(base, path), self.db.settings, columns=None,
                             where=None, filters=Filters()).to_arrow()
                writer.write(table)
                writer.txn.replace(path, [f["file"] for f in part["fragments"]])
            return writer.finish("compact").version

    def verify(self) -> int:
        """Check every file's size and CRC-32 against the catalog; returns files checked."""
        m = self.snapshot()
        n = 0
        for part in m.partitions.values():
            for fragment in part["fragments"]:
                verify_fragment(self.db.catalog.store, fragment)
                n += 1
        return n

    def vacuum(self, *, keep_versions: int | None = None, grace_s: float | None = None) -> dict:
        """Delete files of writers that died and, optionally, all but the newest versions."""
        grace = self.db.settings.orphan_grace_s if grace_s is None else grace_s
        return self.db.catalog.vacuum(self.name, keep_versions=keep_versions, grace_s=grace)

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
        return Scan(self.db.catalog.store, m, self.db.settings, columns=columns, where=where,
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


def _only(m: Manifest, path: str) -> Manifest:
    return Manifest(m.table, m.version, m.schema, m.partition_by, m.sort_by,
                    {path: m.partitions[path]}, m.op, m.committed_at, m.options)
