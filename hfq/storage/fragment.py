"""One fragment = one Arrow IPC file: sorted rows in record batches, encoded, compressed.

A partition is one or more fragments.  Writing returns the fragment's catalog entry: its file,
row count, size, CRC-32 checksum and per-batch min/max of the statistics columns (the sort
columns), which the planner uses to read only the batches a query can need.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from hfq.config import Settings
from hfq.errors import CorruptPartitionError
from hfq.storage import encoding
from hfq.storage.store import Store, temp_name

__all__ = ["encode_fragment", "put_file", "read_fragment", "verify_fragment", "write_fragment"]


def encode_fragment(table: pa.Table, *, settings: Settings,
                    stats_columns: Sequence[str] = ()) -> tuple[pa.Buffer, dict]:
    """Encode ``table`` (already sorted) as IPC file bytes and its catalog entry (no ``file``).

    Encoding once and copying the same bytes to every replica keeps the replicas identical:
    one size and one CRC-32 in the catalog check them all.
    """
    codec = None if settings.compression == "none" else settings.compression
    physical = encoding.encode(table, codec, settings.batch_rows)
    compression = None if codec is None else \
        encoding.shared_codec(codec, settings.compression_level)
    options = ipc.IpcWriteOptions(compression=compression, use_threads=False)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, physical.schema, options=options) as writer:
        writer.write_table(physical, max_chunksize=settings.batch_rows)
    data = sink.getvalue()
    return data, {
        "rows": table.num_rows,
        "bytes": data.size,
        "crc32": zlib.crc32(data),
        "batches": _batch_stats(table, settings.batch_rows, stats_columns),
    }


def put_file(store: Store, rel: str, data: pa.Buffer | bytes, *, sync: bool = False) -> None:
    """Write ``data`` to ``rel`` atomically (a temporary name, then a rename)."""
    tmp = temp_name(rel)
    store.makedirs(rel.rsplit("/", 1)[0])
    if not store.local and isinstance(data, pa.Buffer):
        data = data.to_pybytes()
    store.write_bytes(tmp, data, sync=sync)
    store.rename(tmp, rel)
    if sync:
        store.fsync(rel.rsplit("/", 1)[0])


def write_fragment(store: Store, rel: str, table: pa.Table, *, settings: Settings,
                   stats_columns: Sequence[str] = (), sync: bool = False) -> dict:
    """Write ``table`` (already sorted) to ``rel`` atomically and return its catalog entry."""
    data, entry = encode_fragment(table, settings=settings, stats_columns=stats_columns)
    put_file(store, rel, data, sync=sync)
    return {"file": rel, **entry}


def read_fragment(store: Store, fragment: dict, logical: pa.Schema, *,
                  columns: Sequence[str] | None = None,
                  batches: Iterable[int] | None = None,
                  data: pa.Buffer | None = None) -> pa.Table:
    """Read a fragment (optionally only some columns and some record batches) as logical Arrow.

    ``data``: the file's bytes, fetched from another node (then ``store`` is not used).
    """
    names = logical.names if columns is None else list(columns)
    try:
        source = store.open_arrow(fragment["file"]) if data is None else pa.BufferReader(data)
    except FileNotFoundError:
        raise CorruptPartitionError(
            f"partition file {fragment['file']!r} is missing from {store.url}") from None
    with source:
        # files are written in schema order, so logical positions are physical positions
        index = sorted(logical.get_field_index(n) for n in names)
        options = ipc.IpcReadOptions(included_fields=index, use_threads=False)
        reader = ipc.open_file(source, options=options)
        if batches is None:
            table = reader.read_all()
        else:
            table = pa.Table.from_batches([reader.get_batch(i) for i in batches],
                                          schema=reader.schema)
    # the reader returns the included fields in file order, not in the order asked for
    decoded = encoding.decode(table, pa.schema([logical.field(n) for n in table.column_names]))
    return decoded if decoded.column_names == names else decoded.select(names)


def verify_fragment(store: Store, fragment: dict) -> None:
    """Raise :class:`CorruptPartitionError` when the file's bytes differ from the catalog's."""
    try:
        data = store.read_bytes(fragment["file"])
    except FileNotFoundError:
        raise CorruptPartitionError(f"partition file {fragment['file']!r} is missing") from None
    if len(data) != fragment["bytes"] or zlib.crc32(data) != fragment["crc32"]:
        raise CorruptPartitionError(
            f"partition file {fragment['file']!r} is corrupt: {len(data)} bytes with CRC-32 "
            f"{zlib.crc32(data):08x}, the catalog recorded {fragment['bytes']} bytes with "
            f"{fragment['crc32']:08x}")


def _batch_stats(table: pa.Table, batch_rows: int, columns: Sequence[str]) -> list[dict]:
    """Per record batch: rows and ``{column: [min, max]}`` as JSON-safe values."""
    out = []
    for start in range(0, max(table.num_rows, 1), batch_rows):
        piece = table.slice(start, batch_rows)
        stats = {}
        for name in columns:
            stats[name] = _min_max(piece.column(name))
        out.append({"rows": piece.num_rows, "stats": stats})
    return out


def _min_max(column: pa.ChunkedArray) -> list | None:
    """[min, max, null count] of the non-null values (None when all are null)."""
    nulls = column.null_count
    if pa.types.is_dictionary(column.type):
        column = pa.chunked_array([c.dictionary.take(pc.unique(c.indices).drop_null())
                                   for c in column.chunks], type=column.type.value_type)
    if len(column) == 0 or column.null_count == len(column):
        return None
    result = pc.min_max(column)
    return [_json(result["min"].as_py()), _json(result["max"].as_py()), nulls]


def _json(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
