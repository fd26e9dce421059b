"""``rowid`` (issue 24, "What to build" 4): each row's position in its version's storage order,
checked against a plain reading of the definition -- the partitions in the planner's order
(groups of the first level in key order, then paths), each partition's files in commit order,
each file's rows in file order, numbered from 0 -- read here file by file and handed to DuckDB
as a real column ``rowid``.  The same SQL then runs in both: filters that prune partitions and
record batches, symbol runs, joins, windows, several appends (partitions of several files)
and time travel."""

from __future__ import annotations

import types

import pyarrow as pa
import pytest
from nasty import SCHEMA, frames
from oracle import assert_same

import hfq
from hfq import config
from hfq.catalog.records import group_of
from hfq.engine import execute
from hfq.engine.rowid import partition_offsets
from hfq.storage.fragment import read_fragment


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    with config.override(batch_rows=64):   # many record batches: pruning within files
        d = hfq.connect(str(tmp_path_factory.mktemp("rowid")))
        w = SCHEMA.conform(frames()["w"])
        scheme = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))
        t = d.create_table("w", SCHEMA, partition_by=scheme, sort_by=("symbol", "time"))
        for lo, hi in ((0, 1000), (1000, 1800), (1800, w.num_rows)):   # three files a partition
            t.append(w.slice(lo, hi - lo))
        d.create_table("u", SCHEMA, partition_by=scheme, sort_by=("symbol", "time")
                       ).append(w.slice(300, 500))
        d.create_table("e", SCHEMA, partition_by=scheme, sort_by=("symbol", "time"))
    return d


def storage_order(db, name: str, version: int | None = None) -> pa.Table:
    """The definition, read plainly: partitions by (group, path), files as recorded (commit
    order), every row of each file in file order, numbered from 0."""
    m = db.session.snapshot(name, version)
    tables = [read_fragment(db.session.store, f, m.schema.arrow)
              for p in sorted(m.partitions, key=lambda p: (group_of(p), p))
              for f in m.partitions[p].fragments]
    table = pa.concat_tables(tables) if tables else m.schema.arrow.empty_table()
    return table.append_column("rowid", pa.array(range(table.num_rows), pa.int64()))


@pytest.fixture(scope="module")
def duck(db):
    import duckdb
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET threads = 1")
    for name in ("w", "u", "e"):
        con.register(name, storage_order(db, name))
    con.register("w1", storage_order(db, "w", 1))
    return con


CASES = [
    ("all", "SELECT rowid, symbol, date, time, ts, tod, bid, bidsiz, big, small, name, flag, "
            "f FROM w ORDER BY rowid", True),
    ("filtered", "SELECT rowid, symbol, bid FROM w WHERE symbol IN ('B', 'G') AND bid > 90 "
                 "ORDER BY rowid", True),
    ("one_symbol_day", "SELECT rowid, time FROM w WHERE date = DATE '2016-11-14' AND "
                       "symbol = 'G'", False),
    ("by_rowid", "SELECT rowid, symbol FROM w WHERE rowid BETWEEN 100 AND 140 OR rowid = 2399",
     False),
    ("aggregates", "SELECT symbol, min(rowid) AS lo, max(rowid) AS hi, count(*) AS n, "
                   "count(DISTINCT rowid) AS d FROM w GROUP BY symbol", False),
    ("window", "SELECT rowid, sum(bidsiz) OVER (PARTITION BY symbol, date ORDER BY rowid) AS s, "
               "row_number() OVER (ORDER BY rowid DESC) AS r FROM w", False),
    ("join", "SELECT a.rowid, b.rowid AS br, a.symbol FROM w a JOIN u b ON a.symbol = b.symbol "
             "AND a.date = b.date AND a.time = b.time AND a.ts = b.ts", False),
    ("self_join_on_rowid", "SELECT a.rowid, b.bid FROM w a JOIN w b ON a.rowid = b.rowid + 1 "
                           "WHERE a.symbol = 'D'", False),
    ("subquery", "SELECT rowid, symbol FROM w WHERE rowid IN (SELECT max(rowid) FROM w "
                 "GROUP BY date)", False),
    ("top", "SELECT rowid, bid FROM w WHERE symbol = 'C' ORDER BY bid DESC NULLS LAST, rowid "
            "LIMIT 5", True),
    ("empty", "SELECT rowid, symbol FROM e", False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rowid_is_the_storage_position(db, duck, case):
    what, sql, ordered = case
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=ordered, what=what)


def test_rowid_of_an_older_version(db, duck):
    got = db.sql("SELECT rowid, symbol, ts FROM w AT (VERSION => 1) ORDER BY rowid").collect()
    want = duck.sql("SELECT rowid, symbol, ts FROM w1 ORDER BY rowid").pl()
    assert_same(got, want, ordered=True, what="version 1")
    assert got.height == 1000


def test_the_reads_prune_and_still_number_every_row(db, duck):
    """The symbol filter keeps a few record batches of a few partitions: the numbers are
    the same as over a full read (rows before any filter are counted)."""
    q = db.sql("SELECT rowid, time FROM w WHERE symbol = 'G'")
    units = q.plan.units
    assert len(units) < q.plan.partitions_total
    assert any(b is not None for u in units for b in u.batches), "no batch was pruned"
    assert any(len(u.fragments) > 1 for u in units)
    assert_same(q.collect(), duck.sql("SELECT rowid, time FROM w WHERE symbol = 'G'").pl(),
                what="pruned")


def test_rowid_is_not_in_star_and_a_real_column_wins(db, tmp_path):
    assert "rowid" not in db.sql("SELECT * FROM w").columns
    d = hfq.connect(str(tmp_path))
    schema = hfq.schema.Schema([("rowid", hfq.schema.LONG), ("x", hfq.schema.LONG)])
    d.create_table("r", schema, partition_by=hfq.Hash("x", 1)).append(
        pa.table({"rowid": [7, 9], "x": [1, 2]}))
    assert d.sql("SELECT rowid FROM r ORDER BY x").collect()["rowid"].to_list() == [7, 9]


def test_partition_offsets_count_the_partitions_before(db):
    m = db.session.snapshot("w")
    paths = sorted(m.partitions, key=lambda p: (group_of(p), p))
    offsets = partition_offsets(m, paths)
    running = 0
    for p in paths:
        assert offsets[p] == running
        running += m.partitions[p].rows
    # a version whose partitions are one mapping (format 1) numbers them the same way
    flat = types.SimpleNamespace(partitions=dict(m.partitions.items()), version=m.version,
                                 table=m.table)
    assert partition_offsets(flat, paths) == offsets   # type: ignore[arg-type]
    with pytest.raises(KeyError, match="not in version"):
        partition_offsets(m, ["nowhere"])


def test_rowid_through_the_runtime_path_equals_inline(db, duck, monkeypatch):
    """A query too large to run inline goes through the session's units (threads here,
    batches of partitions): the same numbers."""
    monkeypatch.setattr(execute, "INLINE_ROWS", 0)
    got = db.sql("SELECT rowid, bidsiz FROM w WHERE bidsiz > 500").collect()
    want = duck.sql("SELECT rowid, bidsiz FROM w WHERE bidsiz > 500").pl()
    assert_same(got, want, what="threads")
