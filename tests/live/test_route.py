"""The publisher's routing cache (:mod:`hfq.live.route`): batch after batch, with symbols first
seen mid-day and hostile strings, the remembered buckets route every row where the scheme
itself does (oracle: ``scheme.route`` and ``Hash.bucket`` of each value, computed fresh), and
a published symbol first seen mid-day is found by a scan that prunes partitions by its bucket.
Ray-free.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hfq
from hfq.live import route as liveroute
from hfq.live.route import Router
from hfq.partition import key_path

HOSTILE = ["", " ", "IBM", "ibm", "IBM ", "../../etc", "a/b", "a,b", "x=y", "\x00", "\x00a",
           "é", "e\u0301", "日本", "🙂", "%2F", "v", "h0", "-", "_", "a" * 300, "NaN", "None"]

SCHEMES = [hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 16)),
           hfq.Hash("symbol", 7),
           hfq.Compo(hfq.Value("date"), hfq.Range("symbol", ("F", "M", "T"))),
           hfq.Compo(hfq.Hash("n", 5), hfq.Value("date"))]


def batch(symbols: list[str], days: list[int], *, dictionary: bool) -> pa.Table:
    sym = pa.array(symbols, pa.string())
    return pa.table({
        "symbol": sym.dictionary_encode() if dictionary else sym,
        "date": pa.array([dt.date(2024, 1, 2) + dt.timedelta(days=d) for d in days],
                         pa.date32()),
        "n": pa.array([len(s) * 7919 - 2**40 for s in symbols], pa.int64())})


def same(router: Router, scheme, table: pa.Table) -> None:
    codes, keys = router.route(table)
    want_codes, want_keys = scheme.route(table)
    assert keys == want_keys
    np.testing.assert_array_equal(codes, want_codes)
    for key in keys:
        assert router.path(key) == key_path(scheme, key)


symbol_text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SCHEMES), st.booleans(),
       st.lists(st.lists(st.tuples(symbol_text, st.integers(0, 2)), min_size=1, max_size=30),
                min_size=1, max_size=6))
def test_every_batch_routes_as_the_scheme_does(scheme, dictionary, batches):
    router = Router(scheme)
    for rows in batches:
        same(router, scheme, batch([s for s, _ in rows], [d for _, d in rows],
                                   dictionary=dictionary))


def test_a_symbol_first_seen_mid_day_gets_its_own_bucket_not_a_neighbours():
    scheme = hfq.Hash("symbol", 16)
    router = Router(scheme)
    morning = ["IBM", "MSFT", "AAPL"] * 5
    same(router, scheme, batch(morning, [0] * 15, dictionary=True))
    # a new symbol, in a dictionary that lists it first, between known ones
    late = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0, 3], pa.int32()),
                                          pa.array(["ZZZ", "IBM", "", "AAPL"]))
    table = pa.table({"symbol": late})
    codes, _ = router.route(table)
    assert codes.tolist() == [scheme.bucket(s) for s in late.to_pylist()]
    # and its bucket is remembered: the next batch is routed without hashing it again
    calls = []
    real = scheme.bucket
    router.levels.first.memo.level = type("Spy", (), {
        "bucket": staticmethod(lambda v: calls.append(v) or real(v))})()
    codes, _ = router.route(pa.table({"symbol": pa.array(["ZZZ", "IBM", "NEW"])}))
    assert codes.tolist() == [real("ZZZ"), real("IBM"), real("NEW")]
    assert calls == ["NEW"]


def test_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(liveroute, "MAX_REMEMBERED", 10)
    scheme = hfq.Hash("symbol", 16)
    router = Router(scheme)
    for i in range(5):
        symbols = [f"S{i}-{j}" for j in range(8)]
        same(router, scheme, batch(symbols, [0] * 8, dictionary=False))
        assert len(router.levels.first.memo.values) <= 10 + 8


def test_null_symbols_are_refused_as_the_scheme_refuses_them():
    scheme = hfq.Hash("symbol", 16)
    table = pa.table({"symbol": pa.array(["IBM", None])})
    with pytest.raises(hfq.errors.SchemaMismatchError) as theirs:
        scheme.route(table)
    with pytest.raises(hfq.errors.SchemaMismatchError) as ours:
        Router(scheme).route(table)
    assert str(ours.value) == str(theirs.value)


def test_a_symbol_published_first_mid_day_is_found_by_a_pruned_scan(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("q", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 16)),
                        sort_by=("symbol", "time"))
    pub = t.publisher(name="feed")
    rows = hfq.synth.taq_table(dates=["2024-01-02"], rows_per_day=400, symbols=8, seed=5)
    pub.publish(rows.slice(0, 200))
    late = hfq.schemas.TAQ.conform(pa.table({
        "symbol": ["../x", "", "🙂", "IBM"], "date": [dt.date(2024, 1, 2)] * 4,
        "time": [dt.time(14, 0)] * 4, "bid": [1.0] * 4, "ofr": [2.0] * 4,
        "bidsiz": pa.array([1] * 4, pa.int32()), "ofrsiz": pa.array([1] * 4, pa.int32()),
        "mode": pa.array([1] * 4, pa.int32()), "ex": ["N"] * 4, "mmid": ["A"] * 4}))
    pub.publish(pa.concat_tables([rows.slice(200, 200), late]).combine_chunks())
    for symbol in ("../x", "", "🙂"):
        got = t.scan(symbols=[symbol]).to_arrow()
        assert got.column("symbol").to_pylist() == [symbol], symbol
    want = rows.column("symbol").to_pylist().count("IBM") + 1
    assert t.scan(symbols=["IBM"]).count() == want


@pytest.mark.parametrize("same_type", [True, False])
def test_a_dictionary_like_the_last_is_not_taken_for_it(same_type):
    """The router remembers the last dictionary and its buckets: a batch with the same
    dictionary is routed from them, and one whose dictionary differs only in a value, in the
    order of its values or in its type, is looked up afresh."""
    scheme = hfq.Hash("symbol", 16)
    router = Router(scheme)
    first = ["IBM", "MSFT", "AAPL", ""]
    for values in (first, first, ["IBM", "MSFT", "AAPM", ""], ["MSFT", "IBM", "AAPL", ""],
                   first):
        dictionary = pa.array(values, pa.string() if same_type else pa.large_string())
        rows = pa.table({"symbol": pa.DictionaryArray.from_arrays(
            pa.array([0, 1, 2, 3, 1, 0], pa.int32()), dictionary)})
        codes, _ = router.route(rows)
        assert codes.tolist() == [scheme.bucket(s) for s in rows.column(0).to_pylist()]
        same_type = not same_type
