"""The database handle that :func:`hfq.connect` returns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hfq import config
from hfq.catalog import Catalog
from hfq.config import Settings
from hfq.errors import SchemaMismatchError, TableNotFoundError
from hfq.partition import Compo, Scheme, check_scheme
from hfq.schema import Schema
from hfq.storage.store import Store
from hfq.table import Table

__all__ = ["Database", "connect"]


class Database:
    """Tables under one root directory (a local path or an fsspec URL)."""

    def __init__(self, root: str, *, storage_options: dict | None = None,
                 settings: Settings | None = None) -> None:
        self.settings = settings or config.get()
        self.store = Store(str(root), storage_options or {})
        self.store.makedirs("")
        self.catalog = Catalog(self.store)

    def __repr__(self) -> str:
        return f"<hfq.Database {self.store.url!r}: {len(self.tables())} tables>"

    # -- tables -------------------------------------------------------------------------------
    def create_table(self, name: str, schema: Schema, *, partition_by: Scheme | Compo,
                     sort_by: Sequence[str] = (), date_column: str | None = None,
                     symbol_column: str | None = None) -> Table:
        """Create an empty table.

        Parameters
        ----------
        name
            Letters, digits and ``_``.
        schema
            A :class:`hfq.schema.Schema`, e.g. ``hfq.schemas.TAQ``.
        partition_by
            ``hfq.Value``, ``hfq.Hash``, ``hfq.Range`` or ``hfq.Compo`` of two.
        sort_by
            Columns the rows of each partition are sorted by, e.g. ``("symbol", "time")``.
        date_column, symbol_column
            The columns ``scan(dates=..., symbols=...)`` filter on (default: the first DATE
            column and the first SYMBOL sort column).
        """
        if not isinstance(schema, Schema):
            raise TypeError(f"schema must be an hfq Schema (e.g. hfq.schemas.TAQ), "
                            f"not {type(schema).__name__}")
        check_scheme(partition_by, schema.names)
        sort_by = tuple(sort_by)
        for column in (*sort_by, date_column, symbol_column):
            if column is not None and column not in schema:
                raise SchemaMismatchError(f"column {column!r} is not in the schema; columns: "
                                          f"{', '.join(schema.names)}")
        options = {k: v for k, v in (("date_column", date_column),
                                     ("symbol_column", symbol_column)) if v}
        self.catalog.create(name, schema, partition_by, sort_by, options)
        return Table(self, name)

    def __getitem__(self, name: str) -> Table:
        return Table(self, name)

    def __contains__(self, name: str) -> bool:
        try:
            self.catalog.snapshot(name)
        except TableNotFoundError:
            return False
        return True

    def tables(self) -> list[str]:
        return self.catalog.tables()

    def drop_table(self, name: str) -> None:
        """Remove a table and all its files."""
        self.catalog.drop(name)

    # -- ingest -------------------------------------------------------------------------------
    def load_csv(self, table: str, paths: str | Iterable[str], *, on_error: str = "raise",
                 reject_path: str | None = None, progress: bool | None = None,
                 sync: bool = False, **csv_options: Any):
        """Load CSV files (paths, globs, fsspec URLs) into ``table`` as one atomic commit.

        See :func:`hfq.ingest.csv.load_csv` for the options; returns a
        :class:`~hfq.ingest.csv.LoadReport` (rows, bytes, seconds, rows_per_s, rejects).
        """
        from hfq.ingest.csv import load_csv
        return load_csv(self, table, paths, on_error=on_error, reject_path=reject_path,
                        progress=progress, sync=sync, **csv_options)


def connect(root: str | None = None, *, address: str | None = None,
            storage_options: dict | None = None, **settings: Any) -> Database:
    """Open (creating if needed) the hfq database at ``root``.

    ``root`` defaults to ``HFQ_ROOT`` or ``./hfq_data``.  Keyword settings (``compression``,
    ``memory_budget``, ``threads``, ...) override :mod:`hfq.config` for this handle.

    Examples
    --------
    >>> import hfq, tempfile
    >>> db = hfq.connect(tempfile.mkdtemp())
    >>> db.tables()
    []
    """
    if address is not None:
        raise NotImplementedError(
            "connecting to a Ray cluster (address=...) arrives with the cluster runtime; "
            "hfq.connect(root) runs embedded")
    snapshot = config.get().replace(**settings) if settings else config.get()
    return Database(root or snapshot.root, storage_options=storage_options, settings=snapshot)
