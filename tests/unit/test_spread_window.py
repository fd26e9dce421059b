"""spread_by_minute's window: only the window's minutes come back from the nodes, and the
curve still matches polars on the table's rows at the day's edges and inside a minute."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from hfq import analytics as ha
from hfq.demo import example_quotes


@pytest.fixture(scope="module")
def quotes():
    table = example_quotes(days=1, rows_per_day=4000, symbols=20)
    yield table
    table.db.close()


def oracle(rows: pl.DataFrame, start: dt.time, end: dt.time) -> pl.DataFrame:
    b, o, t = pl.col("bid"), pl.col("ofr"), pl.col("time")
    return (rows.filter(t.is_between(start, end) & (o > b) & (b > 0) & (o / b < 1.2))
            .group_by(minute=pl.time(t.dt.hour(), t.dt.minute()))
            .agg(avg_spread=((o - b) / (o + b) * 2).mean(), n=pl.len()).sort("minute"))


@pytest.mark.parametrize("start, end", [
    ("00:00:00", "23:59:59.999999"),    # the whole day: minutes 0 and 1439 included
    ("10:00:30", "10:02:10"),           # windows opening and closing inside a minute
    ("09:30:00", "15:59:59"),
])
def test_window_curve_matches_polars(quotes, start, end):
    got = ha.spread_by_minute(quotes, start=start, end=end, progress=False)
    rows = quotes.to_polars()
    if start == "00:00:00":   # quotes at the day's first and last minutes, to be counted
        edge = rows.head(2).with_columns(time=pl.Series([dt.time(0, 0), dt.time(23, 59, 59)]),
                                         bid=pl.lit(10.0), ofr=pl.lit(10.1))
        quotes.append(edge.to_arrow())
        got = ha.spread_by_minute(quotes, start=start, end=end, progress=False)
        rows = quotes.to_polars()
        assert (got["minute"][0], got["minute"][-1]) == (dt.time(0, 0), dt.time(23, 59))
    want = oracle(rows, dt.time.fromisoformat(start), dt.time.fromisoformat(end))
    assert got["minute"].to_list() == want["minute"].to_list()
    assert got["n"].to_list() == want["n"].to_list()
    assert np.allclose(got["avg_spread"].to_numpy(), want["avg_spread"].to_numpy(),
                       rtol=1e-12, atol=0)


def test_an_empty_window_gives_the_empty_curve(quotes):
    got = ha.spread_by_minute(quotes, start="12:00:00", end="11:00:00", progress=False)
    assert got.height == 0 and got.columns == ["minute", "avg_spread", "n"]
    nothing = ha.spread_by_minute(quotes, dates="1999-01-01", start="12:00:00", end="11:00:00",
                                  progress=False)
    assert nothing.height == 0 and nothing.schema == got.schema
