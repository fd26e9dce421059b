"""Replay (issue 26 item 6): stored days published again in time order, tables merged by time.

Oracle: polars -- the sources' rows of the days, sorted by (date, time) with ties in stored
order then table order; a subscriber to the replay tables sees exactly that interleaving.
"""

from __future__ import annotations

import polars as pl

import hfq
from conftest import canonical

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2))
DAYS = ("2024-01-02", "2024-01-03")


def sources(tmp_path, quote_rows: int, trade_rows: int, symbols: int, seed: int):
    """A database with ``quotes`` and ``trades`` over :data:`DAYS` (``*_rows`` a day)."""
    db = hfq.connect(str(tmp_path))
    quotes = db.create_table("quotes", hfq.schemas.TAQ, partition_by=SCHEME,
                             sort_by=("symbol", "time"))
    trades = db.create_table("trades", hfq.schemas.TRADES, partition_by=SCHEME,
                             sort_by=("symbol", "time"))
    quotes.append(hfq.synth.taq_table(dates=DAYS, rows_per_day=quote_rows, symbols=symbols,
                                      seed=seed))
    trades.append(hfq.synth.trades_table(dates=DAYS, rows_per_day=trade_rows, symbols=symbols,
                                         seed=seed + 1))
    return db, quotes, trades


def test_replay_merges_tables_by_time_and_publishes_every_row_once(tmp_path):
    db, quotes, trades = sources(tmp_path, 400, 300, symbols=6, seed=1)
    subs = {}
    for name, src in (("quotes_replay", quotes), ("trades_replay", trades)):
        m = src.snapshot()
        db.create_table(name, m.schema, partition_by=m.partition_by, sort_by=m.sort_by)
        subs[name] = db[name].subscribe(start="sod", wait_s=0)
    sleeps = []
    done = hfq.replay([quotes, trades], DAYS, batch_rows=64, speed=1e9, sleep=sleeps.append)
    assert done.rows == {"quotes": 800, "trades": 600} and done.days == list(DAYS)
    for name, src in (("quotes_replay", quotes), ("trades_replay", trades)):
        assert canonical(db[name].scan().to_arrow()).equals(canonical(src.to_arrow()))
    # the order of publication: event time across both tables
    seen = []
    for name, sub in subs.items():
        while (b := sub.poll()) is not None:
            frame = pl.from_arrow(b)
            seen.append((b.schema.metadata[b"hfq.seq"], name, frame))
    # within each replay table, batch after batch in event time (rows of a batch come
    # partition by partition: each symbol's in order)
    for name in ("quotes_replay", "trades_replay"):
        mine = [f for s, n, f in sorted(seen, key=lambda x: int(x[0])) if n == name]
        spans = [(f.select(_event()).min().item(), f.select(_event()).max().item())
                 for f in mine]
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    events = pl.concat([pl.from_arrow(quotes.to_arrow()).select("date", "time"),
                        pl.from_arrow(trades.to_arrow()).select("date", pl.col("time")
                                                                .cast(pl.Time))])
    assert sum(f.height for _, _, f in seen) == events.height


def _event() -> pl.Expr:
    return pl.col("date").cast(pl.Datetime("ns")).dt.epoch("ns") + \
        pl.col("time").cast(pl.Time).to_physical()


def test_replay_waits_for_each_batch_at_its_event_time_over_speed(tmp_path):
    """``speed=10``: the batch starting at event ``e`` is due ``(e - first event) / 10`` s after
    the start, across days too.  ``sleep`` is recorded, not slept, so the replay takes its
    real time (far under the 60 s of slack allowed) and every wait is ``due - elapsed``."""
    _, quotes, trades = sources(tmp_path, 300, 200, symbols=4, seed=3)
    sleeps: list[float] = []
    hfq.replay([quotes, trades], DAYS, batch_rows=50, speed=10, sleep=sleeps.append)
    events = pl.concat([pl.from_arrow(t.to_arrow()).select(_event().alias("e"))
                        for t in (quotes, trades)])
    dues = []
    for day in DAYS:    # batches start afresh each day
        mine = events.filter(pl.col("e").cast(pl.Datetime("ns")).dt.date()
                             == pl.lit(day).str.to_date())["e"].sort()
        dues += mine.gather_every(50).to_list()
    dues = [(e - dues[0]) / 1e9 / 10 for e in dues]
    slack = 60.0
    assert dues[-1] > 86_400 / 10 > slack             # the second day's last batch
    assert sum(d > slack for d in dues) <= len(sleeps) <= sum(d > 0 for d in dues)
    assert all(0 < w <= dues[-1] for w in sleeps)
    assert dues[-1] - slack < sleeps[-1] <= dues[-1]
