"""Deterministic synthetic data of any size, streamed as Arrow record batches.

TAQ quotes (:func:`taq_batches`), China level-2 snapshots (:func:`l2_batches`) and device
readings (:func:`readings_batches`, :func:`device_info_table`) imitate the published data sets
(NYSE TAQ, Shanghai/Shenzhen level-2, IoT device readings) in the schemas of :mod:`hfq.schema`;
``write_*_csv`` write the same rows as raw CSV.  Rows are generated in fixed chunks per (day,
symbol block), then cut into batches of ``batch_rows``: memory stays bounded and the rows
depend only on the seed, the sizes and the date, never on ``batch_rows`` or on the other dates
asked for.  Batches never span two days.

Examples
--------
>>> import pyarrow as pa
>>> from hfq import schema, synth
>>> t = pa.Table.from_batches(synth.taq_batches(rows_per_day=1000, symbols=50))
>>> t.num_rows, t.schema == schema.TAQ.arrow
(1000, True)
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
import polars as pl
import pyarrow as pa

from hfq import schema as _schema

__all__ = [
    "TAQ_CSV_HEADER", "taq_batches", "taq_table", "write_taq_csv", "taq_csv_files", "l2_batches",
    "write_l2_csv", "readings_batches", "write_readings_csv", "device_info_table",
    "write_device_info_csv", "trades_table",
]

Dates = str | _dt.date | Iterable[str | _dt.date]
Target = str | os.PathLike | IO[bytes]
_TimeTable = tuple[np.ndarray, list[tuple[float, float]]]   # (quantile knots, gaps)

TAQ_CSV_HEADER = "symbol,date,time,bid,ofr,bidsiz,ofrsiz,mode,ex,mmid"
"""Header line of a raw TAQ quotes CSV file."""

_CHUNK = 1 << 16           # rows generated at once; fixed, so output never depends on batch_rows
_TAQ, _L2, _READ, _INFO = 1, 2, 3, 4      # stream ids mixed into the seeds
_SENTINEL = 2_147_483_647  # ofr 214748.3647 in units of 1e-4
_EPOCH = _dt.date(1970, 1, 1).toordinal()
_TZ = 5 * 3600             # readings are local at UTC-05
_FAMOUS = ("IBM", "MSFT", "AAPL", "GE", "A", "AA", "C", "F", "T", "BAC", "XOM", "INTC", "CSCO",
           "ORCL", "JPM", "WMT", "GOOG", "SPY", "QQQQ", "DELL", "YHOO", "PFE", "JNJ", "KO", "HPQ",
           "MRK", "AMD", "EBAY", "AMZN", "MO", "GM", "HD", "MOT", "DIA", "IWM")
_EX = ("N", "P", "T", "Q", "Z", "B", "C", "X", "D", "M", "W")
_EX_P = (0.2, 0.15, 0.15, 0.15, 0.1, 0.05, 0.03, 0.05, 0.04, 0.03, 0.05)
_MMID, _MMID_P = ("", "FLOW", "EDGX", "EDGA", "NASD"), (0.9, 0.03, 0.03, 0.02, 0.02)
_MODES = (12, 1, 2, 3, 4, 6, 10, 11)
_MODE_P = (0.8, 0.05, 0.04, 0.02, 0.02, 0.02, 0.03, 0.02)
_SSID = ("stealth-net", "demo-5ghz", "demo-net")
_BSSID = ("A0:B1:C5:D2:E0:F3", "22:32:A2:B3:05:98", "01:02:03:04:05:06")
_STATUS = ("charging", "discharging")
_API, _OS = ("19", "21", "22", "23"), ("4.4.4", "5.0.0", "5.1.0", "6.0.1")


# -- shared helpers ---------------------------------------------------------------------------
def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, *keys]))


def _check(seed: int, batch_rows: int = 1, **minimums: tuple[int, int]) -> None:
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    for name, (value, least) in dict(minimums, batch_rows=(batch_rows, 1)).items():
        if value < least:
            raise ValueError(f"{name} must be at least {least}, got {value}")


def _dates(dates: Dates) -> list[_dt.date]:
    items = (dates,) if isinstance(dates, (str, _dt.date)) else dates
    return [d.date() if isinstance(d, _dt.datetime) else d if isinstance(d, _dt.date)
            else _dt.date.fromisoformat(str(d)) for d in items]


@lru_cache(maxsize=64)
def _table(kind: str, p: Any) -> np.ndarray:
    """4096-entry lookup table: category indices in proportion to the tuple ``p`` ("cat"), or
    the quantiles of a geometric distribution (1, 2, ...) of success probability ``p``."""
    if kind == "geom":
        return np.ceil(np.log1p(-(np.arange(4096) + 0.5) / 4096) / np.log1p(-p)).astype(np.int32)
    counts = np.floor(np.asarray(p) / sum(p) * 4096).astype(int)
    counts[np.argmax(p)] += 4096 - counts.sum()
    return np.repeat(np.arange(len(p), dtype=np.int8), counts)


def _draw(g: np.random.Generator, kind: str, p: Any, n: int | tuple[int, ...]) -> np.ndarray:
    return _table(kind, p)[g.integers(0, 4096, n, dtype=np.int16)]


def _segments(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segment number of every row of a sorted key, and the first row of every segment."""
    new = np.empty(len(key), bool)
    new[:1] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    return np.cumsum(new) - 1, np.flatnonzero(new)


def _seg_cumsum(x: np.ndarray, seg: np.ndarray, first: np.ndarray, base: np.ndarray,
                carried: float | None = None) -> np.ndarray:
    """Cumulative sum restarting at every segment, plus the segment's ``base`` (a fresh array);
    ``carried`` replaces the first base (a key continuing from the previous chunk)."""
    if carried is not None:
        base[0] = carried
    c = np.cumsum(x)
    return c - (c[first] - x[first])[seg] + base[seg]


def _seg_cummax(x: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Running maximum restarting at every segment (for ``0 <= x < 2**32``)."""
    off = seg.astype(np.int64) << 32
    return np.maximum.accumulate(off + x) - off


def _time_table(profile: dict[tuple[int, int], float | Callable[[np.ndarray], np.ndarray]]
                ) -> _TimeTable:
    """{(first minute, end minute): weight or f(minutes)} -> (quantile knots, gaps).

    The knots are the times of the quantiles k/16384 counted in active seconds (time between
    the ranges removed); ``gaps`` lists (active second, length) pairs that restore it.
    """
    weights, gaps, active, prev = [], [], 0.0, None
    for (lo, hi), weight in profile.items():
        if prev is not None and lo != prev:
            gaps.append((active, (lo - prev) * 60.0))
        mins = np.arange(lo, hi)
        weights.append(np.broadcast_to(weight(mins) if callable(weight) else weight, mins.shape))
        active, prev = active + (hi - lo) * 60, hi
    w = np.concatenate(weights).astype(float)
    first = next(iter(profile))[0] * 60.0
    knots = np.interp(np.linspace(0.0, 1.0, (1 << 14) + 1),
                      np.concatenate([[0.0], np.cumsum(w)]) / w.sum(),
                      first + 60.0 * np.arange(len(w) + 1))
    return knots, [(first + a, length) for a, length in gaps]


@lru_cache(maxsize=2)
def _profile(kind: int) -> _TimeTable:
    """Intraday activity: TAQ quotes over 04:00-20:00 (thin pre- and post-market, U-shaped
    regular session); L2 snapshots 09:15-09:30 (auction), 09:30-11:30 and 13:00-15:00."""
    if kind == _TAQ:
        return _time_table({(240, 570): lambda m: 0.01 + 0.05 * (m - 240) / 330,
                            (570, 960): lambda m: 0.6 + 2.4 * (2 * (m - 570) / 390 - 1) ** 2,
                            (960, 1200): lambda m: 0.01 + 0.3 * np.exp(-(m - 960) / 30)})
    return _time_table({(555, 565): 0.3, (565, 570): 0.05, (570, 690): 1.0, (780, 897): 1.0,
                        (897, 900): 0.5})


def _inverse_time(u: np.ndarray, table: _TimeTable) -> np.ndarray:
    """Seconds since midnight (float) for quantiles ``u`` in [0, 1), monotone in ``u``."""
    knots, gaps = table
    x = u * (len(knots) - 1)
    k = x.astype(np.int64)
    t = a = knots[k] + (x - k) * (knots[k + 1] - knots[k])
    for at, length in gaps:
        t = t + (a >= at) * length
    return t


def _rows_of(a: int, b: int, starts: np.ndarray, ends: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For rows a..b-1 of a day laid out by key (key k owns rows starts[k]..ends[k]-1): the key,
    the position of the row within its key and the key's row count."""
    k0 = int(np.searchsorted(ends, a, side="right"))
    k1 = int(np.searchsorted(ends, b - 1, side="right")) + 1
    key = np.repeat(np.arange(k0, k1), np.minimum(ends[k0:k1], b) - np.maximum(starts[k0:k1], a))
    return key, np.arange(a, b) - starts[key], (ends - starts)[key]


def _rebatch(chunks: Iterable[dict[str, np.ndarray]], batch_rows: int
             ) -> Iterator[dict[str, np.ndarray]]:
    """Cut a stream of column chunks into pieces of ``batch_rows`` rows (the last shorter)."""
    def merged() -> dict[str, np.ndarray]:
        return pending[0] if len(pending) == 1 else {
            k: np.concatenate([p[k] for p in pending]) for k in pending[0]}

    pending: list[dict[str, np.ndarray]] = []
    have = 0
    for chunk in chunks:
        pending.append(chunk)
        have += len(next(iter(chunk.values())))
        while have >= batch_rows:
            whole = merged()
            yield {k: v[:batch_rows] for k, v in whole.items()}
            pending, have = [{k: v[batch_rows:] for k, v in whole.items()}], have - batch_rows
    if have:
        yield merged()


def _prefetch(it: Iterator[Any]) -> Iterator[Any]:
    """Yield from ``it`` while a worker thread already generates the next item."""
    with ThreadPoolExecutor(1, thread_name_prefix="hfq-synth") as pool:
        ahead = pool.submit(next, it, None)
        while (x := ahead.result()) is not None:
            ahead = pool.submit(next, it, None)
            yield x


def _dict_col(idx: np.ndarray, values: pa.Array, compact: bool = False) -> pa.DictionaryArray:
    """Dictionary array; ``compact`` keeps only values[min(idx):max(idx)+1] as the dictionary."""
    lo = int(idx.min()) if compact and len(idx) else 0
    dictionary = values.slice(lo, int(idx.max()) - lo + 1) if compact and len(idx) else values
    return pa.DictionaryArray.from_arrays(pa.array((idx - lo).astype(np.int32)), dictionary)


def _const_date(day: _dt.date, n: int) -> pa.Array:
    return pa.array(np.full(n, day.toordinal() - _EPOCH, np.int32), pa.date32())


def _open(path: Target) -> contextlib.AbstractContextManager[IO[bytes]]:
    if hasattr(path, "write"):
        return contextlib.nullcontext(cast(IO[bytes], path))   # an open file: not ours to close
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return open(path, "wb")


@lru_cache(maxsize=1)
def _hms() -> tuple[pl.Series, pl.Series]:
    """All 86,400 times of day as 'H:MM:SS' (no leading zero) and as 'HH:MM:SS'."""
    short = [f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" for s in range(86400)]
    return pl.Series(short), pl.Series([x.zfill(8) for x in short])


@lru_cache(maxsize=1)
def _price_parts() -> tuple[pl.Series, pl.Series]:
    """'0'..'262143' and the minimal decimal suffix of f/10000: '', '.5', '.0001', ..."""
    fracs = ["" if f == 0 else "." + f"{f:04d}".rstrip("0") for f in range(10000)]
    return pl.Series(np.arange(1 << 18)).cast(pl.String), pl.Series(fracs)


def _price(col: str) -> pl.Expr:
    """Minimal decimal form of k/10000 for integer column ``col``: 1, 12.5, 214748.3647."""
    whole, frac = _price_parts()
    return pl.lit(whole).gather(pl.col(col) // 10000) + pl.lit(frac).gather(pl.col(col) % 10000)


# -- TAQ quotes -------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _ticker_names(n: int) -> tuple[str, ...]:
    """The first ``n`` of a fixed sequence of distinct 1-5 letter tickers (seed independent)."""
    out = list(_FAMOUS[:n])
    seen, rng = set(out), np.random.default_rng(20070801)
    letters = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", np.uint8)
    while len(out) < n:
        lens = rng.choice(5, 4096, p=[0.002, 0.02, 0.35, 0.45, 0.178]) + 1
        codes = letters[rng.integers(0, 26, (4096, 5))]
        codes[np.arange(5) >= lens[:, None]] = 0
        for name in codes.view("S5").ravel().tolist():
            if (name := name.decode()) not in seen and len(out) < n:
                seen.add(name)
                out.append(name)
    return tuple(out)


def _taq_universe(symbols: int, seed: int, zipf: float | None = None) -> dict[str, np.ndarray]:
    """Per symbol, in name order: name, activity weight, price level, typical spread (cents).
    Activity is lognormal, or Zipf(``zipf``) over the activity ranks when given."""
    if symbols > 1_000_000:
        raise ValueError(f"at most 1,000,000 symbols are supported, got {symbols}")
    names = np.array(_ticker_names(symbols))
    g = _rng(seed, _TAQ)
    w = np.sort(g.lognormal(0.0, 1.6, symbols))[::-1]
    if zipf is not None:   # (drawn above all the same: the other draws stay as they were)
        w = np.arange(1, symbols + 1, dtype=float) ** -float(zipf)
    k = min(symbols, len(_FAMOUS))            # the well-known tickers are among the most active
    w = np.concatenate([g.permutation(w[:k]), g.permutation(w[k:])])
    level = np.exp(g.normal(np.log(30.0), 0.9, symbols)).clip(5.0, 500.0)
    spread = g.geometric(0.5, symbols) + (level > 100) * g.integers(0, 5, symbols)
    order = np.argsort(names, kind="stable")
    return {"names": names[order], "w": w[order], "level": level[order],
            "spread": spread[order]}


def _taq_day(day: _dt.date, rows: int, uni: dict, seed: int) -> Iterator[dict[str, np.ndarray]]:
    """One day of quotes sorted by (symbol, time), in chunks of ``_CHUNK`` rows."""
    n_sym, day_id = len(uni["w"]), day.toordinal()
    g = _rng(seed, _TAQ, day_id)
    wd = uni["w"] * g.lognormal(0.0, 0.3, n_sym)
    counts = g.multinomial(rows, wd / wd.sum())
    log_level = np.log(uni["level"]) + g.normal(0.0, 0.02, n_sym)
    ends = np.cumsum(counts)
    starts, carry = ends - counts, 0.0
    for j, a in enumerate(range(0, rows, _CHUNK)):
        sym, i, n = _rows_of(a, min(rows, a + _CHUNK), starts, ends)
        m, g = len(sym), _rng(seed, _TAQ, day_id, j + 1)
        # jittered stratified quantiles of the day profile: sorted within each symbol
        t = _inverse_time((i + g.random(m)) / n, _profile(_TAQ)).astype(np.int32)
        # a log-price random walk per symbol (~1.5% a day), carried across chunks
        seg, first = _segments(sym)
        logp = _seg_cumsum(g.standard_normal(m) * (0.015 / np.sqrt(n)), seg, first,
                           log_level[sym[first]], carry if i[0] > 0 else None)
        carry = logp[-1]
        spread = uni["spread"][sym] + (g.random(m) < 0.2) * _draw(g, "geom", 0.5, m)
        bid = (np.floor(np.exp(logp) * 100 - spread / 2) * 100).astype(np.int64)
        bid += (g.random(m) < 0.02) * g.integers(1, 100, m)     # a few sub-penny quotes
        ofr = bid + spread * 100
        bidsiz, ofrsiz = _draw(g, "geom", 0.12, (2, m)).clip(1, 99)
        big = g.random(m) < 0.01
        bidsiz[big] = g.integers(100, 2000, int(big.sum()))
        u = g.random(m)       # zero bid, zero ofr (1%), crossed (0.5%), sentinel ofr (0.1%)
        bid[u < 0.005] = 0
        ofr[(u >= 0.005) & (u < 0.01)] = 0
        crossed = (u >= 0.01) & (u < 0.015)
        ofr[crossed] = np.maximum(bid[crossed] - 100 * g.integers(1, 5, int(crossed.sum())), 100)
        ofr[(u >= 0.015) & (u < 0.016)] = _SENTINEL
        bidsiz[bid == 0] = 0
        ofrsiz[(ofr == 0) | (ofr == _SENTINEL)] = 0
        yield {"sym": sym, "time": t, "bid": bid, "ofr": ofr, "bidsiz": bidsiz,
               "ofrsiz": ofrsiz, "mode": np.array(_MODES, np.int32)[_draw(g, "cat", _MODE_P, m)],
               "ex": _draw(g, "cat", _EX_P, m), "mmid": _draw(g, "cat", _MMID_P, m)}


def _taq_stream(dates: Dates, rows_per_day: int, symbols: int, seed: int, batch_rows: int,
                zipf: float | None = None
                ) -> Iterator[tuple[_dt.date, dict[str, np.ndarray], dict[str, np.ndarray]]]:
    _check(seed, batch_rows, rows_per_day=(rows_per_day, 0), symbols=(symbols, 1))
    uni = _taq_universe(symbols, seed, zipf)
    for day in _dates(dates):
        for piece in _rebatch(_taq_day(day, rows_per_day, uni, seed), batch_rows):
            yield day, uni, piece


def taq_batches(*, dates: Dates = ("2007-08-01",), rows_per_day: int = 1_000_000,
                symbols: int = 8000, seed: int = 0, batch_rows: int = 1_000_000,
                zipf: float | None = None) -> Iterator[pa.RecordBatch]:
    """Synthetic NYSE TAQ level-1 quotes in :data:`hfq.schema.TAQ`, streamed.

    Per day exactly ``rows_per_day`` rows sorted by (symbol, time), like the real files, over
    ``symbols`` distinct 1-5 letter tickers ("IBM", "MSFT", "AAPL", "GE", "A", ... come first)
    with heavy-tailed activity.  Quotes fall in 04:00-20:00, mostly 09:30-16:00.  Prices are
    exact multiples of 0.0001 around a per-symbol random walk; ~1% have a zero bid or offer
    (and size 0), ~0.5% are crossed and ~0.1% carry the sentinel offer 214748.3647.  ``mmid``
    is mostly the empty string (a value, not null).  There are no nulls.

    Parameters
    ----------
    dates : str, datetime.date or an iterable of them
        Trading days in ISO form (``"2007-08-01"``).
    rows_per_day, symbols : int
        Rows for each day; distinct tickers (at most 1,000,000).
    seed, batch_rows : int
        Seed; rows per batch (the last of a day may be shorter), which never changes the data.
    zipf : float, optional
        Activity by Zipf's law with this exponent over the symbols' activity ranks (issue
        29's second shape: 2,000 symbols, Zipf(1.1)) instead of lognormal.

    Yields
    ------
    pyarrow.RecordBatch

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.Table.from_batches(taq_batches(rows_per_day=2000, symbols=20, batch_rows=500))
    >>> t.num_rows, t.column_names[:4]
    (2000, ['symbol', 'date', 'time', 'bid'])
    >>> "IBM" in t.column("symbol").to_pylist()
    True
    """
    names = None
    ex, mmid = pa.array(_EX), pa.array(_MMID)
    for day, uni, c in _taq_stream(dates, rows_per_day, symbols, seed, batch_rows, zipf):
        names = pa.array(uni["names"].tolist()) if names is None else names
        yield pa.RecordBatch.from_arrays([
            _dict_col(c["sym"], names, compact=True), _const_date(day, len(c["time"])),
            pa.array(c["time"], pa.time32("s")), pa.array(c["bid"] / 1e4),
            pa.array(c["ofr"] / 1e4), pa.array(c["bidsiz"]), pa.array(c["ofrsiz"]),
            pa.array(c["mode"]), _dict_col(c["ex"], ex), _dict_col(c["mmid"], mmid),
        ], schema=_schema.TAQ.arrow)


def taq_table(*, dates: Dates = ("2007-08-01",), rows_per_day: int = 1_000_000,
              symbols: int = 8000, seed: int = 0, zipf: float | None = None) -> pa.Table:
    """The rows of :func:`taq_batches` (same arguments) as one in-memory table: small data only.

    Examples
    --------
    >>> taq_table(rows_per_day=100, symbols=5).num_rows
    100
    """
    return pa.Table.from_batches(taq_batches(dates=dates, rows_per_day=rows_per_day,
                                             symbols=symbols, seed=seed, zipf=zipf),
                                 schema=_schema.TAQ.arrow)


def write_taq_csv(path: Target, *, dates: Dates = ("2007-08-01",),
                  rows_per_day: int = 1_000_000, symbols: int = 8000, seed: int = 0,
                  header: bool = True, zipf: float | None = None) -> int:
    """Write the rows of :func:`taq_batches` (same arguments) as a raw TAQ CSV file.

    Rows look like ``A,20070801,6:24:34,1,0,1,0,12,P,``: date ``YYYYMMDD``, time ``H:MM:SS``
    without a leading zero on the hour, prices in minimal decimal form (``1``, ``12.5``,
    ``214748.3647``) and an empty last field when ``mmid`` is empty.

    Parameters
    ----------
    path : str, path-like or binary file object
        Destination (parent directories are created); an open file is not closed.
    dates, rows_per_day, symbols, seed
        As for :func:`taq_batches`; ``header`` writes :data:`TAQ_CSV_HEADER` first.

    Returns
    -------
    int
        Rows written, header excluded.

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
    ex, mmid = pl.Series(_EX), pl.Series([m or None for m in _MMID], dtype=pl.String)
    with _open(path) as fh:
        if header:
            fh.write((TAQ_CSV_HEADER + "\n").encode())
        for day, uni, c in _prefetch(_taq_stream(dates, rows_per_day, symbols, seed, 1 << 19,
                                                 zipf)):
            names = pl.Series(uni["names"].tolist()) if names is None else names
            df = pl.DataFrame(c).select(
                symbol=pl.lit(names).gather("sym"), date=pl.lit(day.strftime("%Y%m%d")),
                time=pl.lit(_hms()[0]).gather("time"), bid=_price("bid"), ofr=_price("ofr"),
                bidsiz="bidsiz", ofrsiz="ofrsiz", mode="mode", ex=pl.lit(ex).gather("ex"),
                mmid=pl.lit(mmid).gather("mmid"))
            df.write_csv(fh, include_header=False)
            written += df.height
    return written


def taq_csv_files(directory: str | os.PathLike, *, dates: Dates = ("2007-08-01",),
                  rows_per_day: int = 1_000_000, symbols: int = 8000, seed: int = 0,
                  header: bool = True, zipf: float | None = None) -> list[Path]:
    """Write one raw TAQ CSV file per day, ``directory/taq_YYYYMMDD.csv``.

    Each file holds that day's rows of :func:`taq_batches` with the same arguments; see
    :func:`write_taq_csv` for the format.  Returns the paths in the order of ``dates``.

    Examples
    --------
    >>> import tempfile
    >>> paths = taq_csv_files(tempfile.mkdtemp(), dates=["2007-08-01", "2007-08-02"],
    ...                       rows_per_day=50, symbols=5)
    >>> [p.name for p in paths]
    ['taq_20070801.csv', 'taq_20070802.csv']
    """
    out = []
    for day in _dates(dates):
        out.append(Path(directory) / f"taq_{day.strftime('%Y%m%d')}.csv")
        write_taq_csv(out[-1], dates=(day,), rows_per_day=rows_per_day, symbols=symbols,
                      seed=seed, header=header, zipf=zipf)
    return out


# -- China level-2 snapshots ------------------------------------------------------------------
def _l2_universe(securities: int, seed: int) -> dict[str, np.ndarray]:
    codes = np.concatenate([np.arange(600000, 604000), np.arange(1, 3000),
                            np.arange(300001, 301000), np.arange(688001, 689000)])
    if securities > len(codes):
        raise ValueError(f"at most {len(codes)} securities are supported, got {securities}")
    pick = np.sort(np.random.default_rng(19901219).permutation(codes)[:securities])
    g = _rng(seed, _L2)
    return {"ids": np.array([f"{c:06d}" for c in pick]), "sz": pick < 600000,
            "level": np.exp(g.normal(np.log(15.0), 0.8, securities)).clip(2.0, 300.0),
            "w": g.lognormal(0.0, 0.7, securities)}


def _l2_day(day: _dt.date, rows: int, uni: dict, seed: int) -> Iterator[dict[str, np.ndarray]]:
    """One day of snapshots sorted by (SecurityID, UpdateTime), in chunks of ``_CHUNK`` rows."""
    n_sec, day_id, i32 = len(uni["w"]), day.toordinal(), np.int32
    g = _rng(seed, _L2, day_id)
    counts = g.multinomial(rows, uni["w"] / uni["w"].sum())
    pre = np.round(uni["level"] * np.exp(g.normal(0.0, 0.02, n_sec)) * 100).astype(np.int64)
    lo_lim, hi_lim = np.ceil(pre * 0.9).astype(np.int64), np.floor(pre * 1.1).astype(np.int64)
    opn = np.clip(np.round(pre * (1 + g.normal(0.0, 0.008, n_sec))), lo_lim, hi_lim)
    opn = opn.astype(np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    carry = np.zeros(6, np.int64)           # walk, high, -low, volume, trades, turnover
    for j, a in enumerate(range(0, rows, _CHUNK)):
        sec, i, n = _rows_of(a, min(rows, a + _CHUNK), starts, ends)
        m, g = len(sec), _rng(seed, _L2, day_id, j + 1)
        t = (_inverse_time((i + g.random(m)) / n, _profile(_L2)) * 1000).astype(i32)
        seg, first = _segments(sec)
        cc = carry if i[0] > 0 else [None] * 6     # the first security continues?
        step = np.rint(g.standard_normal(m) * opn[sec] * 0.02 / np.sqrt(n)).astype(np.int64)
        walk = _seg_cumsum(step, seg, first, opn[sec[first]], cc[0])
        last = np.clip(walk, lo_lim[sec], hi_lim[sec])            # cents, within +-10%
        high = np.maximum(_seg_cummax(last, seg), opn[sec])
        nlow = np.maximum(_seg_cummax((1 << 31) - last, seg) - (1 << 31), -opn[sec])
        if i[0] > 0:
            s0 = seg == 0
            high[s0] = np.maximum(high[s0], carry[1])
            nlow[s0] = np.maximum(nlow[s0], carry[2])
        vol = 100 * _draw(g, "geom", 0.05, m).astype(np.int64) * (t >= 33_900_000)  # 09:25
        zeros = np.zeros(len(first), np.int64)
        vol_cum = _seg_cumsum(vol, seg, first, zeros.copy(), cc[3])
        num_cum = _seg_cumsum(np.where(vol > 0, 1 + g.poisson(2.0, m), 0), seg, first,
                              zeros.copy(), cc[4])
        turn_cum = _seg_cumsum(vol * last, seg, first, zeros, cc[5])
        carry = np.array([walk[-1], high[-1], nlow[-1], vol_cum[-1], num_cum[-1], turn_cum[-1]])
        ask1 = last + g.integers(0, 2, m)
        bid1 = ask1 - 1 - (g.random(m) < 0.3) * g.integers(1, 3, m)
        gaps = g.integers(1, 4, (2, 10, m), dtype=i32)
        gaps[:, 0] = 0
        for q in range(1, 10):
            gaps[:, q] += gaps[:, q - 1]
        ask, bid = ask1 + gaps[0], bid1 - gaps[1]                # (level, row), cents
        askv, bidv = 100 * _draw(g, "geom", 0.02, (2, 10, m))
        nb, ns = np.minimum(np.stack([bidv, askv]) // 100, _draw(g, "geom", 0.1, (2, 10, m)))
        bsum, asum = bidv.sum(0, dtype=np.int64), askv.sum(0, dtype=np.int64)
        out = {"sec": sec, "UpdateTime": t, "PreCloPrice": pre[sec] / 100,
               "OpenPrice": opn[sec] / 100, "HighPrice": high / 100, "LowPrice": -nlow / 100,
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


def l2_batches(*, dates: Dates = ("2020-06-01",), rows_per_day: int = 1_000_000,
               securities: int = 500, seed: int = 0, batch_rows: int = 1_000_000
               ) -> Iterator[pa.RecordBatch]:
    """Synthetic China level-2 snapshots in :data:`hfq.schema.L2` (78 columns), streamed.

    Per day exactly ``rows_per_day`` rows sorted by (SecurityID, UpdateTime) over
    ``securities`` six-digit codes (``"600000"``-like on "SH", ``"000001"``-like on "SZ"), in
    09:15-11:30 and 13:00-15:00.  Prices move in 0.01 steps within +-10% of PreCloPrice;
    HighPrice, LowPrice, TradNumber, TradVolume and Turnover accumulate over the day; ask prices
    rise and bid prices fall away from the last price; LocalTime is 5-300 ms after UpdateTime.

    Parameters
    ----------
    dates, rows_per_day, seed, batch_rows
        As for :func:`taq_batches`; ``securities`` (at most 8,997) replaces ``symbols``.

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
    _check(seed, batch_rows, rows_per_day=(rows_per_day, 0), securities=(securities, 1))
    uni = _l2_universe(securities, seed)
    ids, markets = pa.array(uni["ids"].tolist()), pa.array(["SH", "SZ"])
    fields = _schema.L2.arrow
    for day in _dates(dates):
        for c in _rebatch(_l2_day(day, rows_per_day, uni, seed), batch_rows):
            sec = c["sec"]
            yield pa.RecordBatch.from_arrays(
                [pa.array(c["UpdateTime"], pa.time32("ms")), _const_date(day, len(sec)),
                 _dict_col(uni["sz"][sec].astype(np.int8), markets),
                 _dict_col(sec, ids, compact=True)]
                + [pa.array(c[f.name], f.type) for f in list(fields)[4:]], schema=fields)


def write_l2_csv(path: Target, *, dates: Dates = ("2020-06-01",), rows_per_day: int = 1_000_000,
                 securities: int = 500, seed: int = 0, header: bool = True) -> int:
    """Write the rows of :func:`l2_batches` (same arguments) as CSV; return the rows written.

    Columns in schema order, TradeDate as ``YYYY-MM-DD``, times as ``HH:MM:SS.mmm``.

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
    with _open(path) as fh:
        if header:
            fh.write((",".join(_schema.L2.names) + "\n").encode())
        for b in _prefetch(l2_batches(dates=dates, rows_per_day=rows_per_day,
                                      securities=securities, seed=seed, batch_rows=1 << 17)):
            cast(pl.DataFrame, pl.from_arrow(b)).write_csv(
                fh, include_header=False, date_format="%Y-%m-%d", time_format="%H:%M:%S%.3f")
            written += b.num_rows
    return written


# -- device readings --------------------------------------------------------------------------
def _readings_day(day: _dt.date, devices: int, interval_s: int, p: dict, seed: int
                  ) -> Iterator[dict[str, np.ndarray]]:
    """One day of readings sorted by (time, device), in blocks of whole timestamps."""
    per_day, block = -(-86400 // interval_s), max(1, _CHUNK // devices)
    t0 = (day.toordinal() - _EPOCH) * 86400 + _TZ          # local midnight at UTC-05
    for j, k0 in enumerate(range(0, per_day, block)):
        g = _rng(seed, _READ, day.toordinal(), j + 1)
        steps = np.arange(k0, min(per_day, k0 + block))
        t = np.repeat(t0 + steps * interval_s, devices).astype(np.int64)
        d = np.tile(np.arange(devices), len(steps))
        m, low = len(t), p["low"][d]
        # battery: a per-device saw tooth in absolute time, charging 3% of each cycle
        phase = (t / p["period"][d] + p["phase"][d]) % 1.0
        charging = phase >= 0.97
        level = np.where(charging, low + (phase - 0.97) / 0.03 * (100 - low),
                         100 - phase / 0.97 * (100 - low))
        temp = p["temp"][d] + 3 * np.sin(2 * np.pi * t / 86400 + p["tphase"][d])
        used = np.rint(1e9 * (p["mem"][d] + g.normal(0, 0.05, m)).clip(0.05, 0.95))
        cpu = [np.round((p["cpu"][d] + g.normal(0, s, m)).clip(0, 100), 2) for s in (8, 3, 1)]
        yield {"time": t, "dev": d, "level": np.rint(level).clip(0, 100).astype(np.int32),
               "status": (~charging).astype(np.int8),
               "temp": np.round((temp + g.normal(0, 0.6, m)).clip(87.0, 102.0), 1),
               "pair": p["pair"][d], "cpu1": cpu[0], "cpu5": cpu[1], "cpu15": cpu[2],
               "used": used.astype(np.int64),
               "rssi": (p["rssi"][d] + g.integers(-3, 4, m)).clip(-84, -17).astype(np.int16)}


def _readings_stream(start: str | _dt.date, days: int, devices: int, interval_s: int, seed: int,
                     batch_rows: int) -> Iterator[dict[str, np.ndarray]]:
    _check(seed, batch_rows, days=(days, 0), devices=(devices, 1), interval_s=(interval_s, 1))
    g = _rng(seed, _READ)
    p = {"period": g.uniform(8, 30, devices) * 3600, "phase": g.random(devices),
         "low": g.integers(3, 30, devices), "temp": g.uniform(88.0, 96.0, devices),
         "tphase": g.uniform(0, 2 * np.pi, devices), "cpu": g.uniform(2.0, 40.0, devices),
         "mem": g.uniform(0.2, 0.8, devices), "rssi": g.integers(-80, -20, devices),
         "pair": _draw(g, "cat", (0.3, 0.3, 0.4), devices)}
    for k in range(days):
        day = _dates(start)[0] + _dt.timedelta(days=k)
        yield from _rebatch(_readings_day(day, devices, interval_s, p, seed), batch_rows)


def _device_ids(devices: int) -> list[str]:
    return [f"demo{i:06d}" for i in range(devices)]


def readings_batches(*, start: str | _dt.date = "2016-11-15", days: int = 1,
                     devices: int = 3000, interval_s: int = 30, seed: int = 0,
                     batch_rows: int = 1_000_000) -> Iterator[pa.RecordBatch]:
    """Synthetic device readings in :data:`hfq.schema.READINGS`, streamed.

    One reading per device every ``interval_s`` seconds from local midnight (UTC-05) of
    ``start``, for ``days`` days, sorted by (time, device_id); ``time`` holds the UTC instant.
    Devices are ``demo000000``, ``demo000001``, ...; batteries discharge ~97% of the time;
    ``mem_free + mem_used == 1_000_000_000``; rssi is in -84..-17; ssid and bssid come in the
    fixed pairs of the real data.

    Parameters
    ----------
    start : str or datetime.date
        First day; ``days``, ``devices`` and ``interval_s`` (seconds between readings) follow.
    seed, batch_rows : int
        As for :func:`taq_batches`.

    Yields
    ------
    pyarrow.RecordBatch

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.Table.from_batches(readings_batches(devices=10, interval_s=3600))
    >>> t.num_rows, str(t.column("time")[0].as_py())
    (240, '2016-11-15 05:00:00+00:00')
    """
    ids = pa.array(_device_ids(devices))
    status, ssid, bssid = pa.array(_STATUS), pa.array(_SSID), pa.array(_BSSID)
    for c in _readings_stream(start, days, devices, interval_s, seed, batch_rows):
        yield pa.RecordBatch.from_arrays([
            pa.array(c["time"], pa.timestamp("s", tz="UTC")), _dict_col(c["dev"], ids, True),
            pa.array(c["level"]), _dict_col(c["status"], status), pa.array(c["temp"]),
            _dict_col(c["pair"], bssid), pa.array(c["cpu1"]), pa.array(c["cpu5"]),
            pa.array(c["cpu15"]), pa.array(1_000_000_000 - c["used"]), pa.array(c["used"]),
            pa.array(c["rssi"]), _dict_col(c["pair"], ssid),
        ], schema=_schema.READINGS.arrow)


def write_readings_csv(path: Target, *, start: str | _dt.date = "2016-11-15", days: int = 1,
                       devices: int = 3000, interval_s: int = 30, seed: int = 0,
                       header: bool = True) -> int:
    """Write the rows of :func:`readings_batches` (same arguments) as CSV; return the rows.

    Columns in schema order; times in local time at the -05 offset (``2016-11-15 07:00:00-05``).

    Examples
    --------
    >>> import io
    >>> buf = io.BytesIO()
    >>> write_readings_csv(buf, devices=2, interval_s=43200)
    4
    >>> buf.getvalue().decode().splitlines()[1][:34]
    '2016-11-15 00:00:00-05,demo000000,'
    """
    ids, written = pl.Series(_device_ids(devices)), 0
    status, ssid, bssid = pl.Series(_STATUS), pl.Series(_SSID), pl.Series(_BSSID)
    with _open(path) as fh:
        if header:
            fh.write((",".join(_schema.READINGS.names) + "\n").encode())
        for c in _prefetch(_readings_stream(start, days, devices, interval_s, seed, 1 << 19)):
            local = c["time"] - _TZ                          # a batch never spans two days
            day = _dt.date.fromordinal(int(local[0] // 86400) + _EPOCH).isoformat()
            df = pl.DataFrame({**c, "sod": local % 86400}).select(
                time=pl.lit(day + " ") + pl.lit(_hms()[1]).gather("sod") + pl.lit("-05"),
                device_id=pl.lit(ids).gather("dev"), battery_level="level",
                battery_status=pl.lit(status).gather("status"), battery_temperature="temp",
                bssid=pl.lit(bssid).gather("pair"), cpu_avg_1min="cpu1", cpu_avg_5min="cpu5",
                cpu_avg_15min="cpu15", mem_free=1_000_000_000 - pl.col("used"),
                mem_used="used", rssi="rssi", ssid=pl.lit(ssid).gather("pair"))
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
    _check(seed, devices=(devices, 1))
    g = _rng(seed, _INFO)
    os_idx = _draw(g, "cat", (0.2, 0.3, 0.3, 0.2), devices)
    model = _draw(g, "cat", (0.4, 0.3, 0.3), devices)
    return pa.Table.from_arrays([
        _dict_col(np.arange(devices), pa.array(_device_ids(devices))),
        _dict_col(os_idx, pa.array(_API)), _dict_col(np.zeros(devices), pa.array(["iobeam"])),
        _dict_col(model, pa.array(["focus", "mustang", "pinto"])),
        _dict_col(os_idx, pa.array(_OS)),
    ], schema=_schema.DEVICE_INFO.arrow)


def write_device_info_csv(path: Target, *, devices: int = 3000, seed: int = 0,
                          header: bool = True) -> int:
    """Write :func:`device_info_table` as CSV; return the number of rows written.

    Examples
    --------
    >>> import io
    >>> buf = io.BytesIO()
    >>> write_device_info_csv(buf, devices=3)
    3
    >>> buf.getvalue().decode().splitlines()[0]
    'device_id,api_version,manufacturer,model,os_name'
    """
    df = cast(pl.DataFrame, pl.from_arrow(device_info_table(devices=devices, seed=seed)))
    with _open(path) as fh:
        df.write_csv(fh, include_header=header)
    return df.height


# -- trades (hfq.engine's asof and window joins) --------------------------------------------------
_TRADE = 5                      # stream id of trades
_COND = ("@", "F", "T", "I", "O", "Z")
_COND_P = (0.7, 0.12, 0.06, 0.06, 0.03, 0.03)


def trades_table(*, dates: Dates = ("2007-08-01",), rows_per_day: int = 100_000,
                 quotes_per_day: int = 1_000_000, symbols: int = 8000, seed: int = 0
                 ) -> pa.Table:
    """Synthetic trades in :data:`hfq.schema.TRADES` that go with the quotes of
    :func:`taq_batches` (same ``quotes_per_day``, ``symbols`` and ``seed``).

    Each trade follows a valid quote (bid > 0, bid < ofr, no sentinel) of its symbol within the
    same second, at millisecond resolution; ~95% of prices lie inside that quote's spread (on
    a cent), the rest one cent outside.  Sizes are round lots (a few odd lots); ``cond`` is
    mostly ``@`` (regular), some ``F``, ``T``, ``I``, ``O``, ``Z``.  Sorted by (symbol, time).

    Examples
    --------
    >>> t = trades_table(rows_per_day=200, quotes_per_day=2000, symbols=10)
    >>> t.num_rows, t.column_names
    (200, ['symbol', 'date', 'time', 'price', 'size', 'ex', 'cond'])
    """
    _check(seed, rows_per_day=(rows_per_day, 0), quotes_per_day=(quotes_per_day, 1))
    cond = pa.array(_COND)
    out = []
    for day in _dates(dates):
        q = pl.from_arrow(taq_table(dates=[day], rows_per_day=quotes_per_day,
                                    symbols=symbols, seed=seed))
        assert isinstance(q, pl.DataFrame)
        q = q.filter((pl.col("bid") > 0) & (pl.col("ofr") > pl.col("bid")) &
                     (pl.col("ofr") < 200000))
        # the last quote of each (symbol, second) prevails during that second
        q = q.group_by("symbol", "time", maintain_order=True).last()
        g = _rng(seed, _TRADE, day.toordinal())
        pick = np.sort(g.integers(0, max(1, q.height), rows_per_day)) if q.height else \
            np.zeros(0, np.int64)
        base = q[pick]
        n = base.height
        bid = base["bid"].to_numpy()
        ofr = base["ofr"].to_numpy()
        cents = np.maximum(np.round((ofr - bid) * 100), 0)
        inside = bid + np.floor(g.random(n) * (cents + 1)) / 100
        outside = np.where(g.random(n) < 0.5, bid - 0.01, ofr + 0.01)
        price = np.round(np.where(g.random(n) < 0.95, inside, outside), 4)
        ms = base["time"].cast(pl.Int64).to_numpy() // 1_000_000 + g.integers(0, 1000, n)
        size = (_draw(g, "geom", 0.3, n).astype(np.int32) * 100)
        odd = g.random(n) < 0.05
        size[odd] = g.integers(1, 100, int(odd.sum()))
        frame = pa.table({
            "symbol": base["symbol"].to_arrow(), "date": _const_date(day, n),
            "time": pa.array(ms.astype(np.int32), pa.time32("ms")), "price": pa.array(price),
            "size": pa.array(size), "ex": base["ex"].to_arrow(),
            "cond": _dict_col(_draw(g, "cat", _COND_P, n), cond)})
        df = pl.from_arrow(frame)
        assert isinstance(df, pl.DataFrame)
        order = df.with_row_index("_i").sort(pl.col("symbol").cast(pl.String), "time",
                                              maintain_order=True)["_i"].to_numpy()
        out.append(_schema.TRADES.conform(frame.take(pa.array(order))))
    if not out:
        return _schema.TRADES.arrow.empty_table()
    return pa.concat_tables(out)

