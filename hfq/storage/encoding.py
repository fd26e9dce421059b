"""Light per-column encodings inside Arrow IPC files, chosen per file by measurement.

Arrow IPC compresses every buffer with LZ4 or ZSTD but stores numbers as they are; tick data
has structure a general compressor does not see.  Two encodings close most of that gap:

* ``scale:d`` -- a DOUBLE column whose every value is exactly ``k / 10**d`` (prices with a few
  decimals) is stored as the integers ``k``.  Decoding divides by ``10**d``, which by IEEE-754
  gives back the very same double, so the encoding is lossless; it is only chosen after checking
  that every value round-trips bit for bit.
* ``delta`` -- an integer (or scaled) column sorted within runs (times, prices inside a symbol)
  is stored as first differences and decoded with a cumulative sum.
* ``narrow`` -- integers (sizes, deltas, dictionary indices) that fit int8 or int16 are stored
  in that width; general compressors find more in one byte a value than in four.

For each column the encoder compresses a sample of the plain and the encoded form with the
file's codec (without a codec: compares their widths) and keeps the encoding only when it is
measurably smaller.  The encoding is written
into the field metadata (``hfq.enc``), so every file is self-describing; decoding needs nothing
from the catalog.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["decode", "encode", "shared_codec"]

ENC = b"hfq.enc"
TYPE = b"hfq.type"
_SAMPLE = 1 << 14
_MIN_GAIN = 0.9  # keep an encoding only when it makes the sample at least 10% smaller ...
_MIN_SAVED = 256  # ... and by at least this many bytes: decoding costs time on every read
SMALL_ROWS = 4096
"""Columns shorter than this follow the write's hint (see :func:`encode`)."""


def encode(table: pa.Table, codec: str | None, batch_rows: int,
           hints: dict[str, str] | None = None, *, starts: np.ndarray | None = None,
           alike: bool = False) -> pa.Table:
    """Return the physical table to write: encoded columns carry ``hfq.enc`` metadata (and
    ``hfq.type``, their logical type); a column stored as it is carries none.

    Deltas restart every ``batch_rows`` rows, so each record batch decodes on its own (the
    reader may skip batches).  ``starts``: ``table`` holds the rows of several files one after
    the other, each of one record batch starting at these rows (ascending, the first 0); deltas
    restart exactly there, and every column follows its hint as a small one does
    (:func:`hfq.storage.fragment.encode_fragments`).

    ``hints``: the encodings chosen for earlier files of the same write, by column; a small
    column (under :data:`SMALL_ROWS`) takes its hint instead of measuring every candidate --
    the measuring costs ~0.1 ms a column, most of the cost of a thin partition's file -- and
    is measured only when the hint does not hold for its values.  Filled in as columns are
    measured.  ``alike``: the files of this write are alike (the bars of partitions of one
    table): every column follows its hint whatever its length, as a small one does.
    """
    fields, arrays = [], []
    for field, column in zip(table.schema, table.columns):
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        small = alike or starts is not None or len(array) < SMALL_ROWS
        hint = hints.get(field.name) if hints is not None and small else None
        applied = _apply(array, hint, batch_rows, starts) if hint else (array, "")
        if hint is None or applied is None:
            encoded, how = _choose(array, codec, batch_rows, starts)
            if hints is not None:   # the recipe, without the parameters of these values
                hints[field.name] = ",".join(step.split(":")[0] for step in how.split(",")) \
                    if how else ""
        else:
            encoded, how = applied
        # (metadata is stored twice a file, schema and footer: a thin file feels its bytes)
        meta = {TYPE: str(field.type).encode(), ENC: how.encode()} if how else None
        fields.append(pa.field(field.name, encoded.type, field.nullable, meta))
        arrays.append(encoded)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, table.schema.metadata))


def decode(table: pa.Table, logical: pa.Schema) -> pa.Table:
    """Undo :func:`encode`; ``logical`` gives each column's stored type."""
    arrays = []
    for field, column in zip(table.schema, table.columns):
        how = (field.metadata or {}).get(ENC)
        target = logical.field(field.name).type
        if how is None or pa.types.is_dictionary(target):   # dictionaries: only "narrow"
            arrays.append(column if column.type == target else column.cast(target))
            continue
        arrays.append(pa.chunked_array([_decode_array(c, how.decode(), target)
                                        for c in column.chunks], type=target))
    return pa.Table.from_arrays(arrays, schema=logical)


# -- choosing ---------------------------------------------------------------------------------
_RECIPES = {
    "float": ("scale", "scale,narrow", "scale,delta", "scale,delta,narrow"),
    "int": ("narrow", "delta", "delta,narrow"),
    "temporal": ("delta", "delta,narrow"),
    "dictionary": ("narrow",),
}


def _choose(array: pa.Array, codec: str | None, batch_rows: int,
            starts: np.ndarray | None = None) -> tuple[pa.Array, str]:
    """The encoding that makes a sample smallest, applied to the whole column.

    Candidates are tried on a sample of the column (four runs of rows); the winner is then
    applied to every value, and if it does not hold there (a value that is not an exact
    decimal, or too wide for int8) the next best is tried, down to no encoding at all.
    """
    recipes = _RECIPES.get(_kind(array.type), ())
    if not recipes or len(array) < 2:
        return array, ""
    sample = _sample(array)
    memo: dict[str, Any] = {}   # the sample's scaled form, shared by the recipes
    candidates = [(recipe, encoded[0]) for recipe in recipes
                  if (encoded := _apply(sample, recipe, batch_rows, memo=memo)) is not None]
    if not candidates:   # e.g. averages, which are no exact decimals: nothing to measure
        return array, ""
    plain = _size(sample, codec)
    limit = min(plain * _MIN_GAIN, plain - _MIN_SAVED)
    ranked = sorted((_size(encoded, codec), recipe) for recipe, encoded in candidates)
    memo = {}
    for size, recipe in ranked:
        if size >= limit:
            break
        applied = _apply(array, recipe, batch_rows, starts, memo=memo)
        if applied is not None:
            return applied
    return array, ""


def _kind(typ: pa.DataType) -> str:
    if pa.types.is_float64(typ):
        return "float"
    if pa.types.is_dictionary(typ):
        return "dictionary"
    if pa.types.is_integer(typ):
        return "int"
    if pa.types.is_time(typ) or pa.types.is_date(typ) or pa.types.is_timestamp(typ):
        return "temporal"
    return ""


def _apply(array: pa.Array, recipe: str, batch_rows: int, starts: np.ndarray | None = None,
           *, memo: dict[str, Any] | None = None) -> tuple[pa.Array, str] | None:
    """``array`` encoded by ``recipe`` with its metadata tag, or None where it does not hold
    (``starts``: see :func:`encode`).  ``memo``: where recipes applied to the same array
    share their first step (scaling it, which checks every value)."""
    steps = recipe.split(",")
    if pa.types.is_dictionary(array.type):
        indices = _narrow(array.indices)
        return None if indices is None else \
            (pa.DictionaryArray.from_arrays(indices, array.dictionary), "narrow")
    tags = []
    if steps[0] == "scale":
        if memo is None:
            scaled = _scale(array)
        else:
            if "scale" not in memo:
                memo["scale"] = _scale(array)
            scaled = memo["scale"]
        if scaled is None:
            return None
        array, digits = scaled
        tags.append(f"scale:{digits}")
    for step, transform in (("delta", lambda a: _delta(a, batch_rows, starts)),
                            ("narrow", _narrow)):
        if step in steps:
            array = transform(array)
            if array is None:
                return None
            tags.append(step)
    return array, ",".join(tags)


def _narrow(ints: pa.Array) -> pa.Array | None:
    """The integers in int8 or int16 when they all fit and that is narrower, else None."""
    if len(ints) == ints.null_count:
        return None
    bounds = pc.min_max(ints)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    for width, typ in ((8, pa.int8()), (16, pa.int16())):
        if width < ints.type.bit_width and -(2 ** (width - 1)) <= lo and hi < 2 ** (width - 1):
            return ints.cast(typ)
    return None


def _sample(array: pa.Array) -> pa.Array:
    """Four runs of rows spread over the array (runs, so deltas inside them are typical)."""
    if len(array) <= _SAMPLE:
        return array
    run = _SAMPLE // 4
    starts = np.linspace(0, len(array) - run, 4).astype(np.int64).tolist()
    return pa.concat_arrays([array.slice(s, run) for s in starts])


def _size(array: pa.Array, codec: str | None) -> int:
    """Bytes the values take compressed (without a codec: their width); dictionaries are
    measured by their indices."""
    if pa.types.is_dictionary(array.type):
        array = array.indices
    if pa.types.is_temporal(array.type):   # measured as its integers: numpy has no time64[ns]
        array = array.view(pa.int32() if array.type.bit_width == 32 else pa.int64())
    values = (array.fill_null(0) if array.null_count else array).to_numpy(zero_copy_only=False)
    if codec is None:
        return values.nbytes
    return shared_codec(codec).compress(pa.py_buffer(np.ascontiguousarray(values))).size


@functools.cache
def shared_codec(name: str, level: int = 1) -> pa.Codec:
    """A shared codec (making one costs milliseconds: it allocates its context); the level
    applies to zstd only.  Samples are measured at level 1, files written at the setting's."""
    return pa.Codec(name, level if name == "zstd" else None)


def _scale(array: pa.Array) -> tuple[pa.Array, int] | None:
    """``array`` as integers k with value == k / 10**d exactly, or None.

    The smallest ``d`` is guessed on a sample and then checked on every value (one pass);
    NaN, infinities, -0.0 and magnitudes beyond 2**53 are refused.
    """
    if len(array) == 0:
        return None
    values = array.fill_null(0).to_numpy(zero_copy_only=False) if array.null_count \
        else array.to_numpy(zero_copy_only=False)
    sample = values[:: max(1, len(values) // 4096)]
    guess = next((d for d in range(7) if _exact(sample, d) is not None), None)
    if guess is None:
        return None
    found = next(((d, k) for d in range(guess, 7)
                  if (k := _exact(values, d)) is not None), None)
    if found is None:
        return None
    digits, k = found
    if np.signbit(values[k == 0]).any():   # -0.0 would come back as +0.0
        return None
    small = np.abs(k).max() < 2 ** 31
    ints = k.astype(np.int32 if small else np.int64)
    mask = array.is_null().to_numpy(zero_copy_only=False) if array.null_count else None
    return pa.array(ints, mask=mask), digits


def _exact(values: np.ndarray, digits: int) -> np.ndarray | None:
    """round(values * 10**digits) when dividing it back gives every value bit for bit."""
    factor = 10.0 ** digits
    with np.errstate(over="ignore", invalid="ignore"):   # huge values overflow to inf: refused
        k = values * factor
    np.rint(k, out=k)
    peak = np.abs(k).max()
    if not peak < 2.0 ** 53:               # also false for NaN and inf
        return None
    return k if np.array_equal(k / factor, values) else None


def _delta(array: pa.Array, batch_rows: int, starts: np.ndarray | None = None
           ) -> pa.Array | None:
    """First differences (restarting every ``batch_rows``, or exactly at ``starts``) of an
    integer-like array without nulls, in the narrowest safe width."""
    if array.null_count or len(array) < 2:
        return None
    typ = array.type
    width = typ.bit_width if hasattr(typ, "bit_width") else 64
    ints = array.view(pa.int32() if width == 32 else pa.int64()) if not pa.types.is_integer(typ) \
        else array
    values = ints.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    diff = np.empty_like(values)
    diff[0] = values[0]
    np.subtract(values[1:], values[:-1], out=diff[1:])
    restarts = slice(None, None, batch_rows) if starts is None else starts
    diff[restarts] = values[restarts]
    if diff.min() >= -(2 ** 31) and diff.max() < 2 ** 31:
        return pa.array(diff.astype(np.int32))
    return pa.array(diff)


# -- decoding ---------------------------------------------------------------------------------
def _decode_array(array: pa.Array, how: str, target: pa.DataType) -> pa.Array:
    """One pass per step, straight into the output type (this runs on every read).

    Deltas of a scaled column are summed as int64 and divided once: the same k / 10**d as the
    encoder checked, so the result is bit for bit the value written.
    Outputs live in Arrow's memory pool, which keeps freed memory for reuse: fresh numpy
    arrays of this size cost page faults that measured 5-10x the arithmetic.
    """
    parts = how.split(",")
    digits = int(parts[0].split(":")[1]) if parts[0].startswith("scale:") else None
    delta = "delta" in parts
    values = array.to_numpy(zero_copy_only=False) if not array.null_count \
        else array.fill_null(0).to_numpy(zero_copy_only=False)
    dtype: Any
    if digits is not None:
        dtype = np.float64
    elif pa.types.is_integer(target):   # (not to_pandas_dtype(): that imports pandas)
        dtype = np.dtype(f"{'u' if pa.types.is_unsigned_integer(target) else 'i'}"
                         f"{target.bit_width // 8}")
    else:
        dtype = np.int32 if target.bit_width == 32 else np.int64
    buffer, out = _pool_array(len(values), dtype)
    if digits is not None:
        if delta:   # integer running sum (a float one is latency-bound), then one division
            _, sums = _pool_array(len(values), np.int64)
            np.cumsum(values, dtype=np.int64, out=sums)
            values = sums
        np.divide(values, 10.0 ** digits, out=out, casting="unsafe")
    elif delta:   # the partial sums are the original values, so they fit the output type
        np.cumsum(values, dtype=dtype, out=out)
    else:
        np.copyto(out, values, casting="unsafe")
    validity = None
    if array.null_count:
        validity = array.buffers()[0] if array.offset == 0 else \
            pc.invert(array.is_null()).buffers()[1]
    physical = pa.float64() if digits is not None else pa.from_numpy_dtype(dtype)
    decoded = pa.Array.from_buffers(physical, len(values), [validity, buffer],
                                    null_count=array.null_count)
    return decoded if decoded.type == target else decoded.view(target)


def _pool_array(n: int, dtype: Any) -> tuple[pa.Buffer, np.ndarray]:
    """A writable numpy array over a buffer from Arrow's memory pool."""
    buffer = pa.allocate_buffer(n * np.dtype(dtype).itemsize)
    return buffer, np.frombuffer(buffer, dtype=dtype)
