"""One fragment = one Arrow IPC file: sorted rows in record batches, encoded, compressed.

A partition is one or more fragments.  Encoding reports what the catalog records of a file: row
count, size, CRC-32 checksum and, per record batch, the min/max of the statistics columns (the
sort columns), which the planner uses to read only the batches a query can need, and the
batch's checksum.  This layer knows files, not catalog records: callers pass a file's name,
size and checksums (anything shaped like :class:`FileRecord`).

**Checksummed reads.**  Every read verifies the bytes it decodes before decoding them.  The
file is cut into its record-batch messages and its *frame* (everything else: magic, schema,
dictionaries, footer); each batch records its ``(offset, length)`` and the CRC-32 of the frame
followed by the batch.  A reader of some batches computes the frame's CRC once and continues it
over each batch it reads -- a point read checks only what it touches, a full read checks every
byte once.  Files recorded before batch checksums existed are checked against the whole-file
CRC-32.  A mismatch, a short file, a missing file or any decoder error is a
:class:`~hfq.errors.CorruptPartitionError` naming table, partition, file, node and batch, with
the original error chained.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from hfq import faults
from hfq.config import Settings
from hfq.errors import CorruptPartitionError
from hfq.storage import encoding
from hfq.storage.store import Store, temp_name

try:   # ISA-L's CRC-32: the same values as zlib's, ~5x faster (it keeps reads cheap)
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - isal is a dependency; zlib is the same function
    from zlib import crc32

__all__ = ["BatchRecord", "Encoded", "FileRecord", "check_bytes", "check_read", "load_file",
           "encode_fragment", "put_file", "read_fragment", "verify_file", "where"]

BatchStatsRaw = tuple[int, dict[str, "list[Any] | None"], tuple[int, int, int] | None]
"""One record batch as the storage layer reports it: rows, {column: [min, max, nulls]},
and its check ``(offset, length, crc32)`` (None when the file's layout was not as expected)."""

#: what a decoder raises on bytes that are not a valid file (never let out raw)
DECODE_ERRORS: tuple[type[BaseException], ...] = (pa.ArrowException, OSError, ValueError,
                                                  IndexError, KeyError)


class BatchRecord(Protocol):
    """What a reader needs of one recorded batch (:class:`hfq.catalog.records.BatchStats`)."""

    @property
    def span(self) -> tuple[int, int] | None: ...

    @property
    def crc32(self) -> int | None: ...


class FileRecord(Protocol):
    """What a reader needs of a recorded file (:class:`hfq.catalog.records.Fragment`)."""

    @property
    def file(self) -> str: ...

    @property
    def bytes(self) -> int: ...

    @property
    def crc32(self) -> int: ...

    @property
    def batches(self) -> Sequence[BatchRecord]: ...


class Encoded(NamedTuple):
    """An encoded fragment: the file's bytes and what the catalog records of them."""

    data: pa.Buffer
    rows: int
    size: int
    crc32: int
    batches: list[BatchStatsRaw]


def encode_fragment(table: pa.Table, *, settings: Settings,
                    stats_columns: Sequence[str] = (),
                    hints: dict[str, str] | None = None) -> Encoded:
    """Encode ``table`` (already sorted) as IPC file bytes, with its size, CRC-32 and, per
    record batch, statistics and checksum.

    Encoding once and copying the same bytes to every replica keeps the replicas identical:
    one size and one set of checksums in the catalog check them all.  ``hints``: the
    encodings of earlier files of the same write (see :func:`hfq.storage.encoding.encode`).
    """
    codec = None if settings.compression == "none" else settings.compression
    physical = encoding.encode(table, codec, settings.batch_rows, hints)
    compression = None if codec is None else \
        encoding.shared_codec(codec, settings.compression_level)
    options = ipc.IpcWriteOptions(compression=compression, use_threads=False)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, physical.schema, options=options) as writer:
        writer.write_table(physical, max_chunksize=settings.batch_rows)
    data = sink.getvalue()
    stats = _batch_stats(table, settings.batch_rows, stats_columns)
    checks: Sequence[tuple[int, int, int] | None] = _batch_checks(data)
    if len(checks) != len(stats):   # e.g. an empty table writes no batch: whole-file CRC
        checks = [None] * len(stats)
    return Encoded(data, table.num_rows, data.size, crc32(data),
                   [(rows, cols, check) for (rows, cols), check in zip(stats, checks)])


def _batch_checks(data: pa.Buffer) -> list[tuple[int, int, int]]:
    """``(offset, length, crc32)`` of each record-batch message of an IPC file: the CRC-32
    of the frame (the bytes outside every record-batch message) followed by the batch."""
    spans = []
    source = pa.BufferReader(data)
    source.seek(8)   # the magic, padded
    while True:
        start = source.tell()
        try:
            message = ipc.read_message(source)
        except (EOFError, pa.ArrowInvalid, OSError):   # end-of-stream: the footer follows
            break
        if message.type == "record batch":
            spans.append((start, source.tell() - start))
    frame = _frame_crc(data, spans)
    return [(off, n, crc32(data.slice(off, n), frame)) for off, n in spans]


def _frame_crc(data: pa.Buffer, spans: Sequence[tuple[int, int]]) -> int:
    """CRC-32 of the bytes of ``data`` outside ``spans``, in file order."""
    crc, pos = 0, 0
    for off, n in sorted(spans):
        crc = crc32(data.slice(pos, off - pos), crc)
        pos = off + n
    return crc32(data.slice(pos), crc)


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


def where(file: str, node: str | None = None, batch: int | None = None) -> str:
    """``table 't', partition 'p', file 'f' on node n, record batch b`` for messages (the
    table and partition come from the file's path, ``<table>/data/<partition>/<name>``)."""
    parts = file.split("/")
    out = ""
    if len(parts) >= 4 and parts[1] == "data":
        out = f"table {parts[0]!r}, partition {'/'.join(parts[2:-1])!r}, "
    out += f"file {file!r}"
    if node:
        out += f" on node {node}"
    if batch is not None:
        out += f", record batch {batch}"
    return out


def _corrupt(what: str, file: str, node: str | None, batch: int | None = None
             ) -> CorruptPartitionError:
    return CorruptPartitionError(f"{where(file, node, batch)}: {what}", file=file, node=node,
                                 batch=batch)


def read_fragment(store: Store | None, record: FileRecord, logical: pa.Schema, *,
                  columns: Sequence[str] | None = None,
                  batches: Iterable[int] | None = None,
                  data: pa.Buffer | None = None, node: str | None = None) -> pa.Table:
    """Read a fragment file (optionally only some columns and some record batches) as
    logical Arrow, verifying every byte it decodes against ``record``'s checksums.

    ``data``: the file's bytes, fetched from another node (then ``store`` is not used).
    ``node``: the node whose copy this is, for error messages.  Raises
    :class:`~hfq.errors.CorruptPartitionError` on a missing, short, damaged or undecodable
    file.
    """
    names = logical.names if columns is None else list(columns)
    file = record.file
    wanted = None if batches is None else list(batches)
    if data is not None:
        buffer = data
    elif store is None:
        raise ValueError("read_fragment needs a store or the file's bytes")
    else:
        buffer = load_file(store, file, node)
    check_read(buffer, record, wanted, node=node)
    try:
        # files are written in schema order, so logical positions are physical positions
        index = sorted(logical.get_field_index(n) for n in names)
        options = ipc.IpcReadOptions(included_fields=index, use_threads=False)
        reader = ipc.open_file(pa.BufferReader(buffer), options=options)
        if record.batches and reader.num_record_batches != len(record.batches) and \
                record.batches[0].span is not None:
            raise _corrupt(f"has {reader.num_record_batches} record batches, the catalog "
                           f"recorded {len(record.batches)}", file, node)
        if wanted is None:
            table = reader.read_all()
        else:
            table = pa.Table.from_batches([reader.get_batch(i) for i in wanted],
                                          schema=reader.schema)
        # the reader returns the included fields in file order, not in the order asked for
        decoded = encoding.decode(table, pa.schema([logical.field(n)
                                                    for n in table.column_names]))
    except CorruptPartitionError:
        raise
    except DECODE_ERRORS as exc:
        raise _corrupt(f"cannot be decoded ({type(exc).__name__}: {exc})", file,
                       node) from exc
    return decoded if decoded.column_names == names else decoded.select(names)


def load_file(store: Store, file: str, node: str | None = None) -> pa.Buffer:
    """The file's bytes: memory-mapped (no copy, nothing read until touched) when local."""
    try:
        if store.local:
            with store.open_arrow(file) as source:
                return source.read_buffer()
        return pa.py_buffer(store.read_bytes(file))
    except FileNotFoundError as exc:
        raise _corrupt(f"is missing from {store.url}", file, node) from exc
    except OSError as exc:
        raise _corrupt(f"cannot be read ({type(exc).__name__}: {exc})", file, node) from exc


def check_read(data: pa.Buffer, record: FileRecord, batches: Sequence[int] | None, *,
               node: str | None = None) -> None:
    """Verify the bytes a read of ``batches`` (None: all) decodes: the frame and those
    batches against their recorded CRC-32s, or the whole file when batches have none."""
    file = record.file
    if data.size != record.bytes:
        raise _corrupt(f"is {data.size} bytes, the catalog recorded {record.bytes} "
                       "(truncated or overwritten)", file, node)
    recorded = record.batches
    if not recorded or any(b.span is None or b.crc32 is None for b in recorded):
        crc = crc32(data)
        if crc != record.crc32:
            raise _corrupt(f"has CRC-32 {crc:08x}, the catalog recorded {record.crc32:08x}",
                           file, node)
        return
    spans = [b.span for b in recorded]
    frame = _frame_crc(data, spans)   # type: ignore[arg-type]   # checked just above
    for i in range(len(recorded)) if batches is None else batches:
        if not 0 <= i < len(recorded):
            raise _corrupt(f"has no record batch {i} (the catalog recorded "
                           f"{len(recorded)})", file, node)
        off, n = spans[i]   # type: ignore[misc]
        crc = crc32(data.slice(off, n), frame)
        if crc != recorded[i].crc32:
            raise _corrupt(f"bytes {off}..{off + n} (or the file's schema, dictionaries or "
                           f"footer) have CRC-32 {crc:08x}, the catalog recorded "
                           f"{recorded[i].crc32:08x}", file, node, i)
        faults.point("read.batch.after_verify")


def check_bytes(data: pa.Buffer | bytes, file: str, size: int, checksum: int, *,
                node: str | None = None) -> None:
    """Raise :class:`CorruptPartitionError` when ``data`` is not the file the catalog
    recorded (``size`` bytes with CRC-32 ``checksum``)."""
    n = data.size if isinstance(data, pa.Buffer) else len(data)
    crc = crc32(data)
    if n != size or crc != checksum:
        raise _corrupt(f"is corrupt: {n} bytes with CRC-32 {crc:08x}, the catalog recorded "
                       f"{size} bytes with {checksum:08x}", file, node)


def verify_file(store: Store, file: str, size: int, checksum: int, *,
                node: str | None = None) -> None:
    """Raise :class:`CorruptPartitionError` when the stored file differs from the catalog's
    record (or is missing, or cannot be read)."""
    check_bytes(load_file(store, file, node), file, size, checksum, node=node)


def _batch_stats(table: pa.Table, batch_rows: int, columns: Sequence[str]
                 ) -> list[tuple[int, dict[str, list[Any] | None]]]:
    """Per record batch: rows and ``{column: [min, max, nulls]}`` as JSON-safe values."""
    out: list[tuple[int, dict[str, list[Any] | None]]] = []
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
