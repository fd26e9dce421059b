"""Flight SQL's metadata calls, answered for one user: catalogs, schemas, tables (with
their columns), table types, server info, keys.

What a user may browse is what it may read: a table without any of its grants is not
listed, a masked column not shown, ``hfq_audit`` listed only to those who may read it.  The
tables are in one catalog (``hfq``) and one schema (``main``); hfq has no keys.

Examples
--------
>>> catalogs().to_pylist()
[{'catalog_name': 'hfq'}]
>>> [r["table_type"] for r in table_types().to_pylist()]
['SYSTEM TABLE', 'TABLE']
>>> sql_info([0, 4]).column("info_name").to_pylist()
[0, 4]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import pyarrow as pa

import hfq
from hfq.service.state import SYSTEM_TABLES

__all__ = ["CATALOG", "SCHEMA", "catalogs", "db_schemas", "empty_keys", "sql_info",
           "table_types", "tables"]

CATALOG = "hfq"
SCHEMA = "main"

_CATALOGS = pa.schema([pa.field("catalog_name", pa.string(), nullable=False)])
_SCHEMAS = pa.schema([pa.field("catalog_name", pa.string()),
                      pa.field("db_schema_name", pa.string(), nullable=False)])
_TABLES = pa.schema([pa.field("catalog_name", pa.string()),
                     pa.field("db_schema_name", pa.string()),
                     pa.field("table_name", pa.string(), nullable=False),
                     pa.field("table_type", pa.string(), nullable=False)])
_TABLES_WITH_SCHEMA = _TABLES.append(pa.field("table_schema", pa.binary(), nullable=False))
_TYPES = pa.schema([pa.field("table_type", pa.string(), nullable=False)])
_KEYS = pa.schema([pa.field("catalog_name", pa.string()), pa.field("db_schema_name", pa.string()),
                   pa.field("table_name", pa.string(), nullable=False),
                   pa.field("column_name", pa.string(), nullable=False),
                   pa.field("key_name", pa.string()),
                   pa.field("key_sequence", pa.int32(), nullable=False)])
_FOREIGN = pa.schema(
    [pa.field(n, pa.string(), nullable=n in ("pk_catalog_name", "pk_db_schema_name",
                                               "fk_catalog_name", "fk_db_schema_name",
                                               "fk_key_name", "pk_key_name"))
     for n in ("pk_catalog_name", "pk_db_schema_name", "pk_table_name", "pk_column_name",
               "fk_catalog_name", "fk_db_schema_name", "fk_table_name", "fk_column_name")] +
    [pa.field("key_sequence", pa.int32(), nullable=False), pa.field("fk_key_name", pa.string()),
     pa.field("pk_key_name", pa.string()), pa.field("update_rule", pa.uint8(), nullable=False),
     pa.field("delete_rule", pa.uint8(), nullable=False)])


def _like(pattern: str | None) -> Callable[[str], bool]:
    """SQL LIKE (``%``, ``_``; ``\\`` escapes) as a test; None matches everything."""
    if pattern is None:
        return lambda name: True
    out, escaped = [], False
    for ch in pattern:
        if escaped:
            out.append(re.escape(ch))
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    rx = re.compile("".join(out), re.S)
    return lambda name: rx.fullmatch(name) is not None


def _catalog_ok(catalog: str | None) -> bool:
    return catalog is None or catalog == CATALOG


def catalogs() -> pa.Table:
    return pa.table({"catalog_name": [CATALOG]}, schema=_CATALOGS)


def db_schemas(catalog: str | None = None, pattern: str | None = None) -> pa.Table:
    rows = [SCHEMA] if _catalog_ok(catalog) and _like(pattern)(SCHEMA) else []
    return pa.table({"catalog_name": [CATALOG] * len(rows), "db_schema_name": rows},
                    schema=_SCHEMAS)


def table_types() -> pa.Table:
    return pa.table({"table_type": ["SYSTEM TABLE", "TABLE"]}, schema=_TYPES)


def tables(names: Iterable[str], schema_of: Callable[[str], pa.Schema], *,
           catalog: str | None = None, schema_pattern: str | None = None,
           table_pattern: str | None = None, types: Sequence[str] = (),
           include_schema: bool = False) -> pa.Table:
    """The tables of ``names`` (those the user may know of) matching the filters;
    ``schema_of(name)``: the columns the user may see, for ``include_schema``."""
    match = _like(table_pattern)
    ok = _catalog_ok(catalog) and _like(schema_pattern)(SCHEMA)
    rows = []
    for name in sorted(names):
        kind = "SYSTEM TABLE" if name in SYSTEM_TABLES else "TABLE"
        if ok and match(name) and (not types or kind in types):
            rows.append((name, kind))
    cols = {"catalog_name": [CATALOG] * len(rows), "db_schema_name": [SCHEMA] * len(rows),
            "table_name": [n for n, _ in rows], "table_type": [k for _, k in rows]}
    if not include_schema:
        return pa.table(cols, schema=_TABLES)
    cols["table_schema"] = [schema_of(n).serialize().to_pybytes() for n, _ in rows]
    return pa.table(cols, schema=_TABLES_WITH_SCHEMA)


def empty_keys(foreign: bool) -> pa.Table:
    """Primary keys (or imported / exported / cross-reference keys): hfq has none."""
    return (_FOREIGN if foreign else _KEYS).empty_table()


# -- GetSqlInfo -----------------------------------------------------------------------------
_INFO_TYPE = pa.dense_union([
    pa.field("string_value", pa.string()), pa.field("bool_value", pa.bool_()),
    pa.field("bigint_value", pa.int64()), pa.field("int32_bitmask", pa.int32()),
    pa.field("string_list", pa.list_(pa.string())),
    pa.field("int32_to_int32_list_map", pa.map_(pa.int32(), pa.list_(pa.int32())))])
_INFO = pa.schema([pa.field("info_name", pa.uint32(), nullable=False),
                   pa.field("value", _INFO_TYPE, nullable=False)])

_SERVER_INFO: dict[int, str | bool | int] = {
    0: "hfq",                      # FLIGHT_SQL_SERVER_NAME
    1: hfq.__version__,            # FLIGHT_SQL_SERVER_VERSION
    2: pa.__version__,             # FLIGHT_SQL_SERVER_ARROW_VERSION
    3: False,                      # FLIGHT_SQL_SERVER_READ_ONLY (bulk ingest appends)
    4: True,                       # FLIGHT_SQL_SERVER_SQL
    5: False,                      # FLIGHT_SQL_SERVER_SUBSTRAIT
    8: 0,                          # FLIGHT_SQL_SERVER_TRANSACTION: none
    9: True,                       # FLIGHT_SQL_SERVER_CANCEL
    100: 0,                        # FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT (ms; 0: none)
    101: 0,                        # FLIGHT_SQL_SERVER_TRANSACTION_TIMEOUT
    500: False, 501: False, 502: False,   # SQL_DDL_CATALOG / SCHEMA / TABLE
    503: 1,                        # SQL_IDENTIFIER_CASE: case insensitive
    504: '"',                      # SQL_IDENTIFIER_QUOTE_CHAR
    505: 1,                        # SQL_QUOTED_IDENTIFIER_CASE
    506: False,                    # SQL_ALL_TABLES_ARE_SELECTABLE (grants decide)
    507: 3,                        # SQL_NULL_ORDERING: NULLs at the end
    531: "",                       # SQL_CATALOG_TERM: none to use in SQL
}
_INT32 = {8, 100, 101, 503, 505, 507}


def sql_info(wanted: Sequence[int] = ()) -> pa.Table:
    """Server information ``wanted`` (empty: all this server has), in the dense union
    Flight SQL specifies."""
    names = [i for i in (wanted or sorted(_SERVER_INFO)) if i in _SERVER_INFO]
    children: list[list] = [[] for _ in range(6)]   # one list of values per union member
    codes, offsets = [], []
    for i in names:
        v = _SERVER_INFO[i]
        code = 1 if isinstance(v, bool) else (3 if i in _INT32 else 2) if isinstance(v, int) \
            else 0
        codes.append(code)
        offsets.append(len(children[code]))
        children[code].append(v)
    arrays = [pa.array(values, f.type) for values, f in zip(children, _INFO_TYPE)]
    value = pa.UnionArray.from_dense(pa.array(codes, pa.int8()), pa.array(offsets, pa.int32()),
                                     arrays, [f.name for f in _INFO_TYPE], list(range(6)))
    return pa.Table.from_arrays([pa.array(names, pa.uint32()), value], schema=_INFO)
