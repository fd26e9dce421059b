"""Publishing and reading live + history (issue 26 items 1, 2; docs/live.md).

Oracle: polars over the same rows.  Every read path -- ``scan``, ``query`` (node and driver
stages), ``db.sql`` -- sees the history appended to the table and the rows published since,
each once; a batch that does not conform is refused whole; retries never duplicate; a
publisher restarting under its name continues its numbering; a second process publishing into
the same embedded database is seen here.  Ray-free (embedded).
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import ROOT, canonical
from hfq import faults
from hfq.errors import ArgumentError, SchemaMismatchError
from hfq.live import PublishConflictError

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))
DAYS = ("2024-01-02", "2024-01-03")


def make(tmp_path, **settings):
    db = hfq.connect(str(tmp_path / "db"), **settings)
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME, sort_by=("symbol", "time"))
    return db, t


def nasty() -> pa.Table:
    """Rows a feed sends: NULL, NaN, +-inf, -0.0, int32 extremes, empty strings, duplicate
    timestamps, midnight and the day's last second, a symbol alone in its partition."""
    n = 8
    return hfq.schemas.TAQ.conform(pa.table({
        "symbol": ["IBM", "IBM", "IBM", "MSFT", "MSFT", "ZZZZ", "IBM", "MSFT"],
        "date": [dt.date(2024, 1, 2)] * n,
        "time": [dt.time(0, 0, 0), dt.time(9, 30), dt.time(9, 30), dt.time(9, 30),
                 dt.time(23, 59, 59), dt.time(12), dt.time(9, 30), dt.time(9, 31)],
        "bid": [None, float("nan"), float("inf"), -0.0, float("-inf"), 1.5, 0.0, 2.0],
        "ofr": [1.0, 2.0, None, 0.0, 3.0, float("nan"), -0.0, 2.5],
        "bidsiz": pa.array([2**31 - 1, -2**31, 0, None, 1, 2, 3, 4], pa.int32()),
        "ofrsiz": pa.array([1, 2, 3, 4, 5, 6, 7, None], pa.int32()),
        "mode": pa.array([None, 0, 1, 2, 3, 4, 5, 6], pa.int32()),
        "ex": ["N", "", "N", None, "T", "T", "N", "N"],
        "mmid": ["", "", None, "A", "B", "", "C", ""],
    }))


def history() -> pa.Table:
    return hfq.synth.taq_table(dates=DAYS, rows_per_day=600, symbols=12, seed=3)


def ticks() -> pa.Table:
    return hfq.synth.taq_table(dates=DAYS, rows_per_day=900, symbols=12, seed=4)


def test_live_and_history_in_one_read_on_every_path(tmp_path):
    db, t = make(tmp_path)
    t.append(history())
    pub = t.publisher(name="feed")
    live = ticks()
    for start in range(0, live.num_rows, 250):
        pub.publish(live.slice(start, 250))
    pub.publish(nasty())
    every = pl.concat([pl.from_arrow(history()), pl.from_arrow(live), pl.from_arrow(nasty())])
    assert canonical(t.scan().to_arrow()).equals(canonical(every))
    ibm = t.scan(symbols="IBM", dates="2024-01-02", where=pl.col("bidsiz") > 0).to_polars()
    want = every.filter((pl.col("symbol") == "IBM") & (pl.col("date") == dt.date(2024, 1, 2))
                        & (pl.col("bidsiz") > 0))
    assert canonical(ibm).equals(canonical(want))
    got = t.query().group_by("symbol").agg(n=pl.len(), hi=pl.col("ofrsiz").max()) \
        .sort("symbol").collect()
    assert got.equals(every.group_by("symbol").agg(n=pl.len(), hi=pl.col("ofrsiz").max())
                      .sort("symbol").with_columns(pl.col("symbol").cast(pl.Categorical)))
    n = db.sql("SELECT count(*) AS n FROM q WHERE date = '2024-01-03'").collect()["n"][0]
    assert n == every.filter(pl.col("date") == dt.date(2024, 1, 3)).height
    assert t.scan().count() == every.height
    assert len(t) == history().num_rows   # the files hold the history only


def test_a_publisher_reads_its_own_writes_at_once(tmp_path):
    db, t = make(tmp_path)
    pub = t.publisher(name="feed")
    live = ticks()
    seen = []
    for start in range(0, 1000, 100):
        pub.publish(live.slice(start, 100))
        seen.append(db.sql("SELECT count(*) AS n FROM q").collect()["n"][0])
    assert seen == list(range(100, 1001, 100))


def test_a_batch_of_two_days_in_a_partition_without_a_date_level(tmp_path):
    """A table partitioned by symbol alone: each partition gets two slices (two days) of one
    batch, read right after it (each batch on its own) and after several (together)."""
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Hash("symbol", 2),
                        sort_by=("symbol", "time"))
    pub = t.publisher(name="feed")
    live = pl.concat([pl.from_arrow(ticks()), pl.from_arrow(nasty())]).sample(
        fraction=1.0, shuffle=True, seed=5).to_arrow()   # rows of both days in every batch
    for i, start in enumerate(range(0, live.num_rows, 300)):
        pub.publish(live.slice(start, 300))
        if i < 3:
            assert t.scan().count() == min(live.num_rows, start + 300)
    assert canonical(t.scan().to_arrow()).equals(canonical(pl.from_arrow(live)))
    by_day = db.sql("SELECT date, count(*) AS n FROM q GROUP BY date ORDER BY date").collect()
    want = pl.from_arrow(live).group_by("date").agg(n=pl.len()).sort("date")
    assert by_day["n"].to_list() == want["n"].to_list()


def test_a_batch_that_does_not_conform_is_refused_whole(tmp_path):
    db, t = make(tmp_path)
    pub = t.publisher(name="feed")
    pub.publish(nasty())
    bad = pl.from_arrow(ticks().slice(0, 50)).with_columns(
        pl.when(pl.int_range(pl.len()) == 49).then(pl.lit("x")).otherwise(
            pl.col("bid").cast(pl.String)).alias("bid"))
    with pytest.raises(SchemaMismatchError, match="publish to 'q'.*column 'bid'"):
        pub.publish(bad)
    with pytest.raises(SchemaMismatchError, match="missing columns: mmid"):
        pub.publish(pl.from_arrow(ticks().slice(0, 5)).drop("mmid"))
    no_date = pl.from_arrow(ticks().slice(0, 5)).with_columns(pl.lit(None, pl.Date)
                                                               .alias("date"))
    with pytest.raises(SchemaMismatchError, match="null"):
        pub.publish(no_date)
    assert pub.seq == 1 and t.scan().count() == nasty().num_rows


def test_a_batch_already_in_the_tables_schema_is_still_checked(tmp_path):
    """A batch in the table's exact Arrow schema skips the casts (it is published as it is)
    but not the CHAR limit; a batch of the same rows in another schema (plain strings,
    int64, in another column order, with pandas metadata) conforms to the same rows."""
    db, t = make(tmp_path)
    pub = t.publisher(name="feed")
    exact = nasty()
    assert exact.schema.equals(hfq.schemas.TAQ.arrow)
    two = exact.set_column(exact.schema.get_field_index("ex"), "ex", pa.array(
        ["N", "NY", "N", None, "T", "T", "N", "N"]).dictionary_encode())
    assert two.schema.equals(hfq.schemas.TAQ.arrow)
    with pytest.raises(SchemaMismatchError, match="column 'ex'.*at most one character"):
        pub.publish(two)
    other = pl.from_arrow(exact).with_columns(
        pl.col(pl.Categorical).cast(pl.String), pl.col(pl.Int32).cast(pl.Int64)
    ).select(list(reversed(exact.column_names))).to_arrow()
    assert not other.schema.equals(hfq.schemas.TAQ.arrow)
    pub.publish(exact)
    pub.publish(other)
    assert pub.seq == 2
    got = t.scan().to_polars()
    want = pl.concat([pl.from_arrow(exact)] * 2)
    assert canonical(got).equals(canonical(want), null_equal=True)


def test_a_char_dictionary_like_the_last_good_one_is_still_measured():
    """The last CHAR dictionary within the limit is remembered (a feed's batches carry the
    same one): a dictionary of as many values with one too long, or one refused before, is
    still refused, every time."""
    exact = nasty()
    where = exact.schema.get_field_index("ex")

    def with_ex(values: list) -> pa.Table:
        ex = pa.DictionaryArray.from_arrays(pa.array([i % len(values) for i in range(8)],
                                                     pa.int32()), pa.array(values))
        return exact.set_column(where, "ex", ex)

    good, bad = with_ex(["N", "", "T"]), with_ex(["N", "", "TT"])
    for table, ok in ((good, True), (bad, False), (good, True), (bad, False), (bad, False),
                      (with_ex(["T", "", "N"]), True), (with_ex(["🙂🙂", "", "N"]), False)):
        if ok:
            assert hfq.schemas.TAQ.conform(table) is table
        else:
            with pytest.raises(SchemaMismatchError, match="at most one character"):
                hfq.schemas.TAQ.conform(table)


def test_retries_never_duplicate_and_a_changed_retry_is_refused(tmp_path):
    db, t = make(tmp_path)
    pub = t.publisher(name="feed")
    live = ticks()
    a, b = live.slice(0, 300), live.slice(300, 300)
    assert pub.publish(a) == 1
    assert pub.publish(a, seq=1) == 1           # a retry of an acknowledged batch
    assert pub.publish(pl.from_arrow(a).to_pandas(), seq=1) == 1   # same rows, as pandas
    assert pub.publish(b, seq=2) == 2
    with pytest.raises(PublishConflictError, match="other rows"):
        pub.publish(a, seq=2)
    with pytest.raises(ArgumentError, match="the next is 3, not 5"):
        pub.publish(a, seq=5)
    assert pub.publish(a.slice(0, 0)) == 2      # nothing to publish
    assert t.scan().count() == 600


def test_a_retry_with_other_rows_of_a_batch_a_node_logged_is_refused_by_the_node(tmp_path):
    """The publish failed after the node logged the batch (no ack): a retry under that number
    with other rows reaches the node, which compares them with what it logged and refuses;
    the same rows again are a duplicate there -- nothing twice."""
    db, t = make(tmp_path)
    pub = t.publisher(name="feed")
    live = ticks()
    a, b = live.slice(0, 300), live.slice(300, 300)
    assert pub.publish(a) == 1
    faults.arm("live.publish.before_ack", "raise")
    try:
        with pytest.raises(faults.FaultInjected):
            pub.publish(b)                        # logged by the node, never acknowledged
    finally:
        faults.disarm("live.publish.before_ack")
    assert pub.seq == 1
    with pytest.raises(PublishConflictError, match="again with other rows"):
        pub.publish(a, seq=2)                     # the node's check: the publisher had no ack
    assert pub.publish(b, seq=2) == 2
    assert t.scan().count() == 600
    assert canonical(t.scan().to_arrow()).equals(canonical(live.slice(0, 600)))


def test_a_publisher_restarting_under_its_name_continues(tmp_path):
    db, t = make(tmp_path)
    live = ticks()
    pub = t.publisher(name="feed")
    for i in range(3):
        pub.publish(live.slice(i * 100, 100))
    again = hfq.connect(str(tmp_path / "db"))["q"].publisher(name="feed")
    assert again.seq == 3
    assert again.publish(live.slice(200, 100), seq=3) == 3    # its last batch, again
    assert again.publish(live.slice(300, 100)) == 4
    assert hfq.connect(str(tmp_path / "db"))["q"].scan().count() == 400
    other = t.publisher(name="other")
    assert other.seq == 0 and other.publish(live.slice(400, 5)) == 1


def test_live_rows_survive_a_restart_of_the_process(tmp_path):
    db, t = make(tmp_path)
    pub = t.publisher(name="feed")
    live = ticks()
    pub.publish(live.slice(0, 700))
    db.close()
    hfq.runtime.services.close_services(db.session.nodes.local, db.session.store.root)
    fresh = hfq.connect(str(tmp_path / "db"))
    assert canonical(fresh["q"].scan().to_arrow()).equals(canonical(live.slice(0, 700)))


SECOND = """
import sys, hfq
t = hfq.connect(sys.argv[1])["q"]
pub = t.publisher(name="second")
rows = hfq.synth.taq_table(dates=["2024-01-02"], rows_per_day=int(sys.argv[2]), symbols=5,
                           seed=9)
print(pub.publish(rows), t.scan().count(), flush=True)
"""


def test_a_second_process_publishing_into_an_embedded_database(tmp_path):
    """Each process writes its own stream of the node's log; every process reads them all."""
    db, t = make(tmp_path)
    pub = t.publisher(name="first")
    pub.publish(ticks().slice(0, 100))
    env = {"PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", SECOND, str(tmp_path / "db"), "77"],
                         capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, **env})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "177"]
    assert t.scan().count() == 177        # the other process's rows, read from its stream
    pub.publish(ticks().slice(100, 23))
    assert t.scan().count() == 200
