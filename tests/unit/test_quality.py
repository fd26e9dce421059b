"""The quality report against an independent oracle: the same counts in DuckDB SQL over the
same rows, on a small synthetic table with planted defects (a crossed, a locked and a wide
quote, a sentinel, a null and a negative price, a duplicate, an out-of-order time, a gap, a
jump).  And ``clean_quotes`` removes exactly the planted price defects.

No Ray: an embedded database without a running Ray reduces its partitions in this process's
threads, through the same runtime executor and task as on a cluster
(tests/integration/test_quality_cluster.py runs it on two nodes).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import polars as pl
import pytest

import hfq
from hfq.errors import HfqError, QueryError, SchemaMismatchError
from hfq.quality import CHECKS, SENTINELS, Rules, clean_quotes, parse_time, symbol_days

DAYS = ("2007-08-01", "2007-08-02")
DAY1 = dt.date(2007, 8, 1)
SESSION = (dt.time(9, 30), dt.time(16, 0))
BY_SYMBOL_HASH = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))


# -- data ---------------------------------------------------------------------------------------
def _base() -> pl.DataFrame:
    """Synthetic quotes with every defect taken out (by rules written here, not hfq's): valid
    prices only, in the session, no duplicates; stored order = this order."""
    raw = pl.from_arrow(hfq.synth.taq_table(dates=DAYS, rows_per_day=6000, symbols=12, seed=7))
    assert isinstance(raw, pl.DataFrame)
    bid, ofr, t = pl.col("bid"), pl.col("ofr"), pl.col("time")
    good = raw.filter((bid > 0) & (ofr > bid) & (ofr / bid < 1.2) & (ofr != 214748.3647)
                      & (t >= dt.time(9, 30)) & (t < dt.time(16, 0)))
    return good.unique(maintain_order=True)


def busiest(rows: pl.DataFrame) -> list[str]:
    """The symbols of the first day, most rows first."""
    day = rows.filter(pl.col("date") == DAY1).group_by(pl.col("symbol").cast(pl.String)).len()
    return day.sort("len", "symbol", descending=[True, False])["symbol"].to_list()


def _plant(base: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, list[int]]]:
    """``base`` with one of each defect planted in the busiest symbol's first day (the next
    one's for the jump); returns the rows and, per price defect, the planted rows' ``seq``."""
    df = base.with_row_index("seq")
    first, second = busiest(base)[:2]
    busy = df.filter((pl.col("symbol") == first) & (pl.col("date") == DAY1))
    seqs = busy["seq"].to_list()
    assert len(seqs) > 300
    planted: dict[str, list[int]] = {}

    def set_row(seq: int, **values: object) -> None:
        nonlocal df
        df = df.with_columns([pl.when(pl.col("seq") == seq).then(pl.lit(v)).otherwise(
            pl.col(k)).alias(k) for k, v in values.items()])

    def price(seq: int) -> tuple[float, float]:
        row = df.filter(pl.col("seq") == seq).row(0, named=True)
        return row["bid"], row["ofr"]

    for name, at, change in (
            ("crossed", 20, lambda b: {"ofr": b - 0.05}), ("locked", 40, lambda b: {"ofr": b}),
            ("wide", 60, lambda b: {"ofr": b * 1.5}),
            ("sentinel", 80, lambda b: {"ofr": SENTINELS[0]}),
            ("missing_price", 100, lambda b: {"bid": None}),
            ("missing_price", 105, lambda b: {"ofr": float("nan")}),
            ("nonpositive", 120, lambda b: {"bid": -1.0}),
            # a zero bid and a sentinel offer: counted once, as nonpositive (checks in order)
            ("nonpositive", 125, lambda b: {"bid": 0.0, "ofr": SENTINELS[0]})):
        set_row(seqs[at], **change(price(seqs[at])[0]))
        planted.setdefault(name, []).append(seqs[at])
    # outside the session: the last quote at 16:00:00 (the session's end is excluded)
    set_row(seqs[-1], time=dt.time(16, 0))
    # out of order: a time before its predecessor's (the table keeps arrival order)
    before = df.filter(pl.col("seq") == seqs[149])["time"].item()
    set_row(seqs[150], time=(dt.datetime.combine(dt.date(2007, 8, 1), before)
                             - dt.timedelta(seconds=30)).time())
    # a jump: the second symbol's mid leaps by $5 for one quote (two moves: up and back)
    aa = df.filter((pl.col("symbol") == second) & (pl.col("date") == DAY1))
    spike = aa["seq"][len(aa) // 2]
    b, o = price(spike)
    set_row(spike, bid=b + 5.0, ofr=o + 5.0)
    # a gap: no quote from 11:00 to 11:29:59
    t = pl.col("time")
    df = df.filter(~((pl.col("seq").is_in(seqs)) & (t >= dt.time(11)) & (t < dt.time(11, 30))))
    # a duplicate: a copy of one row right after it (same seq: the copy sorts next to it)
    dup = df.filter(pl.col("seq") == seqs[200])
    df = pl.concat([df, dup]).sort("seq", maintain_order=True)
    return df, planted


@pytest.fixture(scope="module")
def base() -> pl.DataFrame:
    return _base()


@pytest.fixture(scope="module")
def planted(base: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, list[int]]]:
    return _plant(base)


def _table(root: Path, rows: pl.DataFrame, scheme: object = BY_SYMBOL_HASH,
           sort_by: tuple[str, ...] = ("symbol",)) -> hfq.Table:
    """A table of ``rows`` (in this order), sorted by symbol only: arrival order is kept
    within a symbol, so an out-of-order time stays visible."""
    db = hfq.connect(str(root))
    t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=scheme, sort_by=sort_by)
    t.append(rows.drop("seq") if "seq" in rows.columns else rows)
    return t


@pytest.fixture(scope="module")
def quotes(tmp_path_factory: pytest.TempPathFactory,
           planted: tuple[pl.DataFrame, dict[str, list[int]]]) -> hfq.Table:
    return _table(tmp_path_factory.mktemp("quality") / "db", planted[0])


# -- the oracle: DuckDB SQL --------------------------------------------------------------------
def oracle(rows: pl.DataFrame, *, k: float = 10.0, floor: float = 0.01,
           max_ratio: float = 1.2, session: tuple[dt.time, dt.time] = SESSION) -> pl.DataFrame:
    """Every count of the report, per symbol-day, in SQL; ``rows`` in stored order."""
    frame = rows.drop("seq", strict=False).with_row_index("seq").with_columns(
        pl.col("symbol", "ex", "mmid").cast(pl.String))
    start, end = (s.strftime("%H:%M:%S") for s in session)
    minutes = (dt.datetime.combine(dt.date.min, session[1])
               - dt.datetime.combine(dt.date.min, session[0])).seconds // 60
    s = SENTINELS[0]
    con = duckdb.connect()
    con.register("arrow_frame", frame.to_arrow())
    con.execute("CREATE TEMP TABLE frame AS SELECT * REPLACE (CAST(time AS TIME) AS time) "
                "FROM arrow_frame")
    con.execute(f"""
        CREATE TEMP TABLE flags AS
        SELECT *, NOT missing AND NOT nonpos AND
                  (abs(bid - {s}) <= 0.00005 OR abs(ofr - {s}) <= 0.00005) AS sent
        FROM (SELECT *, NOT missing AND (bid <= 0 OR ofr <= 0) AS nonpos
              FROM (SELECT *, (bid IS NULL OR ofr IS NULL OR NOT isfinite(bid)
                               OR NOT isfinite(ofr)) AS missing FROM frame))""")
    con.execute("CREATE TEMP TABLE f AS SELECT *, NOT (missing OR nonpos OR sent) AS valid "
                "FROM flags")
    counts = con.sql(f"""
        SELECT symbol, date, count(*) AS rows,
          count(*) FILTER (valid AND ofr > bid AND ofr / bid < {max_ratio}) AS clean,
          count(*) FILTER (missing) AS missing_price,
          count(*) FILTER (nonpos) AS nonpositive,
          count(*) FILTER (sent) AS sentinel,
          count(*) FILTER (valid AND bid > ofr) AS crossed,
          count(*) FILTER (valid AND bid = ofr) AS locked,
          count(*) FILTER (valid AND ofr > bid AND ofr / bid >= {max_ratio}) AS wide,
          count(*) FILTER (time IS NULL OR time < TIME '{start}' OR time >= TIME '{end}')
            AS outside_session
        FROM f GROUP BY symbol, date""").pl()
    order = con.sql("""
        SELECT symbol, date, count(*) FILTER (time < prev) AS out_of_order
        FROM (SELECT symbol, date, time,
                     lag(time) OVER (PARTITION BY symbol, date ORDER BY seq) AS prev FROM f)
        GROUP BY symbol, date""").pl()
    cols = ", ".join(c for c in frame.columns if c != "seq")
    dups = con.sql(f"""
        SELECT symbol, date, count(*) AS n FROM (SELECT DISTINCT {cols} FROM frame)
        GROUP BY symbol, date""").pl()
    minute = (f"(hour(time) * 60 + minute(time)) - "
              f"{session[0].hour * 60 + session[0].minute}")
    gaps = con.sql(f"""
        WITH seen AS (SELECT DISTINCT symbol, date, {minute} AS m FROM f
                      WHERE time >= TIME '{start}' AND time < TIME '{end}'),
             days AS (SELECT DISTINCT symbol, date FROM seen),
             edges AS (SELECT * FROM seen UNION ALL SELECT symbol, date, -1 FROM days
                       UNION ALL SELECT symbol, date, {minutes} FROM days)
        SELECT symbol, date, {minutes} - (count(*) - 2) AS gap_minutes,
               max(m - prev - 1) AS longest_gap
        FROM (SELECT *, lag(m) OVER (PARTITION BY symbol, date ORDER BY m) AS prev FROM edges)
        GROUP BY symbol, date""").pl()
    jumps = con.sql(f"""
        WITH c AS (SELECT symbol, date, seq, (bid + ofr) / 2 AS mid FROM f
                   WHERE valid AND ofr > bid AND ofr / bid < {max_ratio}),
             d AS (SELECT symbol, date, mid - lag(mid) OVER (PARTITION BY symbol, date
                                                             ORDER BY seq) AS d FROM c),
             dev AS (SELECT symbol, date, abs(d - median(d) OVER (PARTITION BY symbol, date))
                            AS dev FROM d WHERE d IS NOT NULL),
             mad AS (SELECT *, median(dev) OVER (PARTITION BY symbol, date) AS mad FROM dev)
        SELECT symbol, date,
               count(*) FILTER (dev > {k} * greatest(1.4826 * mad, {floor})) AS jumps
        FROM mad GROUP BY symbol, date""").pl()
    out = (counts.join(order, on=["symbol", "date"], how="left")
           .join(dups, on=["symbol", "date"], how="left")
           .join(gaps, on=["symbol", "date"], how="left")
           .join(jumps, on=["symbol", "date"], how="left")
           .with_columns(duplicates=pl.col("rows") - pl.col("n"),
                         gap_minutes=pl.col("gap_minutes").fill_null(minutes),
                         longest_gap=pl.col("longest_gap").fill_null(minutes),
                         jumps=pl.col("jumps").fill_null(0),
                         out_of_order=pl.col("out_of_order").fill_null(0)))
    names = ["rows", "clean", *(c for c, _, _ in CHECKS[:9]), "gap_minutes", "longest_gap",
             "jumps"]
    return out.select("symbol", "date", *names).cast(dict.fromkeys(names, pl.Int64)).sort(
        "symbol", "date")


def _day(frame: pl.DataFrame, rank: int = 0) -> dict:
    """The report row of the first day of the ``rank``-th busiest symbol."""
    symbol = busiest(frame.filter(pl.col("date") == DAY1).select(
        "symbol", "date", pl.col("rows").repeat_by("rows")).explode("rows"))[rank]
    return frame.filter((pl.col("symbol") == symbol) & (pl.col("date") == DAY1)).row(
        0, named=True)


# -- tests -------------------------------------------------------------------------------------
def test_the_report_equals_duckdb_sql_on_the_same_rows(quotes: hfq.Table, planted) -> None:
    rows, _ = planted
    report = quotes.quality()
    assert report.on_nodes and report.partitions == len(quotes.partitions())
    want = oracle(rows)
    assert report.by_symbol_day.columns == want.columns
    assert report.by_symbol_day.equals(want)
    # the plants are there, once each, in the busiest symbol-day (the oracle saw them too)
    ibm = _day(report.by_symbol_day)
    for check in ("crossed", "locked", "wide", "sentinel", "missing_price", "nonpositive",
                  "duplicates", "out_of_order", "outside_session"):
        assert ibm[check] == len(planted[1].get(check, [0])), check
    assert ibm["longest_gap"] >= 30
    assert _day(report.by_symbol_day, 1)["jumps"] == 2
    # the price checks are exclusive: clean is what they leave
    price = ["missing_price", "nonpositive", "sentinel", "crossed", "locked", "wide"]
    d = report.by_symbol_day
    assert (d["rows"] - d.select(pl.sum_horizontal(price)).to_series()).equals(
        d["clean"], check_names=False)


def test_the_unplanted_data_has_no_defects(tmp_path: Path, base: pl.DataFrame) -> None:
    """The planted defects are what the report finds: the same rows without them count 0
    (gaps aside: a quiet symbol has minutes without quotes)."""
    report = _table(tmp_path / "db", base).quality()
    d = report.by_symbol_day
    for check in ("missing_price", "nonpositive", "sentinel", "crossed", "locked", "wide",
                  "outside_session", "out_of_order", "duplicates", "jumps"):
        assert d[check].sum() == 0, check
    assert d["clean"].sum() == d["rows"].sum() == base.height
    assert d.equals(oracle(base))


def test_clean_quotes_removes_exactly_the_planted_price_defects(quotes: hfq.Table,
                                                                 planted, base) -> None:
    rows, seqs = planted
    kept = quotes.scan(where=clean_quotes()).to_polars()
    # every row is kept but the planted bad prices (the duplicate and the moved time are
    # clean quotes); compare as multisets of whole rows
    planted_seqs = [seq for group in seqs.values() for seq in group]
    assert rows.filter(pl.col("seq").is_in(planted_seqs)).height == 8
    want = rows.filter(~pl.col("seq").is_in(planted_seqs)).drop("seq")
    key = want.columns
    assert kept.height == want.height == rows.height - 8
    assert kept.with_columns(pl.col("symbol", "ex", "mmid").cast(pl.String)).sort(key).equals(
        want.with_columns(pl.col("symbol", "ex", "mmid").cast(pl.String)).sort(key))


def test_clean_quotes_is_the_analytics_filter_and_never_null() -> None:
    df = pl.DataFrame({"bid": [10.0, 10.0, 0.0, None, float("nan"), 10.0, 10.0, 200000.0,
                               -1.0, 10.0, float("inf")],
                       "ofr": [10.05, 9.95, 10.0, 10.0, 10.0, 12.0, 11.99, 214748.3647, 1.0,
                               10.0, 11.0]})
    got = df.select(clean_quotes()).to_series().to_list()
    assert got == [True, False, False, False, False, False, True, False, False, False, False]
    wider = df.select(clean_quotes(max_ratio=1.5, sentinels=())).to_series().to_list()
    assert wider[5] is True and wider[7] is True


def test_a_scheme_that_splits_symbol_days_is_finished_on_the_driver(tmp_path: Path,
                                                                     planted) -> None:
    """Partitions by exchange: a symbol-day spans partitions, so the nodes send rows and the
    driver counts (in stored order: partition by partition)."""
    rows, _ = planted
    t = _table(tmp_path / "db", rows, hfq.Compo(hfq.Value("date"), hfq.Hash("ex", 3)))
    report = t.quality()
    assert not report.on_nodes
    stored = t.scan().to_polars()
    assert report.by_symbol_day.equals(oracle(stored))


def test_dates_symbols_and_rules_select_and_change_the_counts(quotes: hfq.Table,
                                                              planted) -> None:
    rows, _ = planted
    day = dt.date(2007, 8, 1)
    two = busiest(rows)[:2]
    report = quotes.quality(dates="2007-08-01", symbols=two, session=("10:00", "15:00"),
                            max_ratio=1.3, jump_k=4)
    got = report.by_symbol_day
    assert got["symbol"].to_list() == sorted(two) and got["date"].to_list() == [day, day]
    sub = rows.filter(pl.col("symbol").cast(pl.String).is_in(two) & (pl.col("date") == day))
    want = oracle(sub, k=4, max_ratio=1.3, session=(dt.time(10), dt.time(15)))
    assert got.equals(want)
    assert _day(got)["outside_session"] > 0 and report.rules.minutes == 300


def test_times_sorted_by_the_table_are_never_out_of_order(tmp_path: Path, planted) -> None:
    rows, _ = planted
    t = _table(tmp_path / "db", rows, sort_by=("symbol", "time"))
    assert t.quality().by_symbol_day["out_of_order"].sum() == 0


def test_the_summary_totals_the_symbol_days(quotes: hfq.Table) -> None:
    report = quotes.quality()
    d = report.by_symbol_day
    summary = report.summary()
    assert summary["check"].to_list() == [c for c, _, _ in CHECKS]
    for r in summary.iter_rows(named=True):
        assert r["count"] == d[r["check"]].sum()
        assert r["symbol_days"] == (d[r["check"]] > 0).sum()
    crossed = summary.filter(pl.col("check") == "crossed").row(0, named=True)
    assert crossed["share"] == pytest.approx(crossed["count"] / d["rows"].sum())
    assert crossed["worst"].startswith(f"{_day(d)['symbol']} 2007-08-01")
    gaps = summary.filter(pl.col("check") == "gap_minutes").row(0, named=True)
    assert gaps["share"] == pytest.approx(gaps["count"] / (d.height * 390))
    text = str(report)
    assert text.startswith(f"quality of quotes @ version 1: {d['rows'].sum():,} rows")
    assert "ofr/bid >= 1.2" in text and "214748.3647" in text
    facts = report.to_dict()
    assert facts["rows"] == d["rows"].sum() and facts["summary"] == summary.to_dicts()


def test_the_png(quotes: hfq.Table, tmp_path: Path) -> None:
    import matplotlib.pyplot as plt
    path = tmp_path / "q.png"
    fig = quotes.quality().plot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and len(fig.axes) == 3
    plt.close(fig)


def test_an_empty_selection_gives_an_empty_report(quotes: hfq.Table) -> None:
    report = quotes.quality(dates="2001-01-01")
    assert report.by_symbol_day.height == 0 and report.rows == 0
    assert report.summary()["count"].sum() == 0


def test_a_timestamp_time_column_counts_like_a_time_of_day(planted) -> None:
    rows, _ = planted
    stamped = rows.with_columns(pl.col("date").dt.combine(pl.col("time")).alias("time"))
    assert stamped.schema["time"] == pl.Datetime("us")
    assert symbol_days(stamped, Rules()).equals(symbol_days(rows, Rules()))


def test_errors_name_what_is_wrong(tmp_path: Path, quotes: hfq.Table) -> None:
    db = hfq.connect(str(tmp_path / "db"))
    readings = db.create_table("readings", hfq.schemas.READINGS,
                               partition_by=hfq.Value("device_id"))
    with pytest.raises(SchemaMismatchError, match="'readings' has no .*bid"):
        readings.quality()
    with pytest.raises(SchemaMismatchError, match="'ex' is dictionary.*not a time of day"):
        quotes.quality(time="ex")
    with pytest.raises(SchemaMismatchError, match="'mmid' is .*not a number"):
        quotes.quality(ofr="mmid")
    for bad, match in ((dict(session=("16:00", "09:30")), "starts"),
                       (dict(session=("9h30", "16:00")), "not a time of day"),
                       (dict(max_ratio=0.5), "max_ratio"), (dict(jump_k=-1), "jump_k"),
                       (dict(jump_floor=float("nan")), "jump_floor")):
        with pytest.raises(QueryError, match=match):
            quotes.quality(**bad)
    assert issubclass(QueryError, HfqError)
    assert parse_time("9:30") == dt.time(9, 30) and Rules(session=("9:30", "16:00")).minutes \
        == 390
