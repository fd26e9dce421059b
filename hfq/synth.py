"""Deterministic synthetic data sets of any size, generated as a stream of Arrow record batches.

Every generator is seeded (``seed=0`` by default) and produces identical rows for identical
arguments whatever ``batch_rows`` is: rows are generated in fixed internal chunks per
(day, symbol block) and only then cut into batches, so memory stays bounded by about
``batch_rows`` rows even for a 230-million-row TAQ day.  A day's data depends only on the seed,
the date and the size arguments, so ``dates=("2007-08-01",)`` gives the same rows for that day
as ``dates=("2007-07-31", "2007-08-01")``.  Batches never span two days.

The data imitate the data sets in ``DATASETS.md``: NYSE TAQ quotes (:func:`taq_batches`), China
level-2 snapshots (:func:`l2_batches`) and device sensor readings (:func:`readings_batches`,
:func:`device_info_table`), each matching the built-in schema in :mod:`hfq.schema` exactly.  The
``write_*_csv`` functions write the same data in the raw CSV form of the original files.

Examples
--------
>>> import pyarrow as pa
>>> from hfq import schema, synth
>>> t = pa.Table.from_batches(synth.taq_batches(rows_per_day=1000, symbols=50))
>>> t.num_rows, t.schema == schema.TAQ.arrow
(1000, True)
"""

from __future__ import annotations

import datetime as _dt
import os
import queue
import threading
from functools import lru_cache
from pathlib import Path
from typing import IO, Iterable, Iterator

import numpy as np
import polars as pl
import pyarrow as pa

from hfq import schema as _schema

__all__ = [
    "taq_batches", "write_taq_csv", "taq_csv_files", "l2_batches", "write_l2_csv",
    "readings_batches", "device_info_table", "write_readings_csv", "write_device_info_csv",
    "TAQ_CSV_HEADER",
]

TAQ_CSV_HEADER = "symbol,date,time,bid,ofr,bidsiz,ofrsiz,mode,ex,mmid"
"""The header line of a raw TAQ quotes CSV file."""

_CHUNK = 1 << 16            # rows generated at once; fixed, so output never depends on batch_rows
_TAQ, _L2, _READ, _INFO = 1, 2, 3, 4  # stream ids mixed into the seeds
_SENTINEL = 2_147_483_647   # ofr 214748.3647 in units of 1e-4
_EPOCH = _dt.date(1970, 1, 1).toordinal()

_FAMOUS = ("IBM", "MSFT", "AAPL", "GE", "A", "AA", "C", "F", "T", "BAC", "XOM", "INTC", "CSCO",
           "ORCL", "JPM", "WMT", "GOOG", "SPY", "QQQQ", "DELL", "YHOO", "PFE", "JNJ", "KO", "HPQ",
           "MRK", "AMD", "EBAY", "AMZN", "MO", "GM", "HD", "MOT", "DIA", "IWM")
_EX = ("N", "P", "T", "Q", "Z", "B", "C", "X", "D", "M", "W")
_EX_P = (0.2, 0.15, 0.15, 0.15, 0.1, 0.05, 0.03, 0.05, 0.04, 0.03, 0.05)
_MMID = ("", "FLOW", "EDGX", "EDGA", "NASD")
_MMID_P = (0.9, 0.03, 0.03, 0.02, 0.02)
_MODES = np.array([12, 1, 2, 3, 4, 6, 10, 11], np.int32)
_MODE_P = (0.8, 0.05, 0.04, 0.02, 0.02, 0.02, 0.03, 0.02)
_PAIRS = (("stealth-net", "A0:B1:C5:D2:E0:F3"), ("demo-5ghz", "22:32:A2:B3:05:98"),
          ("demo-net", "01:02:03:04:05:06"))
_STATUS = ("charging", "discharging")
_OS = (("19", "4.4.4"), ("21", "5.0.0"), ("22", "5.1.0"), ("23", "6.0.1"))
_MODELS = ("focus", "mustang", "pinto")
_TZ_OFFSET = 5 * 3600       # readings CSV times are local at UTC-05


# ---------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------
def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, *keys]))


def _check(seed: int, batch_rows: int = 1, **sizes: int) -> None:
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, got {batch_rows}")
    for name, value in sizes.items():
        if value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}")


def _as_date(d: str | _dt.date) -> _dt.date:
    if isinstance(d, _dt.datetime):
        return d.date()
    if isinstance(d, _dt.date):
        return d
    return _dt.date.fromisoformat(str(d))


def _dates(dates: Iterable[str | _dt.date] | str | _dt.date) -> list[_dt.date]:
    if isinstance(dates, (str, _dt.date)):
        dates = (dates,)
    return [_as_date(d) for d in dates]


@lru_cache(maxsize=32)
def _lookup(p: tuple[float, ...]) -> np.ndarray:
    """A 1024-entry table of category indices in proportion ``p`` (for fast categorical draws)."""
    counts = np.floor(np.asarray(p) / sum(p) * 1024).astype(int)
    counts[np.argmax(p)] += 1024 - counts.sum()
    return np.repeat(np.arange(len(p), dtype=np.int8), counts)


def _choice(rng: np.random.Generator, p: tuple[float, ...], n) -> np.ndarray:
    """Indices 0..len(p)-1 drawn with probabilities ``p`` (to 1/1024), as int8."""
    return _lookup(p)[rng.integers(0, 1024, n, dtype=np.int16)]


@lru_cache(maxsize=32)
def _geom_table(p: float) -> np.ndarray:
    q = (np.arange(4096) + 0.5) / 4096
    return np.ceil(np.log1p(-q) / np.log1p(-p)).astype(np.int32)


def _geometric(rng: np.random.Generator, p: float, n) -> np.ndarray:
    """Geometric draws (1, 2, ...; success probability ``p``) from a 4096-quantile table."""
    return _geom_table(p)[rng.integers(0, 4096, n, dtype=np.int16)]


def _segments(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a sorted key, the segment number of every row and the first row of every segment."""
    new = np.empty(len(key), bool)
    new[:1] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    return np.cumsum(new) - 1, np.flatnonzero(new)


def _seg_cumsum(x: np.ndarray, seg: np.ndarray, start: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Cumulative sum restarting at every segment, added to the segment's ``base``."""
    c = np.cumsum(x)
    return c - (c[start] - x[start])[seg] + base[seg]


def _seg_cummax(x: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Running maximum restarting at every segment (``0 <= x < 2**32``)."""
    off = seg.astype(np.int64) << 32
    return np.maximum.accumulate(off + x) - off


def _time_table(minute_weights: dict[tuple[int, int], object]
                ) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Activity profile {(first minute, end minute): weight or f(minutes)} -> quantile table.

    Returns ``(knots, gaps)``: the times of the quantiles k/16384 counted in active seconds
    (gaps between the ranges removed), and ``(active second, shift)`` pairs restoring them.
    """
    starts, weights, gaps, active = [], [], [], 0.0
    for (lo, hi), w in minute_weights.items():
        if starts and lo * 60 != starts[-1][-1] + 60:
            gaps.append((active, lo * 60 - starts[-1][-1] - 60.0))
        mins = np.arange(lo, hi)
        starts.append(mins * 60)
        weights.append(np.broadcast_to(w(mins) if callable(w) else w, mins.shape))
        active += (hi - lo) * 60
    w = np.concatenate(weights).astype(float)
    cum = np.concatenate([[0.0], np.cumsum(w)]) / w.sum()
    first = float(starts[0][0])
    knots = np.interp(np.linspace(0.0, 1.0, (1 << 14) + 1), cum,
                      first + 60.0 * np.arange(len(w) + 1))
    return knots, [(first + a, sh) for a, sh in gaps]


def _inverse_time(u: np.ndarray, table) -> np.ndarray:
    """Seconds since midnight (float) for quantiles ``u`` in [0, 1); monotone in ``u``."""
    knots, gaps = table
    x = u * (len(knots) - 1)
    k = x.astype(np.int64)
    a = knots[k] + (x - k) * (knots[k + 1] - knots[k])
    t = a
    for at, shift in gaps:
        t = t + (a >= at) * shift
    return t


def _rows_of(a: int, b: int, starts: np.ndarray, ends: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For rows a..b-1 of a day laid out by key (key k owns rows starts[k]..ends[k]-1): the key,
    the row's position within its key, and the key's row count."""
    k0 = int(np.searchsorted(ends, a, side="right"))
    k1 = int(np.searchsorted(ends, b - 1, side="right")) + 1
    keys = np.arange(k0, k1)
    lens = np.minimum(ends[k0:k1], b) - np.maximum(starts[k0:k1], a)
    key = np.repeat(keys, lens)
    return key, np.arange(a, b) - starts[key], (ends - starts)[key]


def _rebatch(chunks: Iterable[dict[str, np.ndarray]], batch_rows: int
             ) -> Iterator[dict[str, np.ndarray]]:
    """Cut a stream of column chunks into pieces of exactly ``batch_rows`` rows (last shorter)."""
    pending: list[dict[str, np.ndarray]] = []
    have = 0
    for chunk in chunks:
        n = len(next(iter(chunk.values())))
        if n == 0:
            continue
        pending.append(chunk)
        have += n
        while have >= batch_rows:
            merged = pending[0] if len(pending) == 1 else {
                k: np.concatenate([p[k] for p in pending]) for k in pending[0]}
            yield {k: v[:batch_rows] for k, v in merged.items()}
            pending = [{k: v[batch_rows:] for k, v in merged.items()}]
            have -= batch_rows
    if have:
        yield pending[0] if len(pending) == 1 else {
            k: np.concatenate([p[k] for p in pending]) for k in pending[0]}


def _dict_col(idx: np.ndarray, values: pa.Array, compact: bool = True) -> pa.DictionaryArray:
    """A dictionary array; ``compact`` keeps only values[min(idx):max(idx)+1] in the dictionary."""
    lo = int(idx.min()) if compact else 0
    dictionary = values.slice(lo, int(idx.max()) - lo + 1) if compact else values
    return pa.DictionaryArray.from_arrays(pa.array((idx - lo).astype(np.int32)), dictionary)


def _const_date(day: _dt.date, n: int) -> pa.Array:
    return pa.array(np.full(n, day.toordinal() - _EPOCH, np.int32), pa.date32())


def _open_out(path: str | os.PathLike | IO[bytes]):
    if hasattr(path, "write"):
        return _NoClose(path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return open(path, "wb")


class _NoClose:
    def __init__(self, fh: IO[bytes]):
        self.fh = fh

    def __enter__(self) -> IO[bytes]:
        return self.fh

    def __exit__(self, *exc: object) -> None:
        self.fh.flush()


@lru_cache(maxsize=1)
def _hms_strings() -> tuple[pl.Series, pl.Series]:
    """All 86,400 times of day as 'H:MM:SS' (no leading zero) and 'HH:MM:SS'."""
    s = np.arange(86400)
    h, m, sec = s // 3600, s // 60 % 60, s % 60
    short = [f"{a}:{b:02d}:{c:02d}" for a, b, c in zip(h.tolist(), m.tolist(), sec.tolist())]
    return pl.Series(short), pl.Series([x if len(x) == 8 else "0" + x for x in short])


@lru_cache(maxsize=1)
def _frac_strings() -> pl.Series:
    """Minimal decimal suffix of k/10000 for k in 0..9999: '', '.5', '.0001', ..."""
    return pl.Series(["" if f == 0 else "." + f"{f:04d}".rstrip("0") for f in range(10000)])


def _price(col: str) -> pl.Expr:
    """Minimal decimal form of k/10000 for the integer column ``col``: 1, 12.5, 214748.3647."""
    return (_whole_strings().gather(pl.col(col) // 10000)
            + pl.lit(_frac_strings()).gather(pl.col(col) % 10000))


@lru_cache(maxsize=1)
def _whole_strings() -> pl.Expr:
    return pl.lit(pl.Series(np.arange(1 << 18)).cast(pl.String))


def _prefetch(it: Iterator, depth: int = 2) -> Iterator:
    """Run iterator ``it`` in a background thread, ``depth`` items ahead (overlaps generating
    the next batch with formatting and writing this one)."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop, end = threading.Event(), object()

    def put(x: object) -> None:
        while not stop.is_set():
            try:
                return q.put(x, timeout=0.1)
            except queue.Full:
                pass

    def run() -> None:
        try:
            for x in it:
                put(x)
                if stop.is_set():
                    return
            put(end)
        except BaseException as exc:  # noqa: BLE001 -- re-raised in the consumer
            put(exc)

    thread = threading.Thread(target=run, name="hfq-synth-prefetch", daemon=True)
    thread.start()
    try:
        while (x := q.get()) is not end:
            if isinstance(x, BaseException):
                raise x
            yield x
    finally:
        stop.set()
        thread.join()


# ---------------------------------------------------------------------------------------------
# TAQ quotes
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _ticker_names(n: int) -> tuple[str, ...]:
    """The first ``n`` of a fixed sequence of distinct 1-5 letter tickers (seed independent)."""
    if n > 1_000_000:
        raise ValueError(f"at most 1,000,000 symbols are supported, got {n}")
    out = list(_FAMOUS[:n])
    seen = set(out)
    rng = np.random.default_rng(20070801)
    letters = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", np.uint8)
    while len(out) < n:
        lens = rng.choice(5, 4096, p=[0.002, 0.02, 0.35, 0.45, 0.178]) + 1
        codes = letters[rng.integers(0, 26, (4096, 5))]
        codes[np.arange(5) >= lens[:, None]] = 0
        for name in np.ascontiguousarray(codes).view("S5").ravel().tolist():
            name = name.decode()
            if name not in seen:
                seen.add(name)
                out.append(name)
                if len(out) == n:
                    break
    return tuple(out)


def _taq_universe(symbols: int, seed: int) -> dict[str, np.ndarray]:
    """Per-symbol names (sorted), activity weights, price levels and typical spreads."""
    names = np.array(_ticker_names(symbols))
    rng = _rng(seed, _TAQ)
    w = np.sort(rng.lognormal(0.0, 1.6, symbols))[::-1]
    k = min(symbols, len(_FAMOUS))      # the well-known tickers are among the most active
    weights = np.empty(symbols)
    weights[:k] = rng.permutation(w[:k])
    weights[k:] = rng.permutation(w[k:])
    level = np.exp(rng.normal(np.log(30.0), 0.9, symbols)).clip(5.0, 500.0)
    spread = 1 + rng.geometric(0.5, symbols) + (level > 100) * rng.integers(0, 5, symbols)
    order = np.argsort(names, kind="stable")
    return {"names": names[order], "w": weights[order], "level": level[order],
            "spread": spread[order]}


@lru_cache(maxsize=1)
def _taq_times() -> tuple[np.ndarray, ...]:
    """Quote activity over 04:00-20:00: thin pre/post market, U-shaped regular session."""
    return _time_table({
        (240, 570): lambda m: 0.01 + 0.05 * (m - 240) / 330,
        (570, 960): lambda m: 0.6 + 2.4 * (2 * (m - 570) / 390 - 1) ** 2,
        (960, 1200): lambda m: 0.01 + 0.3 * np.exp(-(m - 960) / 30),
    })


def _taq_day_chunks(day: _dt.date, rows: int, uni: dict[str, np.ndarray], seed: int
                    ) -> Iterator[dict[str, np.ndarray]]:
    """One day's quotes, sorted by (symbol, time), in chunks of ``_CHUNK`` rows."""
    if rows == 0:
        return
    n_sym = len(uni["w"])
    day_id = day.toordinal()
    rng = _rng(seed, _TAQ, day_id)
    wd = uni["w"] * rng.lognormal(0.0, 0.3, n_sym)
    counts = rng.multinomial(rows, wd / wd.sum())
    log_level = np.log(uni["level"]) + rng.normal(0.0, 0.02, n_sym)
    ends = np.cumsum(counts)
    starts = ends - counts
    times = _taq_times()
    carry = 0.0
    for j, a in enumerate(range(0, rows, _CHUNK)):
        sym, i, n = _rows_of(a, min(rows, a + _CHUNK), starts, ends)
        m = len(sym)
        g = _rng(seed, _TAQ, day_id, j + 1)
        # times: jittered stratified quantiles of the day profile -> sorted within a symbol
        t = _inverse_time((i + g.random(m)) / n, times).astype(np.int32)
        # prices: a log random walk per symbol, carried across chunk boundaries
        eps = g.standard_normal(m) * (0.015 / np.sqrt(n))
        seg, first = _segments(sym)
        base = log_level[sym[first]]
        if i[0] > 0:
            base[0] = carry
        logp = _seg_cumsum(eps, seg, first, base)
        carry = logp[-1]
        spread = uni["spread"][sym] + (g.random(m) < 0.2) * _geometric(g, 0.5, m)
        bid = (np.floor(np.exp(logp) * 100 - spread / 2) * 100).astype(np.int64)
        bid += (g.random(m) < 0.02) * g.integers(1, 100, m)      # some sub-penny quotes
        ofr = bid + spread * 100
        bidsiz = _geometric(g, 0.12, m).clip(1, 99).astype(np.int32)
        ofrsiz = _geometric(g, 0.12, m).clip(1, 99).astype(np.int32)
        big = g.random(m) < 0.01
        bidsiz[big] = g.integers(100, 2000, int(big.sum()))
        # edge cases: zero bid / zero ofr (~1%), crossed (~0.5%), sentinel ofr (~0.1%)
        u = g.random(m)
        bid[u < 0.005] = 0
        ofr[(u >= 0.005) & (u < 0.01)] = 0
        crossed = (u >= 0.01) & (u < 0.015)
        ofr[crossed] = np.maximum(bid[crossed] - 100 * g.integers(1, 5, int(crossed.sum())), 100)
        ofr[(u >= 0.015) & (u < 0.016)] = _SENTINEL
        bidsiz[bid == 0] = 0
        ofrsiz[(ofr == 0) | (ofr == _SENTINEL)] = 0
        yield {"sym": sym, "time": t, "bid": bid, "ofr": ofr, "bidsiz": bidsiz,
               "ofrsiz": ofrsiz, "mode": _MODES[_choice(g, _MODE_P, m)],
               "ex": _choice(g, _EX_P, m), "mmid": _choice(g, _MMID_P, m)}


def _taq_stream(dates, rows_per_day, symbols, seed, batch_rows):
    _check(seed, batch_rows, rows_per_day=rows_per_day, symbols=symbols - 1)
    uni = _taq_universe(symbols, seed)
    for day in _dates(dates):
        for piece in _rebatch(_taq_day_chunks(day, rows_per_day, uni, seed), batch_rows):
            yield day, uni, piece


def taq_batches(*, dates: Iterable[str | _dt.date] | str | _dt.date = ("2007-08-01",),
                rows_per_day: int = 1_000_000, symbols: int = 8000, seed: int = 0,
                batch_rows: int = 1_000_000) -> Iterator[pa.RecordBatch]:
    """Synthetic NYSE TAQ level-1 quotes in :data:`hfq.schema.TAQ`, streamed.

    Per day, exactly ``rows_per_day`` rows sorted by (symbol, time) over ``symbols`` distinct
    1-5 letter tickers ("IBM", "MSFT", "AAPL", "GE", "A", ... come first) with heavy-tailed
    activity.  Quotes fall in 04:00-20:00, mostly 09:30-16:00.  Prices are multiples of 0.0001;
    about 1% have a zero bid or offer, 0.5% are crossed and 0.1% carry the sentinel offer
    214748.3647.  ``mmid`` is mostly the empty string (not null).

    Parameters
    ----------
    dates : iterable of str or datetime.date, or one of them
        The trading days, ISO format (``"2007-08-01"``).
    rows_per_day : int
        Rows generated for each day.
    symbols : int
        Number of distinct tickers (at most 1,000,000).
    seed : int
        Seed; the same arguments always give the same rows.
    batch_rows : int
        Rows per record batch; the last batch of each day may be shorter.  Does not change
        the data.

    Yields
    ------
    pyarrow.RecordBatch

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.Table.from_batches(taq_batches(rows_per_day=2000, symbols=20, batch_rows=500))
    >>> t.num_rows, t.column_names[:4]
    (2000, ['symbol', 'date', 'time', 'bid'])
    >>> "IBM" in set(t.column("symbol").to_pylist())
    True
    """
    names_arr = None
    ex_arr, mmid_arr = pa.array(_EX), pa.array(_MMID)
    for day, uni, c in _taq_stream(dates, rows_per_day, symbols, seed, batch_rows):
        if names_arr is None:
            names_arr = pa.array(uni["names"].tolist(), pa.string())
        n = len(c["time"])
        yield pa.RecordBatch.from_arrays([
            _dict_col(c["sym"], names_arr), _const_date(day, n),
            pa.array(c["time"], pa.time32("s")), pa.array(c["bid"] / 1e4),
            pa.array(c["ofr"] / 1e4), pa.array(c["bidsiz"]), pa.array(c["ofrsiz"]),
            pa.array(c["mode"]), _dict_col(c["ex"], ex_arr, compact=False),
            _dict_col(c["mmid"], mmid_arr, compact=False),
        ], schema=_schema.TAQ.arrow)


def write_taq_csv(path: str | os.PathLike | IO[bytes], *,
                  dates: Iterable[str | _dt.date] | str | _dt.date = ("2007-08-01",),
                  rows_per_day: int = 1_000_000, symbols: int = 8000, seed: int = 0,
                  header: bool = True) -> int:
    """Write the rows of :func:`taq_batches` (same arguments) as a raw TAQ CSV file.

    The format is that of the original files: ``A,20070801,6:24:34,1,0,1,0,12,P,`` -- date
    ``YYYYMMDD``, time ``H:MM:SS`` without a leading zero on the hour, prices in minimal decimal
    form and an empty last field when ``mmid`` is empty.

    Parameters
    ----------
    path : str, path-like or binary file object
        Destination; parent directories are created.  An open file is written to, not closed.
    dates, rows_per_day, symbols, seed
        As for :func:`taq_batches`.
    header : bool
        Write the line ``symbol,date,time,bid,ofr,bidsiz,ofrsiz,mode,ex,mmid`` first.

    Returns
    -------
    int
        Rows written (header excluded).

    Examples
    --------
    >>> import io
    >>> buf = io.BytesIO()
    >>> write_taq_csv(buf, rows_per_day=100, symbols=5)
    100
    >>> buf.getvalue().decode().splitlines()[0]
    'symbol,date,time,bid,ofr,bidsiz,ofrsiz,mode,ex,mmid'
    """
    names, written = None, 0
    with _open_out(path) as fh:
        if header:
            fh.write((TAQ_CSV_HEADER + "\n").encode())
        for day, uni, c in _prefetch(_taq_stream(dates, rows_per_day, symbols, seed, 1 << 19)):
            if names is None or len(names) != len(uni["names"]):
                names = pl.Series(uni["names"].tolist(), dtype=pl.String)
            df = pl.DataFrame(c).select(
                symbol=pl.lit(names).gather("sym"), date=pl.lit(day.strftime("%Y%m%d")),
                time=pl.lit(_hms_strings()[0]).gather("time"), bid=_price("bid"),
                ofr=_price("ofr"), bidsiz="bidsiz", ofrsiz="ofrsiz", mode="mode",
                ex=pl.lit(pl.Series(_EX)).gather("ex"),
                mmid=pl.lit(pl.Series([m or None for m in _MMID], dtype=pl.String)).gather("mmid"))
            df.write_csv(fh, include_header=False)
            written += df.height
    return written


def taq_csv_files(directory: str | os.PathLike, *,
                  dates: Iterable[str | _dt.date] | str | _dt.date = ("2007-08-01",),
                  rows_per_day: int = 1_000_000, symbols: int = 8000, seed: int = 0,
                  header: bool = True) -> list[Path]:
    """Write one raw TAQ CSV file per day, ``directory/taq_YYYYMMDD.csv``.

    Each file holds the rows :func:`taq_batches` gives for that day with the same arguments.

    Returns
    -------
    list of pathlib.Path
        The files written, in the order of ``dates``.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> [p.name for p in taq_csv_files(d, dates=["2007-08-01", "2007-08-02"], rows_per_day=50,
    ...                                symbols=5)]
    ['taq_20070801.csv', 'taq_20070802.csv']
    """
    out = []
    for day in _dates(dates):
        p = Path(directory) / f"taq_{day.strftime('%Y%m%d')}.csv"
        write_taq_csv(p, dates=(day,), rows_per_day=rows_per_day, symbols=symbols, seed=seed,
                      header=header)
        out.append(p)
    return out


# ---------------------------------------------------------------------------------------------
# China level-2 snapshots
# ---------------------------------------------------------------------------------------------
def _l2_universe(securities: int, seed: int) -> dict[str, np.ndarray]:
    codes = np.concatenate([np.arange(600000, 604000), np.arange(1, 3000),
                            np.arange(300001, 301000), np.arange(688001, 689000)])
    if securities > len(codes):
        raise ValueError(f"at most {len(codes)} securities are supported, got {securities}")
    pick = np.random.default_rng(19901219).permutation(codes)[:securities]  # seed independent
    rng = _rng(seed, _L2)
    level = np.exp(rng.normal(np.log(15.0), 0.8, securities)).clip(2.0, 300.0)
    w = rng.lognormal(0.0, 0.7, securities)
    order = np.argsort(pick, kind="stable")
    ids = np.array([f"{c:06d}" for c in pick[order]])
    return {"ids": ids, "sh": ids.astype("U1") == "6", "level": level[order], "w": w[order]}


@lru_cache(maxsize=1)
def _l2_times() -> tuple[np.ndarray, ...]:
    """Snapshots: 09:15-09:25 auction, 09:30-11:30 and 13:00-15:00 continuous trading."""
    return _time_table({(555, 565): 0.3, (565, 570): 0.05, (570, 690): 1.0,
                        (780, 897): 1.0, (897, 900): 0.5})


def _l2_day_chunks(day: _dt.date, rows: int, uni: dict[str, np.ndarray], seed: int
                   ) -> Iterator[dict[str, np.ndarray]]:
    if rows == 0:
        return
    n_sec = len(uni["w"])
    day_id = day.toordinal()
    rng = _rng(seed, _L2, day_id)
    counts = rng.multinomial(rows, uni["w"] / uni["w"].sum())
    pre = np.round(uni["level"] * np.exp(rng.normal(0.0, 0.02, n_sec)) * 100).astype(np.int64)
    lo_lim, hi_lim = np.ceil(pre * 0.9).astype(np.int64), np.floor(pre * 1.1).astype(np.int64)
    opn = np.clip(np.round(pre * (1 + rng.normal(0.0, 0.008, n_sec))), lo_lim, hi_lim)
    opn = opn.astype(np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    carry = np.zeros(6, np.int64)                 # walk, high, -low, volume, number, turnover
    i32 = np.int32
    for j, a in enumerate(range(0, rows, _CHUNK)):
        sec, i, n = _rows_of(a, min(rows, a + _CHUNK), starts, ends)
        m = len(sec)
        g = _rng(seed, _L2, day_id, j + 1)
        t = (_inverse_time((i + g.random(m)) / n, _l2_times()) * 1000).astype(np.int32)
        seg, first = _segments(sec)
        cont = i[0] > 0

        def run(x, start_values, k):
            base = start_values[sec[first]].astype(x.dtype)
            if cont:
                base[0] = carry[k]
            return _seg_cumsum(x, seg, first, base)

        zeros = np.zeros(n_sec, np.int64)
        step = np.rint(g.standard_normal(m) * opn[sec] * 0.02 / np.sqrt(n)).astype(np.int64)
        walk = run(step, opn, 0)
        last = np.clip(walk, lo_lim[sec], hi_lim[sec])
        high = np.maximum(_seg_cummax(last, seg), opn[sec])
        low = np.maximum(_seg_cummax(-last + (1 << 31), seg) - (1 << 31), -opn[sec])
        if cont:
            s0 = seg == 0
            high[s0] = np.maximum(high[s0], carry[1])
            low[s0] = np.maximum(low[s0], carry[2])
        vol = 100 * _geometric(g, 0.05, m) * (t >= 33_900_000)
        vol_cum = run(vol, zeros, 3)
        num_cum = run(np.where(vol > 0, 1 + g.poisson(2.0, m), 0), zeros, 4)
        turn_cum = run(vol * last, zeros, 5)
        carry = np.array([walk[-1], high[-1], low[-1], vol_cum[-1], num_cum[-1], turn_cum[-1]])
        ask1 = last + g.integers(0, 2, m)
        bid1 = ask1 - 1 - (g.random(m) < 0.3) * g.integers(1, 3, m)
        gaps = g.integers(1, 4, (2, 10, m), dtype=np.int32)
        gaps[:, 0] = 0
        for q in range(1, 10):
            gaps[:, q] += gaps[:, q - 1]
        ask, bid = ask1 + gaps[0], bid1 - gaps[1]               # (level, row), cents
        askv, bidv = 100 * _geometric(g, 0.02, (2, 10, m))
        nb, ns = np.minimum(np.stack([bidv, askv]) // 100, _geometric(g, 0.1, (2, 10, m)))
        bsum, asum = bidv.sum(0, dtype=np.int64), askv.sum(0, dtype=np.int64)
        out = {"sec": sec, "UpdateTime": t, "PreCloPrice": pre[sec] / 100,
               "OpenPrice": opn[sec] / 100, "HighPrice": high / 100, "LowPrice": -low / 100,
               "LastPrice": last / 100, "TradNumber": np.minimum(num_cum, 2**31 - 1).astype(i32),
               "TradVolume": np.minimum(vol_cum, 2**31 - 1).astype(i32),
               "Turnover": turn_cum / 100, "TotalBidVol": bsum.astype(i32),
               "WAvgBidPri": np.round((bid * bidv).sum(0) / bsum / 100, 3),
               "TotalAskVol": asum.astype(i32),
               "WAvgAskPri": np.round((ask * askv).sum(0) / asum / 100, 3), "IOPV": np.zeros(m)}
        for name, x in (("AskPrice", ask / 100), ("AskVolume", askv), ("BidPrice", bid / 100),
                        ("BidVolume", bidv), ("NumOrdersB", nb), ("NumOrdersS", ns)):
            out.update({f"{name}{q + 1}": x[q] for q in range(10)})
        out["LocalTime"] = t + g.integers(5, 300, m, dtype=i32)
        yield out


def l2_batches(*, dates: Iterable[str | _dt.date] | str | _dt.date = ("2020-06-01",),
               rows_per_day: int = 1_000_000, securities: int = 500, seed: int = 0,
               batch_rows: int = 1_000_000) -> Iterator[pa.RecordBatch]:
    """Synthetic China level-2 snapshots in :data:`hfq.schema.L2` (78 columns), streamed.

    Per day, exactly ``rows_per_day`` rows sorted by (SecurityID, UpdateTime) over
    ``securities`` six-digit codes (``"600000"``-like on "SH", ``"000001"``-like on "SZ").
    Prices move in 0.01 steps within the +-10% daily limit; High/Low/TradVolume/TradNumber/
    Turnover accumulate over the day; ten ask levels rise and ten bid levels fall away from the
    last price; LocalTime is 5-300 ms after UpdateTime.

    Parameters
    ----------
    dates, rows_per_day, seed, batch_rows
        As for :func:`taq_batches`.
    securities : int
        Number of distinct securities (at most 8,997).

    Yields
    ------
    pyarrow.RecordBatch

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.Table.from_batches(l2_batches(rows_per_day=1000, securities=10))
    >>> t.num_columns, t.num_rows
    (78, 1000)
    >>> bool((t.column("AskPrice2").to_numpy() > t.column("AskPrice1").to_numpy()).all())
    True
    """
    _check(seed, batch_rows, rows_per_day=rows_per_day, securities=securities - 1)
    uni = _l2_universe(securities, seed)
    ids_arr, mkt_arr = pa.array(uni["ids"].tolist()), pa.array(["SH", "SZ"])
    fields = list(_schema.L2.arrow)
    for day in _dates(dates):
        for c in _rebatch(_l2_day_chunks(day, rows_per_day, uni, seed), batch_rows):
            sec = c["sec"]
            cols = [_const_date(day, len(sec)),
                    _dict_col((~uni["sh"][sec]).astype(np.int8), mkt_arr, compact=False),
                    _dict_col(sec, ids_arr)]
            cols[0:0] = [pa.array(c["UpdateTime"], pa.time32("ms"))]
            cols += [pa.array(c[f.name], f.type) for f in fields[4:]]
            yield pa.RecordBatch.from_arrays(cols, schema=_schema.L2.arrow)


def write_l2_csv(path: str | os.PathLike | IO[bytes], *,
                 dates: Iterable[str | _dt.date] | str | _dt.date = ("2020-06-01",),
                 rows_per_day: int = 1_000_000, securities: int = 500, seed: int = 0,
                 header: bool = True) -> int:
    """Write the rows of :func:`l2_batches` as CSV; returns the number of rows written.

    Columns in schema order; TradeDate as ``YYYY-MM-DD``, times as ``HH:MM:SS.mmm``.

    Examples
    --------
    >>> import io
    >>> buf = io.BytesIO()
    >>> write_l2_csv(buf, rows_per_day=10, securities=2)
    10
    >>> buf.getvalue().decode().splitlines()[0][:30]
    'UpdateTime,TradeDate,Market,Se'
    """
    written = 0
    with _open_out(path) as fh:
        for b in l2_batches(dates=dates, rows_per_day=rows_per_day, securities=securities,
                            seed=seed, batch_rows=1 << 19):
            df = pl.from_arrow(pa.Table.from_batches([b]))
            df.write_csv(fh, include_header=header and written == 0,
                         date_format="%Y-%m-%d", time_format="%H:%M:%S%.3f")
            written += df.height
        if header and written == 0:
            fh.write((",".join(_schema.L2.names) + "\n").encode())
    return written


# ---------------------------------------------------------------------------------------------
# device readings
# ---------------------------------------------------------------------------------------------
def _device_params(devices: int, seed: int) -> dict[str, np.ndarray]:
    g = _rng(seed, _READ)
    return {"period": g.uniform(8, 30, devices) * 3600, "phase": g.random(devices),
            "low": g.integers(3, 30, devices), "temp": g.uniform(88.0, 96.0, devices),
            "tphase": g.uniform(0, 2 * np.pi, devices), "cpu": g.uniform(2.0, 40.0, devices),
            "mem": g.uniform(0.2, 0.8, devices), "rssi": g.integers(-80, -20, devices),
            "pair": _choice(g, (0.3, 0.3, 0.4), devices)}


def _readings_day_chunks(day: _dt.date, devices: int, interval_s: int, p: dict[str, np.ndarray],
                         seed: int) -> Iterator[dict[str, np.ndarray]]:
    per_day = -(-86400 // interval_s)
    block = max(1, _CHUNK // devices)                # timestamps per chunk
    t0 = (day.toordinal() - _EPOCH) * 86400 + _TZ_OFFSET  # local midnight at UTC-05
    dev_all = np.arange(devices)
    for j, k0 in enumerate(range(0, per_day, block)):
        ks = np.arange(k0, min(per_day, k0 + block))
        g = _rng(seed, _READ, day.toordinal(), j + 1)
        t = np.repeat(t0 + ks * interval_s, devices).astype(np.int64)
        d = np.tile(dev_all, len(ks))
        m = len(t)
        phase = (t / p["period"][d] + p["phase"][d]) % 1.0
        low = p["low"][d]
        charging = phase >= 0.97
        level = np.where(charging, low + (phase - 0.97) / 0.03 * (100 - low),
                         100 - phase / 0.97 * (100 - low))
        temp = (p["temp"][d] + 3 * np.sin(2 * np.pi * t / 86400 + p["tphase"][d])
                + g.normal(0, 0.6, m))
        cpu = p["cpu"][d]
        used = np.rint(1e9 * (p["mem"][d] + g.normal(0, 0.05, m)).clip(0.05, 0.95))
        yield {"time": t, "dev": d, "level": np.rint(level).clip(0, 100).astype(np.int32),
               "status": (~charging).astype(np.int8),
               "temp": np.round(temp.clip(87.0, 102.0), 1), "pair": p["pair"][d],
               "cpu1": np.round((cpu + g.normal(0, 8, m)).clip(0, 100), 2),
               "cpu5": np.round((cpu + g.normal(0, 3, m)).clip(0, 100), 2),
               "cpu15": np.round((cpu + g.normal(0, 1, m)).clip(0, 100), 2),
               "used": used.astype(np.int64),
               "rssi": (p["rssi"][d] + g.integers(-3, 4, m)).clip(-84, -17).astype(np.int16)}


def _readings_stream(start, days, devices, interval_s, seed, batch_rows):
    _check(seed, batch_rows, days=days, devices=devices - 1, interval_s=interval_s - 1)
    p = _device_params(devices, seed)
    first = _as_date(start)
    for k in range(days):
        day = first + _dt.timedelta(days=k)
        yield from _rebatch(_readings_day_chunks(day, devices, interval_s, p, seed), batch_rows)


def _device_ids(devices: int) -> list[str]:
    return [f"demo{i:06d}" for i in range(devices)]


def readings_batches(*, start: str | _dt.date = "2016-11-15", days: int = 1,
                     devices: int = 3000, interval_s: int = 30, seed: int = 0,
                     batch_rows: int = 1_000_000) -> Iterator[pa.RecordBatch]:
    """Synthetic device readings in :data:`hfq.schema.READINGS`, streamed.

    One reading per device every ``interval_s`` seconds from local midnight (UTC-05) of
    ``start`` for ``days`` days, sorted by (time, device_id); ``time`` is the UTC instant.
    Devices are ``demo000000``, ``demo000001``, ...; batteries discharge ~97% of the time;
    ``mem_free + mem_used == 1_000_000_000``; rssi in -84..-17; ssid/bssid fixed pairs.

    Parameters
    ----------
    start : str or datetime.date
        First day.
    days, devices, interval_s : int
        Number of days, of devices, and seconds between readings.
    seed, batch_rows : int
        As for :func:`taq_batches`.

    Yields
    ------
    pyarrow.RecordBatch

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.Table.from_batches(readings_batches(devices=10, interval_s=3600))
    >>> t.num_rows
    240
    >>> str(t.column("time")[0].as_py())
    '2016-11-15 05:00:00+00:00'
    """
    ids = pa.array(_device_ids(devices))
    status, ssid = pa.array(_STATUS), pa.array([s for s, _ in _PAIRS])
    bssid = pa.array([b for _, b in _PAIRS])
    for c in _readings_stream(start, days, devices, interval_s, seed, batch_rows):
        yield pa.RecordBatch.from_arrays([
            pa.array(c["time"], pa.timestamp("s", tz="UTC")), _dict_col(c["dev"], ids),
            pa.array(c["level"]), _dict_col(c["status"], status, compact=False),
            pa.array(c["temp"]), _dict_col(c["pair"], bssid, compact=False),
            pa.array(c["cpu1"]), pa.array(c["cpu5"]), pa.array(c["cpu15"]),
            pa.array(1_000_000_000 - c["used"]), pa.array(c["used"]), pa.array(c["rssi"]),
            _dict_col(c["pair"], ssid, compact=False),
        ], schema=_schema.READINGS.arrow)


def write_readings_csv(path: str | os.PathLike | IO[bytes], *, start: str | _dt.date = "2016-11-15",
                       days: int = 1, devices: int = 3000, interval_s: int = 30, seed: int = 0,
                       header: bool = True) -> int:
    """Write the rows of :func:`readings_batches` as CSV; returns the number of rows written.

    Times are written in local time at the ``-05`` offset, e.g. ``2016-11-15 07:00:00-05``.

    Examples
    --------
    >>> import io
    >>> buf = io.BytesIO()
    >>> write_readings_csv(buf, devices=2, interval_s=43200)
    4
    >>> buf.getvalue().decode().splitlines()[1][:34]
    '2016-11-15 00:00:00-05,demo000000,'
    """
    ids = pl.Series(_device_ids(devices))
    status, hms = pl.Series(_STATUS), _hms_strings()[1]
    ssid, bssid = pl.Series([s for s, _ in _PAIRS]), pl.Series([b for _, b in _PAIRS])
    written = 0
    with _open_out(path) as fh:
        if header:
            fh.write((",".join(_schema.READINGS.names) + "\n").encode())
        for c in _readings_stream(start, days, devices, interval_s, seed, 1 << 20):
            local = c["time"] - _TZ_OFFSET
            day = _dt.date.fromordinal(int(local[0] // 86400) + _EPOCH).isoformat()
            tod = hms.gather(pl.Series(local % 86400))     # one chunk never spans two days
            pair = pl.Series(c["pair"])
            df = pl.DataFrame({
                "time": (day + " ") + tod + "-05",
                "device_id": ids.gather(pl.Series(c["dev"])), "battery_level": c["level"],
                "battery_status": status.gather(pl.Series(c["status"])),
                "battery_temperature": c["temp"], "bssid": bssid.gather(pair),
                "cpu_avg_1min": c["cpu1"], "cpu_avg_5min": c["cpu5"], "cpu_avg_15min": c["cpu15"],
                "mem_free": 1_000_000_000 - c["used"], "mem_used": c["used"],
                "rssi": c["rssi"], "ssid": ssid.gather(pair)})
            df.write_csv(fh, include_header=False)
            written += df.height
    return written


def device_info_table(*, devices: int = 3000, seed: int = 0) -> pa.Table:
    """One row per device in :data:`hfq.schema.DEVICE_INFO`.

    ``api_version`` and ``os_name`` come in matching pairs (``19``/``4.4.4`` ...
    ``23``/``6.0.1``); manufacturer is ``iobeam``; model one of focus, mustang, pinto.

    Examples
    --------
    >>> t = device_info_table(devices=5)
    >>> t.num_rows, t.column("device_id")[4].as_py(), t.column("manufacturer")[0].as_py()
    (5, 'demo000004', 'iobeam')
    """
    _check(seed, devices=devices - 1)
    g = _rng(seed, _INFO)
    os_idx = _choice(g, (0.2, 0.3, 0.3, 0.2), devices)
    model = _choice(g, (0.4, 0.3, 0.3), devices)
    return pa.Table.from_arrays([
        _dict_col(np.arange(devices), pa.array(_device_ids(devices))),
        _dict_col(os_idx, pa.array([a for a, _ in _OS]), compact=False),
        _dict_col(np.zeros(devices, np.int8), pa.array(["iobeam"]), compact=False),
        _dict_col(model, pa.array(_MODELS), compact=False),
        _dict_col(os_idx, pa.array([o for _, o in _OS]), compact=False),
    ], schema=_schema.DEVICE_INFO.arrow)


def write_device_info_csv(path: str | os.PathLike | IO[bytes], *, devices: int = 3000,
                          seed: int = 0, header: bool = True) -> int:
    """Write :func:`device_info_table` as CSV; returns the number of rows written.

    Examples
    --------
    >>> import io
    >>> buf = io.BytesIO()
    >>> write_device_info_csv(buf, devices=3)
    3
    >>> buf.getvalue().decode().splitlines()[0]
    'device_id,api_version,manufacturer,model,os_name'
    """
    df = pl.from_arrow(device_info_table(devices=devices, seed=seed))
    with _open_out(path) as fh:
        df.write_csv(fh, include_header=header)
    return df.height
