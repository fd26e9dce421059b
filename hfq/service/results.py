"""Results on the wire: one Arrow schema per result, record batches of a bounded size.

What goes over Flight is plain Arrow every client reads: a query's columns as polars types
them, categoricals (hfq's SYMBOL and CHAR columns) as strings, large strings and binaries
as ordinary ones; the schema is known when the query is compiled (it is what
``GetFlightInfo`` promises), and every piece of the answer is cast to it as it streams.
Batches are cut to about ``batch_bytes`` so that no gRPC message grows past what clients
accept.

Examples
--------
>>> import polars as pl
>>> wire_schema(pl.Schema({"symbol": pl.Categorical(), "bid": pl.Float64()}))
symbol: string
bid: double
>>> t = pa.table({"x": list(range(10))})
>>> [b.num_rows for b in batches(t, batch_bytes=32)]
[4, 4, 2]
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl
import pyarrow as pa

__all__ = ["batches", "wire_schema", "wire_type"]


def wire_type(t: pa.DataType) -> pa.DataType:
    """The type a column of Arrow type ``t`` travels as."""
    if pa.types.is_dictionary(t):
        return wire_type(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(wire_type(t.value_type))
    return t


def wire_schema(schema: pl.Schema) -> pa.Schema:
    """The Arrow schema of a result whose polars schema is ``schema``."""
    arrow = pl.DataFrame(schema=schema).to_arrow().schema
    return pa.schema([pa.field(f.name, wire_type(f.type)) for f in arrow])


def batches(table: pa.Table, *, batch_bytes: int = 4 << 20) -> Iterator[pa.RecordBatch]:
    """``table``'s rows as record batches of about ``batch_bytes`` each (at least one row)."""
    if table.num_rows == 0:
        return
    per_row = max(1, table.nbytes // table.num_rows)
    rows = max(1, batch_bytes // per_row)
    yield from table.to_batches(max_chunksize=rows)
