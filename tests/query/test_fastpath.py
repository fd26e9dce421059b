"""The symbol-selective fast path (:mod:`hfq.engine.fastpath`) gives the general engine's
answer, and DuckDB's, on nasty rows: NULL, NaN, +-inf, -0.0, int extremes and an integer sum
that overflows, duplicate timestamps at the bounds of a time range, a one-row run, a symbol
absent from its partition, a symbol whose run spans two record batches, a symbol in two
partitions (two days) and a partition of two files (two appends) -- the last two run by the
general engine, which the tests check too."""

from __future__ import annotations

import datetime as dt
import gc
import json
import weakref

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hfq
import hfq.engine.execute as execute
from hfq.engine import aggs, fastagg, fastpath
from hfq.engine.exprs import empty_lazy
from hfq.engine.ops import Aggregate, Filter, Select
from hfq.errors import CorruptPartitionError, QueryError, SchemaMismatchError
from hfq.schema import DOUBLE, INT, LONG, SYMBOL, TIME_NS, Schema
from tests.query.oracle import assert_same

SCHEMA = Schema([("symbol", SYMBOL), ("time", TIME_NS), ("px", DOUBLE), ("sz", INT),
                 ("big", LONG)])
I64, I32 = 2**63, 2**31
NAN, INF = float("nan"), float("inf")
NS = 10**9


def ns(h: int, m: int = 0, s: int = 0) -> int:
    return (h * 3600 + m * 60 + s) * NS


def _rows() -> dict[str, list]:
    """Symbol A: the nasty values, duplicate times at 10:00 and 10:05; B: one row; C: 40
    rows (two record batches of 16 rows hold it), each time twice; N: prices all NULL;
    O: an int64 sum that overflows; Q: an ordinary symbol after the others."""
    rows: dict[str, list] = {"symbol": [], "time": [], "px": [], "sz": [], "big": []}

    def add(sym: str, time: int, px: float | None, sz: int | None, big: int | None) -> None:
        for k, v in zip(rows, (sym, time, px, sz, big)):
            rows[k].append(v)

    a = [(ns(10), 1.0, 5, 1), (ns(10), None, None, None), (ns(10), NAN, 7, -1),
         (ns(10, 5), INF, I32 - 1, I64 - 1), (ns(10, 5), -INF, -I32, -I64),
         (ns(12), -0.0, 0, 0), (ns(12), 0.0, 1, 2), (ns(15, 59, 59) + NS - 1, 2.5, 3, 3)]
    for t, px, sz, big in a:
        add("A", t, px, sz, big)
    add("B", ns(11), 4.0, 9, 9)
    for i in range(40):
        add("C", ns(9, 30) + (i // 2) * 60 * NS, 10.0 + i / 8, 100 + i, i)
    for i in range(3):
        add("N", ns(10, i), None, i, None)
    add("O", ns(10), 1.0, 1, I64 - 1)
    add("O", ns(10, 1), 1.0, 1, 1)
    for i in range(5):
        add("Q", ns(13, i), 50.0 - i, 10 * i, -i)
    return rows


def _table(rows: dict[str, list]) -> pa.Table:
    return SCHEMA.conform(pa.table({**rows, "time": pa.array(rows["time"], pa.int64())
                                    .cast(pa.time64("ns"))}))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> hfq.Database:
    d = hfq.connect(str(tmp_path_factory.mktemp("fastdb")), batch_rows=16)
    one = _table(_rows())
    d.create_table("q", SCHEMA, partition_by=hfq.Hash("symbol", 2),
                   sort_by=("symbol", "time")).append(one)
    # the same rows in two appends: partitions of two files (the general engine's)
    two = d.create_table("q2", SCHEMA, partition_by=hfq.Hash("symbol", 2),
                         sort_by=("symbol", "time"))
    two.append(one.slice(0, 30))
    two.append(one.slice(30))
    return d


@pytest.fixture(scope="module")
def duck(db: hfq.Database) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    for name in ("q", "q2"):
        t = db[name].to_arrow()
        i = t.schema.get_field_index("time")
        con.register(name, t.set_column(i, "time", t.column("time").cast(pa.int64())))
    return con


def _sql(text: str, engine: str) -> str:
    """``{t:H:M:S}`` as a TIME literal (hfq) or the nanoseconds of the day (DuckDB)."""
    out, rest = [], text
    while "{t:" in rest:
        head, _, tail = rest.partition("{t:")
        spec, _, rest = tail.partition("}")
        h, m, s = (int(x) for x in spec.split(":"))
        out += [head, f"TIME '{h:02}:{m:02}:{s:02}'" if engine == "hfq" else str(ns(h, m, s))]
    return "".join(out) + rest


@pytest.fixture()
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each run went through the fast path."""
    seen: list[bool] = []
    real = fastpath.run_one

    def spy(staged):   # noqa: ANN001, ANN202
        try:
            got = real(staged)
        except QueryError:   # the fast path's answer was an error
            seen.append(True)
            raise
        seen.append(got is not None)
        return got
    monkeypatch.setattr(execute, "run_one", spy)
    return seen


def _general(db: hfq.Database, text: str, monkeypatch: pytest.MonkeyPatch) -> pl.DataFrame:
    with monkeypatch.context() as m:
        m.setattr(execute, "run_one", lambda staged: None)
        return db.sql(text).collect()


AGGS = ("count(*) AS n, count(px) AS c, sum(px) AS s, min(px) AS lo, max(px) AS hi, "
        "avg(px) AS a, sum(sz) AS v, min(sz) AS zlo, max(sz) AS zhi, avg(sz) AS za, "
        "sum(px * sz) / sum(sz) AS vwap")
WHERES = [
    "symbol = '{s}'",
    "symbol = '{s}' AND time >= {t:10:0:0}",
    "symbol = '{s}' AND time > {t:10:0:0}",
    "symbol = '{s}' AND time < {t:10:5:0}",
    "symbol = '{s}' AND time <= {t:10:5:0}",
    "symbol = '{s}' AND time >= {t:10:0:0} AND time < {t:12:0:0}",
    "symbol = '{s}' AND time > {t:9:35:0} AND time <= {t:9:40:0}",
    "symbol = '{s}' AND time = {t:10:5:0}",
    "{t:10:0:0} <= time AND symbol = '{s}'",
    "symbol = '{s}' AND time BETWEEN {t:9:31:0} AND {t:9:33:0}",
    "symbol IN ('{s}', 'B') AND time >= {t:9:0:0}",
    "symbol = '{s}' AND time >= {t:16:0:0}",
]


@pytest.mark.parametrize("sym", ["A", "B", "C", "N", "Q", "Z"])
@pytest.mark.parametrize("where", WHERES)
def test_one_symbol_aggregates_are_duckdbs_and_the_general_engines(
        db: hfq.Database, duck: duckdb.DuckDBPyConnection, taken: list[bool],
        monkeypatch: pytest.MonkeyPatch, sym: str, where: str) -> None:
    text = f"SELECT {AGGS} FROM q WHERE {where.replace('{s}', sym)}"
    got = db.sql(_sql(text, "hfq")).collect()
    # Z is in no batch: nothing to read, the plan is empty (the general engine's)
    assert taken == [sym != "Z" or " IN " in where], "the fast path did not answer"
    want = duck.sql(_sql(text, "duck")).pl()
    assert_same(got, want, what=text)
    assert_same(got, _general(db, _sql(text, "hfq"), monkeypatch), what=text)


@pytest.mark.parametrize("text", [
    "SELECT time, px, sz FROM q WHERE symbol = 'C' AND time >= {t:9:31:0} ORDER BY time, sz",
    "SELECT symbol, count(*) AS n, max(px) AS hi FROM q WHERE symbol IN ('A', 'C', 'Q') "
    "GROUP BY symbol ORDER BY symbol",
    "SELECT px FROM q WHERE symbol = 'A' ORDER BY px DESC NULLS LAST, sz LIMIT 3",
    "SELECT sum(px) OVER (ORDER BY time, sz ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS m "
    "FROM q WHERE symbol = 'C' AND time < {t:9:40:0} ORDER BY time, sz",
    "SELECT count(*) AS n FROM q WHERE symbol = 'C' AND px > 12 AND time >= {t:9:35:0}",
])
def test_other_shapes_on_the_fast_path_are_duckdbs(
        db: hfq.Database, duck: duckdb.DuckDBPyConnection, taken: list[bool],
        text: str) -> None:
    got = db.sql(_sql(text, "hfq")).collect().with_columns(pl.col(pl.Time).to_physical())
    want = duck.sql(_sql(text, "duck")).pl()
    assert taken == [True]
    assert_same(got, want, ordered="ORDER BY" in text, what=text)


def _plain_read(db: hfq.Database, text: str, monkeypatch: pytest.MonkeyPatch) -> pl.DataFrame:
    """``text`` read by the plain read alone (every batch of the symbols' runs decoded and
    filtered), not the fast path."""
    with monkeypatch.context() as m:
        m.setattr(execute, "run_one", lambda staged: None)
        return db.sql(text).collect()


@pytest.mark.parametrize("sym", ["A", "C", "N", "Z"])
@pytest.mark.parametrize("where", WHERES)
def test_a_plain_read_of_a_few_symbols_takes_the_fast_path(
        db: hfq.Database, duck: duckdb.DuckDBPyConnection, taken: list[bool],
        monkeypatch: pytest.MonkeyPatch, sym: str, where: str) -> None:
    # no aggregate, no ORDER BY: a plain read, whose rows come in partition and stored order
    sql = f"SELECT time, symbol, px FROM q WHERE {where.replace('{s}', sym)}"
    text = _sql(sql, "hfq")
    q = db.sql(text)
    assert q._plain() is not None, "not a plain read"
    got = q.collect()
    # Z is in no batch: nothing to read, nothing to try
    assert taken == ([True] if sym != "Z" or " IN " in where else []), \
        "the fast path did not answer"
    assert q.last_run is not None and q.last_run.rows_to_driver == got.height
    plain = _plain_read(db, text, monkeypatch)
    assert got.schema == plain.schema
    assert_same(got, plain, ordered=True, what=text)
    want = duck.sql(_sql(sql, "duck")).pl()
    assert_same(got.with_columns(pl.col(pl.Time).to_physical()), want, what=text)


def test_a_filter_over_the_whole_input_is_not_run_on_a_symbols_slices(
        db: hfq.Database, taken: list[bool]) -> None:
    # review of stop 12: px.mean() is over every row the filter sees (the whole table), not
    # over the slices of C's run that the fast path would hold
    whole = pl.from_arrow(db["q"].to_arrow())
    above = (pl.col("symbol") == "C") & (pl.col("px") > pl.col("px").mean())
    got = db["q"].query().filter(above).select("time", "px").collect()
    assert_same(got, whole.filter(above).select("time", "px"), ordered=True)
    # the table's mean is NaN (A holds NaN and +-inf): no row passes, where over C's slices
    # alone the 20 prices above C's own mean would
    assert got.height == 0 and taken == [False]
    # a scan's where runs partition by partition: collect answers as the plain read does
    narrowed = (pl.col("time") >= dt.time(9, 35)) & (pl.col("px") > pl.col("px").mean())
    scan = db["q"].scan(symbols="C", columns=["time", "px"], where=narrowed)
    got = scan.collect()
    assert_same(got, pl.from_arrow(scan.to_arrow()), ordered=True)
    assert got.height == 20


def test_an_error_of_the_plain_read_stays_its_error(db: hfq.Database) -> None:
    with pytest.raises(SchemaMismatchError):   # a where that is not a boolean
        db["q"].scan(symbols="A", where=pl.col("px")).collect()


def test_an_overflowing_sum_is_refused_on_the_fast_path_too(
        db: hfq.Database, taken: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    text = "SELECT sum(big) AS s FROM q WHERE symbol = 'O'"
    with pytest.raises(QueryError, match="overflow"):
        db.sql(text).collect()
    assert taken == [True]
    with pytest.raises(QueryError, match="overflow"):
        _general(db, text, monkeypatch)
    # A's: I64 - 1 - I64 + 5, no overflow in the end
    assert db.sql("SELECT sum(big) AS s FROM q WHERE symbol = 'A'").collect()["s"][0] == 4


@pytest.mark.parametrize("text", [
    "SELECT time, sum(sz) AS v, sum(big) AS b, avg(sz) AS a, count(*) AS n FROM q "
    "WHERE symbol = 'A' GROUP BY time ORDER BY time",
    "SELECT sz > 0 AS up, sum(sz) AS v, sum(CAST(sz AS BIGINT) - 1) AS w, "
    "sum(px * sz) / sum(sz) AS vwap FROM q WHERE symbol IN ('A', 'C') GROUP BY up ORDER BY up",
])
def test_grouped_sums_on_the_fast_path_are_duckdbs(
        db: hfq.Database, duck: duckdb.DuckDBPyConnection, taken: list[bool],
        text: str) -> None:
    # INT extremes (2^31 - 1 and -2^31 in A's groups) summed in BIGINT (the form, where no
    # group can leave BIGINT, is the next tests'), BIGINT values (2^63 - 1 and -2^63 in A's)
    # in 128 bits
    got = db.sql(_sql(text, "hfq")).collect().with_columns(pl.col(pl.Time).to_physical())
    assert taken == [True]
    assert_same(got, duck.sql(_sql(text, "duck")).pl(), ordered=True, what=text)


def test_a_grouped_sum_that_leaves_bigint_is_an_error_on_the_fast_path(
        db: hfq.Database, taken: list[bool]) -> None:
    text = "SELECT symbol, sum(big) AS s FROM q WHERE symbol = 'O' GROUP BY symbol"
    with pytest.raises(QueryError, match="overflow"):
        db.sql(text).collect()
    assert taken == [True]


def _planned(ops: list, schema: pl.Schema) -> str:
    """The polars plan of the fast path's steps for ``ops`` over frames of ``schema``."""
    lf = empty_lazy(schema)
    for step in fastpath._steps(ops, schema):
        lf = step(lf)
    return lf.explain(optimized=False)


def test_the_fast_paths_sums_are_bigint_only_where_no_group_can_leave_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    schema = pl.Schema({"k": pl.Int64, "sz": pl.Int32, "big": pl.Int64,
                        "v": pl.List(pl.Int32)})
    wide = pl.col("sz").cast(pl.Int64)
    agg = Aggregate((pl.col("k"),), (wide.cast(pl.Decimal(38, 0)).sum().alias("s"),
                                     pl.col("big").cast(pl.Decimal(38, 0)).sum().alias("b")))
    light = 'col("sz").cast(Int64).sum().strict_cast(Decimal(38, 0))'
    full = 'col("sz").cast(Int64).strict_cast(Decimal(38, 0)).sum()'
    plan = _planned([agg], schema)
    assert light in plan and full not in plan, plan
    assert 'col("big").strict_cast(Decimal(38, 0)).sum()' in plan   # (no bound: 128 bits)
    # at most FAST_ROWS rows: in BIGINT while fewer than SPAN // 2^31 rows cannot leave it
    monkeypatch.setattr(aggs, "SPAN", (fastpath.FAST_ROWS + 1) * 2**31)
    assert light in _planned([agg], schema)
    monkeypatch.setattr(aggs, "SPAN", fastpath.FAST_ROWS * 2**31)
    assert full in _planned([agg], schema)
    monkeypatch.undo()
    # after a step that may make more rows than it reads (an explode): 128 bits
    exploded = Select((pl.col("k"), pl.col("v").explode().alias("sz"), pl.col("big")))
    repeated = Aggregate((), (pl.col("k").first(), pl.col("sz").repeat_by(3).explode(),
                              pl.col("big").first()))   # (no keys: any number of rows)
    grouped = Aggregate((pl.col("k"),), (pl.col("sz").first(), pl.col("big").first()))
    for before, want in ((exploded, full), (repeated, full), (Filter(pl.col("k") > 0), light),
                         (grouped, light)):
        assert want in _planned([before, agg], schema), before


@pytest.mark.parametrize("text", [
    "SELECT count(*) AS n, sum(px) AS s FROM q2 WHERE symbol = 'C'",   # two files
    "SELECT count(*) AS n, max(px) AS s FROM q WHERE px > 0",          # no symbol
    "SELECT count(*) AS n FROM q WHERE symbol = 'A' OR symbol = 'C'",  # not a conjunct
])
def test_what_the_fast_path_does_not_take_runs_as_before(
        db: hfq.Database, duck: duckdb.DuckDBPyConnection, taken: list[bool],
        text: str) -> None:
    got = db.sql(text).collect()
    assert taken == [False]
    assert_same(got, duck.sql(text).pl(), what=text)


def test_a_symbol_in_two_partitions_is_read_from_both(tmp_path, taken,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    schema = Schema([("symbol", SYMBOL), ("date", hfq.schema.DATE), ("time", TIME_NS),
                     ("px", DOUBLE)])
    d = hfq.connect(str(tmp_path))
    t = d.create_table("t", schema, partition_by=hfq.Compo(hfq.Value("date"),
                                                           hfq.Hash("symbol", 2)),
                       sort_by=("symbol", "time"))
    days = [dt.date(2026, 4, 1), dt.date(2026, 4, 2)]
    t.append(schema.conform(pa.table({
        "symbol": ["X", "X", "Y", "X"], "date": [days[0], days[0], days[0], days[1]],
        "time": pa.array([ns(10), ns(11), ns(10), ns(9)], pa.int64()).cast(pa.time64("ns")),
        "px": [1.0, NAN, 3.0, 4.0]})))
    text = "SELECT count(*) AS n, max(px) AS hi, sum(px) AS s FROM t WHERE symbol = 'X'"
    got = d.sql(text).collect()
    assert taken == [True]
    n, hi, total = got.row(0)
    assert n == 3 and np.isnan(hi) and np.isnan(total)   # DuckDB: NaN is the largest
    assert_same(got, _general(d, text, monkeypatch))
    text = "SELECT px FROM t WHERE symbol = 'X' LIMIT 2"   # rows in partition order
    assert d.sql(text).collect()["px"].to_list()[1] != d.sql(text).collect()["px"].to_list()[0]
    assert_same(d.sql(text).collect(), _general(d, text, monkeypatch), ordered=True)
    one = d.sql("SELECT count(*) AS n, max(px) AS hi FROM t WHERE symbol = 'X' "
                "AND date = DATE '2026-04-02'").collect()
    assert one.rows() == [(1, 4.0)]


def test_an_integer_second_sort_column_bounds_the_runs(tmp_path, taken,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A table sorted by (symbol, an INTEGER): its bounds (compared as stored, 45c66ef) narrow
    the runs; NULLs and duplicates in a run, bounds at and past INTEGER's ends."""
    schema = Schema([("symbol", SYMBOL), ("seq", INT), ("v", DOUBLE)])
    rng = np.random.default_rng(7)
    seq = np.sort(rng.integers(-5, 400, 600)).tolist() * 2 + [None, 5, 7] * 100
    d = hfq.connect(str(tmp_path), batch_rows=256)
    d.create_table("t", schema, partition_by=hfq.Hash("symbol", 1),
                   sort_by=("symbol", "seq")).append(schema.conform(pa.table({
                       "symbol": ["A"] * 600 + ["B"] * 600 + ["C"] * 300,
                       "seq": pa.array(seq, pa.int32()), "v": rng.random(1500)})))
    duck = duckdb.connect()
    duck.register("t", d["t"].to_arrow())
    for text in ["SELECT count(*) AS n, sum(v) AS s FROM t WHERE symbol = 'A' AND seq >= 100 "
                 "AND seq < 200", "SELECT count(*) AS n FROM t WHERE symbol = 'A' AND 50 >= seq",
                 "SELECT count(*) AS n FROM t WHERE symbol = 'C' AND seq = 7",
                 "SELECT count(*) AS n FROM t WHERE symbol = 'B' AND seq > -2147483648 AND "
                 "seq <= 2147483647", "SELECT count(*) AS n FROM t WHERE symbol = 'B' AND seq "
                 "< 2147483648", "SELECT seq, v FROM t WHERE symbol = 'B' AND seq > 390"]:
        taken.clear()
        got = d.sql(text).collect()
        assert taken == [True], text
        assert_same(got, duck.sql(text).pl(), what=text)
        assert_same(got, _general(d, text, monkeypatch), what=text)


# -- the fast path against the general engine, on random rows and bounds -------------------
TIMES = sorted({t for t in _rows()["time"]})


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(syms=st.lists(st.sampled_from(["A", "B", "C", "N", "Q", "Z"]), min_size=1, max_size=3,
                    unique=True),
       bounds=st.lists(st.tuples(st.sampled_from([">", ">=", "<", "<=", "="]),
                                 st.one_of(st.sampled_from(TIMES),
                                           st.integers(ns(9), ns(16)))), max_size=2),
       agg=st.sampled_from(["count(*)", "sum(px)", "max(px)", "min(px)", "avg(px)",
                            "sum(sz)", "max(sz)", "sum(px * sz) / sum(sz)", "min(big)"]))
def test_the_fast_path_is_the_general_engine(db: hfq.Database, monkeypatch: pytest.MonkeyPatch,
                                             syms: list[str], bounds: list, agg: str) -> None:
    def lit(v: int) -> str:
        t = dt.time(v // (3600 * NS), v // (60 * NS) % 60, v // NS % 60, v % NS // 1000)
        return f"TIME '{t}'"
    named = f"symbol = '{syms[0]}'" if len(syms) == 1 else \
        f"symbol IN ({', '.join(repr(s) for s in syms)})"
    where = " AND ".join([named] + [f"time {op} {lit(v)}" for op, v in bounds])
    text = f"SELECT {agg} AS x, count(*) AS n FROM q WHERE {where}"
    assert_same(db.sql(text).collect(), _general(db, text, monkeypatch), what=text)


def test_slices_keep_every_row_a_bound_keeps() -> None:
    """The binary search against a plain scan, on sorted times with runs of duplicates."""
    rng = np.random.default_rng(5)
    times = np.sort(rng.integers(0, 20, 200))
    frame = pl.DataFrame({"symbol": pl.Series(["S"] * 200, dtype=pl.Categorical),
                          "time": times})
    batch = fastpath.CachedBatch(frame, {"S": (0, 200)})
    ops = {"Gt": np.greater, "GtEq": np.greater_equal, "Lt": np.less, "LtEq": np.less_equal,
           "Eq": np.equal}
    for op, fn in ops.items():
        for v in range(-1, 22):
            got = fastpath.sliced(batch, fastpath.Selection(("S",), ((op, v),)), "time")
            assert got is not None
            kept = np.flatnonzero(fn(times, v))
            assert got["time"].to_list() == times[kept].tolist(), (op, v)


def test_a_damaged_batch_is_a_named_error_not_an_answer(tmp_path, taken) -> None:
    """A flipped bit in the batch a fast query reads: the fast path leaves it to the general
    engine, which reads no other copy here and names the file (never a wrong count)."""
    d = hfq.connect(str(tmp_path), batch_rows=16)
    d.create_table("q", SCHEMA, partition_by=hfq.Hash("symbol", 1),
                   sort_by=("symbol", "time")).append(_table(_rows()))
    fragment = d.session.plan_read(d["q"].snapshot(), columns=["symbol"]).plan \
        .units[0].fragments[0]
    path = f"{d.session.store.root}/{fragment.file}"
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[fragment.batches[1].span[0] + 40] ^= 8     # C's rows start in batch 1
    with open(path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(CorruptPartitionError, match="CRC-32"):
        d.sql("SELECT count(*) AS n FROM q WHERE symbol = 'C'").collect()
    assert taken == [False]


# -- the numba kernel of simple aggregates (hfq.engine.fastagg) ----------------------------
@pytest.fixture()
def kernel(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the kernel did on each run: "answered" or "refused" (polars ran the plan)."""
    seen: list[str] = []
    real = fastagg.Kernel.run

    def spy(self, frame):   # noqa: ANN001, ANN202
        try:
            got = real(self, frame)
        except fastagg.Refused:
            seen.append("refused")
            raise
        seen.append("answered")
        return got
    monkeypatch.setattr(fastagg.Kernel, "run", spy)
    return seen


def _same_zeros(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """The signs of the zeros too (``assert_same`` takes -0.0 for 0.0)."""
    for c in got.columns:
        if got[c].dtype.is_float():
            a, b = got[c].to_numpy(), want[c].to_numpy()
            assert np.array_equal(np.signbit(a[a == 0]), np.signbit(b[b == 0])), c


KERNEL_AGGS = AGGS + (", sum(big) AS bs, min(big) AS blo, max(big) AS bhi, avg(big) AS ba, "
                      "first(px) AS f, last(sz) AS l, max(px) - min(px) AS w, "
                      "count(sz) / count(*) AS r")


@pytest.mark.parametrize("sym", ["A", "B", "C", "N", "Q"])
@pytest.mark.parametrize("where", WHERES)
def test_the_kernel_answers_as_duckdb_and_the_general_engine(
        db: hfq.Database, duck: duckdb.DuckDBPyConnection, kernel: list[str],
        monkeypatch: pytest.MonkeyPatch, sym: str, where: str) -> None:
    text = f"SELECT {KERNEL_AGGS} FROM q WHERE {where.replace('{s}', sym)}"
    got = db.sql(_sql(text, "hfq")).collect()
    assert kernel == ["answered"], text
    assert_same(got, duck.sql(_sql(text, "duck")).pl(), what=text)
    general = _general(db, _sql(text, "hfq"), monkeypatch)
    assert_same(got, general, what=text)
    _same_zeros(got, general)


def test_a_min_among_both_zeros_is_polars_own(db: hfq.Database, kernel: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    text = "SELECT min(px) AS lo, max(px) AS hi FROM q WHERE symbol = 'A' AND time >= " \
        "TIME '12:00:00' AND time < TIME '13:00:00'"
    got = db.sql(text).collect()
    assert kernel == ["refused"]
    general = _general(db, text, monkeypatch)
    assert got.rows() == general.rows() == [(0.0, 0.0)]
    _same_zeros(got, general)


@pytest.mark.parametrize("text", [
    "SELECT median(px) AS m FROM q WHERE symbol = 'C'",                    # another agg
    "SELECT count(*) FILTER (WHERE sz > 110) AS n FROM q WHERE symbol = 'C'",
    "SELECT sum(sz * sz) AS s FROM q WHERE symbol = 'C'",                # integer arithmetic
    "SELECT max(time) AS t FROM q WHERE symbol = 'C'",                   # not a number
    "SELECT count(*) AS n FROM q WHERE symbol = 'C' AND px > 12",        # filters not complete
    "SELECT count(*) AS n FROM q WHERE symbol = 'C' ORDER BY n LIMIT 1",   # after the select
])
def test_what_the_kernel_does_not_take_is_the_polars_plans(
        db: hfq.Database, duck: duckdb.DuckDBPyConnection, kernel: list[str],
        taken: list[bool], text: str) -> None:
    got = db.sql(text).collect().with_columns(pl.col(pl.Time).to_physical())
    assert kernel == [] and taken == [True]
    assert_same(got, duck.sql(text).pl(), what=text)


@pytest.mark.parametrize("sym,ties", [("A", True), ("B", False), ("C", True), ("N", False),
                                      ("Q", False)])
def test_arg_min_and_max_by_time_in_the_kernel(
        db: hfq.Database, duck: duckdb.DuckDBPyConnection, kernel: list[str],
        monkeypatch: pytest.MonkeyPatch, sym: str, ties: bool) -> None:
    """The price at the first and the last time (NULL pairs skipped); a tie at that time is
    left to polars (which row it takes is its own)."""
    text = "SELECT arg_min(px, time) AS o, arg_max(px, time) AS c, arg_max(sz, time) AS z " \
        f"FROM q WHERE symbol IN ('{sym}', 'Z')"
    got = db.sql(text).collect()
    assert kernel == ["refused" if ties else "answered"]
    general = _general(db, text, monkeypatch)
    assert_same(got, general, what=text)
    _same_zeros(got, general)
    if not ties:
        assert_same(got, duck.sql(text).pl(), what=text)


def test_an_overflowing_sum_is_left_to_polars(db: hfq.Database, kernel: list[str]) -> None:
    with pytest.raises(QueryError, match="overflow"):
        db.sql("SELECT sum(big) AS s, count(*) AS n FROM q WHERE symbol = 'O'").collect()
    assert kernel == ["refused"]


def test_within_checks_every_bound_on_the_rows() -> None:
    frame = pl.DataFrame({"time": [5, 7, 9]})
    for bounds, want in [((("GtEq", 5),), True), ((("Gt", 5),), False),
                         ((("LtEq", 9),), True), ((("Lt", 9),), False),
                         ((("Eq", 5),), False), ((("GtEq", 5), ("Lt", 10)), True),
                         ((), True)]:
        chosen = fastpath.Selection(("S",), bounds)
        assert fastpath.within(frame, chosen, "time") is want, bounds
    assert fastpath.within(pl.DataFrame({"time": [5, 5]}),
                           fastpath.Selection(("S",), (("Eq", 5),)), "time")
    assert not fastpath.within(pl.DataFrame({"time": [5, None]}),
                               fastpath.Selection(("S",), (("GtEq", 0),)), "time")
    assert fastpath.within(frame.clear(), fastpath.Selection(("S",), (("Eq", 1),)), "time")


NASTY = [None, NAN, INF, -INF, 0.0, -0.0, 1.5, -2.25, 1e-300, 3.0]
IEXT = [None, 0, 1, -1, I32 - 1, -I32]
BEXT = [None, 0, 1, -1, I64 - 1, -I64, 2**62]


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(
    st.one_of(st.sampled_from(NASTY), st.floats(-1e6, 1e6)),
    st.one_of(st.sampled_from(IEXT), st.integers(-I32, I32 - 1)),
    st.one_of(st.sampled_from(BEXT), st.integers(-I64, I64 - 1))), max_size=12),
    agg=st.sampled_from(["count(*)", "count(px)", "sum(px)", "avg(px)", "min(px)", "max(px)",
                         "sum(sz)", "avg(sz)", "min(sz)", "max(sz)", "sum(big)", "avg(big)",
                         "min(big)", "max(big)", "first(px)", "last(big)",
                         "sum(px * sz) / sum(sz)", "avg(px - px)", "max(px) / min(px)",
                         "arg_min(px, big)", "arg_max(sz, big)"]))
def test_the_kernel_is_duckdb_and_polars_on_random_rows(
        db: hfq.Database, rows: list[tuple], agg: str) -> None:
    """The kernel of ``agg`` over the rows, against DuckDB's SQL and polars' run of the same
    compiled plan over the same frame (a refusal is allowed, never a different answer)."""
    text = f"SELECT {agg} AS x, count(*) AS n FROM q WHERE symbol = 'A'"
    query = db.sql(text)
    k = fastagg.kernel_of(query.ops[1:], query.source.schema)
    assert k is not None, text
    frame = pl.DataFrame({"px": [r[0] for r in rows], "sz": [r[1] for r in rows],
                          "big": [r[2] for r in rows]},
                         schema={"px": pl.Float64, "sz": pl.Int32, "big": pl.Int64})
    try:
        want = fastpath._steps(query.ops[1:], frame.schema)
        lf = frame.lazy()
        for step in want:
            lf = step(lf)
        polars_answer: pl.DataFrame | None = lf.collect()
    except pl.exceptions.PolarsError:   # the compiler's error (an overflow)
        polars_answer = None
    try:
        got = k.run(frame)
    except fastagg.Refused:
        return
    # the same rows as slices (the fast path's parts, never concatenated): the same bits
    cut = len(rows) // 3
    parts = [frame.slice(0, cut), frame.slice(cut, 1), frame.slice(cut + 1)]
    assert k.run(parts).equals(got, null_equal=True), text
    assert polars_answer is not None, f"{text}: polars raised, the kernel answered {got}"
    assert_same(got, polars_answer, what=text)
    _same_zeros(got, polars_answer)
    con = duckdb.connect()
    con.register("q", frame.to_arrow())
    assert_same(got, con.sql(text.replace(" WHERE symbol = 'A'", "")).pl(), what=text)


def test_physical_is_polars_to_physical() -> None:
    """The cast the fast path uses instead of ``to_physical`` (a polars plan each call)."""
    for s in [pl.Series([dt.time(23, 59, 59, 999999), dt.time(0), None]),
              pl.Series([dt.datetime(1969, 12, 31, 23, 59), None], dtype=pl.Datetime("ns")),
              pl.Series([dt.date(1, 1, 1), dt.date(9999, 12, 31)]),
              pl.Series([dt.timedelta(-5), None], dtype=pl.Duration("ns")),
              pl.Series([-I64, I64 - 1, None], dtype=pl.Int64)]:
        assert fastpath.physical(s).to_list() == s.to_physical().to_list(), s.dtype


def test_a_runs_time_order_is_found_once_per_run_and_column() -> None:
    """The order of a run's times is kept per (column, run): a sorted run is narrowed by
    binary search every time, a run out of order or with a NULL never is (every row kept),
    and one column's order says nothing of another's."""
    up = [1, 2, 2, 5, 9]
    frame = pl.DataFrame({"symbol": pl.Series(["S"] * 5 + ["T"] * 5 + ["U"] * 3,
                                              dtype=pl.Categorical),
                          "time": up + [3, 1, 4, 1, 5] + [1, None, 2],
                          "t2": [9, 1, 5, 2, 2] + up + [1, 2, 3]})
    batch = fastpath.CachedBatch(frame, {"S": (0, 5), "T": (5, 10), "U": (10, 13)})
    for _ in range(2):   # the second time from what the first found
        for time in ("time", "t2", "time"):
            for sym in "STU":
                for v in range(0, 11):
                    got = fastpath.sliced(batch, fastpath.Selection((sym,), (("GtEq", v),)),
                                          time)
                    assert got is not None
                    run = frame.filter(pl.col("symbol") == sym)
                    wanted = run.filter(pl.col(time) >= v)
                    assert set(wanted.rows()) <= set(got.rows()), (time, sym, v)
                    ordered = run[time].null_count() == 0 and run[time].is_sorted()
                    assert got.height == (wanted.height if ordered else run.height), \
                        (time, sym, v)
    assert batch.ordered == {("time", 0, 5): True, ("time", 5, 10): False,
                             ("t2", 0, 5): False, ("t2", 5, 10): True, ("t2", 10, 13): True}


def test_an_expressions_tree_is_its_own_and_a_fresh_copy() -> None:
    """:func:`~hfq.engine.exprs.to_tree` keeps serialized forms by identity: an expression
    made after another is gone (its identity often reused) still gets its own tree, and a
    caller changing a tree changes no other caller's."""
    from hfq.engine import exprs
    from hfq.engine.exprs import to_tree
    for i in range(3000):
        e = (pl.col(f"c{i % 7}") + i).alias("x")
        tree = to_tree(e)
        assert tree == json.loads(e.meta.serialize(format="json"))
        tree["Alias"][1] = "changed"
        assert to_tree(e)["Alias"][1] == "x"
    # an entry keeps nothing alive and leaves with its expression; a large tree is not kept
    gc.collect()
    e, big = pl.col("a") + 1, pl.col("a").is_in(pl.Series(range(20_000)).implode())
    to_tree(e), to_tree(big)
    held, gone = len(exprs._TREES.items), weakref.ref(e)
    del e
    gc.collect()
    assert gone() is None and len(exprs._TREES.items) == held - 1
    assert exprs._TREES.get(big) is None


def test_a_filters_hints_are_its_own_for_each_column_pair() -> None:
    """The hints of a filter are kept by its identity and the columns they are read for."""
    from hfq.engine.ops import Filter
    op = Filter((pl.col("symbol") == "A") & (pl.col("sym2") == "B"))
    assert execute._filter_hints(op, None, "symbol") == (("symbols", ("A",)),)
    assert execute._filter_hints(op, None, "sym2") == (("symbols", ("B",)),)
    assert execute._filter_hints(op, None, "symbol") == (("symbols", ("A",)),)
    other = Filter(pl.col("symbol") == "C")
    assert execute._filter_hints(other, None, "symbol") == (("symbols", ("C",)),)
    gone = weakref.ref(op)
    del op
    gc.collect()
    assert gone() is None
