"""Aggregates over runs of keys (:mod:`hfq.engine.runagg`): exact against DuckDB on the nasty
table ``w`` (NULL, NaN, -0.0, one-row partitions; sorted by symbol and time, so a GROUP BY of
the symbol finds each group as one run per partition), and refused -- polars' plan runs --
wherever a state would not be polars' own: keys in two runs, an integer sum past BIGINT on the
way, a zero sum of doubles, a min among both zeros, runs too short."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from nasty import load, oracle
from oracle import assert_same
from polars.testing import assert_frame_equal

import hfq
from hfq.engine import ops, runagg


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = hfq.connect(str(tmp_path_factory.mktemp("runaggs")))
    load(d)
    return d


@pytest.fixture(scope="module")
def duck(db):
    return oracle(db)


@pytest.fixture
def answered(monkeypatch):
    """Every grouping of any size over runs of any length, counting those answered so."""
    monkeypatch.setattr(ops, "RUN_ROWS", 0)
    monkeypatch.setattr(runagg, "RUN_SHARE", 1)
    monkeypatch.setattr(runagg, "MAX_INPUTS", 100)
    seen = []

    def counted(plan, frame, ordered):
        got = runagg.by_runs(plan, frame, ordered)
        seen.append(got is not None)
        return got
    monkeypatch.setattr(ops, "by_runs", counted)
    return seen


QUERIES = [
    "SELECT symbol, date, count(*) AS n, count(bid) AS nb, sum(bidsiz) AS s, avg(bid) AS a, "
    "min(bid) AS lo, max(bid) AS hi, sum(big) AS b, min(tod) AS t0, max(ts) AS t1 "
    "FROM w GROUP BY symbol, date",
    "SELECT symbol, date, avg(bidsiz) AS a, min(small) AS lo, max(small) AS hi, "
    "count(name) AS nn, count(flag) AS nf, max(time) AS last FROM w GROUP BY symbol, date",
    "SELECT symbol, date, count(*) FILTER (WHERE bid > 100) AS up, count(bid) FILTER "
    "(WHERE flag) AS cf, min(bid) FILTER (WHERE bidsiz > 500) AS lo, max(bidsiz) FILTER "
    "(WHERE flag) AS hf FROM w GROUP BY symbol, date",
    "SELECT symbol, date, sum(bid * bidsiz) / sum(bidsiz) AS vwap, max(bid) - min(bid) AS "
    "span FROM w WHERE bidsiz > 0 GROUP BY symbol, date HAVING count(*) > 1 ORDER BY vwap DESC",
    "SELECT symbol, date, sum(small) AS s, min(big) AS lo, max(big) AS hi FROM w "
    "WHERE date = DATE '2016-11-14' GROUP BY symbol, date ORDER BY symbol",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_a_grouping_over_runs_is_duckdbs(db, duck, answered, sql):
    got = db.sql(sql).collect()
    assert_same(got, duck.sql(sql).pl(), ordered="ORDER BY" in sql, what=sql)
    assert any(answered), f"no grouping was answered over its runs: {answered}\n{sql}"


@pytest.mark.parametrize("sql", [
    # an average of doubles with FILTER: its sum's input a filter inside a cast
    "SELECT symbol, date, avg(bid) FILTER (WHERE flag) AS a, count(*) AS n FROM w "
    "GROUP BY symbol, date",
    # a column the grouping does not read, whose every value fails: never computed
    "SELECT symbol, date, count(*) AS n FROM (SELECT symbol, date, CAST(name AS INTEGER) AS "
    "bad FROM w) t GROUP BY symbol, date",
    "WITH t AS (SELECT symbol, date, bidsiz, 1 // (bidsiz - bidsiz) AS bad FROM w) "
    "SELECT symbol, date, sum(bidsiz) AS s FROM t GROUP BY symbol, date",
])
def test_what_polars_answers_is_answered(db, duck, answered, sql):
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)


def test_an_input_dropping_rows_is_not_read_by_runs(db, answered):
    """``drop_nulls`` inside an aggregate (the lazy API): its values are fewer than the rows,
    so they cannot be laid over the runs."""
    q = db["w"].query().group_by("symbol", "date").agg(
        pl.col("bidsiz").drop_nulls().sum().alias("s"), pl.col("bid").drop_nulls().max()
        .alias("hi"))
    want = db["w"].to_arrow()
    own = pl.from_arrow(want).group_by("symbol", "date").agg(
        pl.col("bidsiz").drop_nulls().sum().alias("s"), pl.col("bid").drop_nulls().max()
        .alias("hi"))
    assert_same(q.collect(), own, what="drop_nulls")


# -- the kernels against polars' own grouping, frame by frame -------------------------------------
def _both(frame: pl.DataFrame, keys, aggs, monkeypatch) -> tuple[pl.DataFrame | None, pl.DataFrame]:
    """(the answer over runs, or None when refused; polars' own)."""
    op = ops.Aggregate(tuple(keys), tuple(aggs))
    monkeypatch.setattr(runagg, "MAX_INPUTS", 100)
    plan = runagg.run_plan(op, op.aggs, frame.schema)
    assert plan is not None, "no plan over runs"
    monkeypatch.setattr(runagg, "RUN_SHARE", 1)
    runs = runagg.by_runs(plan, frame, True)
    with ops.input_rows(0):   # (under RUN_ROWS: polars' plan)
        own = op.apply(frame.lazy()).collect()
    return runs, own


def _chunked(*parts: dict) -> pl.DataFrame:
    """A frame of several chunks (as the node stage concatenates partitions)."""
    frame = pl.concat([pl.DataFrame(p) for p in parts], how="vertical", rechunk=False)
    assert frame.n_chunks() == len(parts)
    return frame


SUMS = [pl.col("x").cast(pl.Decimal(38, 0)).sum().alias("s"), pl.col("x").count()
        .cast(pl.Int64).alias("n"), pl.col("x").min().alias("lo"), pl.col("x").max()
        .alias("hi"), pl.len().cast(pl.Int64).alias("rows")]


def test_runs_across_chunks_with_nulls_are_polars(monkeypatch):
    frame = _chunked({"g": ["a", "a", "b"], "x": [1, None, 3], "y": [1.5, float("nan"), None]},
                     {"g": ["b", "b", "c"], "x": [None, -7, 2**40], "y": [2.0, -1.0, 3.0]},
                     {"g": ["c", None, None], "x": [5, 6, None], "y": [None, 4.0, float("inf")]})
    aggs = [*SUMS, pl.col("y").sum().alias("ys"), pl.col("y").nan_max().alias("ymax"),
            pl.col("y").min().alias("ymin"), pl.col("y").count().cast(pl.Int64).alias("yn")]
    runs, own = _both(frame, [pl.col("g")], aggs, monkeypatch)
    assert runs is not None
    _exactly(runs, own)


def _exactly(runs: pl.DataFrame, own: pl.DataFrame) -> None:
    """The same columns, types, NULLs and values, floats to the bit (-0.0 is not 0.0)."""
    assert_frame_equal(runs, own, check_exact=True)
    for c, t in own.schema.items():
        if t.is_float():
            bits = [f[c].fill_null(0.0).to_numpy().view("u8").tolist() for f in (runs, own)]
            assert bits[0] == bits[1], f"{c}: {runs[c].to_list()} != {own[c].to_list()}"


@pytest.mark.parametrize("dtype", [pl.Int64, pl.Categorical, pl.Time])
def test_runs_starting_at_a_chunks_first_row_are_polars(monkeypatch, dtype):
    """Keys read as integers (a symbol's codes, a time bucket): a run begins at a chunk's
    first row (a partition's first symbol) or goes on from the chunk before."""
    g = [[1, 1, 2], [3, 3, 3], [3, 4, 4], [5]]
    frame = _chunked(*({"g": pl.Series(k).cast(pl.String if dtype == pl.Categorical else
                                                pl.Int64), "x": list(range(len(k)))}
                       for k in g))
    frame = frame.with_columns(pl.col("g").cast(dtype))
    runs, own = _both(frame, [pl.col("g")], SUMS, monkeypatch)
    assert runs is not None and runs.height == 5
    _exactly(runs, own)


def test_runs_end_where_any_key_changes(monkeypatch):
    frame = _chunked({"g": [1, 1, 1, 2], "h": [5, 5, 6, 6], "x": [1, 2, 3, 4]},
                     {"g": [2, 2, 3, 3], "h": [6, 7, 7, 7], "x": [5, 6, 7, 8]})
    runs, own = _both(frame, [pl.col("g"), pl.col("h")], SUMS, monkeypatch)
    assert runs is not None and runs.height == 5
    _exactly(runs, own)


def test_keys_in_two_runs_are_refused(monkeypatch):
    frame = pl.DataFrame({"g": [1, 1, 2, 1], "x": [1, 2, 3, 4]})
    runs, own = _both(frame, [pl.col("g")], SUMS, monkeypatch)
    assert runs is None and own.height == 2


def test_runs_too_short_are_refused():
    frame = pl.DataFrame({"g": [1, 2, 3, 4, 5, 5, 5, 5], "x": list(range(8))})
    op = ops.Aggregate((pl.col("g"),), tuple(SUMS))
    plan = runagg.run_plan(op, op.aggs, frame.schema)
    assert plan is not None
    assert runagg.by_runs(plan, frame, True) is None   # 5 runs of 8 rows: one per 1.6
    assert runagg.by_runs(plan, frame.filter(pl.col("g") == 5), True) is not None


@pytest.mark.parametrize("xs", [
    [2**62, 2**62, -(2**62)],            # past BIGINT on the way, back in at the end
    [2**63 - 1, 1],
    [-(2**63), -1],
])
def test_an_integer_sum_past_bigint_is_refused(monkeypatch, xs):
    frame = pl.DataFrame({"g": [1] * len(xs), "x": xs}, schema={"g": pl.Int64, "x": pl.Int64})
    runs, _ = _both(frame, [pl.col("g")], SUMS[:1], monkeypatch)
    assert runs is None


@pytest.mark.parametrize("ys,agg", [
    ([1.5, -1.5], pl.col("y").sum()),                  # a zero sum: its sign is polars'
    ([-0.0, 0.0, 2.0], pl.col("y").min()),             # both zeros: which one is polars'
    ([0.0, -0.0, -2.0], pl.col("y").max()),
])
def test_zeros_polars_decides_are_refused(monkeypatch, ys, agg):
    frame = pl.DataFrame({"g": [1] * len(ys), "y": ys})
    runs, _ = _both(frame, [pl.col("g")], [agg.alias("v")], monkeypatch)
    assert runs is None


def test_nan_is_polars(monkeypatch):
    nan = float("nan")
    frame = pl.DataFrame({"g": [1, 1, 2, 2, 3, 3], "y": [1.0, nan, nan, nan, -0.0, -0.0]})
    aggs = [pl.col("y").min().alias("lo"), pl.col("y").max().alias("hi"),
            pl.col("y").nan_min().alias("nlo"), pl.col("y").nan_max().alias("nhi")]
    runs, own = _both(frame, [pl.col("g")], aggs, monkeypatch)
    assert runs is not None
    _exactly(runs, own)


@pytest.mark.parametrize("agg", [
    pl.col("y").cast(pl.Decimal(38, 0)).sum(),     # a DECIMAL sum of doubles: not integers
    pl.col("d").sum(),                             # polars has no sum of dates
    pl.col("y").drop_nulls().sum(),                # fewer values than rows
])
def test_inputs_the_kernels_do_not_read_exactly_have_no_plan(agg):
    frame = pl.DataFrame({"g": [1, 1, 2], "y": [0.6, 0.6, None],
                          "d": [dt.date(2020, 1, 1)] * 3})
    op = ops.Aggregate((pl.col("g"),), (agg.alias("v"),))
    assert runagg.run_plan(op, op.aggs, frame.schema) is None


def test_a_128_bit_key_is_polars(monkeypatch):
    frame = pl.DataFrame({"g": pl.Series([1, 1, 2], dtype=pl.Int128), "x": [1, 2, 3]})
    op = ops.Aggregate((pl.col("g"),), tuple(SUMS))
    assert runagg.run_plan(op, op.aggs, frame.schema) is None
