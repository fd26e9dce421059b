"""Bit-packing with frame of reference and patched exceptions, in blocks of 1,024 values: the
numba kernels under :mod:`hfq.storage.light`.

A *stream* is an int64 array (the values of an integer or temporal column, their first
differences, dictionary codes, or the integers ``k`` of decimal doubles) cut into record
batches, and each batch into blocks of :data:`BLOCK` values (the last one shorter).  Each block
stores a reference ``ref`` and a width ``w``: a value ``v`` with ``0 <= v - ref < 2**w`` is
stored in ``w`` bits, any other is an *exception* stored whole beside the block (PFOR, Zukowski
et al. 2006) -- the zero bids, sentinel offers and symbol boundaries of a day of quotes then
cost their own bytes instead of widening their whole block.  Widths above 32 store the block's
offsets as whole 64-bit words.

**Layout of a full block** (FastLanes-like, Afroozeh & Boncz 2023): value ``i = r * 32 + lane``
of the block's 32 x 32 values goes to lane ``lane``; a lane's 32 values are packed one after
another into its ``w`` 32-bit words, and word ``k`` of lane ``lane`` is ``words[k * 32 +
lane]``.  Decoding row ``r`` then does the same shift on 32 consecutive words, which LLVM
vectorises without intrinsics.  A short last block is packed value after value.

**A batch's payload** (little-endian, each section a multiple of 8 bytes)::

    int64  exceptions k
    int64  refs[blocks]
    uint8  widths[blocks]            (padded)
    uint32 exception positions[k]    (row within the batch, ascending; padded)
    int64  exception values[k]
    uint32 words[...]                (padded)

Every kernel releases the GIL and is cached on disk.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hfq.storage.jit import njit

__all__ = ["BLOCK", "decode_stream", "plan_stream", "write_stream"]

BLOCK = 1024
_LANES = 32
_EXCEPTION_BITS = 96          # what an exception costs: a uint32 position and an int64 value
_WIDE = 64                    # the width of a block stored as whole 64-bit offsets


@njit(cache=True, nogil=True)
def _bits(x: Any) -> int:
    """Bit length of a non-negative int64; 64 for a negative one (a wrapped range)."""
    if x < 0:
        return 64
    n = 0
    while x:
        x >>= 1
        n += 1
    return n


@njit(cache=True, nogil=True)
def _pad8(n: Any) -> Any:
    return (n + 7) // 8 * 8


@njit(cache=True, nogil=True)
def _words(m: Any, w: Any) -> Any:
    """32-bit words of a block of ``m`` values of width ``w``."""
    if w > 32:
        return 2 * m
    if m == BLOCK:
        return 32 * w
    return (m * w + 31) // 32


@njit(cache=True, nogil=True)
def _plan_block(v: np.ndarray, lo: Any, hi: Any) -> tuple[Any, Any, Any]:
    """(ref, width, exceptions) of block ``v[lo:hi]``: the width that makes bits plus
    exceptions cheapest around a median of 16 sampled values, then the exact reference and
    width of the values kept."""
    m = hi - lo
    step = max(1, m // 16)
    sample = np.empty((m + step - 1) // step, dtype=np.int64)
    for j in range(len(sample)):
        sample[j] = v[lo + j * step]
    sample.sort()
    med = sample[len(sample) // 2]
    hist = np.zeros(66, dtype=np.int64)
    for i in range(lo, hi):
        d = v[i] - med
        if d < 0:
            d = -d
        hist[_bits(d)] += 1
    # values within 2**b of the median are kept; the cost of b: m * (b + 1) bits + exceptions
    best_b, best_cost, above = 64, 1 << 62, 0
    for b in range(64, -1, -1):
        width = 0 if b == 0 else b + 1 if b < 32 else _WIDE
        cost = m * width + above * _EXCEPTION_BITS
        if cost <= best_cost:
            best_b, best_cost = b, cost
        above += hist[b]
    low, high, kept = 0, 0, 0
    for i in range(lo, hi):
        d = v[i] - med
        if d < 0:
            d = -d
        if _bits(d) <= best_b:
            if kept == 0 or v[i] < low:
                low = v[i]
            if kept == 0 or v[i] > high:
                high = v[i]
            kept += 1
    w = _bits(high - low)
    if w > 32:   # whole 64-bit offsets: every value fits, none is an exception
        return 0, _WIDE, 0
    limit = 1 << w
    exceptions = 0
    for i in range(lo, hi):   # the same test as write_stream's
        d = v[i] - low
        if d < 0 or d >= limit:
            exceptions += 1
    return low, w, exceptions


@njit(cache=True, nogil=True)
def plan_stream(v: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray, np.ndarray]:
    """Plan every block of ``v`` cut into batches at ``starts`` (ascending, the first 0):
    ``(refs, widths, exceptions per block, payload bytes per batch)``."""
    n = len(v)
    nb = 0
    for j in range(len(starts)):
        end = starts[j + 1] if j + 1 < len(starts) else n
        nb += (end - starts[j] + BLOCK - 1) // BLOCK
    refs = np.zeros(nb, dtype=np.int64)
    widths = np.zeros(nb, dtype=np.uint8)
    excs = np.zeros(nb, dtype=np.int64)
    sizes = np.zeros(len(starts), dtype=np.int64)
    b = 0
    for j in range(len(starts)):
        end = starts[j + 1] if j + 1 < len(starts) else n
        blocks = (end - starts[j] + BLOCK - 1) // BLOCK
        words = 0
        k = 0
        for q in range(blocks):
            lo = starts[j] + q * BLOCK
            hi = min(lo + BLOCK, end)
            ref, w, e = _plan_block(v, lo, hi)
            refs[b], widths[b], excs[b] = ref, w, e
            words += _words(hi - lo, w)
            k += e
            b += 1
        sizes[j] = 8 + 8 * blocks + _pad8(blocks) + _pad8(4 * k) + 8 * k + _pad8(4 * words)
    return refs, widths, excs, sizes


@njit(cache=True, nogil=True)
def write_stream(v: np.ndarray, starts: np.ndarray, refs: np.ndarray, widths: np.ndarray,
                 excs: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The payloads of every batch of ``v`` as planned by :func:`plan_stream`, one after
    another (batch ``j`` at ``sizes[:j].sum()``)."""
    n = len(v)
    out = np.zeros(sizes.sum(), dtype=np.uint8)
    pos = 0
    b = 0
    for j in range(len(starts)):
        start = starts[j]
        end = starts[j + 1] if j + 1 < len(starts) else n
        blocks = (end - start + BLOCK - 1) // BLOCK
        k = 0
        words = 0
        for q in range(blocks):
            k += excs[b + q]
            words += _words(min(BLOCK, end - start - q * BLOCK), np.int64(widths[b + q]))
        head = out[pos:pos + 8].view(np.int64)
        head[0] = k
        at = pos + 8
        out[at:at + 8 * blocks].view(np.int64)[:] = refs[b:b + blocks]
        at += 8 * blocks
        out[at:at + blocks] = widths[b:b + blocks]
        at += _pad8(blocks)
        exc_pos = out[at:at + 4 * k].view(np.uint32)
        at += _pad8(4 * k)
        exc_val = out[at:at + 8 * k].view(np.int64)
        at += 8 * k
        word = out[at:at + 4 * words].view(np.uint32)
        e = 0
        wp = 0
        off = np.zeros(BLOCK, dtype=np.int64)
        for q in range(blocks):
            lo = start + q * BLOCK
            hi = min(lo + BLOCK, end)
            m = hi - lo
            ref = refs[b]
            w: Any = np.int64(widths[b])
            limit = (1 << w) if w <= 32 else 0
            for i in range(m):
                d = v[lo + i] - ref
                if w <= 32 and (d < 0 or d >= limit):
                    exc_pos[e] = lo + i - start
                    exc_val[e] = v[lo + i]
                    e += 1
                    d = 0
                off[i] = d
            if w > 32:
                for i in range(m):
                    word[wp + 2 * i] = off[i] & 0xFFFFFFFF
                    word[wp + 2 * i + 1] = (off[i] >> 32) & 0xFFFFFFFF
            elif m == BLOCK and w > 0:
                for lane in range(_LANES):
                    acc: Any = 0
                    bits = 0
                    kk = 0
                    for r in range(_LANES):
                        acc |= off[r * _LANES + lane] << bits
                        bits += w
                        if bits >= 32:
                            word[wp + kk * _LANES + lane] = acc & 0xFFFFFFFF
                            acc >>= 32
                            bits -= 32
                            kk += 1
            elif w > 0:
                acc = np.int64(0)
                bits = 0
                kk = 0
                for i in range(m):
                    acc |= off[i] << bits
                    bits += w
                    if bits >= 32:
                        word[wp + kk] = acc & 0xFFFFFFFF
                        acc >>= 32
                        bits -= 32
                        kk += 1
                if bits > 0:
                    word[wp + kk] = acc & 0xFFFFFFFF
            wp += _words(m, w)
            b += 1
        pos += sizes[j]
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def _unpack(word: np.ndarray, wp: Any, m: Any, w: Any, ref: Any, tmp: np.ndarray) -> None:
    """``ref`` plus the offsets of one block (``m`` values of width ``w`` at word ``wp``)
    into ``tmp``.  The lane loops index with unsigned integers: numba's negative-index
    check on a signed ``base + lane`` keeps LLVM from vectorising them (2.9 -> 1.1 ns a
    value measured)."""
    if w == 0:
        tmp[:m] = ref
    elif w > 32:
        for i in range(m):
            tmp[i] = (np.int64(word[wp + 2 * i]) | (np.int64(word[wp + 2 * i + 1]) << 32)) + ref
    elif m == BLOCK:
        mask = (1 << w) - 1
        lanes = np.uint64(_LANES)
        for r in range(_LANES):
            bit = r * w
            s = bit & 31
            base = np.uint64(wp + (bit >> 5) * _LANES)
            row = np.uint64(r * _LANES)
            if s + w <= 32:
                for lane in range(lanes):
                    tmp[row + lane] = ((np.int64(word[base + lane]) >> s) & mask) + ref
            else:
                for lane in range(lanes):
                    tmp[row + lane] = (((np.int64(word[base + lane]) >> s) |
                                        (np.int64(word[base + lanes + lane]) << (32 - s)))
                                       & mask) + ref
    else:
        mask = (1 << w) - 1
        for i in range(m):
            bit = i * w
            k = bit >> 5
            s = bit & 31
            x = np.int64(word[wp + k]) >> s
            if s + w > 32:
                x |= np.int64(word[wp + k + 1]) << (32 - s)
            tmp[i] = (x & mask) + ref


# output type codes of :func:`decode_blobs` (one compiled kernel for every output type)
OUT_CODES = {np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 4,
             np.dtype(np.int64): 8, np.dtype(np.float64): 9}


@njit(cache=True, nogil=True, error_model="numpy")
def _store(tmp: np.ndarray, m: Any, scale: float, factor: Any, out: np.ndarray, code: Any,
           dst: Any) -> None:
    """``tmp[:m]`` (integers) into rows ``dst..`` of ``out`` (raw bytes of type ``code``),
    divided by ``scale`` (decimal doubles, when not 0) or times ``factor``.  (Each output is
    a slice indexed from 0: see :func:`_unpack` on vectorising.)"""
    if code == 9:
        o = out.view(np.float64)[dst:dst + m]
        if scale != 0.0:
            for i in range(m):
                o[i] = np.float64(tmp[i]) / scale
        else:
            for i in range(m):
                o[i] = np.float64(tmp[i])
    elif code == 8:
        o8 = out.view(np.int64)[dst:dst + m]
        for i in range(m):
            o8[i] = tmp[i] * factor
    elif code == 4:
        o4 = out.view(np.int32)[dst:dst + m]
        for i in range(m):
            o4[i] = tmp[i] * factor
    elif code == 2:
        o2 = out.view(np.int16)[dst:dst + m]
        for i in range(m):
            o2[i] = tmp[i] * factor
    else:
        o1 = out.view(np.int8)[dst:dst + m]
        for i in range(m):
            o1[i] = tmp[i] * factor


@njit(cache=True, nogil=True, error_model="numpy")
def decode_stream(payload: np.ndarray, n: Any, mode: Any, base: Any, lookup: np.ndarray,
                  scale: float, factor: Any, out: np.ndarray, code: Any, at: Any) -> None:
    """Decode one batch's payload of ``n`` values into rows ``at..at + n`` of ``out`` (the
    raw bytes of an array of type ``code``, see :data:`OUT_CODES`).

    ``mode``: 0 the stream is the values, 1 their first differences (the running sum starts
    at ``base``), 2 codes into ``lookup``.  The integer each row decodes to is then divided by
    ``scale`` when it is not 0 (decimal doubles) or multiplied by ``factor`` (dates to
    milliseconds...), and stored in ``out``'s type.
    """
    blocks = (n + BLOCK - 1) // BLOCK
    k = payload[0:8].view(np.int64)[0]
    at8 = 8
    refs = payload[at8:at8 + 8 * blocks].view(np.int64)
    at8 += 8 * blocks
    widths = payload[at8:at8 + blocks]
    at8 += _pad8(blocks)
    exc_pos = payload[at8:at8 + 4 * k].view(np.uint32)
    at8 += _pad8(4 * k)
    exc_val = payload[at8:at8 + 8 * k].view(np.int64)
    at8 += 8 * k
    word = payload[at8:].view(np.uint32)
    tmp = np.empty(BLOCK, dtype=np.int64)
    wp = 0
    e = 0
    acc = base
    for q in range(blocks):
        lo = q * BLOCK
        m = min(BLOCK, n - lo)
        w = np.int64(widths[q])
        ref = refs[q]
        _unpack(word, wp, m, w, ref, tmp)
        wp += _words(m, w)
        while e < k and exc_pos[e] < lo + m:
            tmp[exc_pos[e] - lo] = exc_val[e]
            e += 1
        if mode == 1:
            for i in range(m):
                acc += tmp[i]
                tmp[i] = acc
        elif mode == 2:
            for i in range(m):
                tmp[i] = lookup[tmp[i]]
        _store(tmp, m, scale, factor, out, code, at + lo)


def decode_stream_numpy(payload: np.ndarray, n: int, mode: int, base: int,
                        lookup: np.ndarray, scale: float, factor: int, out: np.ndarray,
                        code: int, at: int) -> None:
    """:func:`decode_stream` in numpy, bit for bit: the decoder of a process that has not yet
    paid numba's start-up (about 0.5 s on the first kernel call, however small the read;
    :func:`hfq.storage.light.decode_into` chooses).  Full blocks of one width are unpacked
    together, a row of their lanes at a time; the short last block value by value."""
    if n <= 0:
        return
    blocks = (n + BLOCK - 1) // BLOCK
    k = int(payload[0:8].view(np.int64)[0])
    pos = 8
    refs = payload[pos:pos + 8 * blocks].view(np.int64)
    pos += 8 * blocks
    widths = payload[pos:pos + blocks].astype(np.int64)
    pos += (blocks + 7) // 8 * 8
    exc_pos = payload[pos:pos + 4 * k].view(np.uint32)
    pos += (4 * k + 7) // 8 * 8
    exc_val = payload[pos:pos + 8 * k].view(np.int64)
    pos += 8 * k
    word = payload[pos:pos + (len(payload) - pos) // 4 * 4].view(np.uint32).astype(np.int64)
    sizes = np.full(blocks, BLOCK, dtype=np.int64)
    sizes[-1] = n - (blocks - 1) * BLOCK
    words = np.where(widths > 32, 2 * sizes,
                     np.where(sizes == BLOCK, _LANES * widths, (sizes * widths + 31) // 32))
    starts = np.cumsum(words) - words
    whole = n // BLOCK
    off = np.zeros(n, dtype=np.int64)
    full_off = off[:whole * BLOCK].reshape(whole, BLOCK)
    for w in np.unique(widths[:whole]).tolist():
        if w == 0:
            continue
        sel = np.flatnonzero(widths[:whole] == w)
        if w > 32:
            pairs = word[starts[sel][:, None] + np.arange(2 * BLOCK)].reshape(-1, BLOCK, 2)
            full_off[sel] = pairs[:, :, 0] | (pairs[:, :, 1] << 32)
            continue
        lanes = word[starts[sel][:, None] + np.arange(_LANES * w)].reshape(-1, w, _LANES)
        rows = np.empty((len(sel), _LANES, _LANES), dtype=np.int64)
        mask = (1 << w) - 1
        for r in range(_LANES):
            bit = r * w
            kk, s = bit >> 5, bit & 31
            x = lanes[:, kk, :] >> s
            if s + w > 32:
                x |= lanes[:, kk + 1, :] << (32 - s)
            rows[:, r, :] = x & mask
        full_off[sel] = rows.reshape(-1, BLOCK)
    if whole < blocks and widths[whole]:   # the short last block, packed value after value
        w, wp = int(widths[whole]), int(starts[whole])
        i = np.arange(n - whole * BLOCK, dtype=np.int64)
        if w > 32:
            off[whole * BLOCK:] = word[wp + 2 * i] | (word[wp + 2 * i + 1] << 32)
        else:
            bit = i * w
            s = bit & 31
            low = word[wp + (bit >> 5)]
            high = word[np.minimum(wp + (bit >> 5) + 1, len(word) - 1)]
            spill = np.where(s + w > 32, high << (32 - s), 0)
            off[whole * BLOCK:] = ((low >> s) | spill) & ((1 << w) - 1)
    vals = off + np.repeat(refs, sizes)
    if k:
        keep = exc_pos < n
        vals[exc_pos[keep].astype(np.int64)] = exc_val[keep]
    if mode == 1:
        vals = np.cumsum(vals) + np.int64(base)
    elif mode == 2:
        vals = lookup[vals]
    if code == 9:
        dst = out.view(np.float64)[at:at + n]
        doubles = vals.astype(np.float64)
        if scale != 0.0:
            np.divide(doubles, scale, out=dst)
        else:
            dst[:] = doubles
        return
    kind = {8: np.int64, 4: np.int32, 2: np.int16, 1: np.int8}[code]
    out.view(kind)[at:at + n] = (vals * np.int64(factor)).astype(kind)
