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
file's codec and keeps the encoding only when it is measurably smaller.  The encoding is written
into the field metadata (``hfq.enc``), so every file is self-describing; decoding needs nothing
from the catalog.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["decode", "encode"]

ENC = b"hfq.enc"
TYPE = b"hfq.type"
_SAMPLE = 1 << 14
_MIN_GAIN = 0.9  # keep an encoding only when it makes the sample at least 10% smaller ...
_MIN_SAVED = 256  # ... and by at least this many bytes: decoding costs time on every read


def encode(table: pa.Table, codec: str | None, batch_rows: int) -> pa.Table:
    """Return the physical table to write: encoded columns carry ``hfq.enc`` metadata.

    Deltas restart every ``batch_rows`` rows, so each record batch decodes on its own (the
    reader may skip batches).
    """
    fields, arrays = [], []
    for field, column in zip(table.schema, table.columns):
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        encoded, how = _choose(array, codec, batch_rows)
        meta = {TYPE: str(field.type).encode()}
        if how:
            meta[ENC] = how.encode()
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
def _choose(array: pa.Array, codec: str | None, batch_rows: int) -> tuple[pa.Array, str]:
    typ = array.type
    candidates: list[tuple[pa.Array, str]] = []
    if pa.types.is_float64(typ):
        scaled = _scale(array)
        if scaled is not None:
            ints, digits = scaled
            candidates += _with_narrow(ints, f"scale:{digits}")
            delta = _delta(ints, batch_rows)
            if delta is not None:
                candidates += _with_narrow(delta, f"scale:{digits},delta")
    elif pa.types.is_dictionary(typ):
        indices = _narrow(array.indices)
        if indices is not None:
            candidates.append((pa.DictionaryArray.from_arrays(indices, array.dictionary),
                               "narrow"))
    elif (pa.types.is_integer(typ) or pa.types.is_time(typ) or pa.types.is_date(typ)
          or pa.types.is_timestamp(typ)):
        narrow = _narrow(array) if pa.types.is_integer(typ) else None
        if narrow is not None:
            candidates.append((narrow, "narrow"))
        delta = _delta(array, batch_rows)
        if delta is not None:
            candidates += _with_narrow(delta, "delta")
    if not candidates or codec is None:
        return array, ""
    best, best_how = array, ""
    plain = _sample_size(array, codec)
    best_size = min(plain * _MIN_GAIN, plain - _MIN_SAVED)
    for candidate, how in candidates:
        size = _sample_size(candidate, codec)
        if size < best_size:
            best, best_how, best_size = candidate, how, size
    return best, best_how


def _with_narrow(ints: pa.Array, how: str) -> list[tuple[pa.Array, str]]:
    """The candidate, and its narrower-integer twin when one fits (decoding is the same: the
    decoder reads any integer width)."""
    narrow = _narrow(ints)
    return [(ints, how)] + ([(narrow, how)] if narrow is not None else [])


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


def _sample_size(array: pa.Array, codec: str) -> int:
    """Compressed size of four runs of rows spread over the array (through numpy: slicing an
    Arrow array keeps its whole buffers); dictionaries are measured by their indices."""
    if pa.types.is_dictionary(array.type):
        array = array.indices
    values = array.fill_null(0).to_numpy(zero_copy_only=False)
    run = _SAMPLE // 4
    starts = np.linspace(0, max(0, len(values) - run), 4).astype(np.int64)
    sample = np.concatenate([values[s:s + run] for s in starts])
    return _codec(codec).compress(pa.py_buffer(sample)).size


@functools.cache
def _codec(name: str) -> pa.Codec:
    """Making a codec costs milliseconds (it allocates its context): make each one once."""
    return pa.Codec(name, 1 if name == "zstd" else None)


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


def _delta(array: pa.Array, batch_rows: int) -> pa.Array | None:
    """First differences (restarting every ``batch_rows``) of an integer-like array without
    nulls, in the narrowest safe width."""
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
    diff[::batch_rows] = values[::batch_rows]
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
    if digits is not None:
        dtype = np.float64
    elif pa.types.is_integer(target):
        dtype = target.to_pandas_dtype()
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


def _pool_array(n: int, dtype) -> tuple[pa.Buffer, np.ndarray]:
    """A writable numpy array over a buffer from Arrow's memory pool."""
    buffer = pa.allocate_buffer(n * np.dtype(dtype).itemsize)
    return buffer, np.frombuffer(buffer, dtype=dtype)
