"""Small scans (a symbol-day): read in the calling thread through this process's cache of
decoded record batches (hfq.storage.cache.process_cache), checked against polars on the
source rows."""

from __future__ import annotations

import os

import polars as pl
import pytest

import hfq
from hfq.errors import CorruptPartitionError
from hfq.storage.cache import clear_process_caches, process_cache


def make(root, seed: int) -> hfq.Table:
    db = hfq.connect(str(root), batch_rows=256)
    table = db.create_table("quotes", hfq.schemas.TAQ, sort_by=("symbol", "time"),
                            partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2)))
    table.append(hfq.synth.taq_table(rows_per_day=3000, symbols=30, seed=seed))
    return table


def oracle(table: hfq.Table, symbol: str) -> pl.DataFrame:
    every = table.scan(columns=None).to_polars()   # a large scan: no cache involved
    return every.filter(pl.col("symbol").cast(pl.String) == symbol)


@pytest.fixture()
def fresh_cache():
    clear_process_caches()
    yield
    clear_process_caches()


def test_point_reads_match_polars_and_come_from_the_cache(tmp_path, fresh_cache):
    table = make(tmp_path / "a", seed=1)
    symbols = table.scan(columns=["symbol"]).to_polars()["symbol"].cast(pl.String).unique()
    for symbol in symbols.to_list()[:8]:
        want = oracle(table, symbol)
        for _ in range(2):   # decoded once, then served from memory
            got = table.scan(dates="2007-08-01", symbols=[symbol]).to_polars()
            assert got.with_columns(pl.col(pl.Categorical).cast(pl.String)).equals(
                want.with_columns(pl.col(pl.Categorical).cast(pl.String)))
    cache = process_cache(table.db.session.nodes.store, table.db.settings.cache_bytes)
    assert cache is not None
    stats = cache.stats()
    assert stats["hits"] >= 8 and stats["misses"] >= 1


def test_cached_batches_survive_the_file_and_each_database_reads_its_own(tmp_path, fresh_cache):
    a, b = make(tmp_path / "a", seed=1), make(tmp_path / "b", seed=2)
    symbol = "IBM"
    first_a = a.scan(symbols=[symbol]).to_arrow()
    first_b = b.scan(symbols=[symbol]).to_arrow()
    assert not first_a.equals(first_b)   # different seeds: different quotes
    # the decoded batches are in memory: the files are no longer read
    for fragment in a.snapshot().fragments():
        os.remove(os.path.join(str(tmp_path / "a"), fragment.file))
    assert a.scan(symbols=[symbol]).to_arrow().equals(first_a)
    assert b.scan(symbols=[symbol]).to_arrow().equals(first_b)


def test_without_a_cache_every_read_goes_to_the_file(tmp_path, fresh_cache):
    table = make(tmp_path / "a", seed=1)
    uncached = hfq.connect(str(tmp_path / "a"), cache_bytes=0)["quotes"]
    uncached.scan(symbols=["IBM"]).to_arrow()
    for fragment in table.snapshot().fragments():
        os.remove(os.path.join(str(tmp_path / "a"), fragment.file))
    with pytest.raises(CorruptPartitionError, match="missing"):
        uncached.scan(symbols=["IBM"]).to_arrow()
