"""Planning a symbol read on a split table: the partitions looked up by their hash bucket's
path must be exactly those a test of every partition keeps, in the same (path) order, and
the rows read must be polars' filter of the source rows."""

from __future__ import annotations

import polars as pl
import pytest

import hfq
import hfq.query.plan as plan_module
from hfq.query.plan import Filters, make_plan

HOSTILE = ["../../etc", "a/b", "ÜBER", "", " ", "x" * 300]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    db = hfq.connect(str(tmp_path_factory.mktemp("plan")))
    table = db.create_table("quotes", hfq.schemas.TAQ, sort_by=("symbol", "time"),
                            partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 16)))
    rows = hfq.synth.taq_table(dates=["2007-08-01", "2007-08-02", "2007-08-03"],
                               rows_per_day=4000, symbols=60, seed=3)
    table.append(rows)
    hostile = pl.from_arrow(rows.slice(0, len(HOSTILE))).with_columns(
        pl.Series("symbol", HOSTILE).cast(pl.Categorical))
    table.append(hostile.to_arrow())
    return table


def every_partition(manifest, filters: Filters, monkeypatch) -> list[str]:
    """The oracle: the plan made by testing each partition of each kept day."""
    with monkeypatch.context() as m:
        m.setattr(plan_module, "_group_items", lambda scheme, group, key0, bounds: group.items())
        return [u.partition for u in make_plan(manifest, ["symbol", "bid"], filters, None).units]


def symbol_sets(table: hfq.Table) -> list[list[str]]:
    names = table.scan(columns=["symbol"]).to_polars()["symbol"].cast(pl.String).unique().sort()
    one_bucket = [s for s in names if hfq.Hash("symbol", 16).bucket(s) == 5][:3]
    return [[names[0]], names[:7].to_list(), one_bucket, ["NOPE"], HOSTILE[:3], [],
            names.to_list() + ["NOPE"]]


@pytest.mark.parametrize("dates", [("2007-08-02", "2007-08-02"), ("2007-08-01", "2007-08-03"),
                                   (None, None)])
def test_symbol_plans_keep_exactly_the_partitions_a_full_test_keeps(table, dates,
                                                                        monkeypatch):
    manifest = table.snapshot()
    for symbols in symbol_sets(table):
        filters = Filters("date", *dates, "symbol", tuple(symbols))
        plan = make_plan(manifest, ["symbol", "bid"], filters, None)
        kept = [unit.partition for unit in plan.units]
        assert kept == every_partition(manifest, filters, monkeypatch), (symbols, dates)
        assert kept == sorted(kept)
        buckets = {hfq.Hash("symbol", 16).bucket(s) for s in symbols}
        assert all(unit.key[1] in buckets for unit in plan.units), symbols   # pruned by hash
        if symbols:
            read = table.scan(dates=dates if dates[0] else None,
                              symbols=symbols).to_polars()
            source = table.scan().to_polars()
            if dates[0]:
                lo, hi = (pl.lit(d).str.to_date() for d in dates)
                source = source.filter(pl.col("date").is_between(lo, hi))
            expect = source.filter(pl.col("symbol").cast(pl.String).is_in(symbols))
            assert read.sort("symbol", "time").equals(expect.sort("symbol", "time")), symbols
