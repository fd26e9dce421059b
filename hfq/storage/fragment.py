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

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from hfq import faults
from hfq.config import Settings
from hfq.errors import CorruptPartitionError
from hfq.storage import encoding, light
from hfq.storage.store import Store, temp_name

try:   # ISA-L's CRC-32: the same values as zlib's, ~5x faster (it keeps reads cheap)
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - isal is a dependency; zlib is the same function
    from zlib import crc32

__all__ = ["BatchRecord", "Blobs", "Encoded", "FileRecord", "check_bytes", "check_read",
           "load_file", "stored_column",
           "encode_fragment", "prepare_fragments", "put_file", "read_fragment",
           "read_fragment_pieces", "verify_file",
           "where"]

BatchStatsRaw = tuple[int, dict[str, "list[Any] | None"], tuple[int, int, int] | None]
"""One record batch as the storage layer reports it: rows, {column: [min, max, nulls]},
and its check ``(offset, length, crc32)`` (None when the file's layout was not as expected)."""

#: what a decoder raises on bytes that are not a valid file (never let out raw)
DECODE_ERRORS: tuple[type[BaseException], ...] = (pa.ArrowException, OSError, ValueError,
                                                  IndexError, KeyError)


class BatchRecord(Protocol):
    """What a reader needs of one recorded batch (:class:`hfq.catalog.records.BatchStats`)."""

    @property
    def rows(self) -> int: ...

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


FORMATS = (1, 2)
"""File formats a writer can make: 1, Arrow IPC compressed by the table's codec with hfq's
``scale``/``delta``/``narrow`` encodings (:mod:`hfq.storage.encoding`; every file written
before format 2); 2, one blob per column and record batch in lightweight encodings
(:mod:`hfq.storage.light`), the default.  Readers read both: a file says which it is."""


def encode_fragment(table: pa.Table, *, settings: Settings,
                    stats_columns: Sequence[str] = (),
                    hints: dict[str, str] | None = None, alike: bool = False,
                    version: int = 2) -> Encoded:
    """Encode ``table`` (already sorted) as IPC file bytes, with its size, CRC-32 and, per
    record batch, statistics and checksum.

    Encoding once and copying the same bytes to every replica keeps the replicas identical:
    one size and one set of checksums in the catalog check them all.  ``hints``: the
    encodings of earlier files of the same write (see :func:`hfq.storage.encoding.encode`),
    followed by every column when ``alike`` (the write's files are alike); format 2 follows
    them only for files alike or small.  ``version``: the file format (:data:`FORMATS`).
    """
    codec = None if settings.compression == "none" else settings.compression
    stats = _batch_stats(table, settings.batch_rows, stats_columns)
    if version == 1:
        physical = encoding.encode(table, codec, settings.batch_rows, hints, alike=alike)
        return _encoded(physical, stats, settings)
    starts = np.arange(0, table.num_rows, settings.batch_rows, dtype=np.int64)
    follow = hints if hints is not None and (alike or table.num_rows < encoding.SMALL_ROWS) \
        else None
    made: dict[str, str] = {}
    fields, arrays = light.encode_columns(table, starts, codec,
                                          follow if follow is not None else made)
    if hints is not None and follow is None:
        hints.update(made)
    return _encoded_light(fields, arrays, table.schema.metadata, stats, table.num_rows, codec)


def prepare_fragments(table: pa.Table, bounds: Sequence[int] | np.ndarray, *,
                      settings: Settings,
                      stats_columns: Sequence[str] = (),
                      hints: dict[str, str] | None = None,
                      version: int = 2) -> list[Callable[[], Encoded]]:
    """Many small fragments at once: rows ``bounds[i]`` to ``bounds[i + 1]`` of ``table``
    (each run sorted, of 1 to ``settings.batch_rows`` rows: one record batch) become file
    ``i``, made by the ``i``-th callable returned (its IPC write; call them in any threads).

    Each file is what :func:`encode_fragment` makes of its rows once their dictionaries are
    compacted (a file's dictionary holds only the values its rows use), but the work per
    column -- compacting the dictionaries, applying the encodings, the batch statistics -- is
    done here once for all the runs, in vectorised passes: a thin partition's file then
    costs little more than its IPC write.  Every file takes the encodings in ``hints`` (the
    write's choices so far); columns without one are measured on the run of median length.
    """
    ends = np.asarray(bounds, dtype=np.int64)
    counts = np.diff(ends)
    if len(counts) == 0:
        return []
    if ends[0] != 0 or ends[-1] != table.num_rows or counts.min() < 1 or \
            counts.max() > settings.batch_rows:
        raise ValueError(f"encode_fragments: bounds must cut the {table.num_rows} rows into "
                         f"runs of 1 to {settings.batch_rows} rows")
    starts = ends[:-1]
    runs = np.repeat(np.arange(len(counts)), counts)
    table = table.combine_chunks()
    arrays, dictionaries = [], {}
    for i, column in enumerate(table.columns):
        array = column.chunk(0)
        if pa.types.is_dictionary(array.type):
            array, values, cuts = _split_dictionary(array, runs, len(counts))
            dictionaries[i] = (values, cuts.tolist())
        arrays.append(array)
    codec = None if settings.compression == "none" else settings.compression
    combined = pa.Table.from_arrays(arrays, schema=table.schema)
    hints = {} if hints is None else hints
    stats = _run_stats(table, runs, len(counts), stats_columns)
    if version == 2:
        return _prepare_light(combined, starts, counts, dictionaries, codec, hints, stats)
    if any(name not in hints for name in table.column_names):
        # measured on a file of the typical size: what pays on 4,000 rows (or on a sample of
        # all of them) costs bytes on 200, where the codec sees too few values to gain
        typical = int(np.argsort(counts, kind="stable")[len(counts) // 2])
        encoding.encode(combined.slice(starts[typical], counts[typical]), codec,
                        settings.batch_rows, hints)
    physical = encoding.encode(combined, codec, settings.batch_rows, hints, starts=starts)

    def encode_run(run: int, start: int, n: int) -> Encoded:
        piece = physical.slice(start, n)
        if dictionaries:
            columns = piece.columns
            for i, (values, cuts) in dictionaries.items():
                columns[i] = pa.DictionaryArray.from_arrays(
                    columns[i].chunk(0).indices, values.slice(cuts[run], cuts[run + 1] -
                                                              cuts[run]))
            piece = pa.Table.from_arrays(columns, schema=physical.schema)
        return _encoded(piece, [(n, stats[run])], settings)

    return [functools.partial(encode_run, run, start, n)
            for run, (start, n) in enumerate(zip(starts.tolist(), counts.tolist()))]


def _prepare_light(combined: pa.Table, starts: np.ndarray, counts: np.ndarray,
                   dictionaries: dict[int, tuple[pa.Array, list[int]]], codec: str | None,
                   hints: dict[str, str], stats: list[dict[str, list[Any] | None]]
                   ) -> list[Callable[[], Encoded]]:
    """:func:`prepare_fragments` in format 2: every run's blobs made at once, column by
    column; each file gets its run's blob of each column and its own dictionaries."""
    if any(name not in hints for name in combined.column_names):
        typical = int(np.argsort(counts, kind="stable")[len(counts) // 2])
        piece = combined.slice(int(starts[typical]), int(counts[typical]))
        light.encode_columns(piece, np.zeros(1, dtype=np.int64), codec, hints)
    fields, arrays = light.encode_columns(combined, starts, codec, hints)
    metadata = combined.schema.metadata

    def encode_run(run: int) -> Encoded:
        run_fields = list(fields)
        for i, (values, cuts) in dictionaries.items():
            meta = dict(fields[i].metadata or {})
            meta[light.DICT] = light.dictionary_bytes(values.slice(cuts[run],
                                                                    cuts[run + 1] - cuts[run]))
            run_fields[i] = fields[i].with_metadata(meta)
        return _encoded_light(run_fields, [a.slice(run, 1) for a in arrays], metadata,
                              [(int(counts[run]), stats[run])], int(counts[run]), codec)

    return [functools.partial(encode_run, run) for run in range(len(counts))]


def _encoded_light(fields: list[pa.Field], arrays: list[pa.Array],
                   metadata: dict[bytes, bytes] | None,
                   stats: list[tuple[int, dict[str, list[Any] | None]]], rows: int,
                   codec: str | None) -> Encoded:
    """A format-2 file: one record batch of one row (a blob per column) per batch of rows;
    the IPC layer compresses nothing.  The schema's metadata says the format and the codec
    the blobs use where it pays (``hfq.codec``)."""
    schema = pa.schema(fields, {**(metadata or {}), light.KEY: light.FORMAT,
                                light.CODEC_KEY: (codec or "none").encode()})
    physical = pa.Table.from_arrays(arrays, schema=schema)
    options = ipc.IpcWriteOptions(use_threads=False)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, schema, options=options) as writer:
        writer.write_table(physical, max_chunksize=1)
    return _checked(sink.getvalue(), rows, stats)


def _encoded(physical: pa.Table, stats: list[tuple[int, dict[str, list[Any] | None]]],
             settings: Settings) -> Encoded:
    """The IPC file of ``physical`` (record batches of ``settings.batch_rows``, compressed
    by the settings' codec) with its size, CRC-32 and per-batch ``stats`` and checks."""
    compression = None if settings.compression == "none" else \
        encoding.shared_codec(settings.compression, settings.compression_level)
    options = ipc.IpcWriteOptions(compression=compression, use_threads=False)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, physical.schema, options=options) as writer:
        writer.write_table(physical, max_chunksize=settings.batch_rows)
    return _checked(sink.getvalue(), physical.num_rows, stats)


def _checked(data: pa.Buffer, rows: int,
             stats: list[tuple[int, dict[str, list[Any] | None]]]) -> Encoded:
    """An IPC file's bytes with what the catalog records of them."""
    checks: Sequence[tuple[int, int, int] | None] = _batch_checks(data)
    if len(checks) != len(stats):   # e.g. an empty table writes no batch: whole-file CRC
        checks = [None] * len(stats)
    return Encoded(data, rows, data.size, crc32(data),
                   [(n, cols, check) for (n, cols), check in zip(stats, checks)])


def _split_dictionary(array: pa.DictionaryArray, runs: np.ndarray, n_runs: int
                      ) -> tuple[pa.DictionaryArray, pa.Array, np.ndarray]:
    """Compact a dictionary column per run: ``(indices, values, cuts)`` where run ``r``'s
    dictionary is ``values[cuts[r]:cuts[r + 1]]`` (the values its rows use, in dictionary
    order) and its rows' indices point into it.  The first result is the indices over all
    the values (a valid array, for the encoder to narrow the indices of every run at once)."""
    size = len(array.dictionary)
    codes = array.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    keys = runs * size + codes   # (run, code) pairs, in (run, code) order
    nulls = array.is_null().cast(pa.uint8()).to_numpy().astype(bool) \
        if array.null_count else None   # (a boolean to_numpy imports pandas)
    valid = keys if nulls is None else keys[~nulls]
    if 0 < n_runs * size <= max(4 * len(keys), 1 << 16):   # a bitmap of the pairs: no sort
        seen = np.zeros(n_runs * size, dtype=bool)
        seen[valid] = True
        rank = np.cumsum(seen)
        used = np.flatnonzero(seen)
        cuts = np.concatenate([[0], rank[np.arange(1, n_runs + 1) * size - 1]])
        local = rank[keys] - 1 - cuts[runs]
    else:
        used = np.unique(valid)
        cuts = np.searchsorted(used, np.arange(n_runs + 1, dtype=np.int64) * size)
        local = np.searchsorted(used, keys) - cuts[runs]
    if nulls is not None:
        local[nulls] = 0
    values = array.dictionary.take(pa.array(used % max(size, 1)))
    indices = pa.array(local, mask=nulls).cast(array.type.index_type)
    return pa.DictionaryArray.from_arrays(indices, values), values, cuts


def _run_stats(table: pa.Table, runs: np.ndarray, n_runs: int, columns: Sequence[str]
               ) -> list[dict[str, list[Any] | None]]:
    """``{column: [min, max, nulls]}`` of each run's rows (``runs``: the run of each row,
    ascending), as :func:`_min_max` gives them: integer, temporal and dictionary columns
    without nulls by a reduction over the runs, the others in one grouped aggregation."""
    out: list[dict[str, list[Any] | None]] = [{} for _ in range(n_runs)]
    starts = np.searchsorted(runs, np.arange(n_runs))
    rest = []
    for name in columns:
        bounds = _run_min_max(table.column(name), starts)
        if bounds is None:
            rest.append(name)
            continue
        for stats, low, high in zip(out, *bounds):
            stats[name] = [_json(low), _json(high), 0]
    if not rest:
        return out
    data: dict[str, Any] = {"run": pa.array(runs)}
    for i, name in enumerate(rest):
        column = table.column(name)
        data[f"c{i}"] = column.cast(column.type.value_type) \
            if pa.types.is_dictionary(column.type) else column
    try:
        grouped = pa.table(data).group_by("run", use_threads=False).aggregate(
            [agg for i in range(len(rest)) for agg in
             ((f"c{i}", "min_max"), (f"c{i}", "count", pc.CountOptions("only_null")))])
    except pa.ArrowNotImplementedError:   # a type without a grouped min/max: one run at a time
        cuts = np.append(starts, len(runs)).tolist()
        for r, stats in enumerate(out):
            for name in rest:
                stats[name] = _min_max(table.column(name).slice(cuts[r], cuts[r + 1] - cuts[r]))
        return out
    grouped = grouped.take(pc.sort_indices(grouped.column("run")))
    for i, name in enumerate(rest):
        pairs = grouped.column(f"c{i}_min_max").combine_chunks()
        lows = pairs.field("min").to_pylist()
        highs = pairs.field("max").to_pylist()
        nulls = grouped.column(f"c{i}_count").to_pylist()
        for stats, low, high, n in zip(out, lows, highs, nulls):
            stats[name] = None if low is None else [_json(low), _json(high), n]
    return out


def _run_min_max(column: pa.ChunkedArray, starts: np.ndarray
                 ) -> tuple[list[Any], list[Any]] | None:
    """Each run's min and max values (runs start at ``starts``, none empty) by a numpy
    reduction, for a column without nulls that is integer, temporal or a dictionary of
    non-null values; None for any other column."""
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    typ = array.type
    if array.null_count:
        return None
    if pa.types.is_dictionary(typ):
        dictionary = array.dictionary
        if dictionary.null_count or not len(dictionary):
            return None
        order = pc.sort_indices(dictionary)
        rank = np.empty(len(dictionary), dtype=np.int64)
        rank[order.to_numpy()] = np.arange(len(dictionary))
        keys = rank[array.indices.to_numpy(zero_copy_only=False)]
        ordered = dictionary.take(order)
        return (ordered.take(pa.array(np.minimum.reduceat(keys, starts))).to_pylist(),
                ordered.take(pa.array(np.maximum.reduceat(keys, starts))).to_pylist())
    if pa.types.is_integer(typ):
        values = array.to_numpy(zero_copy_only=False)
    elif pa.types.is_temporal(typ) and typ.bit_width in (32, 64) and \
            not pa.types.is_interval(typ) and not pa.types.is_duration(typ):
        values = array.view(pa.int64() if typ.bit_width == 64 else pa.int32()).to_numpy(
            zero_copy_only=False)
    else:
        return None
    lows = pa.array(np.minimum.reduceat(values, starts))
    highs = pa.array(np.maximum.reduceat(values, starts))
    if not pa.types.is_integer(typ):
        lows, highs = lows.view(typ), highs.view(typ)
    return lows.to_pylist(), highs.to_pylist()


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


def put_file(store: Store, rel: str, data: pa.Buffer | bytes, *, sync: bool = False,
             fresh: bool = False) -> None:
    """Write ``data`` to ``rel`` atomically (a temporary name, then a rename).

    ``fresh``: ``rel`` is a name nobody reads before a commit publishes it (a new fragment,
    named after its transaction): written in place, one rename fewer.  A copy cut short (a
    crash, a full disk) is never published, and goes as any file of a transaction that did
    not commit: by its name (:meth:`hfq.write.Write.abort`, :func:`hfq.catalog.files.sweep`).
    """
    tmp = rel if fresh else temp_name(rel)
    store.makedirs(rel.rsplit("/", 1)[0])
    if not store.local and isinstance(data, pa.Buffer):
        data = data.to_pybytes()
    try:
        store.write_bytes(tmp, data, sync=sync)
        if tmp != rel:
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
    wanted = None if batches is None else list(batches)
    reader = _open_checked(store, record, logical, columns, wanted, data, node)
    return _decoded(reader, record, logical, columns, wanted, node)


def read_fragment_pieces(store: Store | None, record: FileRecord, logical: pa.Schema,
                         pieces: Sequence[Sequence[int]], *,
                         columns: Sequence[str] | None = None,
                         data: pa.Buffer | None = None,
                         node: str | None = None, encoded: bool = False
                         ) -> Iterator[pa.Table | Blobs]:
    """:func:`read_fragment` of each list of record batches in ``pieces``, one after another:
    the file is opened once and every piece's bytes are verified before the first piece is
    decoded (a damaged file fails before anything is yielded); each piece is decoded only when
    the caller asks for it, so a large partition need not be in memory decoded whole.
    ``data``: the file's bytes (as for :func:`read_fragment`).  ``encoded``: a format-2
    file's pieces come as :class:`Blobs`, verified but not decoded, for the caller to decode
    straight where the rows go."""
    if data is None and store is not None and store.local:
        _will_need(store, record.file)
    reader = _open_checked(store, record, logical, columns, [b for p in pieces for b in p],
                           data, node)
    light_file = light.is_light(reader.schema)
    for piece in pieces:
        if encoded and light_file:
            blobs = _blobs(reader, record, logical, list(piece), node)
            yield blobs if columns is None else blobs.select(list(columns))
        else:
            yield _decoded(reader, record, logical, columns, list(piece), node)


class Blobs:
    """Some record batches of a format-2 file, verified and not yet decoded: per column (in
    the order read), the blob of each batch; decoded column by column by
    :meth:`decode_into` (straight into a result's buffer) or :meth:`column`."""

    def __init__(self, num_rows: int, names: list[str], types: list[pa.DataType],
                 dictionaries: list[pa.Array | None], blobs: list[list[pa.Buffer]],
                 file: str, node: str | None) -> None:
        self.num_rows = num_rows
        self.column_names = names
        self.types = types
        self.dictionaries = dictionaries
        self.blobs = blobs
        self._where = (file, node)

    def decode_into(self, i: int, out: np.ndarray, factor: int = 1) -> np.ndarray | None:
        """Column ``i`` into ``out`` (its rows' slice of a buffer; integers times
        ``factor``); returns the rows' validity (uint8) when some row is null."""
        try:
            return light.decode_into(self.blobs[i], out, factor)
        except DECODE_ERRORS as exc:
            raise _undecodable(exc, *self._where) from exc

    def packed(self, i: int) -> bool:
        """Whether column ``i`` decodes into a numeric buffer (else use :meth:`column`)."""
        return not self.blobs[i] or light.blob_kind(self.blobs[i][0]) != light.IPC

    def column(self, i: int) -> pa.Array:
        try:
            return light.decode_array(self.blobs[i], self.types[i], self.dictionaries[i])
        except DECODE_ERRORS as exc:
            raise _undecodable(exc, *self._where) from exc

    def table(self) -> pa.Table:
        return pa.table([self.column(i) for i in range(len(self.blobs))],
                        names=self.column_names)

    def select(self, names: list[str]) -> Blobs:
        """These columns, in this order."""
        if names == self.column_names:
            return self
        at = [self.column_names.index(n) for n in names]
        return Blobs(self.num_rows, names, [self.types[i] for i in at],
                     [self.dictionaries[i] for i in at], [self.blobs[i] for i in at],
                     *self._where)


def _blobs(reader: ipc.RecordBatchFileReader, record: FileRecord, logical: pa.Schema,
           wanted: list[int], node: str | None) -> Blobs:
    """Batches ``wanted`` of an open, verified format-2 file as :class:`Blobs`."""
    try:
        batches = [reader.get_batch(i) for i in wanted]
        schema = reader.schema
        names = schema.names
        blobs = [[b.column(c)[0].as_buffer() for b in batches] for c in range(len(names))]
        rows = sum(record.batches[i].rows for i in wanted) if record.batches and \
            len(record.batches) == reader.num_record_batches else \
            sum(_blob_rows(blobs[0])) if names else 0
        return Blobs(rows, names, [logical.field(n).type for n in names],
                     [light.dictionary_of(f) for f in schema], blobs, record.file, node)
    except DECODE_ERRORS as exc:
        raise _undecodable(exc, record.file, node) from exc


def stored_column(source: Any, name: str) -> pa.Array:
    """Column ``name`` of a fragment file (bytes, a buffer or an open Arrow file) as stored in
    it, whatever its format -- a dictionary column with the file's own dictionary.  Nothing is
    verified: for tools and tests looking at what a file holds."""
    reader = ipc.open_file(pa.BufferReader(source) if isinstance(source, (bytes, pa.Buffer))
                           else source)
    if not light.is_light(reader.schema):
        return reader.read_all().column(name).combine_chunks()
    field = reader.schema.field(name)
    blobs = [reader.get_batch(i).column(name)[0].as_buffer()
             for i in range(reader.num_record_batches)]
    logical = pa.type_for_alias(field.metadata[b"hfq.type"].decode()) \
        if not field.metadata[b"hfq.type"].startswith(b"dictionary") else \
        pa.dictionary(pa.int32(), pa.string())
    return light.decode_array(blobs, logical, light.dictionary_of(field))


def _blob_rows(blobs: list[pa.Buffer]) -> list[int]:
    return [int(np.frombuffer(b, dtype=np.int64, count=2)[1]) for b in blobs]


def _open_checked(store: Store | None, record: FileRecord, logical: pa.Schema,
                  columns: Sequence[str] | None, wanted: list[int] | None,
                  data: pa.Buffer | None, node: str | None) -> ipc.RecordBatchFileReader:
    """The file's IPC reader of ``columns``, once the bytes ``wanted`` (batches; None: all)
    needs are verified."""
    file = record.file
    if data is not None:
        buffer = data
    elif store is None:
        raise ValueError("read_fragment needs a store or the file's bytes")
    else:
        buffer = load_file(store, file, node)
    check_read(buffer, record, wanted, node=node)
    names = logical.names if columns is None else list(columns)
    try:
        # files are written in schema order, so logical positions are physical positions
        index = sorted(logical.get_field_index(n) for n in names)
        options = ipc.IpcReadOptions(included_fields=index, use_threads=False)
        reader = ipc.open_file(pa.BufferReader(buffer), options=options)
    except DECODE_ERRORS as exc:
        raise _undecodable(exc, file, node) from exc
    if record.batches and reader.num_record_batches != len(record.batches) and \
            record.batches[0].span is not None:
        raise _corrupt(f"has {reader.num_record_batches} record batches, the catalog "
                       f"recorded {len(record.batches)}", record.file, node)
    return reader


def _decoded(reader: ipc.RecordBatchFileReader, record: FileRecord, logical: pa.Schema,
             columns: Sequence[str] | None, wanted: list[int] | None,
             node: str | None) -> pa.Table:
    """Batches ``wanted`` (None: all) of an open, verified file, decoded, as ``columns``."""
    names = logical.names if columns is None else list(columns)
    try:
        if light.is_light(reader.schema):
            which = list(range(reader.num_record_batches)) if wanted is None else wanted
            decoded = _blobs(reader, record, logical, which, node).table()
            return decoded if decoded.column_names == names else decoded.select(names)
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
        raise _undecodable(exc, record.file, node) from exc
    return decoded if decoded.column_names == names else decoded.select(names)


def _undecodable(exc: BaseException, file: str, node: str | None) -> CorruptPartitionError:
    return _corrupt(f"cannot be decoded ({type(exc).__name__}: {exc})", file, node)


def _will_need(store: Store, file: str) -> None:
    """Ask the kernel to read the whole file ahead (a read of every piece of it is coming):
    on a cold read the disk then works while the checksum and decoding walk the pages already
    in, instead of faulting them in one at a time."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        fd = os.open(store.path(file), os.O_RDONLY)
    except OSError:
        return   # load_file names the problem
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


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
