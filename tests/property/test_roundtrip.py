"""Properties: read(write(x)) == x for arbitrary tick tables, and pruning == filtering."""

from __future__ import annotations

import shutil
import tempfile

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hfq
from conftest import canonical
from hfq.testing.strategies import taq_tables

SCHEMES = [
    hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 3)),
    hfq.Value("symbol"),
    hfq.Compo(hfq.Value("date"), hfq.Range("symbol", ("M",))),
]


def fresh_db(**kw):
    root = tempfile.mkdtemp(prefix="hfq-prop-")
    return root, hfq.connect(root, **kw)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables=st.lists(taq_tables(max_rows=60), min_size=1, max_size=3),
       scheme=st.sampled_from(SCHEMES), batch_rows=st.sampled_from([1, 7, 65536]),
       compression=st.sampled_from(["zstd", "lz4", "none"]))
def test_write_read_round_trip(tables, scheme, batch_rows, compression):
    root, db = fresh_db(batch_rows=batch_rows, compression=compression)
    try:
        t = db.create_table("q", hfq.schemas.TAQ, partition_by=scheme,
                            sort_by=("symbol", "time"))
        for table in tables:
            t.append(table)
        expected = pl.concat([pl.from_arrow(x) for x in tables])
        got = t.scan().to_arrow()
        assert got.schema == hfq.schemas.TAQ.arrow
        assert canonical(got).equals(canonical(expected))
        t.compact()
        assert canonical(t.scan().to_arrow()).equals(canonical(expected))
    finally:
        shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=taq_tables(max_rows=120), data=st.data(), batch_rows=st.sampled_from([3, 65536]))
def test_pruned_scan_equals_filtered_full_scan(table, data, batch_rows):
    root, db = fresh_db(batch_rows=batch_rows)
    try:
        t = db.create_table("q", hfq.schemas.TAQ,
                            partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                            sort_by=("symbol", "time"))
        t.append(table)
        full = pl.from_arrow(table).with_columns(pl.col("symbol").cast(pl.String))
        pool = full["symbol"].unique().to_list() + ["absent"]
        symbols = data.draw(st.none() | st.lists(st.sampled_from(pool), max_size=3))
        day = data.draw(st.none() | st.sampled_from(["2007-08-01", "2007-08-02", "2007-08-03"]))
        expected = full
        if symbols is not None:
            expected = expected.filter(pl.col("symbol").is_in(symbols))
        if day is not None:
            expected = expected.filter(pl.col("date").cast(pl.String) == day)
        got = t.scan(symbols=symbols, dates=day).to_arrow()
        assert canonical(got).equals(canonical(expected))
    finally:
        shutil.rmtree(root, ignore_errors=True)
