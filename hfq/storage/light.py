"""File format 2: lightweight column encodings that decode at memory speed, chosen per column
and per file, with a general compressor only where it pays.

A format-2 file is still an Arrow IPC file -- the same frame, footer, record-batch messages and
checksums as before (:mod:`hfq.storage.fragment`) -- but each record batch holds one row: per
column, one ``large_binary`` value, the column's *blob* for that batch's rows.  The IPC layer
compresses nothing; the blob says how its values are stored:

* **packed** -- integers (and dates, times, timestamps, dictionary codes) as a stream
  bit-packed in blocks of 1,024 with frame of reference and patched exceptions
  (:mod:`hfq.storage.bitpack`); the stream is the values (``for``), their first differences
  (``delta``: times and prices within a symbol) or codes into the batch's sorted distinct
  values (``dict``: sizes in round lots);
* **alp** -- doubles that are decimals (prices in cents) as the integers ``k = v * 10**e``,
  packed as above; ``v`` is ``k / 10**e`` exactly, and every value that is not (NaN, +-inf,
  -0.0, 1/3, beyond 2**53) is a *patch*, stored whole and written over the decoded rows
  (Afroozeh, Kuffo & Boncz, ALP, SIGMOD 2024);
* **plain** -- the values as they are;
* **ipc** -- anything else (strings, booleans, float32) as an Arrow IPC stream compressed by
  the table's codec.

The packed payload (and a plain one) is compressed by the table's codec only when that makes
it at least :data:`_CODEC_GAIN` smaller -- low-entropy codes such as market-maker ids -- so the
wide columns decode without a general compressor.  A SYMBOL or CHAR column keeps the file's
dictionary in its field's metadata (``hfq.dict``: part of the file's frame, checked by every
read) and its codes in the blobs, which decode straight into a result's categorical codes.

Packed streams have two decoders that give the same bits: numba's kernel, and numpy's for a
process that has not yet loaded numba -- whose start-up (about 0.5 s) would otherwise be most
of a fresh process's read of one symbol.  A process decodes up to :data:`NUMPY_VALUES` values
in numpy, then loads numba (:func:`stream_decoder`).

Blob layout (little-endian, sections padded to 8 bytes): an int64[8] header -- kind, mode,
flags, plain width and decimal exponent; rows; the running sum's base; patches; distinct
values; payload bytes stored and raw -- then the validity bitmap (when some row is null), the
patches' rows (uint32) and values (float64), the distinct values (int64), the payload.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from hfq.storage import bitpack
from hfq.storage.bitpack import decode_stream, plan_stream, write_stream
from hfq.storage.jit import Kernel, njit

__all__ = ["FORMAT", "KEY", "blob_column", "decode_array", "decode_into", "dictionary_bytes",
           "dictionary_of", "encode_columns", "is_light"]

FORMAT = b"2"
KEY = b"hfq.format"
CODEC_KEY = b"hfq.codec"
ENC = b"hfq.enc"
DICT = b"hfq.dict"

PLAIN, PACKED, IPC = 0, 1, 2
FOR, DELTA, LOOKUP = 0, 1, 2
NULLS, ALP, CODEC, FLOATS = 1, 2, 4, 8
_HEAD = 64
_CODEC_GAIN = 0.6         # a codec is used on a payload only when it saves 40% of it
_CODEC_MIN = 4096         # ... and the payload is at least this large
_LOOKUP_SPAN = 1 << 16    # integers within this span may be stored as codes into their values
_LOOKUP_MAX = 4096        # ... when a batch holds at most this many distinct ones
_MAX_DIGITS = 10
_SAMPLE = 1 << 14
_POW10 = 10.0 ** np.arange(_MAX_DIGITS + 1)


def is_light(schema: pa.Schema) -> bool:
    """Whether a file's (physical) schema is format 2."""
    return (schema.metadata or {}).get(KEY) == FORMAT


# -- encoding ------------------------------------------------------------------------------------
def encode_columns(table: pa.Table, starts: np.ndarray, codec: str | None,
                   hints: dict[str, str] | None = None) -> tuple[list[pa.Field],
                                                                 list[pa.Array]]:
    """Each column of ``table`` as blobs, one per batch (batches start at rows ``starts``):
    the physical fields (with ``hfq.type``, ``hfq.enc`` and, for dictionaries, ``hfq.dict``
    metadata) and a ``large_binary`` array per column with one blob per batch.

    ``hints``: recipes chosen for earlier files of the same write, by column; followed when
    given (a recipe always holds), filled in otherwise."""
    fields, arrays = [], []
    for field, column in zip(table.schema, table.columns):
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        hint = hints.get(field.name) if hints is not None else None
        blobs, recipe, extra = blob_column(array, starts, codec, hint)
        if hints is not None:
            hints[field.name] = recipe
        meta = {b"hfq.type": str(field.type).encode(), ENC: recipe.encode(), **extra}
        fields.append(pa.field(field.name, pa.large_binary(), False, meta))
        arrays.append(blobs)
    return fields, arrays


def blob_column(array: pa.Array, starts: np.ndarray, codec: str | None,
                hint: str | None = None) -> tuple[pa.Array, str, dict[bytes, bytes]]:
    """``array`` as one blob per batch: (blobs, recipe, extra field metadata)."""
    typ = array.type
    extra: dict[bytes, bytes] = {}
    n = len(array)
    ends = np.append(starts[1:], n).astype(np.int64)
    if pa.types.is_dictionary(typ) and pa.types.is_string(typ.value_type) and \
            not array.dictionary.null_count:
        extra[DICT] = dictionary_bytes(array.dictionary)
        stream = _values(array.indices)
        return (*_packed(stream, array, starts, ends, codec, hint, 0, None), extra)
    if _integer_like(typ):
        return (*_packed(_values(array), array, starts, ends, codec, hint, 0, None), extra)
    if pa.types.is_float64(typ):
        values = _values(array)
        digits = _digits(values, array, hint)
        if digits is not None:
            k, patched = _alp(values, digits)
            if hint is not None and 2 * int(patched.sum()) > n:   # the hint does not hold
                hint = None
                digits = _digits(values, array, None)
                if digits is not None:
                    k, patched = _alp(values, digits)
        if digits is not None:
            return (*_packed(k, array, starts, ends, codec, hint, digits, patched), extra)
        return (*_plain_floats(values, array, starts, ends, codec, hint), extra)
    return _ipc_blobs(array, starts, ends, codec), "ipc", extra


def _integer_like(typ: pa.DataType) -> bool:
    if pa.types.is_integer(typ):
        return pa.types.is_signed_integer(typ)
    return (pa.types.is_date32(typ) or pa.types.is_time(typ) or pa.types.is_timestamp(typ) or
            pa.types.is_duration(typ) or pa.types.is_date64(typ))


def _values(array: pa.Array) -> np.ndarray:
    """The values buffer of a fixed-width array as numpy (whatever is under null slots)."""
    typ = array.type
    width = typ.bit_width // 8
    if pa.types.is_floating(typ):
        dtype = np.dtype(f"f{width}")
    else:
        dtype = np.dtype(f"{'u' if pa.types.is_unsigned_integer(typ) else 'i'}{width}")
    data = array.buffers()[1]
    if data is None:
        return np.zeros(len(array), dtype=dtype)
    return np.frombuffer(data, dtype=dtype, count=array.offset + len(array))[array.offset:]


def _valid(array: pa.Array) -> np.ndarray | None:
    """Row validity as uint8 (None without nulls)."""
    if not array.null_count:
        return None
    return array.is_valid().cast(pa.uint8()).to_numpy(zero_copy_only=False)


def _digits(values: np.ndarray, array: pa.Array, hint: str | None) -> int | None:
    """The decimal exponent that makes the doubles cheapest as integers plus patches (from a
    sample), or None when too few are decimals."""
    if hint is not None:
        return int(hint.split(",")[0][4:]) if hint.startswith("alp:") else None
    valid = _valid(array)
    sample = values if valid is None else values[valid.astype(bool)]
    if len(sample) > _SAMPLE:
        sample = sample[:: len(sample) // _SAMPLE]
    if not len(sample):
        return None
    best, best_cost = None, 64.0
    with np.errstate(all="ignore"):
        for e in range(_MAX_DIGITS + 1):
            k = np.rint(sample * _POW10[e])
            ok = (np.abs(k) < 2.0 ** 53) & ((k / _POW10[e]).view(np.int64) ==
                                           sample.view(np.int64))
            share = float(ok.mean())
            cost = (1 - share) * 96 + 3.33 * e   # patches, and the bits of each decimal digit
            if share >= 0.5 and cost < best_cost:
                best, best_cost = e, cost
    return best


@njit(cache=True, nogil=True, error_model="numpy")
def _alp_kernel(values: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """k = round(v * scale) where k / scale gives back v bit for bit, else a patch (k then
    repeats the previous k, which keeps the deltas small)."""
    n = len(values)
    k = np.empty(n, dtype=np.int64)
    patched = np.zeros(n, dtype=np.uint8)
    prev: Any = 0
    bound = 2.0 ** 53
    for i in range(n):
        v = values[i]
        x = np.rint(v * scale)
        good = abs(x) < bound
        if good:
            kk = np.int64(x)
            back = np.float64(kk) / scale
            good = back == v and (back != 0.0 or np.signbit(back) == np.signbit(v))
            if good:
                k[i] = kk
                prev = kk
        if not good:
            patched[i] = 1
            k[i] = prev
    return k, patched


def _alp(values: np.ndarray, digits: int) -> tuple[np.ndarray, np.ndarray]:
    return _alp_kernel(np.ascontiguousarray(values, dtype=np.float64), _POW10[digits])


@njit(cache=True, nogil=True)
def _fill_nulls(stream: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``stream`` with every null row holding the last valid value before it (the first valid
    one at the start): nulls then cost no bits and break no runs."""
    out = stream.copy()
    last = 0
    for i in range(len(out)):
        if valid[i]:
            last = out[i]
            break
    for i in range(len(out)):
        if valid[i]:
            last = out[i]
        else:
            out[i] = last
    return out


@njit(cache=True, nogil=True)
def _deltas(v: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """First differences, 0 at the first row of each batch (the batch's base is its first
    value)."""
    d = np.empty_like(v)
    for i in range(len(v)):
        d[i] = v[i] - v[i - 1] if i else 0
    for j in range(len(starts)):
        if starts[j] < len(v):
            d[starts[j]] = 0
    return d


@njit(cache=True, nogil=True)
def _lookup(v: np.ndarray, starts: np.ndarray, low: int, span: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per batch, its sorted distinct values and each row's code into them:
    ``(codes, values of every batch one after another, first value of each batch)``."""
    n = len(v)
    slot = np.full(span, -1, dtype=np.int64)
    codes = np.empty(n, dtype=np.int64)
    values = np.empty(n, dtype=np.int64)
    firsts = np.zeros(len(starts) + 1, dtype=np.int64)
    total = 0
    for j in range(len(starts)):
        lo = starts[j]
        hi = starts[j + 1] if j + 1 < len(starts) else n
        found = 0
        for i in range(lo, hi):
            s = v[i] - low
            if slot[s] < 0:
                slot[s] = 0
                values[total + found] = v[i]
                found += 1
        distinct = np.sort(values[total:total + found])
        values[total:total + found] = distinct
        for c in range(found):
            slot[distinct[c] - low] = c
        for i in range(lo, hi):
            codes[i] = slot[v[i] - low]
        for c in range(found):
            slot[distinct[c] - low] = -1
        total += found
        firsts[j + 1] = total
    return codes, values[:total], firsts


def _packed(stream: np.ndarray, array: pa.Array, starts: np.ndarray, ends: np.ndarray,
            codec: str | None, hint: str | None, digits: int,
            patched: np.ndarray | None) -> tuple[pa.Array, str]:
    """An integer stream (values, codes or decimal integers) as packed or plain blobs."""
    valid = _valid(array)
    stream = np.ascontiguousarray(stream, dtype=np.int64)
    if valid is not None or patched is not None:
        keep = np.ones(len(stream), dtype=np.uint8) if valid is None else valid.copy()
        if patched is not None:
            keep &= 1 - patched
        if not keep.all():
            stream = _fill_nulls(stream, keep)
    prefix = f"alp:{digits}," if patched is not None else ""
    want = hint[len(prefix):] if hint is not None and hint.startswith(prefix) else None
    if want is not None and want.split("+")[0] not in ("for", "delta", "dict", "plain"):
        want = None   # not a recipe of this format
    modes = {"for": FOR, "delta": DELTA, "dict": LOOKUP}
    options: dict[str, Any] = {}
    plans: dict[str, tuple[Any, ...]] = {}
    candidates = ["for", "delta", "dict"] if want is None else [want.split("+")[0]]
    if candidates == ["dict"] and not _fits_lookup(stream):   # the hint does not hold
        candidates, want = ["for", "delta"], None
    for name in candidates:
        if name == "plain":
            continue
        if name == "dict":
            if not _fits_lookup(stream):
                continue
            low, high = (int(stream.min()), int(stream.max())) if len(stream) else (0, 0)
            codes, table, firsts = _lookup(stream, starts, low, high - low + 1)
            if np.diff(firsts).max(initial=0) > _LOOKUP_MAX:
                continue
            options[name] = (codes, table, firsts)
            plans[name] = plan_stream(codes, starts)
        elif name == "delta":
            options[name] = _deltas(stream, starts)
            plans[name] = plan_stream(options[name], starts)
        else:
            options[name] = stream
            plans[name] = plan_stream(stream, starts)
    width = _plain_width(array, stream, patched)

    def size(name: str) -> int:
        extra = 8 * (len(options[name][1]) if name == "dict" else 0)
        return int(plans[name][3].sum()) + extra

    ranked = sorted(plans, key=size)
    use_plain = not ranked or (want is not None and want.startswith("plain")) or \
        (want is None and size(ranked[0]) >= width * len(stream))
    name = "plain" if use_plain else ranked[0]
    if name == "plain" and patched is not None:   # decimals no narrower than doubles
        return _plain_floats(_values(array), array, starts, ends, codec, None)
    if name == "plain":
        raw = _plain_bytes(stream if patched is not None or
                           pa.types.is_dictionary(array.type) else _values(array), width)
        payloads, sizes = raw, np.diff(np.append(starts, len(stream))) * width
        mode = FOR
    else:
        mode = modes[name]
        source = options[name][0] if name == "dict" else options[name]
        refs, widths, excs, sizes = plans[name]
        payloads = write_stream(source, starts, refs, widths, excs, sizes)
    use_codec = codec is not None and _codec_pays(payloads, sizes, codec, want)
    blobs = _blobs(stream, valid, patched, array, starts, ends, payloads, sizes,
                   kind=PLAIN if name == "plain" else PACKED, mode=mode, width=width,
                   digits=digits, lookup=options.get("dict") if name == "dict" else None,
                   codec=codec if use_codec else None)
    return blobs, prefix + name + (f"+{codec}" if use_codec else "")


def _fits_lookup(stream: np.ndarray) -> bool:
    return not len(stream) or int(stream.max()) - int(stream.min()) < _LOOKUP_SPAN


def _plain_width(array: pa.Array, stream: np.ndarray, patched: np.ndarray | None) -> int:
    """Bytes per value of a plain stream: the logical width, or the integers' own for
    decimals and codes (int64 / int32)."""
    if patched is not None:
        return 8
    return max(1, array.type.index_type.bit_width // 8 if pa.types.is_dictionary(array.type)
               else array.type.bit_width // 8)


def _plain_bytes(values: np.ndarray, width: int) -> np.ndarray:
    return np.ascontiguousarray(values).astype(f"<i{width}", copy=False).view(np.uint8)


def _plain_floats(values: np.ndarray, array: pa.Array, starts: np.ndarray, ends: np.ndarray,
                  codec: str | None, hint: str | None) -> tuple[pa.Array, str]:
    raw = np.ascontiguousarray(values, dtype="<f8").view(np.uint8)
    sizes = (ends - starts) * 8
    want = hint if hint is not None and hint.startswith("plain") else None
    use_codec = codec is not None and _codec_pays(raw, sizes, codec, want)
    blobs = _blobs(values.view(np.int64), _valid(array), None, array, starts, ends, raw, sizes,
                   kind=PLAIN, mode=FOR, width=8, digits=0, lookup=None,
                   codec=codec if use_codec else None, floats=True)
    return blobs, "plain" + (f"+{codec}" if use_codec else "")


def _codec_pays(payloads: np.ndarray, sizes: np.ndarray, codec: str, want: str | None) -> bool:
    """Whether compressing the payloads with ``codec`` pays (measured on up to 64 KiB of the
    largest batch's payload), or what the hint says."""
    if want is not None:
        return want.endswith(f"+{codec}")
    big = int(np.argmax(sizes)) if len(sizes) else 0
    if not len(sizes) or sizes[big] < _CODEC_MIN:
        return False
    start = int(sizes[:big].sum())
    piece = payloads[start:start + min(int(sizes[big]), 1 << 16)]
    packed = _codec(codec).compress(pa.py_buffer(np.ascontiguousarray(piece)))
    return packed.size <= _CODEC_GAIN * len(piece)


@functools.cache
def _codec(name: str) -> pa.Codec:
    return pa.Codec(name, 1 if name == "zstd" else None)


def _blobs(stream: np.ndarray, valid: np.ndarray | None, patched: np.ndarray | None,
           array: pa.Array, starts: np.ndarray, ends: np.ndarray, payloads: np.ndarray,
           sizes: np.ndarray, *, kind: int, mode: int, width: int, digits: int,
           lookup: tuple[np.ndarray, np.ndarray, np.ndarray] | None, codec: str | None,
           floats: bool = False) -> pa.Array:
    """One blob per batch: header, validity, patches, distinct values, payload."""
    values = _values(array) if patched is not None else None
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flags = (FLOATS if floats else 0) | (ALP if patched is not None else 0) | \
        (CODEC if codec else 0)
    parts: list[Any] = []
    bounds = [0]
    for j, (lo, hi) in enumerate(zip(starts.tolist(), ends.tolist())):
        n = hi - lo
        payload = payloads[offsets[j]:offsets[j + 1]]
        raw_bytes = len(payload)
        if codec:
            payload = np.frombuffer(_codec(codec).compress(pa.py_buffer(
                np.ascontiguousarray(payload))), dtype=np.uint8)
        sections = []
        nulls = valid is not None and not valid[lo:hi].all()
        if nulls:
            assert valid is not None
            sections.append(_pad(np.packbits(valid[lo:hi], bitorder="little")))
        n_patch = 0
        if patched is not None:
            assert values is not None
            where = np.flatnonzero(patched[lo:hi]).astype(np.uint32)
            n_patch = len(where)
            if n_patch:
                sections += [_pad(where.view(np.uint8)),
                             np.ascontiguousarray(values[lo:hi][where]).view(np.uint8)]
        n_lookup = 0
        if lookup is not None:
            table, firsts = lookup[1], lookup[2]
            distinct = table[firsts[j]:firsts[j + 1]]
            n_lookup = len(distinct)
            sections.append(distinct.view(np.uint8))
        base = int(stream[lo]) if mode == DELTA and n else 0
        head = np.array([kind | (mode << 8) | ((flags | (NULLS if nulls else 0)) << 16) |
                         (width << 32) | (digits << 40), n, base, n_patch, n_lookup,
                         len(payload), raw_bytes, 0], dtype=np.int64)
        parts += [head.view(np.uint8), *sections, _pad(payload)]
        bounds.append(bounds[-1] + sum(len(p) for p in (parts[-len(sections) - 2:])))
    data = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
    return pa.Array.from_buffers(pa.large_binary(), len(bounds) - 1,
                                 [None, pa.py_buffer(np.array(bounds, dtype=np.int64)),
                                  pa.py_buffer(data)])


def _pad(b: np.ndarray) -> np.ndarray:
    extra = -len(b) % 8
    return b if not extra else np.concatenate([b, np.zeros(extra, dtype=np.uint8)])


def _ipc_blobs(array: pa.Array, starts: np.ndarray, ends: np.ndarray,
               codec: str | None) -> pa.Array:
    options = pa.ipc.IpcWriteOptions(compression=codec, use_threads=False)
    schema = pa.schema([pa.field("v", array.type)])
    blobs = []
    for lo, hi in zip(starts.tolist(), ends.tolist()):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema, options=options) as writer:
            writer.write_batch(pa.record_batch([array.slice(lo, hi - lo)], schema=schema))
        head = np.array([IPC, hi - lo, 0, 0, 0, 0, 0, 0], dtype=np.int64).view(np.uint8)
        blobs.append(head.tobytes() + sink.getvalue().to_pybytes())
    return pa.array(blobs, pa.large_binary())


def dictionary_bytes(dictionary: pa.Array) -> bytes:
    """A string dictionary as ``count, offsets (int32), utf-8 bytes``."""
    strings = dictionary.cast(pa.string())
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32,
                            count=len(strings) + 1 + strings.offset)[strings.offset:]
    data = strings.buffers()[2]
    start, end = int(offsets[0]), int(offsets[-1])
    body = b"" if data is None else data.to_pybytes()[start:end]
    return np.array([len(strings)], dtype=np.int64).tobytes() + \
        (offsets - start).astype(np.int32).tobytes() + body


def dictionary_of(field: pa.Field) -> pa.Array | None:
    """The dictionary a format-2 field keeps in its metadata (None: not a dictionary)."""
    raw = (field.metadata or {}).get(DICT)
    if raw is None:
        return None
    buffer = pa.py_buffer(raw)
    count = int(np.frombuffer(raw, dtype=np.int64, count=1)[0])
    return pa.Array.from_buffers(pa.string(), count,
                                 [None, buffer.slice(8, 4 * (count + 1)),
                                  buffer.slice(8 + 4 * (count + 1))])


# -- decoding ------------------------------------------------------------------------------------
def decode_into(blobs: Sequence[pa.Buffer], out: np.ndarray, factor: int = 1
                ) -> np.ndarray | None:
    """Decode the blobs of consecutive batches straight into ``out`` (an int8/16/32/64 or
    float64 array of their rows together, e.g. a slice of a result's buffer), integers
    multiplied by ``factor``; returns the rows' validity (uint8) when some row is null."""
    raw = out.view(np.uint8)
    code = bitpack.OUT_CODES[out.dtype]
    valid: np.ndarray | None = None
    at = 0
    for blob in blobs:
        b = np.frombuffer(blob, dtype=np.uint8)
        head = b[:_HEAD].view(np.int64)
        kind, mode, flags = head[0] & 0xFF, (head[0] >> 8) & 0xFF, (head[0] >> 16) & 0xFF
        width, digits = (head[0] >> 32) & 0xFF, (head[0] >> 40) & 0xFF
        n = int(head[1])
        pos = _HEAD
        if flags & NULLS:
            size = (n + 7) // 8
            bits = np.unpackbits(b[pos:pos + size], count=n, bitorder="little")
            if valid is None:
                valid = np.ones(len(out), dtype=np.uint8)
            valid[at:at + n] = bits
            pos += -(-size // 8) * 8
        n_patch = int(head[3])
        patch_rows = b[pos:pos + 4 * n_patch].view(np.uint32)
        pos += -(-4 * n_patch // 8) * 8
        patch_values = b[pos:pos + 8 * n_patch]
        pos += 8 * n_patch
        n_lookup = int(head[4])
        lookup = b[pos:pos + 8 * n_lookup].view(np.int64)
        pos += 8 * n_lookup
        payload = b[pos:pos + int(head[5])]
        if flags & CODEC:
            payload = np.frombuffer(_decompress(payload, int(head[6])), dtype=np.uint8)
        if kind == PACKED:
            base = int(head[2])
            scale = _POW10[digits] if flags & ALP else 0.0
            stream_decoder(n)(payload, n, int(mode), base,
                              lookup if n_lookup else _NO_LOOKUP, scale, factor, raw, code, at)
        elif flags & FLOATS:
            out[at:at + n] = payload[:8 * n].view("<f8")
        else:
            stored = payload[:width * n].view(f"<i{width}")
            if flags & ALP:
                np.divide(stored, _POW10[digits], out=out[at:at + n], casting="unsafe")
            elif factor != 1:
                np.multiply(stored, factor, out=out[at:at + n], dtype=out.dtype,
                            casting="unsafe")
            else:
                out[at:at + n] = stored
        if n_patch:
            out[at:at + n].view(np.int64)[patch_rows] = patch_values.view(np.int64)
        at += n
    return valid


_NO_LOOKUP = np.zeros(1, dtype=np.int64)

NUMPY_VALUES = 1 << 23
"""Values a process decodes in numpy before it loads numba (whose start-up, about 0.5 s on
the first kernel call, is what numpy takes for some 20 M values): a process that reads a few
symbols never pays it, one that reads more pays it once."""
_numpy_left = NUMPY_VALUES


def stream_decoder(n: int) -> Callable[..., None]:
    """The decoder of one batch of ``n`` bit-packed values: :func:`bitpack.decode_stream_numpy`
    while this module's kernels are not compiled and the process has decoded fewer than
    :data:`NUMPY_VALUES` values that way, else numba's :func:`bitpack.decode_stream`.  Both
    give the same bits."""
    global _numpy_left
    if isinstance(decode_stream, Kernel) and decode_stream.dispatcher is None and \
            n <= _numpy_left:
        _numpy_left -= n
        return bitpack.decode_stream_numpy
    return decode_stream


def _decompress(payload: np.ndarray, size: int) -> pa.Buffer:
    """A payload compressed by the codec it starts with: zstd frames and lz4 frames carry a
    magic number, so the blob need not say which."""
    name = "zstd" if payload[:4].tobytes() == b"\x28\xb5\x2f\xfd" else "lz4"
    return _codec(name).decompress(pa.py_buffer(payload), decompressed_size=size)


def blob_kind(blob: pa.Buffer) -> int:
    return int(np.frombuffer(blob, dtype=np.int64, count=1)[0] & 0xFF)


def decode_array(blobs: Sequence[pa.Buffer], logical: pa.DataType,
                 dictionary: pa.Array | None = None) -> pa.Array:
    """The blobs of consecutive batches as one Arrow array of type ``logical``."""
    if not blobs:
        return pa.array([], type=logical)
    if blob_kind(blobs[0]) == IPC:
        parts = [pa.ipc.open_stream(pa.py_buffer(blob).slice(_HEAD)).read_all().column(0)
                 for blob in blobs]
        chunks = [c for p in parts for c in p.chunks]
        return pa.concat_arrays(chunks) if chunks else pa.array([], type=logical)
    n = sum(int(np.frombuffer(b, dtype=np.int64, count=2)[1]) for b in blobs)
    storage = logical.index_type if pa.types.is_dictionary(logical) else logical
    dtype = np.dtype(f"f{storage.bit_width // 8}") if pa.types.is_floating(storage) else \
        np.dtype(f"i{storage.bit_width // 8}")
    buffer = pa.allocate_buffer(n * dtype.itemsize)
    out = np.frombuffer(buffer, dtype=dtype)
    valid = decode_into(blobs, out)
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    nulls = 0 if valid is None else n - int(np.count_nonzero(valid))
    if pa.types.is_dictionary(logical):
        indices = pa.Array.from_buffers(storage, n, [bitmap, buffer], null_count=nulls)
        assert dictionary is not None
        return pa.DictionaryArray.from_arrays(indices, dictionary)
    physical = pa.from_numpy_dtype(dtype)
    array = pa.Array.from_buffers(physical, n, [bitmap, buffer], null_count=nulls)
    return array if physical == logical else array.view(logical)
