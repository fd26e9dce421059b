"""Adversarial tables for the SQL fuzzer: random schemas and rows, loaded into hfq and DuckDB.

A :class:`Dataset` is plain data (column names and hfq type names, rows of Python values, the
partition scheme, the append chunks), so a finding can be written out as a regression test and
rebuilt exactly.  Values come from :data:`hfq.testing.strategies.EDGE_VALUES` (NaN, +-inf, -0.0,
int extremes, empty and unicode strings, a Sunday, midnight, 09:30, the last instant of a day)
mixed with a few ordinary values (so duplicates, equal join keys and duplicate timestamps are
common) and NULLs, drawn by a seeded :class:`random.Random`: a seed names a dataset for ever.

Every table has ``id`` (LONG, unique, never NULL: the tie-breaker that makes window and
``first``/``last`` orders total), ``date`` (DATE) and ``sym`` (SYMBOL) -- never NULL, they are
the partition columns -- and ``time`` (a time type), then random extra columns.  The main
table ``t`` is partitioned by date x symbol buckets (or one of them), and appended in one to
three chunks, so the node stage runs on many partitions, some with several files, some with
one row, and the driver merges; ``u`` is a second, smaller table for joins, unique on
(sym, time) so that an ASOF join has one right answer.

DuckDB gets the rows hfq stores (read back with ``to_arrow``), with SHORT and INT widened to
BIGINT and FLOAT to DOUBLE: hfq computes in 64 bits by design (``docs/sql.md``), so DuckDB's
int32 overflow errors and float32 roundings are not differences.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

import hfq
from hfq import schema
from hfq.testing.strategies import EDGE_VALUES

__all__ = ["KIND", "ORDERS", "Dataset", "TableSpec", "load_duckdb", "load_duckdb_orders",
           "load_hfq", "random_dataset", "register", "register_hfq_table", "to_arrow", "widened"]

#: the SQL kind of each hfq type, as the query grammar sees it
KIND = {"DOUBLE": "float", "FLOAT": "float", "INT": "int", "LONG": "int", "SHORT": "int",
        "SYMBOL": "str", "CHAR": "str", "STRING": "str", "DATE": "date", "SECOND": "time",
        "TIME": "time", "TIMESTAMP": "ts", "DATETIME": "tstz", "BOOL": "bool"}
#: column-name prefix of each extra column's type
_PREFIX = {"DOUBLE": "d", "FLOAT": "f", "INT": "i", "LONG": "l", "SHORT": "h", "SYMBOL": "y",
           "CHAR": "c", "STRING": "s", "DATE": "dd", "SECOND": "sc", "TIME": "tm",
           "TIMESTAMP": "ts", "DATETIME": "dt", "BOOL": "b"}
_TIME_TYPES = ("SECOND", "TIME", "TIMESTAMP", "DATETIME")
_EXTRA_TYPES = tuple(_PREFIX)
_UTC = dt.timezone.utc

_DATES = (dt.date(2024, 1, 5), dt.date(2024, 1, 8), dt.date(2024, 1, 7), dt.date(2024, 2, 29),
          dt.date(2000, 1, 3), dt.date(1970, 1, 1), dt.date(1969, 12, 31))
_SYMS = ("A", "B", "IBM", "", "é", "日本株", "a/b", "..", " ", "%_x", "O'Neil")
_CLOCKS = (dt.time(9, 30), dt.time(9, 30, 1), dt.time(10, 0), dt.time(12, 34, 56),
           dt.time(15, 59, 59))
_ORDINARY: dict[str, tuple[Any, ...]] = {
    "DOUBLE": tuple(k / 4 for k in range(-8, 9)) + (1.5, 100.25, -3.75, 0.1),
    "FLOAT": tuple(k / 4 for k in range(-8, 9)) + (1.5, 100.25, -3.75),
    "INT": tuple(range(-5, 6)) + (10, 100, 7),
    "LONG": tuple(range(-5, 6)) + (10, 1000, 123456789012),
    "SHORT": tuple(range(-5, 6)) + (10, 300),
    "SYMBOL": ("A", "B", "IBM", "MSFT", "x"),
    "CHAR": ("A", "B", "N", "x"),
    "STRING": ("A", "B", "abc", "Abc", "abc ", "hello world", "x"),
    "DATE": (dt.date(2024, 1, 5), dt.date(2024, 1, 8), dt.date(2024, 1, 6)),
    "SECOND": _CLOCKS,
    "TIME": _CLOCKS + (dt.time(9, 30, 0, 250000), dt.time(10, 0, 0, 999000)),
    "TIMESTAMP": tuple(dt.datetime.combine(d, c) for d in (dt.date(2024, 1, 5),
                                                            dt.date(2024, 1, 8))
                       for c in _CLOCKS[:3]) + (dt.datetime(2024, 1, 5, 9, 30, 0, 123456),),
    "DATETIME": tuple(dt.datetime.combine(d, c, tzinfo=_UTC)
                      for d in (dt.date(2024, 1, 5), dt.date(2024, 1, 8)) for c in _CLOCKS[:3]),
    "BOOL": (True, False),
}


@dataclass
class TableSpec:
    """One table: columns ``(name, hfq type name)``, the partition scheme
    (``("compo", buckets)``: date x sym buckets, ``("date",)``, ``("hash", buckets)``), the
    rows (tuples in column order) and where the appends cut them."""

    name: str
    columns: list[tuple[str, str]]
    scheme: tuple[Any, ...]
    sort_by: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    cuts: list[int] = field(default_factory=list)

    @property
    def hfq_schema(self) -> schema.Schema:
        return schema.Schema([(n, schema.TYPES[t]) for n, t in self.columns])

    def kinds(self) -> dict[str, str]:
        return {n: KIND[t] for n, t in self.columns}

    def partition_by(self) -> Any:
        kind = self.scheme[0]
        if kind == "compo":
            return hfq.Compo(hfq.Value("date"), hfq.Hash("sym", self.scheme[1]))
        if kind == "date":
            return hfq.Value("date")
        return hfq.Hash("sym", self.scheme[1])

    def chunks(self) -> list[list[tuple[Any, ...]]]:
        bounds = [0, *self.cuts, len(self.rows)]
        return [self.rows[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


@dataclass
class Dataset:
    """The tables of one fuzzing round (``t`` and ``u``)."""

    seed: int
    tables: list[TableSpec]

    def table(self, name: str) -> TableSpec:
        return next(t for t in self.tables if t.name == name)


def _value(rng: random.Random, type_name: str, null_p: float, edge_p: float) -> Any:
    r = rng.random()
    if r < null_p:
        return None
    if r < null_p + edge_p:
        return rng.choice(EDGE_VALUES[type_name])
    return rng.choice(_ORDINARY[type_name])


def _table(rng: random.Random, name: str, n: int, extras: list[str], time_type: str,
           dates: list[dt.date], syms: list[str], scheme: tuple[Any, ...]) -> TableSpec:
    columns = [("id", "LONG"), ("date", "DATE"), ("sym", "SYMBOL"), ("time", time_type)]
    counts: dict[str, int] = {}
    for t in extras:
        k = counts.get(t, 0)
        counts[t] = k + 1
        columns.append((f"{name if name != 't' else ''}{_PREFIX[t]}{k}", t))
    null_p = rng.choice((0.0, 0.1, 0.2, 0.4))
    edge_p = rng.choice((0.1, 0.25, 0.5))
    ids = rng.sample(range(-n, 3 * n + 1), n) if n else []
    rows = []
    for i in range(n):
        row: list[Any] = [ids[i], rng.choice(dates), rng.choice(syms)]
        for _, t in columns[3:]:
            row.append(_value(rng, t, null_p, edge_p))
        rows.append(tuple(row))
    k = rng.choice((0, 0, 1, 2)) if n > 1 else 0
    cuts = sorted(rng.sample(range(1, n), min(k, n - 1))) if n > 1 else []
    sort_by = rng.choice((("sym", "time"), ("sym",), ("id",), ()))
    return TableSpec(name, columns, scheme, sort_by, rows, cuts)


def random_dataset(seed: int) -> Dataset:
    """The two tables of one round, from ``seed`` alone."""
    rng = random.Random(seed)
    dates = rng.sample(_DATES, rng.choice((1, 2, 3, 4)))
    syms = rng.sample(_SYMS, rng.choice((1, 2, 3, 5)))
    time_type = rng.choice(_TIME_TYPES)
    n = rng.choice((0, 1, 2, 5, 12, 20, 30, 40, 60))
    extras = [rng.choice(_EXTRA_TYPES) for _ in range(rng.randint(3, 8))]
    # at least one of each numeric kind, so every expression kind has columns
    for need in ("DOUBLE", "INT"):
        if not any(KIND[e] == KIND[need] for e in extras):
            extras.append(need)
    scheme = rng.choice((("compo", rng.randint(1, 4)), ("compo", 2), ("date",),
                         ("hash", rng.randint(1, 3))))
    t = _table(rng, "t", n, extras, time_type, dates, syms, scheme)
    shared = [e for e in extras if KIND[e] in ("int", "float", "str")]
    u_extras = rng.sample(shared, min(len(shared), 2)) + \
        [rng.choice(_EXTRA_TYPES) for _ in range(rng.randint(0, 2))]
    u_scheme = rng.choice((scheme, ("hash", 2), ("date",)))
    u = _table(rng, "u", rng.choice((0, 1, 3, 8, 15)), u_extras, time_type, dates, syms,
               u_scheme)
    seen: set[tuple[Any, Any]] = set()   # unique on (sym, time): ASOF has one answer
    kept = []
    for row in u.rows:
        key = (row[2], row[3])
        if row[3] is None or key not in seen:
            seen.add(key)
            kept.append(row)
    u.rows, u.cuts = kept, [c for c in u.cuts if c < len(kept)]
    return Dataset(seed, [t, u])


def to_arrow(spec: TableSpec) -> pa.Table:
    """The rows as an Arrow table in the table's hfq schema."""
    sch = spec.hfq_schema
    cols = list(zip(*spec.rows)) if spec.rows else [()] * len(spec.columns)
    arrays = []
    for (_, t), values in zip(spec.columns, cols):
        typ = schema.TYPES[t].arrow
        arrays.append(pa.array(list(values), pa.string() if pa.types.is_dictionary(typ)
                               else typ))
    return sch.conform(pa.Table.from_arrays(arrays, names=[n for n, _ in spec.columns]))


def load_hfq(db: hfq.Database, dataset: Dataset, *, replicas: int | None = None) -> None:
    """(Re)create each table of ``dataset`` in ``db`` and append its chunks."""
    for spec in dataset.tables:
        if spec.name in db.tables():
            db.drop_table(spec.name)
        table = db.create_table(spec.name, spec.hfq_schema, partition_by=spec.partition_by(),
                                sort_by=spec.sort_by, replicas=replicas)
        whole = to_arrow(spec)
        start = 0
        for chunk in spec.chunks():
            table.append(whole.slice(start, len(chunk)))
            start += len(chunk)


def widened(table: pa.Table) -> pa.Table:
    """SHORT and INT columns as BIGINT, FLOAT as DOUBLE: hfq computes in 64 bits (DuckDB's
    FLOAT arithmetic is 32-bit: ``f * 1.25`` overflows to inf at 3.4e38, where hfq's double
    does not; the open question Q1 of the findings)."""
    cols = []
    for f, col in zip(table.schema, table.columns):
        if pa.types.is_int16(f.type) or pa.types.is_int32(f.type):
            col = pc.cast(col, pa.int64())
        elif pa.types.is_float32(f.type):
            col = pc.cast(col, pa.float64())
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


def register(con: duckdb.DuckDBPyConnection, spec: TableSpec) -> None:
    """Register ``spec``'s rows in ``con`` as they are (no hfq in between), with its versions
    (``<name>_v<k>``: the first k appends): for the fuzzer's own tests, where DuckDB plays
    both sides."""
    whole = to_arrow(spec)
    con.register(spec.name, whole)
    start = 0
    con.register(f"{spec.name}_v0", whole.slice(0, 0))
    for k, chunk in enumerate(spec.chunks(), 1):
        start += len(chunk)
        con.register(f"{spec.name}_v{k}", whole.slice(0, start))


def load_duckdb(con: duckdb.DuckDBPyConnection, db: hfq.Database, dataset: Dataset,
                *, order: str = "stored") -> None:
    """Register in ``con`` the rows ``db`` holds for each table of ``dataset`` (see
    :func:`register_hfq_table`)."""
    load_duckdb_orders([con], db, dataset, orders=(order,))


#: the row orders the oracle holds each table in (:func:`register_hfq_table`): the first is
#: compared with, the others consulted when the answers differ
ORDERS = ("stored", "reversed", "shuffled", "descending0", "ascending0", "descending1",
          "ascending1", "descending2", "ascending2")

#: more orders, consulted when the answers differ on all of :data:`ORDERS` (``more`` of
#: :func:`sqlfuzz.differential.run_query`)
SHUFFLES = tuple(f"shuffled{k}" for k in range(1, 25))


def load_duckdb_orders(cons: list[duckdb.DuckDBPyConnection], db: hfq.Database,
                       dataset: Dataset, *, orders: tuple[str, ...] = ORDERS) -> None:
    """Register the rows ``db`` holds for each table of ``dataset`` in each of ``cons``, the
    i-th in ``orders[i]`` -- each table (and version) read from hfq once for all of them."""
    for spec in dataset.tables:
        read = _HfqRows(db, spec.name, versions=len(spec.chunks()))
        for con, order in zip(cons, orders):
            read.register(con, order=order, seed=dataset.seed)


def register_hfq_table(con: duckdb.DuckDBPyConnection, db: hfq.Database, name: str, *,
                       versions: int, order: str = "stored", seed: int = 0) -> None:
    """Register in ``con`` the rows table ``name`` of ``db`` holds, in ``order``: ``stored``
    (hfq's scan order), ``reversed``, ``shuffled``, or ``descending<k>``/``ascending<k>``:
    sorted by the table's k-th floating-point column (counting round; NULLs and NaN last).  A
    float answer that depends on the order of the rows is checked against several: a sum of
    DBL_MAX, DBL_MAX and -inf is NaN only when both DBL_MAX come first, which a sort by the
    column finds and a shuffle of many rows seldom does (fuzz seed 103, dataset 103535).
    Each version (one per append, 0 the empty table) is registered too, as ``<name>_v<k>``:
    the oracle of hfq's time travel."""
    _HfqRows(db, name, versions=versions).register(con, order=order, seed=seed)


class _HfqRows:
    """The rows of table ``name`` of ``db`` as hfq reads them back: every version and the
    whole table (widened to DuckDB's 64-bit types), read once."""

    def __init__(self, db: hfq.Database, name: str, *, versions: int) -> None:
        self.name = name
        self.versions = [widened(db[name].scan(version=k).to_arrow())
                         for k in range(versions + 1)]
        self.table = widened(db[name].to_arrow())

    def register(self, con: duckdb.DuckDBPyConnection, *, order: str, seed: int) -> None:
        for k, version in enumerate(self.versions):
            con.register(f"{self.name}_v{k}", version)
        table = self.table
        if order == "reversed" and table.num_rows:
            table = table.take(pa.array(range(table.num_rows - 1, -1, -1)))
        elif order.startswith("shuffled") and table.num_rows:   # shuffled, shuffled<k>
            idx = list(range(table.num_rows))
            k = order[len("shuffled"):]
            random.Random(seed if not k else seed * 1000 + int(k)).shuffle(idx)
            table = table.take(pa.array(idx))
        elif order.startswith(("descending", "ascending")) and table.num_rows:
            way = order.rstrip("0123456789")
            floats = [f.name for f in table.schema if pa.types.is_floating(f.type)]
            if floats:
                column = floats[int(order[len(way):]) % len(floats)]
                table = table.take(pc.sort_indices(table, [(column, way, "at_end")]))
        con.register(self.name, table)
