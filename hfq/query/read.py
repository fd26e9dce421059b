"""Reading one partition where its files are: the read spec, the rows of a unit, and the
per-partition tasks the runtime runs on the nodes (:class:`ReadTask`, :class:`MapTask`);
and :class:`Assembler`, which writes many partitions' rows into one contiguous buffer per
column (what a large scan hands to pandas or polars).

Everything here works on one node's :class:`~hfq.storage.store.Store`; which node runs what is
the runtime's business.  Tasks are small picklable objects called as ``task(node, unit)``,
where ``node`` is anything with a ``store`` and a ``cache`` (:class:`NodeLike`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, cast

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from hfq.catalog.evolution import Layouts
from hfq.catalog.records import Fragment
from hfq.errors import QueryError, SchemaMismatchError
from hfq.query.plan import Filters, Unit
from hfq.schema import Schema
from hfq.storage.cache import PartitionCache, read_fragment_cached
from hfq.storage.fragment import Blobs, load_file, read_fragment, read_fragment_pieces
from hfq.storage.owned import arrow_bytes
from hfq.storage.sort import sort_rows
from hfq.storage.store import Store

__all__ = ["Assembler", "EncodedFiles", "MapTask", "NodeLike", "PartitionFunction", "ReadSpec",
           "ReadTask", "decoded", "decoded_pieces", "pandas_type", "polars_message", "raised",
           "read_unit", "read_unit_pieces", "ships_encoded", "where_mask"]


class NodeLike(Protocol):
    """What a task needs of the node it runs on."""

    @property
    def name(self) -> str | None: ...

    @property
    def store(self) -> Store: ...

    @property
    def cache(self) -> PartitionCache | None: ...


@dataclass(frozen=True)
class ReadSpec:
    """What to read from each partition; small and picklable, shipped to the nodes."""

    schema: Schema
    sort_by: tuple[str, ...]
    columns: list[str]
    where: pl.Expr | None
    where_columns: list[str]
    filters: Filters
    layouts: Layouts | None = None
    """The table's file layouts when its columns changed (files of an older layout are read
    under today's names and types: :mod:`hfq.catalog.evolution`)."""

    def old_layout(self, fragment: Fragment) -> bool:
        """Whether ``fragment`` was written in a layout other than today's."""
        return self.layouts is not None and fragment.layout != self.layouts.current


INLINE_ROWS = 1 << 17
"""A scan or query planned to read at most this many rows, all held by this process's node,
runs in the calling thread (starting a thread pool costs more than reading a symbol-day) and
reads through this process's cache of decoded batches
(:func:`~hfq.storage.cache.process_cache`)."""

PIECE_ROWS = 1 << 18
"""A whole partition read into one result (``Query.to_pandas`` of a plain read) is read and
copied into place this many rows' worth of record batches at a time: a partition of millions of
rows (a busy ticker's bucket) is then never in memory decoded whole beside the result."""


def read_unit_pieces(store: Store, spec: ReadSpec, unit: Unit, node: str | None = None
                     ) -> Iterator[tuple[int, pa.Table | Blobs]]:
    """(offset, rows) of ``unit``'s matching rows, in pieces of about :data:`PIECE_ROWS` rows
    when the unit is one file whose kept batches all match (no row filter, no ``where``), else
    in one piece (:func:`read_unit`).  Each piece is verified as :func:`read_unit` verifies;
    the pieces of a format-2 file come undecoded (:class:`~hfq.storage.fragment.Blobs`), for
    :meth:`Assembler.fill` to decode straight into the result's buffers."""
    record = unit.fragments[0] if len(unit.fragments) == 1 else None
    if record is None or not unit.exact or spec.where is not None or not record.batches or \
            spec.old_layout(record):
        yield 0, read_unit(store, spec, unit, node)
        return
    wanted = range(len(record.batches)) if unit.batches[0] is None else unit.batches[0]
    pieces = _pieces(record, wanted)
    if not pieces:   # every batch pruned
        yield 0, spec.schema.select(spec.columns).arrow.empty_table()
        return
    offset = 0
    for piece in read_fragment_pieces(store, record, spec.schema.arrow, pieces,
                                      columns=list(spec.columns), node=node, encoded=True):
        yield offset, piece
        offset += piece.num_rows


def read_unit(store: Store | None, spec: ReadSpec, unit: Unit, node: str | None = None, *,
              cache: PartitionCache | None = None,
              data: Mapping[str, pa.Buffer] | None = None) -> pa.Table:
    """One partition's matching rows, from the files under ``store`` (the root of ``node``)
    or, with ``data``, from the files' bytes (``{file: bytes}``, sent by ``node``);
    ``cache``: decoded record batches to serve from, and keep (see
    :func:`~hfq.storage.cache.read_fragment_cached`).

    Every byte decoded is verified against the fragment's checksums first: a damaged,
    short or missing file raises :class:`~hfq.errors.CorruptPartitionError` naming the
    table, partition, file, ``node`` and record batch (the runtime then reads another
    replica, when there is one)."""
    f = spec.filters
    need = list(spec.columns)
    extra = list(spec.where_columns)
    if not unit.exact:
        extra += [c for c in (f.date_column if (f.date_lo or f.date_hi) else None,
                              f.symbol_column if f.symbols is not None else None) if c]
    if len(unit.fragments) > 1:
        extra += list(spec.sort_by)
    read_cols = list(dict.fromkeys(need + extra))
    logical = spec.schema.arrow
    parts = [read_fragment(None, frag, logical, columns=read_cols, batches=batches,
                           data=data[frag.file], node=node) if data is not None else
             read_fragment_cached(cache, store, frag, logical, columns=read_cols,
                                  batches=batches, node=node)
             if not spec.old_layout(frag) else
             _read_old_layout(store, spec, frag, read_cols, batches, node, cache, data)
             for frag, batches in zip(unit.fragments, unit.batches)
             if batches is None or batches]
    if not parts:
        return spec.schema.select(spec.columns).arrow.empty_table()
    table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    if len(parts) > 1:
        table = sort_rows(table, spec.sort_by)
    if not unit.exact:
        table = _filter_rows(table, f, _cached_runs(cache, store, unit, f, spec.sort_by, table))
    if spec.where is not None and table.num_rows:
        frame = cast(pl.DataFrame, pl.from_arrow(table.select(spec.where_columns)))
        try:
            mask = where_mask(frame, spec.where, table.num_rows)
        except pl.exceptions.PolarsError as exc:
            table_name = unit.fragments[0].file.split("/", 1)[0] if unit.fragments else "?"
            message = raised(exc)   # an error the data raised names its expression
            raise QueryError(f"query on table {table_name!r}, partition {unit.partition}: "
                             + (message if message is not None else
                                f"{polars_message(exc)} (in the filter {spec.where})")) from exc
        table = table.filter(mask.to_arrow()) if isinstance(mask, pl.Series) else (
            table if mask else table.slice(0, 0))
    return table.select(spec.columns) if table.column_names != spec.columns else table


def _read_old_layout(store: Store | None, spec: ReadSpec, frag: Fragment, columns: list[str],
                     batches: tuple[int, ...] | None, node: str | None,
                     cache: PartitionCache | None, data: Mapping[str, pa.Buffer] | None
                     ) -> pa.Table:
    """``columns`` of a file written before the table's columns changed: read under the
    file's own names and types, then renamed, widened and defaulted to today's."""
    layouts = spec.layouts
    assert layouts is not None
    physical = layouts.file_schema(frag.layout)
    held = layouts.read_columns(frag.layout, columns)
    if not held:   # none of them is in the file: only its row count matters
        held = [physical.names[0]]
    table = read_fragment(None, frag, physical, columns=held, batches=batches,
                          data=data[frag.file], node=node) if data is not None else \
        read_fragment_cached(cache, store, frag, physical, columns=held, batches=batches,
                             node=node)
    return layouts.adapt(table, frag.layout, columns, spec.schema)


_RAISED = re.compile(r'\["hfq-error: ((?:[^"\\]|\\.)*)"')


def raised(exc: BaseException) -> str | None:
    """The message of an error the data raised inside a polars error (overflow, division by
    zero: what :func:`hfq.engine.exprs.fail_where` plants in a SQL filter), or None."""
    m = _RAISED.search(str(exc))
    return m.group(1) if m else None


def polars_message(exc: BaseException) -> str:
    """What to tell the user of a polars error: the message of an error the data raised
    (:func:`raised`) when there is one -- never the planted literal's cast failure -- else
    the error's first line (its plan dump left out)."""
    message = raised(exc)
    if message is not None:
        return message
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else type(exc).__name__
    if isinstance(exc, pl.exceptions.PanicException):
        return f"the engine failed inside (a polars panic: {first}); not supported"
    return first


def where_mask(frame: pl.DataFrame, where: pl.Expr, rows: int) -> pl.Series | bool:
    """``where`` evaluated on ``frame`` (``rows`` rows, at least the expression's columns): a
    boolean Series, nulls counted as False, or one bool for a constant expression."""
    if frame.width == 0:   # a constant expression: evaluate it once per row all the same
        frame = pl.DataFrame({"_": pl.repeat(0, rows, eager=True)})
    mask = frame.select(where.fill_null(False)).to_series()
    if mask.dtype != pl.Boolean:
        raise SchemaMismatchError(f"where= must give booleans, it gave {mask.dtype}")
    if len(mask) == 1 and rows != 1:
        return bool(mask[0])
    if len(mask) != rows:   # never a silent or raw misfit: polars gave a wrong shape
        raise QueryError(f"a filter gave {len(mask)} values for {rows} rows (an internal "
                         "error: the rows were not filtered by a guess)")
    return mask


class SymbolRuns(dict[str, tuple[int, int]]):
    """Where each symbol's rows are in a record batch sorted by symbol: ``{symbol: (start,
    stop)}``, kept in the cache next to the decoded batch, so that a point read finds its
    rows without looking at the batch; ``usable`` is False for a batch where that does not
    hold (nulls, several chunks, not one run per symbol)."""

    usable = True

    @property
    def nbytes(self) -> int:   # what the cache counts
        return 128 + 96 * len(self)

    @classmethod
    def of(cls, column: pa.ChunkedArray) -> SymbolRuns:
        runs = cls()
        if column.num_chunks != 1 or column.null_count or \
                not pa.types.is_dictionary(column.type):
            runs.usable = False
            return runs
        chunk = column.chunk(0)
        codes = _values_view(chunk.indices)
        if not len(codes):
            return runs
        starts = np.concatenate([[0], np.flatnonzero(codes[1:] != codes[:-1]) + 1])
        names = chunk.dictionary.take(pa.array(codes[starts])).to_pylist()
        if len(set(names)) != len(names):   # a symbol in two runs: not sorted by it
            runs.usable = False
            return runs
        stops = np.append(starts[1:], len(codes))
        runs.update(zip(names, zip(starts.tolist(), stops.tolist())))
        return runs


def _cached_runs(cache: PartitionCache | None, store: Store | None, unit: Unit, f: Filters,
                 sort_by: tuple[str, ...], table: pa.Table) -> SymbolRuns | None:
    """The :class:`SymbolRuns` of ``table`` -- one cached record batch of a table sorted by
    symbol first -- from ``cache`` (built and kept the first time); None when it does not
    apply."""
    if cache is None or not cache.capacity or store is None or f.symbols is None or \
            not f.symbol_column or \
            not sort_by or sort_by[0] != f.symbol_column or len(unit.fragments) != 1:
        return None
    batches = unit.batches[0]
    if batches is None or len(batches) != 1:
        return None
    frag = unit.fragments[0]
    key = ("symbol runs", store.url, frag.file, frag.crc32, batches[0], f.symbol_column)
    runs = cache.get(key)
    if runs is None:
        runs = SymbolRuns.of(table.column(f.symbol_column))
        cache.put(key, runs)
    return runs if runs.usable else None


def _filter_rows(table: pa.Table, f: Filters, runs: SymbolRuns | None = None) -> pa.Table:
    """The rows of ``table`` passing the date and symbol filters of ``f``.  Symbols first: in
    a table sorted by symbol their rows are one run, cut out as a zero-copy slice (found in
    ``runs`` when given), and the dates are then checked on that run only (a point read
    touches a few thousand rows, not the batch)."""
    if f.symbol_column and f.symbols is not None and runs is not None:
        spans = sorted(runs[s] for s in set(f.symbols) if isinstance(s, str) and s in runs)
        table = table.slice(0, 0) if not spans else \
            table.slice(spans[0][0], spans[0][1] - spans[0][0]) if len(spans) == 1 else \
            pa.concat_tables([table.slice(a, b - a) for a, b in spans])
    elif f.symbol_column and f.symbols is not None:
        col = table.column(f.symbol_column)
        values = pa.array([s for s in f.symbols if isinstance(s, str)], type=pa.string())
        parts = [_symbol_mask(c, values) for c in col.chunks]
        table = _rows_where(table, parts[0] if len(parts) == 1 else
                            np.concatenate(parts) if parts else np.zeros(0, dtype=bool))
    if not (f.date_column and (f.date_lo or f.date_hi)) or not table.num_rows:
        return table
    col = table.column(f.date_column)
    if pa.types.is_date32(col.type):
        return _rows_where(table, _date_mask(col, f.date_lo, f.date_hi))
    mask = None
    for bound, op in ((f.date_lo, pc.greater_equal), (f.date_hi, pc.less_equal)):
        if bound is None:
            continue
        day = dt.date.fromisoformat(bound)
        if pa.types.is_timestamp(col.type):
            edge = dt.datetime.combine(day if op is pc.greater_equal else
                                       day + dt.timedelta(days=1), dt.time())
            scalar = pa.scalar(edge, type=pa.timestamp("s")).cast(
                pa.timestamp(col.type.unit, tz=col.type.tz))
            cond = op(col, scalar) if op is pc.greater_equal else pc.less(col, scalar)
        else:
            cond = op(col, pa.scalar(day, type=pa.date32()))
        mask = cond if mask is None else pc.and_(mask, cond)
    return table if mask is None else _rows_where(table, _bools(pc.fill_null(mask, False)))


def _date_mask(column: pa.ChunkedArray, lo: str | None, hi: str | None) -> np.ndarray:
    """Rows of a DATE (date32) column within ``lo`` .. ``hi`` (ISO days, inclusive; nulls:
    false), compared as day numbers in numpy."""
    epoch = dt.date(1970, 1, 1)
    first = None if lo is None else (dt.date.fromisoformat(lo) - epoch).days
    last = None if hi is None else (dt.date.fromisoformat(hi) - epoch).days
    parts = []
    for chunk in column.chunks:
        days = _values_view(chunk)
        keep = np.ones(len(days), dtype=bool) if first is None else days >= first
        if last is not None:
            keep &= days <= last
        if chunk.null_count:
            keep &= chunk.is_valid().to_numpy(zero_copy_only=False)
        parts.append(keep)
    return parts[0] if len(parts) == 1 else \
        np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def _bools(mask: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean Arrow array without nulls as numpy booleans."""
    chunks = mask.chunks if isinstance(mask, pa.ChunkedArray) else [mask]
    if not chunks:
        return np.zeros(0, dtype=bool)
    return np.concatenate([c.to_numpy(zero_copy_only=False) for c in chunks])


def _rows_where(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """The rows of ``table`` where ``mask`` is true.  One run of rows -- one symbol's rows of a
    table sorted by symbol, the usual point read -- is a zero-copy slice (filtering would
    copy every column); anything else is filtered."""
    hits = int(np.count_nonzero(mask))
    if not hits:
        return table.slice(0, 0)
    first = int(mask.argmax())
    if hits == len(mask) - first or mask[first:first + hits].all():
        return table.slice(first, hits)
    return table.filter(pa.array(mask, type=pa.bool_()))


def _symbol_mask(chunk: pa.Array, values: pa.Array) -> np.ndarray:
    """Rows of a chunk whose value is in ``values`` (null rows: false) as numpy booleans; a
    dictionary chunk is compared on its indices -- no per-row take of the dictionary."""
    if not pa.types.is_dictionary(chunk.type):
        return _bools(pc.fill_null(pc.is_in(chunk, value_set=values), False))
    indices = _values_view(chunk.indices)
    if len(values) == 1:   # one symbol: a search of the dictionary, no hash set to build
        hit = pc.index(chunk.dictionary, values[0]).as_py()
        mask = indices == hit if hit >= 0 else np.zeros(len(chunk), dtype=bool)
    else:
        hits = pc.indices_nonzero(pc.is_in(chunk.dictionary, value_set=values))
        mask = np.isin(indices, hits.to_numpy(zero_copy_only=False))
    if chunk.null_count:
        mask &= chunk.is_valid().to_numpy(zero_copy_only=False)
    return mask


@dataclass(frozen=True)
class ReadTask:
    """A unit's matching rows as Arrow (what ``scan().to_arrow()`` gathers).

    ``encoded``: a unit that reads its files whole (:func:`ships_encoded`) comes back as
    the files' bytes, :class:`EncodedFiles`, for the caller to verify and decode
    (:func:`decoded`) -- a third to a fifth of the decoded rows to send, and the decoding
    done by the threads of the process that wants the rows rather than by the node's."""

    spec: ReadSpec
    encoded: bool = False

    def __call__(self, node: NodeLike, unit: Unit) -> pa.Table | EncodedFiles:
        if self.encoded and ships_encoded(self.spec, unit):
            return EncodedFiles({f.file: np.frombuffer(load_file(node.store, f.file, node.name),
                                                       dtype=np.uint8)
                                 for f in unit.fragments})
        return read_unit(node.store, self.spec, unit, node.name)


@dataclass(frozen=True)
class EncodedFiles:
    """A unit's files as stored, in transit from the node holding them (numpy views:
    Ray moves them without pickling their bytes)."""

    files: dict[str, np.ndarray]


def ships_encoded(spec: ReadSpec, unit: Unit) -> bool:
    """Whether a node sends ``unit``'s files rather than its decoded rows: when every row
    of every record batch is wanted (no row filter to apply, no batch left out) and at
    least half of the table's columns, so that the bytes sent are mostly bytes read."""
    return unit.exact and spec.where is None and all(b is None for b in unit.batches) and \
        2 * len(spec.columns) >= len(spec.schema.names)


def decoded(spec: ReadSpec, unit: Unit, value: pa.Table | EncodedFiles,
            node: str | None) -> pa.Table:
    """A :class:`ReadTask` result as rows: :class:`EncodedFiles` verified against the
    catalog's checksums and decoded here (a damaged copy raises
    :class:`~hfq.errors.CorruptPartitionError` naming ``node``), rows as they are."""
    if not isinstance(value, EncodedFiles):
        return value
    # the object store's bytes copied into Arrow's memory (uncompressed buffers decode
    # zero-copy: a polars frame over Python-owned memory can hang a pickling; see arrow_owned)
    data = {file: arrow_bytes(array) for file, array in value.files.items()}
    return read_unit(None, spec, unit, node, data=data)


def decoded_pieces(spec: ReadSpec, unit: Unit, value: pa.Table | EncodedFiles,
                   node: str | None) -> Iterator[tuple[int, pa.Table | Blobs]]:
    """A :class:`ReadTask` result as (offset, piece) for :meth:`Assembler.fill`, like
    :func:`read_unit_pieces`: the shipped file of a format-2 unit read whole comes in pieces
    of :class:`~hfq.storage.fragment.Blobs` -- verified against the catalog's checksums (a
    damaged copy raises :class:`~hfq.errors.CorruptPartitionError` naming ``node``), decoded
    only by the Assembler, straight into the result -- anything else as :func:`decoded`, in one
    piece."""
    record = unit.fragments[0] if len(unit.fragments) == 1 else None
    if not isinstance(value, EncodedFiles) or record is None or not record.batches or \
            not ships_encoded(spec, unit) or record.file not in value.files:
        yield 0, decoded(spec, unit, value, node)
        return
    pieces = _pieces(record, range(len(record.batches)))
    offset = 0
    for piece in read_fragment_pieces(None, record, spec.schema.arrow, pieces,
                                      columns=list(spec.columns), node=node, encoded=True,
                                      data=arrow_bytes(value.files[record.file])):
        yield offset, piece
        offset += piece.num_rows


def _pieces(record: Any, wanted: Any) -> list[list[int]]:
    """Consecutive batches of ``wanted`` grouped into pieces of about :data:`PIECE_ROWS`."""
    pieces: list[list[int]] = []
    rows = 0
    for b in wanted:
        if not pieces or rows + record.batches[b].rows > PIECE_ROWS:
            pieces.append([])
            rows = 0
        pieces[-1].append(b)
        rows += record.batches[b].rows
    return pieces


class PartitionFunction:
    """A map function that also needs its partition and its node -- e.g. to write a result
    next to the data it came from: called as ``fn(frame, unit, node)`` (a polars DataFrame,
    the :class:`~hfq.query.plan.Unit`, the node's context)."""

    def __call__(self, frame: pl.DataFrame, unit: Unit, node: Any) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class MapTask:
    """``fn`` on one partition's rows as a polars DataFrame (what ``map_reduce`` runs)."""

    spec: ReadSpec
    fn: Callable[..., Any]

    def __call__(self, node: NodeLike, unit: Unit) -> Any:
        frame = read_frame(node, self.spec, unit)
        if isinstance(self.fn, PartitionFunction):
            return self.fn(frame, unit, node)
        return self.fn(frame)


def read_frame(node: NodeLike, spec: ReadSpec, unit: Unit) -> pl.DataFrame:
    """A unit's rows as one polars DataFrame.  The rows before ``where`` are kept in the
    node's cache as single chunks (numpy views are zero-copy) -- the same files, batches,
    columns and date/symbol filters give the same rows -- and ``where`` is applied on every
    call, so a repeated job does its filtering again, like any other engine would."""
    columns = list(dict.fromkeys([*spec.columns, *spec.where_columns]))
    key = (tuple((f.file, b) for f, b in zip(unit.fragments, unit.batches)),
           tuple(columns), spec.filters)
    cache = node.cache
    frame = cache.get(key) if cache is not None else None
    if frame is None:
        base = dataclasses.replace(spec, columns=columns, where=None, where_columns=[])
        frame = pl.from_arrow(read_unit(node.store, base, unit, node.name)).rechunk()
        if cache is not None:
            cache.put(key, frame)
    assert isinstance(frame, pl.DataFrame)
    if spec.where is not None and frame.height:
        mask = where_mask(frame.select(spec.where_columns), spec.where, frame.height)
        frame = frame.filter(mask) if isinstance(mask, pl.Series) else (
            frame if mask else frame.clear())
    return frame.select(spec.columns) if frame.columns != spec.columns else frame


# -- one contiguous result from many partitions ------------------------------------------------
def pandas_type(typ: pa.DataType) -> pa.DataType:
    """The Arrow type a column takes on its way to pandas so that the conversion copies
    nothing: dates as ``timestamp[ms]`` (pandas' ``datetime64[ms]``), times of day as
    durations since midnight (pandas has no time dtype and would make Python objects)."""
    if pa.types.is_date(typ):
        return pa.timestamp("ms")
    if pa.types.is_time(typ):
        return pa.duration(typ.unit)
    return typ


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _factor(source: pa.DataType, target: pa.DataType) -> int:
    """What a value of type ``source`` is multiplied by to become one of ``target``: days to
    milliseconds (or the timestamp's unit), seconds to nanoseconds..."""
    if pa.types.is_date32(source) and not pa.types.is_date32(target):
        return 86_400 * _PER_SECOND[getattr(target, "unit", "ms")]
    unit, wanted = getattr(source, "unit", None), getattr(target, "unit", None)
    if unit is None or wanted is None or unit == wanted:
        return 1
    return _PER_SECOND[wanted] // _PER_SECOND[unit]


class Assembler:
    """Many partitions' tables written into one contiguous array per column, as they arrive.

    ``to_arrow`` keeps a chunk per partition; pandas and polars want one array per column,
    and converting a chunked table costs a second full copy (and, for dictionary columns, a
    unification per chunk) while both the chunks and the result are in memory.  Here the
    result's buffers are allocated once (``rows``: each part's row count, known from the plan
    when no row filter runs) and each part -- or each piece of a large one
    (:data:`PIECE_ROWS`) -- is copied into its slice and dropped, in the thread that read it,
    so memory holds the result and the pieces in flight, not two copies of everything.

    Dictionary columns keep each part's indices, as narrow as its dictionary allows (int8
    for a few values, int16 for thousands of symbols: pandas keeps categorical codes that
    way, and would otherwise copy them), and are mapped onto one dictionary at the end: the
    values of the parts' dictionaries in order of first appearance -- the dictionary, and
    order, Arrow's own unification gives.

    ``types``: the output type of each column (e.g. :func:`pandas_type`); fixed-width
    columns (numbers, dates, times, timestamps, durations) are copied into place, any other
    column is concatenated at the end.
    """

    def __init__(self, schema: pa.Schema, rows: list[int], *,
                 types: Callable[[pa.DataType], pa.DataType] | None = None) -> None:
        self.schema = pa.schema([pa.field(f.name, types(f.type) if types else f.type,
                                          f.nullable, f.metadata) for f in schema],
                                schema.metadata)
        self.starts = [0]
        for n in rows:
            self.starts.append(self.starts[-1] + n)
        self.rows = self.starts[-1]
        self._lock = threading.Lock()
        self._values: list[np.ndarray | None] = []
        self._valid: list[np.ndarray | None] = [None] * len(schema)
        self._dicts: list[list[tuple[int, int, pa.Array]]] = [[] for _ in schema]
        self._other: list[list[tuple[int, pa.ChunkedArray]]] = [[] for _ in schema]
        for field in self.schema:
            dtype = np.dtype(np.int8) if pa.types.is_dictionary(field.type) else \
                _fixed_dtype(field.type)
            self._values.append(None if dtype is None else _pool_array(self.rows, dtype))

    def fill(self, i: int, table: pa.Table | Blobs, offset: int | None = None) -> None:
        """Copy part ``i`` (``rows[i]`` rows, this schema's columns in order) into place, or
        with ``offset`` a piece of it starting at that row; parts (and pieces) may be filled
        from several threads at once.  A piece of a format-2 file still encoded
        (:class:`~hfq.storage.fragment.Blobs`) is decoded straight into place: no decoded
        copy of it is ever made."""
        lo, hi = self.starts[i], self.starts[i + 1]
        if offset is None and table.num_rows != hi - lo:
            raise ValueError(f"part {i} has {table.num_rows} rows, {hi - lo} were planned")
        if offset is not None:
            if offset < 0 or lo + offset + table.num_rows > hi:
                raise ValueError(f"part {i} has {table.num_rows} rows at row {offset}, past "
                                 f"the {hi - lo} planned")
            lo += offset
        if isinstance(table, Blobs):
            self._fill_blobs(lo, table)
            return
        for c, column in enumerate(table.columns):
            self._fill_column(c, lo, column)

    def _fill_blobs(self, lo: int, piece: Blobs) -> None:
        hi = lo + piece.num_rows
        for c in range(len(self.schema)):
            if self._values[c] is None or not piece.packed(c):
                self._fill_column(c, lo, pa.chunked_array([piece.column(c)]))
                continue
            if pa.types.is_dictionary(self.schema.field(c).type):
                dictionary = piece.dictionaries[c]
                assert dictionary is not None
                with self._lock:   # the column may be widened meanwhile
                    self._dicts[c].append((lo, hi, dictionary))
                    valid = piece.decode_into(c, self._widened(c, len(dictionary))[lo:hi])
            else:
                out = self._values[c]
                assert out is not None
                valid = piece.decode_into(c, out[lo:hi],
                                          _factor(piece.types[c], self.schema.field(c).type))
            if valid is not None:
                self._validity(c)[lo:hi] = valid

    def _fill_column(self, c: int, lo: int, column: pa.ChunkedArray) -> None:
        """One column of a decoded part (or piece) into its rows from ``lo``."""
        if self._values[c] is None:
            self._other[c].append((lo, column))
            return
        start = lo
        for chunk in column.chunks:
            end = start + len(chunk)
            if pa.types.is_dictionary(chunk.type):
                with self._lock:   # the column may be widened meanwhile
                    self._dicts[c].append((start, end, chunk.dictionary))
                    _copy_values(chunk.indices, self._widened(c, len(chunk.dictionary))
                                 [start:end])
            else:
                out = self._values[c]
                assert out is not None
                _copy_values(chunk, out[start:end],
                             _factor(chunk.type, self.schema.field(c).type))
            if chunk.null_count:
                self._validity(c)[start:end] = \
                    chunk.is_valid().to_numpy(zero_copy_only=False)
            start = end

    def _widened(self, c: int, values: int) -> np.ndarray:
        """Column ``c``'s indices, widened (under the lock) to hold ``values`` values."""
        out = self._values[c]
        assert out is not None
        dtype = _index_dtype(values)
        if dtype.itemsize > out.itemsize:
            wider = _pool_array(self.rows, dtype)
            for start, end, _ in self._dicts[c][:-1]:   # what was filled so far
                wider[start:end] = out[start:end]
            out = self._values[c] = wider
        return out

    def _validity(self, c: int) -> np.ndarray:
        with self._lock:
            valid = self._valid[c]
            if valid is None:
                valid = self._valid[c] = np.ones(self.rows, dtype=bool)
            return valid

    def finish(self) -> pa.Table:
        """The whole result, one chunk per column (call once every part is filled)."""
        arrays = []
        fields = []
        for c, field in enumerate(self.schema):
            valid = self._valid[c]
            nulls = 0 if valid is None else self.rows - int(np.count_nonzero(valid))
            bitmap = None if valid is None or not nulls else \
                pa.py_buffer(np.packbits(valid, bitorder="little"))
            values = self._values[c]
            if values is None:
                parts = [col for _, col in sorted(self._other[c], key=lambda p: p[0])]
                chunks = [ch for col in parts for ch in col.chunks]
                array = pa.concat_arrays(chunks) if chunks else pa.array([], type=field.type)
            elif pa.types.is_dictionary(field.type):
                dictionary = self._unify(c, field.type.value_type)
                values = self._values[c]
                assert values is not None
                indices = pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), self.rows,
                                                [bitmap, pa.py_buffer(values)],
                                                null_count=nulls)
                array = pa.DictionaryArray.from_arrays(indices, dictionary)
                field = pa.field(field.name, array.type, field.nullable, field.metadata)
            else:
                array = pa.Array.from_buffers(field.type, self.rows,
                                              [bitmap, pa.py_buffer(values)], null_count=nulls)
            arrays.append(array)
            fields.append(field)
        self._values = []
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields, self.schema.metadata))

    def _unify(self, c: int, value_type: pa.DataType) -> pa.Array:
        """One dictionary for column ``c``, its indices rewritten onto it (in place, or into
        a wider column when the union needs one)."""
        parts = sorted(self._dicts[c], key=lambda p: p[0])
        if not parts:
            return pa.array([], type=value_type)
        # the parts of one file share their dictionary's buffers; files often have equal ones
        by_buffers: dict[tuple[int, ...], int] = {}
        distinct: list[pa.Array] = []
        which = []
        for _, _, d in parts:
            key = _buffer_key(d)
            if key not in by_buffers:
                by_buffers[key] = next((k for k, e in enumerate(distinct) if e.equals(d)),
                                       len(distinct))
                if by_buffers[key] == len(distinct):
                    distinct.append(d)
            which.append(by_buffers[key])
        if len(distinct) == 1:
            return distinct[0]
        unified = pc.unique(pa.concat_arrays(distinct))
        source = self._values[c]
        assert source is not None
        dtype = _index_dtype(len(unified))
        out = source if dtype.itemsize <= source.itemsize else _pool_array(self.rows, dtype)
        self._values[c] = out
        flat = pc.index_in(pa.concat_arrays(distinct), value_set=unified)
        flat_map = flat.to_numpy(zero_copy_only=False).astype(out.dtype)
        ends = np.cumsum([len(d) for d in distinct])
        maps = np.split(flat_map, ends[:-1])
        identity = [bool((m == np.arange(len(m), dtype=m.dtype)).all()) for m in maps]
        work = [(source[start:end], out[start:end], maps[k])
                for (start, end, _), k in zip(parts, which)
                if out is not source or not identity[k]]
        if work:   # numpy's take lets go of the GIL: the parts in threads
            with ThreadPoolExecutor(max_workers=min(len(work), os.cpu_count() or 1)) as pool:
                list(pool.map(lambda w: np.take(w[2], w[0], out=w[1], mode="clip"), work))
        return unified


def _index_dtype(values: int) -> np.dtype:
    """The narrowest indices for ``values`` dictionary values -- pandas' rule for categorical
    codes (so that pandas keeps them as they are)."""
    for dtype in (np.int8, np.int16, np.int32):
        if values < np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _pool_array(n: int, dtype: np.dtype) -> np.ndarray:
    """A writable numpy array over a buffer of Arrow's memory pool (which keeps freed memory
    for the next read instead of faulting fresh pages in)."""
    return np.frombuffer(pa.allocate_buffer(n * dtype.itemsize), dtype=dtype)


def _buffer_key(array: pa.Array) -> tuple[int, ...]:
    """Identifies an array by its buffers (the parts keep them alive, so none is reused)."""
    return (array.offset, len(array),
            *(b.address if b is not None else 0 for b in array.buffers()))


def _fixed_dtype(typ: pa.DataType) -> np.dtype | None:
    """The numpy storage of a fixed-width column of type ``typ`` (None: not fixed-width)."""
    if pa.types.is_dictionary(typ):
        return _fixed_dtype(typ.index_type)
    if pa.types.is_boolean(typ) or pa.types.is_interval(typ) or pa.types.is_float16(typ) or \
            not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or
                 pa.types.is_temporal(typ)):
        return None
    width = typ.bit_width // 8
    if pa.types.is_floating(typ):
        return np.dtype(f"f{width}")
    return np.dtype(f"{'u' if pa.types.is_unsigned_integer(typ) else 'i'}{width}")


def _copy_values(chunk: pa.Array, out: np.ndarray, factor: int = 1) -> None:
    """A fixed-width chunk's values (whatever is under its null slots), times ``factor``
    (see :func:`_factor`), into ``out``, converted to ``out``'s type."""
    values = _values_view(chunk)
    if factor != 1:
        np.multiply(values, factor, out=out, dtype=out.dtype, casting="unsafe")
    else:
        np.copyto(out, values, casting="unsafe")


def _values_view(chunk: pa.Array) -> np.ndarray:
    """A fixed-width chunk's values buffer as numpy, whatever is under its null slots (no
    copy)."""
    dtype = _fixed_dtype(chunk.type)
    assert dtype is not None
    data = chunk.buffers()[1]
    if data is None:
        return np.zeros(len(chunk), dtype=dtype)
    return np.frombuffer(data, dtype=dtype, count=chunk.offset + len(chunk))[chunk.offset:]
