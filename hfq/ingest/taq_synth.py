"""Synthetic NYSE Daily TAQ days in the 2026 format, deterministic and of any size: as Arrow
tables in :data:`hfq.schema.NYSE_QUOTES` / :data:`~hfq.schema.NYSE_TRADES`, and as the
pipe-separated daily files :mod:`hfq.ingest.taq` loads (``EQY_US_ALL_BBO_YYYYMMDD`` and
``EQY_US_ALL_TRADE_YYYYMMDD``: a header line, rows sorted by symbol then time, times written
``HHMMSS`` + 9 digits of nanoseconds, and the ``END`` trailer real files end with).

Activity is heavy-tailed like a real day's: symbol weights follow a Zipf-Mandelbrot law
``(rank + q) ** -s`` fitted so that the busiest symbol has about 5% of the quotes and the median
symbol about 100 (:func:`activity`).  Quotes hold a per-symbol random walk in cents with
spreads of a few cents, ~0.5% one-sided quotes (a zero bid and size), ~0.2% crossed ones;
trades print inside the spread of a quote of the same symbol just before them.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from hfq import schema as _schema

__all__ = ["BBO_HEADER", "TRADE_HEADER", "activity", "nyse_day", "nyse_files"]

BBO_HEADER = ("Time", "Exchange", "Symbol", "Bid_Price", "Bid_Size", "Offer_Price",
              "Offer_Size", "Quote_Condition", "Sequence_Number", "National_BBO_Ind",
              "FINRA_BBO_Indicator", "FINRA_ADF_MPID_Indicator", "Quote_Cancel_Correction",
              "Source_Of_Quote", "Retail_Interest_Indicator",
              "Short_Sale_Restriction_Indicator", "LULD_BBO_Indicator",
              "SIP_Generated_Message_Identifier", "National_BBO_LULD_Indicator",
              "Participant_Timestamp", "FINRA_ADF_Timestamp",
              "FINRA_ADF_Market_Participant_Quote_Indicator", "Security_Status_Indicator")
"""The header of a 2026 ``EQY_US_ALL_BBO`` file (what the generator writes)."""

TRADE_HEADER = ("Time", "Exchange", "Symbol", "Sale_Condition", "Trade_Volume", "Trade_Price",
                "Trade_Stop_Stock_Indicator", "Trade_Correction_Indicator", "Sequence_Number",
                "Trade_Id", "Source_of_Trade", "Trade_Reporting_Facility",
                "Participant_Timestamp", "Trade_Reporting_Facility_TRF_Timestamp",
                "Trade_Through_Exempt_Indicator")
"""The header of a 2026 ``EQY_US_ALL_TRADE`` file."""

_EX = np.array(list("PNQZKJTYVXABCMHUDL"))
_EX_P = np.array([12, 10, 16, 8, 7, 5, 6, 4, 3, 3, 2, 2, 2, 2, 2, 2, 12, 2], dtype=float)
_COND = np.array(["R", "A", "B", "O", "L", "Y"])
_COND_P = np.array([0.95, 0.01, 0.01, 0.01, 0.01, 0.01])
_SALE = np.array(["@", "@ TI", "@F  ", "@  I", "O", "6", "@4 I"])
_SALE_P = np.array([0.6, 0.15, 0.1, 0.08, 0.03, 0.02, 0.02])
_NS = 1_000_000_000
_ZIPF_S = 1.1
_OPEN, _CLOSE = (9 * 3600 + 1800) * _NS, 16 * 3600 * _NS
_EARLY, _LATE = 4 * 3600 * _NS, 20 * 3600 * _NS


def activity(rows: int, *, top: float = 0.05, median: float = 100.0,
             symbols: int | None = None) -> np.ndarray:
    """Symbol weights (summing to 1, busiest first) for a day of ``rows`` quotes: a
    Zipf-Mandelbrot law fitted so that the busiest symbol has about ``top`` of the rows and
    the median symbol about ``median`` (``symbols``: fix their number instead).

    Examples
    --------
    >>> w = activity(20_000_000)
    >>> round(float(w[0]), 3), 50 < float(np.median(w)) * 20_000_000 < 200
    (0.05, True)
    """
    def weights(n: int) -> np.ndarray:
        ranks = np.arange(1, n + 1, dtype=float)
        lo, hi = 0.0, float(n)   # q: the busiest symbol's share falls as q grows
        for _ in range(40):
            q = (lo + hi) / 2
            w = (ranks + q) ** -_ZIPF_S
            lo, hi = (q, hi) if w[0] / w.sum() > top else (lo, q)
        w = (ranks + (lo + hi) / 2) ** -_ZIPF_S
        return w / w.sum()

    if symbols:
        return weights(symbols)
    lo_n, hi_n = 4.0, max(8.0, 4 * rows / median)   # the median symbol's rows fall with n
    for _ in range(30):
        n = int(np.sqrt(lo_n * hi_n))
        if weights(n)[n // 2] * rows > median:
            lo_n = n
        else:
            hi_n = n
        if hi_n - lo_n <= 1:
            break
    return weights(int(hi_n))


def _names(n: int, g: np.random.Generator) -> np.ndarray:
    """``n`` distinct tickers of 1-5 letters, sorted."""
    out: set[str] = set()
    letters = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    while len(out) < n:
        size = g.integers(1, 6, 2 * n)
        picks = g.integers(0, 26, (2 * n, 5))
        for k, row in zip(size, picks):
            out.add("".join(letters[row[:k]]))
            if len(out) == n:
                break
    return np.array(sorted(out))


def _times(g: np.random.Generator, n: int) -> np.ndarray:
    """Times of day in ns: 90% in regular hours, the rest pre- and post-market."""
    regular = g.random(n) < 0.9
    t = np.where(regular, g.integers(_OPEN, _CLOSE, n),
                 np.where(g.random(n) < 0.5, g.integers(_EARLY, _OPEN, n),
                          g.integers(_CLOSE, _LATE, n)))
    return t.astype(np.int64)


def _segmented_walk(g: np.random.Generator, sym: np.ndarray, n: int) -> np.ndarray:
    """A random walk in cents restarting at 0 for each symbol (rows grouped by symbol)."""
    step = g.choice(np.array([-1, 0, 0, 0, 1], dtype=np.int64), n)
    walk = np.cumsum(step)
    first = np.flatnonzero(np.r_[True, sym[1:] != sym[:-1]])
    base = np.repeat(walk[first] - step[first], np.diff(np.r_[first, n]))
    return walk - base


def nyse_day(date: str | dt.date = "2026-04-01", *, quotes: int = 1_000_000,
             trades: int | None = None, symbols: int | None = None, seed: int = 0,
             chunk_rows: int = 2_000_000) -> Iterator[tuple[pa.Table, pa.Table]]:
    """One synthetic TAQ day as (quotes, trades) Arrow tables in NYSE_QUOTES / NYSE_TRADES,
    in chunks of consecutive symbols (about ``chunk_rows`` quotes each), each sorted by
    (symbol, time); ``trades`` defaults to 15% of ``quotes``.

    Examples
    --------
    >>> q, t = next(nyse_day(quotes=5000, trades=800, seed=1))
    >>> q.schema == _schema.NYSE_QUOTES.arrow, t.schema == _schema.NYSE_TRADES.arrow
    (True, True)
    """
    day = dt.date.fromisoformat(date) if isinstance(date, str) else date
    trades = int(quotes * 0.15) if trades is None else trades
    g = np.random.default_rng([seed, day.toordinal()])
    weights = activity(quotes, symbols=symbols)
    n_sym = len(weights)
    rank = g.permutation(n_sym)              # the busiest symbol is not the first name
    w = weights[rank]
    names = _names(n_sym, g)
    q_counts = g.multinomial(quotes, w)
    t_counts = g.multinomial(trades, w)
    base_cents = np.maximum(100, np.round(np.exp(g.normal(3.5, 1.0, n_sym)) * 100)).astype(
        np.int64)
    seq_q = seq_t = 0
    start = 0
    while start < n_sym:
        stop = start
        total = 0
        while stop < n_sym and (total == 0 or total + q_counts[stop] <= chunk_rows):
            total += q_counts[stop]
            stop += 1
        sub = np.random.default_rng([seed, day.toordinal(), start])
        q = _quotes(sub, day, names, base_cents, q_counts, start, stop, seq_q)
        t = _trades(sub, day, names, q, t_counts, start, stop, seq_t)
        seq_q += q.num_rows
        seq_t += t.num_rows
        yield q, t
        start = stop


def _quotes(g: np.random.Generator, day: dt.date, names: np.ndarray, base: np.ndarray,
            counts: np.ndarray, start: int, stop: int, seq0: int) -> pa.Table:
    sym = np.repeat(np.arange(start, stop), counts[start:stop])
    n = len(sym)
    t = _times(g, n)
    order = np.lexsort((t, sym))
    t = t[order]
    bid_c = np.maximum(1, base[sym] + _segmented_walk(g, sym, n))
    spread = 1 + g.geometric(0.5, n)
    ofr_c = bid_c + spread
    crossed = g.random(n) < 0.002
    ofr_c[crossed] = bid_c[crossed] - 1
    bidsiz = (g.geometric(0.3, n) * 100).astype(np.int32)
    ofrsiz = (g.geometric(0.3, n) * 100).astype(np.int32)
    one_sided = g.random(n) < 0.005
    bid_c[one_sided] = 0
    bidsiz[one_sided] = 0
    ex = g.choice(_EX, n, p=_EX_P / _EX_P.sum())
    participant = np.maximum(0, t - g.integers(1_000, 500_000, n))
    adf = np.where(ex == "D", np.maximum(0, t - g.integers(100, 50_000, n)), -1)
    seq = seq0 + np.argsort(np.argsort(t, kind="stable"), kind="stable") + 1
    ssr = np.where(g.random(n) < 0.02, "A", "")
    return pa.table({
        "symbol": _dict(names[sym]), "date": pa.array(np.full(n, day), pa.date32()),
        "time": pa.array(t, pa.time64("ns")), "ex": _dict(ex),
        "bid": pa.array(bid_c / 100), "bidsiz": pa.array(bidsiz),
        "ofr": pa.array(np.maximum(ofr_c, 0) / 100), "ofrsiz": pa.array(ofrsiz),
        "cond": _dict(g.choice(_COND, n, p=_COND_P)), "seq": pa.array(seq.astype(np.int64)),
        "nbbo_ind": _dict(g.choice(np.array(["0", "1", "2", "4"]), n)),
        "finra_bbo_ind": _dict(np.where(ex == "D", "2", "")), "ssr": _dict(ssr),
        "participant_time": pa.array(participant, pa.time64("ns")),
        "finra_adf_time": pa.array(np.where(adf < 0, 0, adf), pa.time64("ns"),
                                   mask=adf < 0),
    }, schema=_schema.NYSE_QUOTES.arrow)


def _trades(g: np.random.Generator, day: dt.date, names: np.ndarray, q: pa.Table,
            counts: np.ndarray, start: int, stop: int, seq0: int) -> pa.Table:
    """Trades following quotes of their symbol: each prints within 1 ms after a quote with a
    bid, inside (95%) or a cent outside its spread."""
    quoted = q.filter(pa.compute.greater(q["bid"], 0))
    codes = quoted["symbol"].combine_chunks().indices.to_numpy()
    qsym = np.searchsorted(names[start:stop], quoted["symbol"].combine_chunks().dictionary
                           .to_numpy(zero_copy_only=False)[codes]) + start
    firsts = np.searchsorted(qsym, np.arange(start, stop))
    lasts = np.searchsorted(qsym, np.arange(start, stop), side="right")
    want = np.where(lasts > firsts, counts[start:stop], 0)
    sym = np.repeat(np.arange(start, stop), want)
    n = len(sym)
    pick = firsts[sym - start] + (g.random(n) * (lasts - firsts)[sym - start]).astype(np.int64)
    pick.sort()
    qt = quoted["time"].cast(pa.int64()).to_numpy()[pick]
    t = np.minimum(qt + g.integers(1, 1_000_000, n), 24 * 3600 * _NS - 1)
    order = np.lexsort((t, sym))
    pick, t, sym = pick[order], t[order], sym[order]
    bid = np.round(quoted["bid"].to_numpy()[pick] * 100)
    ofr = np.round(quoted["ofr"].to_numpy()[pick] * 100)
    cents = np.maximum(ofr - bid, 0)
    inside = bid + np.floor(g.random(n) * (cents + 1))
    outside = np.where(g.random(n) < 0.5, bid - 1, ofr + 1)
    price = np.maximum(np.where(g.random(n) < 0.95, inside, outside), 1) / 100
    size = (g.geometric(0.3, n) * 100).astype(np.int32)
    odd = g.random(n) < 0.1
    size[odd] = g.integers(1, 100, int(odd.sum()))
    ex = g.choice(_EX, n, p=_EX_P / _EX_P.sum())
    seq = seq0 + np.argsort(np.argsort(t, kind="stable"), kind="stable") + 1
    trf = np.where(ex == "D", np.where(g.random(n) < 0.7, "N", "Q"), "")
    trf_time = np.where(ex == "D", np.maximum(0, t - g.integers(100, 20_000, n)), -1)
    return pa.table({
        "symbol": _dict(names[sym]), "date": pa.array(np.full(n, day), pa.date32()),
        "time": pa.array(t, pa.time64("ns")), "ex": _dict(ex),
        "cond": _dict(g.choice(_SALE, n, p=_SALE_P)), "size": pa.array(size),
        "price": pa.array(price), "stop": _dict(np.full(n, "")),
        "corr": pa.array(np.where(g.random(n) < 0.001, 1, 0).astype(np.int16)),
        "seq": pa.array(seq.astype(np.int64)),
        "trade_id": pa.array((np.arange(n) + seq0 + 1).astype(np.int64)),
        "source": _dict(np.full(n, "C")), "trf": _dict(trf),
        "participant_time": pa.array(np.maximum(0, t - g.integers(1_000, 500_000, n)),
                                     pa.time64("ns")),
        "trf_time": pa.array(np.where(trf_time < 0, 0, trf_time), pa.time64("ns"),
                             mask=trf_time < 0),
    }, schema=_schema.NYSE_TRADES.arrow)


def _dict(values: np.ndarray) -> pa.Array:
    return pa.array(values, pa.string()).dictionary_encode().cast(
        pa.dictionary(pa.int32(), pa.string()))


# -- the daily files -----------------------------------------------------------------------------
def _stamp(col: str) -> pl.Expr:
    """A TIME_NS column as ``HHMMSS`` + 9 digits of nanoseconds (nulls: empty)."""
    ns = pl.col(col).cast(pl.Int64)
    secs = ns // _NS
    value = (secs // 3600 * 10_000 + secs % 3600 // 60 * 100 + secs % 60) * _NS + ns % _NS
    return value.cast(pl.String).str.zfill(15).fill_null("")


def _bbo_text(q: pa.Table) -> pl.DataFrame:
    df = pl.from_arrow(q)
    assert isinstance(df, pl.DataFrame)
    s = pl.col
    return df.select(
        _stamp("time").alias("Time"), s("ex").cast(pl.String).alias("Exchange"),
        s("symbol").cast(pl.String).alias("Symbol"), s("bid").alias("Bid_Price"),
        s("bidsiz").alias("Bid_Size"), s("ofr").alias("Offer_Price"),
        s("ofrsiz").alias("Offer_Size"), s("cond").cast(pl.String).alias("Quote_Condition"),
        s("seq").alias("Sequence_Number"),
        s("nbbo_ind").cast(pl.String).alias("National_BBO_Ind"),
        s("finra_bbo_ind").cast(pl.String).alias("FINRA_BBO_Indicator"),
        *(pl.lit("").alias(c) for c in BBO_HEADER[11:15]),
        s("ssr").cast(pl.String).alias("Short_Sale_Restriction_Indicator"),
        *(pl.lit("").alias(c) for c in BBO_HEADER[16:19]),
        _stamp("participant_time").alias("Participant_Timestamp"),
        _stamp("finra_adf_time").alias("FINRA_ADF_Timestamp"),
        *(pl.lit("").alias(c) for c in BBO_HEADER[21:]))


def _trade_text(t: pa.Table) -> pl.DataFrame:
    df = pl.from_arrow(t)
    assert isinstance(df, pl.DataFrame)
    s = pl.col
    return df.select(
        _stamp("time").alias("Time"), s("ex").cast(pl.String).alias("Exchange"),
        s("symbol").cast(pl.String).alias("Symbol"),
        s("cond").cast(pl.String).alias("Sale_Condition"), s("size").alias("Trade_Volume"),
        s("price").alias("Trade_Price"),
        s("stop").cast(pl.String).alias("Trade_Stop_Stock_Indicator"),
        s("corr").cast(pl.String).str.zfill(2).alias("Trade_Correction_Indicator"),
        s("seq").alias("Sequence_Number"), s("trade_id").alias("Trade_Id"),
        s("source").cast(pl.String).alias("Source_of_Trade"),
        s("trf").cast(pl.String).alias("Trade_Reporting_Facility"),
        _stamp("participant_time").alias("Participant_Timestamp"),
        _stamp("trf_time").alias("Trade_Reporting_Facility_TRF_Timestamp"),
        pl.lit("").alias("Trade_Through_Exempt_Indicator"))


def nyse_files(directory: str | os.PathLike[str], date: str | dt.date = "2026-04-01", *,
               quotes: int = 1_000_000, trades: int | None = None,
               symbols: int | None = None, seed: int = 0,
               keep: bool = False) -> tuple[str, str] | tuple[str, str, list[Any]]:
    """Write the day of :func:`nyse_day` (same arguments) as ``EQY_US_ALL_BBO_YYYYMMDD`` and
    ``EQY_US_ALL_TRADE_YYYYMMDD`` in ``directory``, chunk by chunk; returns their paths (and,
    with ``keep``, the (quotes, trades) chunks written).

    Examples
    --------
    >>> bbo, trade = nyse_files(tmp, quotes=2000, trades=300, seed=2)
    >>> with open(bbo) as f:
    ...     lines = f.read().splitlines()
    >>> os.path.basename(bbo), lines[0].split("|")[:3], lines[-1].split("|")[:3]
    ('EQY_US_ALL_BBO_20260401', ['Time', 'Exchange', 'Symbol'], ['END', '20260401', '2000'])
    """
    day = dt.date.fromisoformat(date) if isinstance(date, str) else date
    os.makedirs(directory, exist_ok=True)
    stamp = day.strftime("%Y%m%d")
    paths = (os.path.join(directory, f"EQY_US_ALL_BBO_{stamp}"),
             os.path.join(directory, f"EQY_US_ALL_TRADE_{stamp}"))
    kept: list[Any] = []
    counts = [0, 0]
    with open(paths[0], "wb") as fq, open(paths[1], "wb") as ft:
        for i, (q, t) in enumerate(nyse_day(day, quotes=quotes, trades=trades,
                                            symbols=symbols, seed=seed)):
            for k, (fh, frame) in enumerate(((fq, _bbo_text(q)), (ft, _trade_text(t)))):
                frame.write_csv(fh, separator="|", quote_style="never", include_header=i == 0,
                                float_precision=None)
                counts[k] += frame.height
            if keep:
                kept.append((q, t))
        for fh, header, n in ((fq, BBO_HEADER, counts[0]), (ft, TRADE_HEADER, counts[1])):
            fh.write(("|".join(["END", stamp, str(n)] + [""] * (len(header) - 3)) + "\n")
                     .encode())
    return (*paths, kept) if keep else paths
