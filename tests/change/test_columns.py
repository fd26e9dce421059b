"""Schema evolution (issue 27, What to build 6): add_column rewrites no file (old files read
with the default), drop_column, rename_column, widening INT -> LONG and FLOAT -> DOUBLE; time
travel reads each version with its own schema; what is not exact is refused; a write staged
in the old columns is refused rather than misread; changes, compaction and keyed writes work
across layouts."""

from __future__ import annotations

import os

import polars as pl
import pytest
from changekit import DAYS, KEY, make, rows, same, text

import hfq
from hfq import schema as s
from hfq.errors import CommitConflictError, SchemaMismatchError


@pytest.fixture
def db(tmp_path):
    return hfq.connect(str(tmp_path / "db"), batch_rows=16)


def data_files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "t", "data"))
            for f in fs}


def test_add_column_rewrites_no_file_and_old_rows_read_the_default(db):
    t = make(db)
    first = rows(100, 1)
    t.append(first)
    before = data_files(db.session.store.root)
    t.add_column("venue", "SYMBOL", default="XNYS")
    t.add_column("lots", "LONG")
    assert data_files(db.session.store.root) == before
    assert same(t, first.with_columns(venue=pl.lit("XNYS"), lots=pl.lit(None, pl.Int64)))
    second = rows(50, 2).with_columns(venue=pl.lit("ARCX"), lots=pl.lit(3, pl.Int64))
    t.append(second)
    want = pl.concat([text(first).with_columns(venue=pl.lit("XNYS"),
                                               lots=pl.lit(None, pl.Int64)), text(second)])
    assert same(t, want)
    assert same(t.scan(version=1), first)                       # its own schema
    assert t.scan(version=1).columns == list(first.columns)
    assert same(t.scan(where=pl.col("venue") == "XNYS", columns=["seq", "venue"]),
                want.filter(pl.col("venue") == "XNYS").select("seq", "venue"))


def test_widening_keeps_every_value_and_old_files_read_in_the_new_type(db):
    sch = s.Schema({"symbol": s.SYMBOL, "date": s.DATE, "q": s.INT, "f": s.FLOAT})
    t = db.create_table("t", sch, partition_by=hfq.Value("date"))
    extremes = pl.DataFrame({"symbol": ["A"] * 4, "date": [DAYS[0]] * 4,
                             "q": [2**31 - 1, -(2**31), None, 0],
                             "f": [1.1, float("nan"), -0.0, float("inf")]},
                            schema_overrides={"q": pl.Int32, "f": pl.Float32})
    t.append(extremes)
    t.widen_column("q", "LONG")
    t.widen_column("f", "DOUBLE")
    got = t.to_polars()
    assert got.schema["q"] == pl.Int64 and got.schema["f"] == pl.Float64
    assert same(got, extremes.with_columns(pl.col("q").cast(pl.Int64),
                                           pl.col("f").cast(pl.Float64)))
    t.append(pl.DataFrame({"symbol": ["A"], "date": [DAYS[0]], "q": [2**40], "f": [1e300]}))
    assert t.to_polars()["q"].max() == 2**40
    with pytest.raises(SchemaMismatchError, match="not a widening"):
        t.widen_column("q", "INT")
    with pytest.raises(SchemaMismatchError, match="partition column"):
        t.widen_column("date", "LONG")


def test_rename_and_drop_follow_the_options_and_time_travel_keeps_each_schema(db):
    t = make(db, unique=KEY, keep="last")
    first = rows(80, 1)
    t.append(first)
    t.rename_column("px", "price")
    t.rename_column("seq", "n")                   # a dedup key column: the key follows
    t.drop_column("note")
    assert t.snapshot().options["unique"] == ["symbol", "date", "time", "n"]
    model = first.unique(subset=list(KEY), keep="last", maintain_order=True)
    want = text(model).rename({"px": "price", "seq": "n"}).drop("note")
    assert same(t, want)
    assert same(t.scan(version=1), model)
    more = rows(40, 2).rename({"px": "price", "seq": "n"}).drop("note")
    t.append(more)                                # keyed across old and new layouts
    stored = t.to_polars()
    assert not stored.select("symbol", "date", "time", "n").is_duplicated().any()
    t.compact()                                   # old layouts rewritten in the new one
    assert same(t, stored) and {f.layout for f in t.snapshot().fragments()} == \
        {t.snapshot().options["evolution"]["layout"]}
    with pytest.raises(SchemaMismatchError, match="partition column"):
        t.rename_column("date", "day")
    with pytest.raises(SchemaMismatchError, match="dedup key"):
        t.drop_column("n")
    with pytest.raises(SchemaMismatchError, match="exists already"):
        t.rename_column("price", "qty")


def test_changes_read_and_rewrite_files_of_older_layouts(db):
    t = make(db)
    first = rows(120, 1)
    t.append(first)
    t.add_column("flag", "BOOL", default=True)
    t.rename_column("qty", "size")
    t.delete(where=pl.col("seq") == 0)
    t.update(set={"flag": False}, where=pl.col("seq") == 1)
    want = text(first).filter(pl.col("seq") != 0).rename({"qty": "size"}) \
        .with_columns(flag=pl.col("seq") != 1)
    assert same(t, want)


def test_a_write_staged_in_the_old_columns_is_refused_not_misread(db):
    t = make(db)
    t.append(rows(30, 1))
    from hfq.write import Write
    base = t.snapshot()
    with Write(db.session, base) as write, write.rows() as staged:
        staged.write(base.schema.conform(rows(10, 2).to_arrow()))
        write.stage_all(staged.flush())
        hfq.connect(db.session.store.root)["t"].add_column("x", "LONG")
        with pytest.raises(CommitConflictError, match="columns changed"):
            write.commit("append")
    assert len(t.refresh()) == 30 and "x" in t.schema
