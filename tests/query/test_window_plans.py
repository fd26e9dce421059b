"""The cheaper plans of issue 24's query-speed work, each exact against DuckDB on the nasty
tables (``w``: 2,400 rows over 12 partitions; ``m``/``m1``: NULL, int extremes): a window
over the partition columns runs on the nodes (a choice of two local forms), the
running RANGE count/sum/avg of integers over a TIME, DATE or narrow integer key is one
rolling window with the NULL keys placed last, and a grouped variance of integers skips
the checks that cannot hold."""

from __future__ import annotations

import datetime as dt
import math

import polars as pl
import pyarrow as pa
import pytest
from nasty import SCHEMA, load, oracle
from oracle import assert_same

import hfq
from hfq.engine import aggs, execute, ops
from hfq.engine.sql import windows


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = hfq.connect(str(tmp_path_factory.mktemp("windowplans")))
    load(d)
    return d


@pytest.fixture(scope="module")
def duck(db):
    return oracle(db)


def _chosen_forms(db, sql: str, rows: pl.LazyFrame) -> list[str]:
    """The window/select expressions of ``sql``'s plan as chosen over the frame ``rows``."""
    staged = execute.stage(db.sql(sql))
    return [str(e) for op in [*staged.node_ops, *staged.driver_ops]
            if isinstance(op, (ops.Select, ops.WithColumns))
            for e in ops._chosen(rows, op.exprs)[1]]


def test_a_narrow_window_sum_over_the_partition_columns_runs_on_the_nodes(db, duck):
    sql = ("SELECT symbol, date, max(c) AS c FROM (SELECT symbol, date, sum(bidsiz) OVER "
           "(PARTITION BY symbol, date ORDER BY tod) AS c FROM w) s GROUP BY 1, 2")
    plan = db.sql(sql).explain()
    assert "rows go to the driver" not in plan, plan
    node = plan.split("driver stage:")[0]
    assert "rolling_sum_by" in node and "__hfq_choice" in node, plan
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)


@pytest.mark.parametrize("shared", [None, 0])
def test_a_window_run_flat_over_the_partition_columns_runs_on_the_nodes(db, duck, monkeypatch,
                                                                        shared):
    """lag and short ROWS frames over rows in window order run flat (no ``over``: their
    shifts cut where the partition keys change): still local to a partition of the table."""
    if shared is not None:
        monkeypatch.setattr(ops, "SHARED_ROWS", shared)
    sql = (f"SELECT symbol, date, max(l) AS l{shared}, max(s) AS s FROM (SELECT symbol, date, "
           "bid - lag(bid) OVER (PARTITION BY symbol, date ORDER BY tod) AS l, sum(bid) OVER "
           "(PARTITION BY symbol, date ORDER BY tod ROWS 2 PRECEDING) AS s FROM w) x "
           "GROUP BY 1, 2")
    plan = db.sql(sql).explain()
    assert "rows go to the driver" not in plan, plan
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)


# a window sum of a 32-bit column: BIGINT on a frame (a node's batch) of fewer than
# WINDOW_ROWS rows, 128 bits on a longer one (none fails on a row count), exact either way
@pytest.mark.parametrize("limit", [2**32, 5])
@pytest.mark.parametrize("frame", ["", "ORDER BY time ", "ORDER BY time ROWS BETWEEN 3 "
                                   "PRECEDING AND CURRENT ROW ", "ORDER BY time RANGE BETWEEN "
                                   "INTERVAL 20 SECOND PRECEDING AND CURRENT ROW "])
def test_window_sums_of_32_bit_extremes_are_duckdbs(db, duck, ext, monkeypatch, limit, frame):
    monkeypatch.setattr(windows, "WINDOW_ROWS", limit)
    # (the limit in the text: a statement is compiled once per text)
    sql = (f"SELECT symbol, date, time AS t{limit}, sum(bidsiz) OVER (PARTITION BY symbol {frame})"
           " AS a, "
           f"sum(small) OVER (PARTITION BY date {frame}) AS b, sum(bidsiz) OVER ({frame}) AS c "
           "FROM ext ORDER BY symbol, date, time, a, b, c")
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what=sql)
    forms = _chosen_forms(db, sql, db["ext"].scan().collect().lazy())
    assert any("Int128" in f for f in forms) == (limit == 5), forms


def test_a_choice_computes_only_the_form_its_test_picks_over_the_frame():
    def chosen(frame: pl.DataFrame, e: pl.Expr) -> str:
        return str(ops._chosen(frame.lazy(), (e,))[1][0])

    nulls = pl.DataFrame({"g": [1, 1, 2], "k": [1, None, 3]})
    e = ops.choice(pl.col("k").is_not_null().all(), pl.col("k").cum_sum(),
                   pl.col("k").cum_max()).over("g")
    assert "cum_max" in chosen(nulls, e) and "cum_sum" not in chosen(nulls, e)
    assert "cum_sum" in chosen(nulls.drop_nulls(), e) and "cum_max" not in chosen(
        nulls.drop_nulls(), e)
    # a narrow window sum: BIGINT below WINDOW_ROWS rows, 128 bits from there
    a = pl.col("k").cast(pl.Int64).sum().over("g")
    e = ops.choice(pl.len() < windows.WINDOW_ROWS, a, pl.col("k").cast(pl.Int128).sum().over("g"))
    assert "Int128" not in chosen(nulls, e)
    long = pl.DataFrame({"g": [1], "k": [1]}).select(pl.all().repeat_by(3).explode())
    e = ops.choice(pl.len() < 3, a, pl.col("k").cast(pl.Int128).sum().over("g"))
    assert "Int128" in chosen(long, e) and "Int128" not in chosen(long.head(2), e)
    # from SHARED_ROWS rows the test runs as a lazy plan (its common parts computed once)
    big = pl.DataFrame({"g": [1, 2] * (ops.SHARED_ROWS // 2), "k": range(ops.SHARED_ROWS)})
    twice = pl.col("k") * 2
    e = ops.choice((twice.min() >= 0) & (twice.max() < 2 * ops.SHARED_ROWS),
                   pl.col("k").cum_sum(), pl.col("k").cum_max()).over("g")
    assert "cum_sum" in chosen(big, e) and "cum_max" not in chosen(big, e)
    assert "cum_max" in chosen(big.with_columns(k=pl.col("k") - 1), e)


def test_a_large_choice_is_made_only_over_many_rows():
    """A large choice (windows read in stored order) takes its full form over a frame of
    fewer than SHARED_ROWS rows without evaluating its test (a test of a missing column
    fails where evaluated, leaving both forms), and in a plan reading fewer input rows
    without collecting; from SHARED_ROWS rows its test picks."""
    def chosen(frame: pl.DataFrame, e: pl.Expr) -> str:
        return str(ops._chosen(frame.lazy(), (e,))[1][0])

    small = pl.DataFrame({"k": [3, 1, 2]})
    e = ops.choice(pl.col("missing").all(), pl.col("k").cum_sum(), pl.col("k").cum_max(),
                   large=True)
    assert "cum_max" in chosen(small, e) and "cum_sum" not in chosen(small, e)
    lf = small.lazy()
    op = ops.Select((e.alias("c"),))
    with ops.input_rows(small.height):
        got, exprs = ops._chosen(lf, op.exprs, op)
        assert got is lf and "cum_max" in str(exprs[0]) and "cum_sum" not in str(exprs[0])
        assert op.apply(lf).collect()["c"].to_list() == [3, 3, 3]
    big = pl.DataFrame({"k": range(ops.SHARED_ROWS)})
    tried = chosen(big, e)   # (the test evaluated, and failing: both forms as written)
    assert "cum_sum" in tried and "cum_max" in tried
    e = ops.choice(pl.col("k").min() >= 0, pl.col("k").cum_sum(), pl.col("k").cum_max(),
                   large=True)
    assert "cum_sum" in chosen(big, e) and "cum_max" not in chosen(big, e)
    assert "cum_max" in chosen(big.with_columns(k=pl.col("k") - 1), e)


@pytest.mark.parametrize("shared", [None, 0])
def test_float_literals_beside_a_window_are_duckdbs_to_the_bit(db, duck, ext, monkeypatch,
                                                              shared):
    """A statement whose windows hold choices is rebuilt from polars' JSON trees, whose
    reader took 123456789.12345679 back as 123456789.1234568: such expressions keep their
    choices as written (the comparison of answers allows an ulp: this one allows none)."""
    if shared is not None:
        monkeypatch.setattr(ops, "SHARED_ROWS", shared)
    sql = (f"SELECT time AS t{shared}, 1.2345678912345679e8 AS a, bid * 1.2345678901234567e3 "
           "AS b, lag(bid, 1, 1.2345678912345679e8) OVER (PARTITION BY symbol ORDER BY time) "
           "AS c, row_number() OVER (ORDER BY time) AS n FROM ext ORDER BY time")
    got, want = db.sql(sql).collect(), duck.sql(sql).pl()
    for name in "abc":
        assert [repr(v) for v in got[name]] == [repr(v) for v in want[name]], name


# NULL keys (k1, k2, k3), a partition whose keys are all NULL (symbol G's k2, F and G's k3)
_SUB = ("(SELECT *, CASE WHEN bid > 110 THEN NULL ELSE tod END AS k1, "
        "CASE WHEN symbol = 'G' OR bid > 110 THEN NULL ELSE small END AS k2, "
        "CASE WHEN symbol IN ('G', 'F') THEN NULL ELSE date END AS k3, "
        "CASE WHEN bid < 90 THEN NULL ELSE bidsiz END AS v FROM w) s")
_RUNNING = [(f, v, k, part)
            for f in ("sum", "count", "avg")
            for v in ("bidsiz", "big", "v")
            for k in ("small", "tod", "k1", "k2", "k3")
            for part in ("", "PARTITION BY symbol, date ")]


@pytest.mark.parametrize("case", _RUNNING, ids=lambda c: "-".join(x.strip() for x in c if x))
def test_running_range_frames_over_short_keys_are_duckdbs(db, duck, case):
    f, v, k, part = case
    sql = f"SELECT ts, {f}({v}) OVER ({part}ORDER BY {k}) AS x FROM {_SUB} ORDER BY ts"
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what=sql)


@pytest.mark.parametrize("table", ["m", "m1"])
def test_running_range_frames_over_null_keys_of_extremes(db, duck, table):
    sql = (f"SELECT ts, sum(bidsiz) OVER (ORDER BY small) AS a, count(big) OVER (ORDER BY "
           f"small) AS b, avg(big) OVER (ORDER BY small) AS c, sum(big) OVER (PARTITION BY "
           f"symbol ORDER BY date) AS d, count(*) OVER (ORDER BY tod) AS e, sum(bidsiz) OVER "
           f"(PARTITION BY symbol ORDER BY small) AS f FROM {table} "
           "ORDER BY ts")
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what=sql)


def test_grouped_variance_of_integers_and_floats_is_duckdbs(db, duck):
    sql = ("SELECT symbol, var_pop(bidsiz) AS a, stddev_samp(small) AS b, var_samp(big) AS c, "
           "stddev_pop(CAST(bidsiz AS DECIMAL(10, 2))) AS d, var_samp(f) AS e, "
           "stddev_samp(bid) AS g, var_pop(bidsiz * 1.0) AS h, avg(bidsiz) AS i, avg(small) AS j, "
           "avg(big) AS k, avg(bidsiz + 0) AS l, sum(bidsiz + small) AS m, sum(-bidsiz - 7) AS n, "
           "avg(bidsiz - small + 3) AS o, sum((small) + 1000000) AS p, "
           "sum(big - bidsiz) AS q FROM w GROUP BY symbol")
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)
    for t in ("m", "m1"):
        q = sql.replace("FROM w", f"FROM {t}")
        assert_same(db.sql(q).collect(), duck.sql(q).pl(), what=q)


# huge values on one day only: the batch of partitions holding it computes the variance of the
# scaled-down values, the others derive it from their unscaled states (AggPlan.light); 1e153
# makes values past LIGHT (2^480) whose squares overflow, 1e140 values below it whose squares
# do not, 1e300 values whose squares overflow, 1e306 values whose sums (so their means)
# overflow: there the unscaled states merge to NaN and the scaled ones answer (inf, as DuckDB;
# NaN if that day's batch took the light form), and -1e306 values (the light form's test
# must read the min as well as the max)
_HUGE = ("SELECT {by}var_pop(CASE WHEN date = DATE '2016-11-15' THEN bid * 1e300 ELSE bid END)"
         " AS a, stddev_samp(CASE WHEN date = DATE '2016-11-15' THEN bid * 1e153 ELSE bid END) "
         "AS b, var_samp(CASE WHEN date = DATE '2016-11-13' THEN bid * -1e153 ELSE bid * 1e140 "
         "END) AS c, var_pop(bid) AS d, stddev_pop(CASE WHEN symbol = 'A' THEN bid * 1e200 ELSE"
         " bid END) AS e, var_pop(CASE WHEN date = DATE '2016-11-15' THEN bid * 1e306 ELSE bid "
         "END) AS g, var_pop(CASE WHEN date = DATE '2016-11-14' THEN bid * -1e306 ELSE bid END) "
         "AS h FROM w WHERE bid < 1000{group}")


@pytest.mark.parametrize("by", ["symbol", "date", ""])
def test_grouped_variance_of_huge_doubles_in_some_partitions_is_duckdbs(db, duck, by):
    sql = _HUGE.format(by=f"{by}, " if by else "", group=f" GROUP BY {by}" if by else "")
    assert "partial aggregate" in db.sql(sql).explain()
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)


# sums of narrow integers: a frame of fewer than SPAN // B rows sums its values of magnitude
# at most B in BIGINT (wrapping modulo 2^64: exact where the total fits, as it must there),
# longer frames in 128 bits; the merge adds the partial sums in 128 bits and fails only where
# the true total leaves BIGINT (no row count fails: a TAQ day holds 2.9 billion quotes)
_NARROW = ("SELECT {by}sum(bidsiz) AS a, avg(bidsiz) AS b, sum(CAST(bidsiz AS BIGINT) + small)"
           " AS c, sum(CAST(bidsiz AS BIGINT) - small + 7) AS d, avg(0 - CAST(bidsiz AS BIGINT))"
           " AS e, sum(small) AS f, sum(CAST(bidsiz AS BIGINT) - 2000000000) AS g, "
           "avg(CAST(bidsiz AS BIGINT) + bidsiz) AS h, count(*) AS n FROM ext{group}")
_EXTREMES = [2**31 - 1, -(2**31) + 1, 2**31 - 2, 2**31 - 1, None, -(2**31) + 5, 2**31 - 1]


@pytest.fixture(scope="module")
def ext(db, duck):
    """Table ``ext``: 32-bit extremes over three days (partitions), two symbols, and BIGINT
    values whose partial sums leave BIGINT on a day though the total fits."""
    rows = []
    for i in range(60):
        day = dt.date(2016, 11, 13 + i % 3)
        rows.append({"symbol": "AB"[i % 2], "date": day,
                     "time": dt.datetime.combine(day, dt.time(), dt.timezone.utc)
                     + dt.timedelta(seconds=i),
                     "bidsiz": _EXTREMES[i % len(_EXTREMES)] if i != 59 else -(2**31),
                     "small": [32767, -32768, 5][i % 3],
                     "big": [2**62, -(2**62), 1][i % 3] if i < 12 or i % 3 == 2 else 0,
                     "ts": dt.datetime(2016, 11, 13), "tod": dt.time(9), "bid": 1.0,
                     "name": "x", "flag": True})
    table = pa.Table.from_pylist(rows)
    frame = SCHEMA.conform(table.append_column("f", pa.array([0.0] * 60, pa.float32())))
    db.create_table("ext", SCHEMA, partition_by=hfq.Value("date"),
                    sort_by=("symbol", "time")).append(frame)
    duck.register("ext", db["ext"].to_arrow())
    return "ext"


@pytest.mark.parametrize("span", [2**63, 2**34])   # 2^34: frames of 8 rows or more are long
@pytest.mark.parametrize("by", ["symbol", "date", ""])
def test_sums_of_32_bit_extremes_are_duckdbs(db, duck, ext, monkeypatch, span, by):
    monkeypatch.setattr(aggs, "SPAN", span)
    sql = _NARROW.format(by=f"{by}, " if by else "", group=f" GROUP BY {by}" if by else "")
    if by != "date":   # (by the partition column: aggregates finish on the nodes)
        assert "partial aggregate" in db.sql(sql).explain()
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)


def test_a_bigint_sum_that_leaves_bigint_only_on_one_day_is_duckdbs(db, duck, ext):
    # a symbol's day 13 sums to 2^63, its day 14 to -2^63, its day 15 to 10: were a BIGINT
    # column summed as a narrow one, day 13's 2^63 would wrap to -2^63 and the total fail
    for sql in ("SELECT symbol, sum(big) AS s, avg(big) AS a FROM ext GROUP BY symbol",
                "SELECT sum(big) AS s FROM ext"):
        assert "partial aggregate" in db.sql(sql).explain()
        assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)
    # without day 14: DuckDB's HUGEINT sum is 2^63 + 10, past BIGINT (hfq's sum type): it fails
    sql = "SELECT symbol, sum(big) AS s FROM ext WHERE big > 0 GROUP BY symbol ORDER BY symbol"
    assert "partial aggregate" in db.sql(sql).explain()
    assert duck.sql(sql).fetchall() == [("A", 2**63 + 10), ("B", 2**63 + 10)]
    with pytest.raises(hfq.errors.QueryError, match="the sum leaves BIGINT"):
        db.sql(sql).collect()


def test_a_narrow_sum_is_wrapped_in_bigint_only_on_frames_too_short_to_leave_it(monkeypatch):
    schema = pl.Schema({"k": pl.Int64, "a": pl.Int32, "s": pl.Int16, "b": pl.Int64})
    wide = pl.col("a").cast(pl.Int64)
    cases = [(wide, 2**31), (wide + pl.col("s").cast(pl.Int64) - 7, 2**31 + 2**15 + 7),
             (pl.lit(0) - wide * 3, 3 * 2**31), (pl.col("s").cast(pl.Int64) * 2, 2**16)]
    for x, bound in cases:
        plan = aggs.decompose([x.cast(pl.Decimal(38, 0)).sum().alias("t")], ["k"], schema)
        assert plan is not None and len(plan.light) == 1, x
        rows = aggs.SPAN // bound
        assert plan.heavy[0].meta.eq(pl.len() >= rows)
    for x in (pl.col("b"), wide * wide, pl.col("a").cast(pl.Float64).cast(pl.Int64),
              wide.filter(pl.col("k") > 0)):
        plan = aggs.decompose([x.cast(pl.Decimal(38, 0)).sum().alias("t")], ["k"], schema)
        assert plan is None or not plan.light, x
    # SPAN made small: a group of 4 rows or more of a 32-bit column sums in 128 bits (the
    # light states of a frame where one group is that long are computed again in full)
    monkeypatch.setattr(aggs, "SPAN", 2**33)
    plan = aggs.decompose([wide.cast(pl.Decimal(38, 0)).sum().alias("t")], ["k"], schema)
    assert plan is not None
    frame = pl.DataFrame({"k": [1, 1, 1, 1, 2], "a": [2**31 - 1, 2**31 - 1, 1, 1, -(2**31)],
                          "s": [0] * 5, "b": [0] * 5}, schema=schema)
    name = plan.partial[-1].meta.output_name()
    for n, light, sums in ((3, True, [2**32 - 1]), (4, False, [2**32])):
        chosen = plan.light_partial()
        assert not chosen[-2].meta.eq(plan.partial[-1])
        states = frame.head(n).group_by("k", maintain_order=True).agg(chosen)
        assert plan.needs_full(states) == (not light)
        if not light:
            states = frame.head(n).group_by("k", maintain_order=True).agg(plan.partial)
        assert states.schema[name] == pl.Decimal(38, 0)
        assert [int(v) for v in states[name]] == sums
    # a frame of 5 rows whose groups hold 4 and 1: the short group alone would be light
    states = frame.group_by("k", maintain_order=True).agg(plan.light_partial())
    assert states[aggs.HEAVY].to_list() == [True, False] and plan.needs_full(states)


def test_a_scaled_variance_takes_its_light_form_only_on_frames_of_small_magnitudes():
    # the light form (the unscaled states scaled) only where no value passes LIGHT either
    # way: a frame of -1e200 and 1 computes the scaled states themselves
    schema = pl.Schema({"k": pl.Int64, "x": pl.Float64})
    x = pl.col("x")
    plan = aggs.decompose([(x * aggs.SCALED).var(ddof=0).alias("v")], ["k"], schema)
    assert plan is not None and plan.light
    for values, light in (([1.0, -3.5, None], True), ([-1e200, 1.0], False),
                          ([1e200, 1.0], False), ([-math.inf, 1.0], False),
                          ([math.inf, 1.0], False), ([math.nan, 2.0 ** 480], True),
                          ([-(2.0 ** 481), 0.0], False)):
        frame = pl.DataFrame({"k": [1] * len(values), "x": values}, schema=schema)
        states = frame.group_by("k").agg(plan.light_partial())
        assert plan.needs_full(states) == (not light), values


# a RANGE frame with an offset: a frame (a node's batch of partitions) without NULL keys runs
# one rolling window (ops.choice), one with some the NULL-key handling -- exact either way
_KEYS = {"time": "time",
         "nulls_one_day": "CASE WHEN date = DATE '2016-11-14' AND bidsiz < 100 THEN NULL "
                          "ELSE time END",
         "nulls": "CASE WHEN bidsiz < 0 OR bidsiz IS NULL THEN NULL ELSE time END"}


@pytest.mark.parametrize("fn", ["avg(bid)", "sum(bid)", "count(bid)", "max(bid)",
                                "avg(bidsiz)"])
@pytest.mark.parametrize("key", sorted(_KEYS))
@pytest.mark.parametrize("table", ["w", "m", "m1"])
def test_range_offset_frames_with_and_without_null_keys_are_duckdbs(db, duck, fn, key, table):
    sql = (f"SELECT symbol, date, time, bidsiz, {fn} OVER (PARTITION BY symbol, date ORDER BY "
           f"{_KEYS[key]} RANGE BETWEEN INTERVAL 5 MINUTE PRECEDING AND CURRENT ROW) AS x "
           f"FROM {table} ORDER BY symbol, date, time, bidsiz, x")
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what=sql)


# F102's tie check (a RANGE-offset sum/avg of doubles over tied keys whose order moves it)
# is skipped on a frame without NULL keys whose values hold one sign (ops.choice): it can
# fail no partition there.  A frame holding one mixed-sign partition with ties among all
# positive ones (its first value, mean and most partitions positive) is still checked.
_TIED = [("B", 0, 1.5), ("A", 60, -9.223372036854776e18), ("A", 60, 9.223372036854776e18),
         ("A", 60, 3.0), ("B", 60, 2.5), ("B", 60, 4.0), ("C", 30, 7.25), ("C", 30, 1.0),
         ("C", 90, 2.0)]


@pytest.fixture(scope="module")
def tied(db, duck):
    """Table ``tied``: one day (one partition); symbol A mixes signs over three tied keys,
    B and C hold positive values (some tied)."""
    day = dt.date(2016, 11, 14)
    rows = [{"symbol": s, "date": day, "bid": v, "bidsiz": i, "small": 0, "big": 0,
             "time": dt.datetime.combine(day, dt.time(10), dt.timezone.utc)
             + dt.timedelta(seconds=sec), "ts": dt.datetime(2016, 11, 14),
             "tod": dt.time(9), "name": "x", "flag": True} for i, (s, sec, v) in enumerate(_TIED)]
    table = pa.Table.from_pylist(rows)
    frame = SCHEMA.conform(table.append_column("f", pa.array([0.0] * len(rows), pa.float32())))
    db.create_table("tied", SCHEMA, partition_by=hfq.Value("date"),
                    sort_by=("symbol", "time")).append(frame)
    duck.register("tied", db["tied"].to_arrow())
    return "tied"


@pytest.mark.parametrize("fn", ["sum", "avg"])
@pytest.mark.parametrize("by", ["symbol, date", "symbol"])
def test_the_tie_check_runs_on_a_frame_with_mixed_signs_and_only_there(db, duck, tied, fn, by):
    window = (f"{fn}(bid) OVER (PARTITION BY {by} ORDER BY time RANGE BETWEEN INTERVAL 5 MINUTE "
              "PRECEDING AND CURRENT ROW)")
    sql = f"SELECT symbol, bidsiz, {window} AS x FROM tied"
    with pytest.raises(hfq.errors.QueryError, match="DOUBLEs over tied ORDER BY keys"):
        db.sql(sql).collect()
    # without A: positive values only -- answered (DuckDB's), the check not computed
    sql = f"SELECT symbol, bidsiz, {window} AS x FROM tied WHERE symbol <> 'A' ORDER BY bidsiz"
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what=sql)
    rows = db["tied"].scan().filter(pl.col("symbol") != "A").collect().lazy()
    forms = _chosen_forms(db, sql, rows)
    # (the check chosen away leaves nothing: neither its message under a condition chosen
    # false, nor its rolling sums, which count peers from 2^32 up)
    assert forms and any("rolling" in f for f in forms), forms
    assert not any("tied ORDER BY" in f or str(2**32) in f for f in forms), forms


# an aggregate run whole on a frame (a node's partitions, or the driver's rows) drops a row-wise
# filter that keeps every row of the frame (arg_min's "value and key not NULL") and sums narrow
# integers in BIGINT on a frame too short to leave it (aggs.lighten) -- exact either way
_ARGS = ("SELECT symbol, date, arg_min(bid, time) AS a, arg_max(bid, tod) AS b, "
         "arg_min(bidsiz, tod) AS c, max_by(small, bidsiz) AS d, "
         "sum(bidsiz) FILTER (WHERE bidsiz IS NOT NULL) AS e, count(*) AS n "
         "FROM {t} GROUP BY 1, 2")


@pytest.mark.parametrize("table", ["w", "m", "m1", "ext"])
def test_an_aggregate_drops_the_filters_that_keep_every_row_of_its_frame(db, duck, ext, table):
    sql = _ARGS.format(t=table)
    assert "rows go to the driver" not in db.sql(sql).explain()
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)


def test_lighten_drops_only_filters_true_on_every_row_and_wraps_only_short_sums(monkeypatch):
    x, k = pl.col("x"), pl.col("k")
    both = x.is_not_null() & k.is_not_null()
    arg = x.filter(both).min_by(k.filter(both))
    frame = pl.DataFrame({"g": [1, 1, 2, 2], "x": [5, 3, 4, 2], "k": [2, 1, 4, 3]},
                         schema={"g": pl.Int64, "x": pl.Int32, "k": pl.Int64})
    light = aggs.lighten([arg, x.filter(x.count() > 3).sum()], frame)
    assert ".filter(" not in str(light[0]) and ".filter(" in str(light[1]), light
    nulls = frame.with_columns(x=pl.Series([5, None, 4, 2], dtype=pl.Int32))
    kept = aggs.lighten([arg], nulls)[0]
    assert ".filter(" in str(kept)
    for f, e in ((frame, light[0]), (nulls, kept)):   # same answer as the full form
        assert_same(f.group_by("g").agg(e.alias("a")), f.group_by("g").agg(arg.alias("a")))
    monkeypatch.setattr(aggs, "SPAN", 2**33)
    wide = pl.col("a").cast(pl.Int64)
    total = wide.cast(pl.Decimal(38, 0)).sum().alias("t")
    big = pl.DataFrame({"a": [2**31 - 1, 2**31 - 1, -(2**31), -1]}, schema={"a": pl.Int32})
    for n, wrapped, sum_ in ((3, True, 2**32 - 2 - 2**31), (4, False, 2**32 - 2 - 2**31 - 1)):
        e = aggs.lighten([total], big.head(n))[0]
        assert ("Int64).sum().strict_cast(Decimal" in str(e)) == wrapped, e
        assert big.head(n).select(e).item() == sum_


def test_an_aggregates_forms_are_kept_only_where_the_schema_alone_decides_them(monkeypatch):
    # Aggregate._prepared keeps its lightened, widened forms per op and input schema; they
    # must not be served to a frame whose rows decide otherwise
    monkeypatch.setattr(aggs, "SPAN", 2**44)   # kept under 16 rows; an INT sum light < 8192
    total = pl.col("a").cast(pl.Int64).cast(pl.Decimal(38, 0)).sum().alias("t")
    op = ops.Aggregate((pl.col("g"),), (total,))
    light, full = "Int64).sum().strict_cast(Decimal", "Decimal(38, 0)).sum()"

    def run(frame: pl.DataFrame) -> tuple[str, pl.DataFrame]:
        out = op.apply(frame.lazy())
        return out.explain(optimized=False), out.collect()

    short = pl.DataFrame({"g": [1, 1, 2], "a": [2**31 - 1, 2**31 - 1, -(2**31)]},
                         schema={"g": pl.Int64, "a": pl.Int32})
    long = pl.concat([short] * 3000)   # 9,000 rows: past 8192, an INT sum in 128 bits
    for frame, form in ((short, light), (long, full), (short, light), (long, full)):
        plan, got = run(frame)
        assert form in plan, (frame.height, plan)
        assert_same(got, frame.group_by("g").agg(pl.col("a").cast(pl.Int64).sum()
                                                 .cast(pl.Decimal(38, 0)).alias("t")))
    # another schema: its own forms (a BIGINT column is never light)
    plan, _ = run(short.with_columns(pl.col("a").cast(pl.Int64)))
    assert light not in plan and full in plan, plan
    # a filter lighten drops where it keeps every row is looked at on every frame
    flagged = ops.Aggregate((pl.col("g"),), (pl.col("a").cast(pl.Int64).filter(pl.col("f"))
                                             .sum().alias("t"),))
    for flags, want in (([True, True, True], [2**32 - 2, -(2**31)]),
                        ([True, False, True], [2**31 - 1, -(2**31)])):
        frame = short.with_columns(f=pl.Series(flags))
        got = flagged.apply(frame.lazy()).collect().sort("g")
        assert got["t"].to_list() == want, (flags, got)


@pytest.mark.parametrize("fn", ["sum", "avg", "count"])
def test_a_running_range_frame_without_nulls_rolls_over_the_key_itself(db, duck, tied, fn):
    # tied: no NULL key or value -- b's chosen form (a TIME key) neither fills NULL keys nor
    # looks for the first value's key; its rows are all peers (one frame)
    sql = (f"SELECT symbol, bidsiz, {fn}(bidsiz) OVER (PARTITION BY symbol, date ORDER BY bidsiz) "
           f"AS a, {fn}(bidsiz) OVER (ORDER BY tod) AS b FROM tied ORDER BY bidsiz")
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what=sql)
    forms = _chosen_forms(db, sql, db["tied"].scan().collect().lazy())
    b = [f for f in forms if f.endswith('alias("b")')]
    assert len(b) == 1 and "rolling" in b[0] and "fill_null" not in b[0], forms
