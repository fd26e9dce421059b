"""One fragment = one Arrow IPC file: sorted rows in record batches, encoded, compressed.

A partition is one or more fragments.  Encoding reports what the catalog records of a file: row
count, size, CRC-32 checksum and per-batch min/max of the statistics columns (the sort
columns), which the planner uses to read only the batches a query can need.  This layer knows
files, not catalog records: callers pass a file's name, size and checksum.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from hfq.config import Settings
from hfq.errors import CorruptPartitionError
from hfq.storage import encoding
from hfq.storage.store import Store, temp_name

__all__ = ["Encoded", "check_bytes", "encode_fragment", "put_file", "read_fragment",
           "verify_file"]

BatchStatsRaw = tuple[int, dict[str, "list[Any] | None"]]
"""One record batch as the storage layer reports it: rows, {column: [min, max, nulls]}."""


class Encoded(NamedTuple):
    """An encoded fragment: the file's bytes and what the catalog records of them."""

    data: pa.Buffer
    rows: int
    size: int
    crc32: int
    batches: list[BatchStatsRaw]


def encode_fragment(table: pa.Table, *, settings: Settings,
                    stats_columns: Sequence[str] = ()) -> Encoded:
    """Encode ``table`` (already sorted) as IPC file bytes, with its size, CRC-32 and
    per-batch statistics.

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
    return Encoded(data, table.num_rows, data.size, zlib.crc32(data),
                   _batch_stats(table, settings.batch_rows, stats_columns))


def put_file(store: Store, rel: str, data: pa.Buffer | bytes, *, sync: bool = False) -> None:
    """Write ``data`` to ``rel`` atomically (a temporary name, then a rename)."""
    tmp = temp_name(rel)
    store.makedirs(rel.rsplit("/", 1)[0])
    if not store.local and isinstance(data, pa.Buffer):
        data = data.to_pybytes()
    try:
        store.write_bytes(tmp, data, sync=sync)
        store.rename(tmp, rel)
    except BaseException:
        store.remove(tmp)
        raise
    if sync:
        store.fsync(rel.rsplit("/", 1)[0])


def read_fragment(store: Store | None, file: str, logical: pa.Schema, *,
                  columns: Sequence[str] | None = None,
                  batches: Iterable[int] | None = None,
                  data: pa.Buffer | None = None) -> pa.Table:
    """Read a fragment file (optionally only some columns and some record batches) as
    logical Arrow.

    ``data``: the file's bytes, fetched from another node (then ``store`` is not used).
    """
    names = logical.names if columns is None else list(columns)
    if data is not None:
        source: Any = pa.BufferReader(data)
    elif store is None:
        raise ValueError("read_fragment needs a store or the file's bytes")
    else:
        try:
            source = store.open_arrow(file)
        except FileNotFoundError:
            raise CorruptPartitionError(
                f"partition file {file!r} is missing from {store.url}") from None
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


def check_bytes(data: pa.Buffer | bytes, file: str, size: int, crc32: int) -> None:
    """Raise :class:`CorruptPartitionError` when ``data`` is not the file the catalog
    recorded (``size`` bytes with CRC-32 ``crc32``)."""
    n = data.size if isinstance(data, pa.Buffer) else len(data)
    crc = zlib.crc32(data)
    if n != size or crc != crc32:
        raise CorruptPartitionError(
            f"partition file {file!r} is corrupt: {n} bytes with CRC-32 "
            f"{crc:08x}, the catalog recorded {size} bytes with {crc32:08x}")


def verify_file(store: Store, file: str, size: int, crc32: int) -> None:
    """Raise :class:`CorruptPartitionError` when the stored file differs from the catalog's
    record (or is missing)."""
    try:
        data = store.read_bytes(file)
    except FileNotFoundError:
        raise CorruptPartitionError(f"partition file {file!r} is missing") from None
    check_bytes(data, file, size, crc32)


def _batch_stats(table: pa.Table, batch_rows: int, columns: Sequence[str]) -> list[BatchStatsRaw]:
    """Per record batch: rows and ``{column: [min, max, nulls]}`` as JSON-safe values."""
    out: list[BatchStatsRaw] = []
    for start in range(0, max(table.num_rows, 1), batch_rows):
        piece = table.slice(start, batch_rows)
        stats = {name: _min_max(piece.column(name)) for name in columns}
        out.append((piece.num_rows, stats))
    return out


def _min_max(column: pa.ChunkedArray) -> list[Any] | None:
    """[min, max, null count] of the non-null values (None when all are null)."""
    nulls = column.null_count
    if pa.types.is_dictionary(column.type):
        column = pa.chunked_array([c.dictionary.take(pc.unique(c.indices).drop_null())
                                   for c in column.chunks], type=column.type.value_type)
    if len(column) == 0 or column.null_count == len(column):
        return None
    result = pc.min_max(column)
    return [_json(result["min"].as_py()), _json(result["max"].as_py()), nulls]


def _json(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
