"""Decoding fuzzed: random columns of every column type, with NULLs, NaN, -0.0, +-inf, integer
extremes and empty strings, written as fragment files by the real writer (every codec, record
batches of sizes around the 1,024-value blocks of the encodings) and read back every way a
reader reads them -- whole, some record batches, pieces of batches (``read_fragment_pieces``,
what ``PIECE_ROWS`` reads do), thin files of one batch each (``prepare_fragments``), and
through the :class:`~hfq.query.read.Assembler` into one result buffer -- against the plain
Arrow values, bit for bit (floats compared by their bits, nulls by validity).

The data is drawn as a recipe (a type, a length, a shape -- constant, sorted, a random walk,
decimals, small or full-width random -- a seed, and hostile values planted at drawn rows), so
that columns of thousands of values are cheap to generate and every shape an encoding keys on
(runs, small deltas, exact decimals with exceptions) is met.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hfq import schema
from hfq.catalog.records import fragment_from
from hfq.config import Settings
from hfq.query.read import Assembler, pandas_type
from hfq.storage import bitpack, light
from hfq.storage.fragment import (
    encode_fragment,
    prepare_fragments,
    read_fragment,
    read_fragment_pieces,
)

TYPES = [t for t in schema.TYPES.values()]
LENGTHS = [0, 1, 2, 3, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 2049, 3071, 3072, 3073]
SHAPES = ("constant", "sorted", "walk", "decimal", "small", "wide", "runs")
BATCH_ROWS = (1, 7, 1000, 1023, 1024, 1025, 2048, 65_536)
FILE = "t/data/p=0/f.arrow"
TIERS = {"numba": lambda n: bitpack.decode_stream, "numpy": lambda n: bitpack.decode_stream_numpy}
"""The two decoders of bit-packed streams (``light.stream_decoder`` picks one per batch)."""


@contextlib.contextmanager
def tier(name: str) -> Iterator[None]:
    """Every bit-packed batch decoded by the decoder ``name`` (both must give the same bits)."""
    chosen = light.stream_decoder
    light.stream_decoder = TIERS[name]
    try:
        yield
    finally:
        light.stream_decoder = chosen


def _specials(typ: pa.DataType) -> list[Any]:
    """Values every encoding must carry through (None: a null)."""
    if pa.types.is_float32(typ):
        return [None, float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 1e-45, 3e38,
                -3e38, 0.5, 2.0 ** 24, -(2.0 ** 24) - 2]
    if pa.types.is_floating(typ):
        return [None, float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 5e-324, 1e300,
                -1e300, 214748.3647, 1 / 3, 2.0 ** 53, -(2.0 ** 53) - 2]
    if pa.types.is_dictionary(typ) or pa.types.is_string(typ):
        return [None, "", " ", "é", "\x00", "日本株", "IBM"]
    if pa.types.is_boolean(typ):
        return [None, True, False]
    lo, hi = _bounds(typ)
    return [None, lo, hi, 0, -1 if lo < 0 else 1, lo + 1, hi - 1]


def _bounds(typ: pa.DataType) -> tuple[int, int]:
    """The physical integer range of an integer or temporal type hfq stores."""
    if pa.types.is_date32(typ):
        return -(2 ** 31), 2 ** 31 - 1
    if pa.types.is_time32(typ):
        return 0, 86_400 * (1 if typ.unit == "s" else 1000) - 1
    if pa.types.is_time64(typ):
        return 0, 86_400 * 10 ** (6 if typ.unit == "us" else 9) - 1
    if pa.types.is_timestamp(typ):
        return -(2 ** 63), 2 ** 63 - 1
    info = np.iinfo(typ.to_pandas_dtype())
    return int(info.min), int(info.max)


def _base(typ: pa.DataType, shape: str, n: int, rng: np.random.Generator) -> list[Any]:
    """``n`` values of ``typ`` with ``shape`` (no hostile values yet)."""
    if pa.types.is_boolean(typ):
        return (rng.random(n) < (0.5 if shape != "constant" else 0.0)).tolist()
    if pa.types.is_dictionary(typ) or pa.types.is_string(typ):
        words = [f"S{i}" for i in range(1 if shape == "constant" else
                                        3 if shape == "small" else 300)]
        picks = rng.integers(0, len(words), n)
        if shape in ("sorted", "runs"):
            picks.sort()
        return [words[i] for i in picks]
    if pa.types.is_floating(typ):
        cents = {"constant": np.full(n, 1234),
                 "sorted": np.sort(rng.integers(0, 10 ** 6, n)),
                 "walk": 5000 + np.cumsum(rng.integers(-3, 4, n)),
                 "decimal": rng.integers(-(10 ** 9), 10 ** 9, n),
                 "small": rng.integers(0, 50, n),
                 "runs": np.repeat(rng.integers(0, 10 ** 5, max(1, n // 50 + 1)), 50)[:n],
                 }.get(shape)
        if cents is None:   # "wide": anything
            reach = 300 if pa.types.is_float64(typ) else 30
            values = rng.standard_normal(n) * 10.0 ** rng.integers(-reach, reach, n)
        else:
            values = cents / 10.0 ** int(rng.integers(0, 5))
        if pa.types.is_float32(typ):
            values = values.astype(np.float32)
        return values.tolist()
    lo, hi = _bounds(typ)
    width = hi - lo
    if shape == "constant":
        ints = np.full(n, int(rng.integers(lo, hi, endpoint=True, dtype=np.int64)) if
                       width < 2 ** 63 else int(rng.integers(-(2 ** 62), 2 ** 62)),
                       dtype=np.int64)
    elif shape in ("sorted", "walk", "runs"):
        step = rng.integers(0, 1000 if shape != "runs" else 2, n)
        if shape == "walk":
            step = step - 500
        start = int(rng.integers(max(lo, -(2 ** 40)), min(hi, 2 ** 40)))
        ints = np.clip(start + np.cumsum(step), lo, hi)
    elif shape == "small":
        ints = rng.integers(max(lo, -100), min(hi, 100), n, endpoint=True)
    else:   # "wide", "decimal": the whole range
        ints = rng.integers(lo, hi, n, endpoint=True, dtype=np.int64) if width < 2 ** 64 - 1 \
            else rng.integers(-(2 ** 63), 2 ** 63 - 1, n, dtype=np.int64)
    return ints.tolist()


def _array(typ: pa.DataType, values: list[Any]) -> pa.Array:
    if pa.types.is_dictionary(typ):
        return pa.array(values, pa.string()).dictionary_encode().cast(typ)
    if pa.types.is_floating(typ) or pa.types.is_boolean(typ) or pa.types.is_string(typ) or \
            pa.types.is_integer(typ):
        return pa.array(values, typ)
    storage = pa.int32() if typ.bit_width == 32 else pa.int64()
    return pa.array(values, storage).view(typ)


@st.composite
def columns(draw: st.DrawFn, n: int, typ: pa.DataType | None = None) -> pa.Array:
    """A column of ``n`` values: a type, a shape, a seed, and hostile values at drawn rows."""
    typ = typ or draw(st.sampled_from(TYPES)).arrow
    shape = draw(st.sampled_from(SHAPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    values = _base(typ, shape, n, rng)
    if n:
        specials = _specials(typ)
        planted = draw(st.lists(st.tuples(st.integers(0, n - 1),
                                          st.sampled_from(specials)), max_size=12))
        # hostile values near the block and batch edges too
        edges = [i for i in (0, 1023, 1024, 1025, 2047, 2048, n - 1) if i < n]
        for i in draw(st.lists(st.sampled_from(edges), max_size=3)):
            planted.append((i, draw(st.sampled_from(specials))))
        for i, value in planted:
            values[i] = value
        if draw(st.booleans()) and n > 5:   # a run of nulls
            a = draw(st.integers(0, n - 1))
            for i in range(a, min(n, a + draw(st.integers(1, 1100)))):
                values[i] = None
    return _array(typ, values)


@st.composite
def tables(draw: st.DrawFn, *, max_columns: int = 4) -> pa.Table:
    n = draw(st.one_of(st.sampled_from(LENGTHS), st.integers(0, 4000)))
    k = draw(st.integers(1, max_columns))
    arrays = [draw(columns(n)) for _ in range(k)]
    return pa.table(arrays, names=[f"c{i}" for i in range(k)])


# -- comparing ---------------------------------------------------------------------------------
def same(got: pa.Array | pa.ChunkedArray, want: pa.Array | pa.ChunkedArray) -> None:
    """Equal as stored values: validity, every valid value bit for bit (floats by their
    bits: NaN payloads and -0.0 included), dictionaries by their values."""
    got = _one(got)
    want = _one(want)
    assert len(got) == len(want)
    if pa.types.is_dictionary(want.type):   # the Assembler narrows the indices
        assert pa.types.is_dictionary(got.type)
        assert got.type.value_type == want.type.value_type
    else:
        assert got.type == want.type, (got.type, want.type)
    valid = want.is_valid().to_pylist()
    assert got.is_valid().to_pylist() == valid
    if pa.types.is_dictionary(want.type):
        got, want = got.cast(want.type.value_type), want.cast(want.type.value_type)
    if pa.types.is_floating(want.type):
        bits = pa.int64() if want.type.bit_width == 64 else pa.int32()
        got, want = got.view(bits), want.view(bits)
    elif pa.types.is_temporal(want.type):
        bits = pa.int64() if want.type.bit_width == 64 else pa.int32()
        got, want = got.view(bits), want.view(bits)
    g, w = got.to_pylist(), want.to_pylist()
    bad = [i for i, (a, b, v) in enumerate(zip(g, w, valid)) if v and a != b]
    assert not bad, f"rows {bad[:5]}...: {[g[i] for i in bad[:5]]} != {[w[i] for i in bad[:5]]}"


def _one(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        return a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    return a


def same_table(got: pa.Table, want: pa.Table) -> None:
    assert got.column_names == want.column_names
    for name in want.column_names:
        try:
            same(got.column(name), want.column(name))
        except AssertionError as exc:
            raise AssertionError(f"column {name} ({want.schema.field(name).type}): {exc}") \
                from exc


# -- writing and reading -----------------------------------------------------------------------
def written(table: pa.Table, codec: str, batch_rows: int, version: int = 2):
    """The file the writer makes of ``table`` in format ``version``, and its catalog
    record."""
    enc = encode_fragment(table, settings=Settings(compression=codec, batch_rows=batch_rows),
                          version=version)
    record = fragment_from(FILE, rows=enc.rows, size=enc.size, crc32=enc.crc32,
                           batches=enc.batches)
    return enc.data, record


def batch_rows_of(record) -> list[tuple[int, int]]:
    """(first row, rows) of each record batch."""
    out, start = [], 0
    for b in record.batches:
        out.append((start, b.rows))
        start += b.rows
    return out


def check_reads(table: pa.Table, data: pa.Buffer, record, draw) -> None:
    logical = table.schema
    whole = read_fragment(None, record, logical, data=data)
    same_table(whole, table)
    spans = batch_rows_of(record)
    if not spans or not table.num_rows:
        return
    # some batches, in order
    chosen = sorted(draw(st.sets(st.integers(0, len(spans) - 1), min_size=1,
                                 max_size=min(4, len(spans)))))
    got = read_fragment(None, record, logical, data=data, batches=chosen)
    want = pa.concat_tables([table.slice(*spans[i]) for i in chosen])
    same_table(got, want)
    # one column alone
    name = draw(st.sampled_from(table.column_names))
    same(read_fragment(None, record, logical, data=data, columns=[name]).column(name),
         table.column(name))
    # pieces of consecutive batches, into an Assembler as a large scan does
    cuts = sorted(draw(st.sets(st.integers(1, len(spans)), max_size=4)) | {len(spans)})
    pieces, start = [], 0
    for cut in cuts:
        if cut > start:
            pieces.append(list(range(start, cut)))
            start = cut
    types = draw(st.sampled_from([None, pandas_type]))
    assembler = Assembler(logical, [table.num_rows], types=types)
    offset = 0
    encoded = draw(st.booleans())   # format 2: still encoded, decoded straight into place
    for piece in read_fragment_pieces(None, record, logical, pieces, data=data,
                                      encoded=encoded):
        assembler.fill(0, piece, offset)
        offset += piece.num_rows
    assert offset == table.num_rows
    out = assembler.finish()
    want = table if types is None else _as_types(table, types)
    same_table(out, want)


def _as_types(table: pa.Table, types) -> pa.Table:
    """``table`` with each column in the output type the Assembler gives it (pandas_type:
    dates as timestamp[ms], times of day as durations)."""
    arrays = []
    for column in table.columns:
        column = _one(column)
        target = types(column.type)
        if target == column.type:
            arrays.append(column)
        elif pa.types.is_date32(column.type):
            ms = pa.compute.multiply(column.cast(pa.int32()).cast(pa.int64()), 86_400_000)
            arrays.append(ms.cast(pa.timestamp("ms")))
        else:
            storage = pa.int64() if column.type.bit_width == 64 else pa.int32()
            arrays.append(column.view(storage).cast(pa.int64()).view(target))
    return pa.table(arrays, names=table.column_names)


@settings(max_examples=150)
@given(table=tables(), codec=st.sampled_from(["zstd", "lz4", "none"]),
       batch_rows=st.sampled_from(BATCH_ROWS), version=st.sampled_from([2, 2, 1]),
       data=st.data())
def test_every_read_of_a_written_file_gives_back_the_arrow_values(table, codec, batch_rows,
                                                                   version, data):
    file, record = written(table, codec, batch_rows, version)
    with tier(data.draw(st.sampled_from(list(TIERS)), label="decoder")):
        check_reads(table, file, record, data.draw)


@settings(max_examples=60)
@given(table=tables(max_columns=3), codec=st.sampled_from(["zstd", "none"]), data=st.data())
def test_thin_files_of_one_batch_each_give_back_their_rows(table, codec, data):
    n = table.num_rows
    if n == 0:
        return
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, n - 1)), max_size=6)) | {n})
    bounds = [0] + [c for c in cuts if c > 0]
    bounds = sorted(set(bounds))
    longest = max(b - a for a, b in zip(bounds, bounds[1:]))
    settings_ = Settings(compression=codec, batch_rows=max(longest, 1))
    makers = prepare_fragments(table, bounds, settings=settings_)
    for (a, b), make in zip(zip(bounds, bounds[1:]), makers):
        enc = make()
        record = fragment_from(FILE, rows=enc.rows, size=enc.size, crc32=enc.crc32,
                               batches=enc.batches)
        same_table(read_fragment(None, record, table.schema, data=enc.data),
                   table.slice(a, b - a))


@pytest.mark.parametrize("typ", [t.arrow for t in TYPES], ids=[t.name for t in TYPES])
def test_each_type_at_each_block_edge(typ):
    """Deterministic companion of the fuzz: every type, lengths around 1,024, hostile values
    at the edges, batches of 1,000 and 1,024 rows."""
    rng = np.random.default_rng(7)
    for n in (1023, 1024, 1025, 2049):
        for shape in ("sorted", "walk", "wide"):
            values = _base(typ, shape, n, rng)
            for i, value in zip((0, min(1023, n - 1), n - 1, 500), _specials(typ)[1:]):
                values[i] = value
            values[700] = None
            table = pa.table([_array(typ, values)], names=["c"])
            for batch_rows in (1000, 1024):
                file, record = written(table, "none", batch_rows)
                for name in TIERS:
                    with tier(name):
                        same_table(read_fragment(None, record, table.schema, data=file), table)


def test_the_comparison_sees_a_lost_sign_and_a_nan():
    """The oracle itself: -0.0 vs 0.0 and NaN vs NaN with another payload differ."""
    with pytest.raises(AssertionError):
        same(pa.array([0.0]), pa.array([-0.0]))
    with pytest.raises(AssertionError):
        same(pa.array([1.0, None]), pa.array([1.0, 2.0]))
    same(pa.array([float("nan")]), pa.array([float("nan")]))
    with pytest.raises(AssertionError):
        same(pa.array(["a"]).dictionary_encode(), pa.array(["b"]).dictionary_encode())
    assert dt.date(2007, 8, 1)


# -- every encoding, forced ----------------------------------------------------------------------
NUMERIC = [t for t in TYPES if t.name not in ("STRING", "BOOL", "FLOAT")]
RECIPES = ("for", "delta", "dict", "plain")


@settings(max_examples=200)
@given(data=st.data(), typ=st.sampled_from(NUMERIC), recipe=st.sampled_from(RECIPES),
       codec=st.sampled_from([None, "zstd", "lz4"]), digits=st.integers(0, 10),
       n=st.one_of(st.sampled_from(LENGTHS), st.integers(0, 5000)),
       batch=st.sampled_from([1, 1000, 1024, 2048, 3000, 1 << 20]))
def test_every_encoding_gives_back_every_column(data, typ, recipe, codec, digits, n, batch):
    """Each recipe of format 2 forced on any column (it always holds: ``dict`` falls back to
    the others when the values span too much), every batch decoded straight into a buffer
    and as an Arrow array."""
    array = data.draw(columns(n, typ.arrow))
    hint = recipe + (f"+{codec}" if codec else "")
    if typ.name == "DOUBLE" and recipe != "plain":
        hint = f"alp:{digits},{hint}"
    starts = np.arange(0, n, batch, dtype=np.int64)
    blobs, used, extra = light.blob_column(array, starts, codec, hint)
    if recipe != "dict" and typ.name != "DOUBLE":
        assert used == hint, (used, hint)
    elif typ.name == "DOUBLE":   # decimals hinted where most values are not: measured again
        assert used == hint or used.startswith(("alp:", "plain")), (used, hint)
    dictionary = light.dictionary_of(pa.field("c", pa.large_binary(), metadata=extra)) \
        if extra else None
    buffers = [blobs[i].as_buffer() for i in range(len(blobs))]
    for name in TIERS:
        with tier(name):
            _decodes_back(buffers, array, dictionary, n)


def _decodes_back(buffers: list[pa.Buffer], array: pa.Array, dictionary: pa.Array | None,
                  n: int) -> None:
    same(light.decode_array(buffers, array.type, dictionary), array)
    # straight into a larger buffer at an offset, integers times a factor
    if pa.types.is_dictionary(array.type) or pa.types.is_floating(array.type):
        return
    storage = np.dtype(f"i{array.type.bit_width // 8}")
    out = np.full(n + 7, 99, dtype=np.int64)
    valid = light.decode_into(buffers, out[3:3 + n], 1000)
    want = _base_ints(array)
    np.testing.assert_array_equal(out[3:3 + n][want[1]], want[0][want[1]].astype(storage)
                                  .astype(np.int64) * 1000)
    assert (out[:3] == 99).all() and (out[3 + n:] == 99).all()
    if array.null_count:
        assert valid is not None and (valid.astype(bool) == want[1]).all()


def _base_ints(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    storage = pa.int64() if array.type.bit_width == 64 else pa.int32() \
        if array.type.bit_width == 32 else array.type
    ints = (array.view(storage) if storage != array.type else array).fill_null(0)
    return (ints.to_numpy(zero_copy_only=False).astype(np.int64),
            array.is_valid().to_numpy(zero_copy_only=False))


# -- the edges the planted bugs sit on (deterministic, fast) -------------------------------------
def _edge_columns() -> dict[str, pa.Array]:
    """Exceptions (values outside their block's frame) at rows 1023, 1024 and 2047, symbol
    boundaries in a delta stream, decimals with patches (NaN, -0.0, 1/3) on both sides of a
    block edge, and a run of nulls across it."""
    rng = np.random.default_rng(11)
    n = 3000
    ints = (1000 + np.cumsum(rng.integers(0, 5, n))).astype(np.int64)
    for i in (0, 1023, 1024, 2047, 2999):
        ints[i] = -(10 ** 12) if i % 2 else 10 ** 12
    cents = np.round(50 + np.cumsum(rng.integers(-2, 3, n)) / 100, 2)
    for i, v in ((1022, 1 / 3), (1023, -0.0), (1024, float("nan")), (1025, float("-inf")),
                 (2048, 1e300), (5, -0.0)):
        cents[i] = v
    valid = np.ones(n, dtype=bool)
    valid[1020:1030] = False
    return {"ints": pa.array(ints), "cents": pa.array(cents),
            "nullable": pa.array(ints, mask=~valid),
            "times": pa.array(np.sort(rng.integers(0, 86_400 * 10 ** 9, n)), pa.int64())
            .view(pa.time64("ns"))}


@pytest.mark.parametrize("recipe", ["for", "delta", "dict", "plain"])
@pytest.mark.parametrize("batch", [1024, 1500, 1 << 16])
def test_planted_edges_decode_exactly(recipe, batch):
    for name, array in _edge_columns().items():
        starts = np.arange(0, len(array), batch, dtype=np.int64)
        hint = f"alp:2,{recipe}" if name == "cents" and recipe != "plain" else recipe
        blobs, used, _ = light.blob_column(array, starts, None, hint)
        buffers = [blobs[i].as_buffer() for i in range(len(blobs))]
        for name in TIERS:
            with tier(name):
                same(light.decode_array(buffers, array.type), array)
    # chosen freely (the encoder's own pick), with and without a codec
    for codec in (None, "zstd"):
        table = pa.table(_edge_columns())
        file, record = written(table, codec or "none", batch)
        for name in TIERS:
            with tier(name):
                same_table(read_fragment(None, record, table.schema, data=file), table)
