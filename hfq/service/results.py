"""Results on the wire: one Arrow schema per result, record batches of a bounded size.

What goes over Flight is plain Arrow every client reads: a query's columns as polars types
them, large strings and binaries as ordinary ones, and categoricals (hfq's SYMBOL and CHAR
columns) as dictionaries with ``int32`` indices over ``string`` values -- what travels is the
indices and each batch's small dictionary, not every row's text (decoding them to strings
cost the day fetch a quarter more bytes and a pass over every row).  The schema is known when
the query is compiled (it is what ``GetFlightInfo`` promises), and every piece of the answer
is brought to it as it streams (:func:`to_wire`: indices reinterpreted, not copied).  Batches
are cut to about ``batch_bytes`` so that no gRPC message grows past what clients accept.

Dictionaries may differ from one batch to the next (each partition has its own): a batch
with dictionary columns travels with its dictionaries (:func:`payloads`), a replacement of
the previous ones, as Arrow IPC streams allow.

Examples
--------
>>> import polars as pl
>>> wire_schema(pl.Schema({"symbol": pl.Categorical(), "bid": pl.Float64()}))
symbol: dictionary<values=string, indices=int32, ordered=0>
bid: double
>>> t = pa.table({"x": list(range(10))})
>>> [b.num_rows for b in batches(t, batch_bytes=32)]
[4, 4, 2]
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl
import pyarrow as pa
import pyarrow.flight as flight

__all__ = ["batches", "has_dictionaries", "payloads", "to_wire", "wire_schema", "wire_type"]


def wire_type(t: pa.DataType, *, nested: bool = False) -> pa.DataType:
    """The type a column of Arrow type ``t`` travels as (``nested``: inside a list, where a
    dictionary travels as its values).

    Examples
    --------
    >>> wire_type(pa.dictionary(pa.uint32(), pa.large_string()))
    DictionaryType(dictionary<values=string, indices=int32, ordered=0>)
    >>> wire_type(pa.large_list(pa.dictionary(pa.uint32(), pa.large_string())))
    ListType(list<item: string>)
    """
    if pa.types.is_dictionary(t):
        values = wire_type(t.value_type, nested=True)
        return values if nested else pa.dictionary(pa.int32(), values)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(wire_type(t.value_type, nested=True))
    return t


def wire_schema(schema: pl.Schema) -> pa.Schema:
    """The Arrow schema of a result whose polars schema is ``schema``."""
    arrow = pl.DataFrame(schema=schema).to_arrow().schema
    return pa.schema([pa.field(f.name, wire_type(f.type)) for f in arrow])


def has_dictionaries(schema: pa.Schema) -> bool:
    """Does a result of ``schema`` carry dictionaries (sent with each batch)?"""
    return any(pa.types.is_dictionary(f.type) for f in schema)


def _dictionary(chunk: pa.Array, to: pa.DictionaryType) -> pa.Array:
    """A dictionary chunk as ``to``: uint32 indices reinterpreted as int32 (no copy: a
    dictionary never holds 2**31 values), others cast; the (small) dictionary cast."""
    if not isinstance(chunk, pa.DictionaryArray):
        return chunk.cast(to)
    indices = chunk.indices
    if indices.type == pa.uint32() and to.index_type == pa.int32():
        indices = indices.view(pa.int32())
    else:
        indices = indices.cast(to.index_type)
    return pa.DictionaryArray.from_arrays(indices, chunk.dictionary.cast(to.value_type))


def to_wire(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (columns named as ``schema``'s, in its order) in the types of ``schema``.

    Examples
    --------
    >>> t = pa.table({"s": pa.array(["a", "b", "a"]).dictionary_encode().cast(
    ...     pa.dictionary(pa.uint32(), pa.large_string())), "x": pa.array([1, 2, 3])})
    >>> w = to_wire(t, pa.schema([("s", pa.dictionary(pa.int32(), pa.string())),
    ...                           ("x", pa.int64())]))
    >>> w.schema.field("s").type, w.column("s").to_pylist()
    (DictionaryType(dictionary<values=string, indices=int32, ordered=0>), ['a', 'b', 'a'])
    """
    if table.schema.names != schema.names:
        raise ValueError(f"columns {table.schema.names} are not the promised {schema.names}")
    columns = []
    for field, column in zip(schema, table.columns, strict=True):
        if column.type == field.type:
            pass
        elif pa.types.is_dictionary(field.type):
            column = pa.chunked_array([_dictionary(c, field.type) for c in column.chunks],
                                      field.type)
        else:
            column = column.cast(field.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def batches(table: pa.Table, *, batch_bytes: int = 4 << 20) -> Iterator[pa.RecordBatch]:
    """``table``'s rows as record batches of about ``batch_bytes`` each (at least one row)."""
    if table.num_rows == 0:
        return
    per_row = max(1, table.nbytes // table.num_rows)
    rows = max(1, batch_bytes // per_row)
    yield from table.to_batches(max_chunksize=rows)


def payloads(batch: pa.RecordBatch) -> pa.RecordBatch | flight.RecordBatchStream:
    """What a ``GeneratorStream`` yields to send ``batch``: the batch itself, or -- when it
    has dictionary columns -- a one-batch stream, which sends its dictionaries first (a
    ``GeneratorStream`` sends a bare batch's indices without them)."""
    if not has_dictionaries(batch.schema):
        return batch
    return flight.RecordBatchStream(pa.Table.from_batches([batch]))

