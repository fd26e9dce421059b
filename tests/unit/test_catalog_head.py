"""The newest version, a version by number and the version of an instant are found without
listing the versions (issue 27: ``as_of`` on 10,000 versions costs <= 2x on 10; a commit is
flat in history length): the store calls are counted, not timed.  The highest claim is the
hint of the head, verified against the records: a commit that died between its publish and its
claim, a stale claim, a claim whose record is gone, all give the head the records say."""

from __future__ import annotations

import datetime as dt
import math
import os
import uuid
from collections import Counter
from typing import Any

import pytest

import hfq
from hfq import faults
from hfq.catalog import Catalog, Transaction, timeline
from hfq.catalog.catalog import CLAIMS, VERSIONS
from hfq.errors import ArgumentError, ManifestError, TableNotFoundError
from hfq.schema import DATE, LONG, SYMBOL, Schema
from hfq.storage.store import open_store

SCHEMA = Schema({"sym": SYMBOL, "d": DATE, "id": LONG})
BUCKET = "hfq-test"   # the bucket tests/conftest.py's s3_server makes
COUNTED = ("listdir", "exists", "read_bytes", "stamp", "walk_files")


class Counting:
    """A store that counts the calls made through it (and what each listing returned)."""

    def __init__(self, store: Any) -> None:
        self.inner = store
        self.calls: Counter[str] = Counter()
        self.listed: Counter[str] = Counter()   # directory name -> entries returned

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self.inner, attr)
        if attr not in COUNTED:
            return value

        def counted(rel: str, *args: Any, **kwargs: Any) -> Any:
            self.calls[attr] += 1
            out = value(rel, *args, **kwargs)
            if attr == "listdir":
                self.listed[rel.rsplit("/", 1)[-1]] += len(out)
            return out
        return counted

    def reset(self) -> None:
        self.calls.clear()
        self.listed.clear()


def table(root: str, versions: int, options: dict[str, Any] | None = None) -> Catalog:
    """A table with versions 0..versions-1 (empty commits: only their number matters)."""
    catalog = Catalog(open_store(root, options))
    catalog.create("t", SCHEMA, hfq.Value("d"), ("id",))
    for _ in range(versions - 1):
        catalog.commit(Transaction(catalog, catalog.snapshot("t")), "append")
    return catalog


def costs(root: str, versions: int, options: dict[str, Any] | None = None
          ) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """The store calls (and entries listed) of each lookup, on a fresh catalog each time."""
    middle = timeline.committed(Catalog(open_store(root, options)).version("t", versions // 2)
                                .committed_at)
    lookups = {
        "head": lambda c: c.snapshot("t").version == versions - 1,
        "by number": lambda c: c.snapshot("t", versions // 3).version == versions // 3,
        "as_of number": lambda c: timeline.as_of(c, "t", versions // 3) == versions // 3,
        "as_of time": lambda c: timeline.as_of(c, "t", middle) == versions // 2,
        "commit": lambda c: c.commit(Transaction(c, c.snapshot("t")), "append").version
        == versions,
    }
    out = {}
    for what, lookup in lookups.items():
        store = Counting(open_store(root, options))
        assert lookup(Catalog(store)), what   # type: ignore[arg-type]
        out[what] = (dict(store.calls), dict(store.listed))
    return out


def test_lookups_cost_the_same_store_calls_on_10_and_on_400_versions(tmp_path):
    table(str(tmp_path / "few"), 10)
    table(str(tmp_path / "many"), 400)
    flat(costs(str(tmp_path / "few"), 10), costs(str(tmp_path / "many"), 400), 10, 400)


@pytest.fixture(params=["memory", "s3"])
def remote(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any] | None]:
    """A fresh root on an object store (fsspec ``memory://``, moto's S3): url, options."""
    prefix = f"hfqhead-{uuid.uuid4().hex[:12]}"
    if request.param == "memory":
        return f"memory://{prefix}", None
    return f"s3://{BUCKET}/{prefix}", request.getfixturevalue("s3_server")


def test_on_an_object_store_lookups_are_flat_and_an_unclaimed_commit_is_the_head(remote):
    url, options = remote
    table(f"{url}/few", 4, options)
    table(f"{url}/many", 40, options)
    flat(costs(f"{url}/few", 4, options), costs(f"{url}/many", 40, options), 4, 40)
    catalog = Catalog(open_store(f"{url}/few", options))
    faults.arm("catalog.commit.before_claim", "raise")
    try:
        with pytest.raises(faults.FaultInjected):
            catalog.commit(Transaction(catalog, catalog.snapshot("t")), "append")
    finally:
        faults.disarm()
    fresh = Catalog(open_store(f"{url}/few", options))
    assert fresh.snapshot("t").version == 5   # (costs committed version 4)
    assert fresh.commit(Transaction(fresh, fresh.snapshot("t")), "append").version == 6


def flat(few: dict[str, Any], many: dict[str, Any], n_few: int, n_many: int) -> None:
    """The lookups on ``n_many`` versions cost what they cost on ``n_few`` (as_of by time:
    a few more records read, as log2)."""
    for what in few:
        (calls_few, listed_few), (calls_many, listed_many) = few[what], many[what]
        assert VERSIONS not in listed_many, f"{what} listed the versions"
        assert listed_many == listed_few, what            # the same listings, as long
        assert calls_many["listdir"] == calls_few["listdir"], what
        if what == "as_of time":   # a binary search: the records read grow as log2
            extra = math.ceil(math.log2(n_many)) - math.floor(math.log2(n_few))
            assert calls_many["read_bytes"] <= calls_few["read_bytes"] + extra
            assert calls_many["exists"] <= calls_few["exists"] + 2 * extra
        else:
            assert calls_many == calls_few, what


def test_a_commit_killed_between_its_publish_and_its_claim_is_the_head(tmp_path):
    root = str(tmp_path / "db")
    catalog = table(root, 5)
    txn = Transaction(catalog, catalog.snapshot("t"))
    txn.record_load("day.csv", 3, "ab" * 32)   # the commit writes pieces: a ledger, a history
    faults.arm("catalog.commit.before_claim", "raise")
    try:
        with pytest.raises(faults.FaultInjected):
            catalog.commit(txn, "load")
    finally:
        faults.disarm()
    assert sorted(os.listdir(tmp_path / "db" / "t" / CLAIMS)) == [f"{4:020d}"]   # 5: unclaimed
    fresh = Catalog(open_store(root))
    assert fresh.snapshot("t").version == 5 == fresh.head("t")
    assert [r.path for r in fresh.loads(fresh.snapshot("t"))] == ["day.csv"]   # pieces kept
    assert fresh.history_detail(fresh.snapshot("t")) is not None
    assert timeline.as_of(fresh, "t", dt.datetime.now(dt.timezone.utc)) == 5
    assert fresh.commit(Transaction(fresh, fresh.snapshot("t")), "append").version == 6
    assert Catalog(open_store(root)).versions("t") == list(range(7))


def test_a_stale_claim_is_probed_past_and_a_claim_without_its_record_is_named(tmp_path):
    root = str(tmp_path / "db")
    catalog = table(root, 8)
    claims = tmp_path / "db" / "t" / CLAIMS
    for name in os.listdir(claims):
        os.remove(claims / name)
    (claims / f"{2:020d}").write_bytes(b"")            # stale: 5 versions behind
    assert Catalog(open_store(root)).snapshot("t").version == 7
    (claims / f"{3:020d}").write_bytes(b"")
    (claims / "garbage").write_bytes(b"")              # not a number: not a claim
    assert Catalog(open_store(root)).head("t") == 7
    (claims / f"{9:020d}").write_bytes(b"")            # claimed, no record: the head deleted?
    with pytest.raises(ManifestError, match="version 9 was committed but its record"):
        Catalog(open_store(root)).snapshot("t")
    os.remove(claims / f"{9:020d}")
    os.remove(tmp_path / "db" / "t" / VERSIONS / f"{7:020d}.json")   # the claim's record
    (claims / f"{7:020d}").write_bytes(b"")
    with pytest.raises(ManifestError, match="version 7 was committed"):
        Catalog(open_store(root)).snapshot("t")
    (claims / f"{7:020d}.lost").write_bytes(b"")       # given up by check --repair
    fresh = Catalog(open_store(root))
    assert fresh.snapshot("t").version == 6
    assert fresh.commit(Transaction(fresh, fresh.snapshot("t")), "append").version == 8
    del catalog


def test_no_claims_at_all_falls_back_to_the_listing(tmp_path):
    root = str(tmp_path / "db")
    table(root, 6)
    claims = tmp_path / "db" / "t" / CLAIMS
    for name in os.listdir(claims):
        os.remove(claims / name)
    for v in (1, 2, 3):   # forgotten by a vacuum: the head is not the count
        os.remove(tmp_path / "db" / "t" / VERSIONS / f"{v:020d}.json")
    store = Counting(open_store(root))
    assert Catalog(store).snapshot("t").version == 5   # type: ignore[arg-type]
    assert store.listed[VERSIONS] == 3


def test_versions_by_number_and_time_with_gaps_from_vacuum_and_lost_numbers(tmp_path):
    root = str(tmp_path / "db")
    catalog = table(root, 40)
    times = {v: catalog.version("t", v).committed_at for v in range(40)}
    gone = [*range(1, 25), 31]   # what a vacuum forgot (a pin kept 0) and a lost number
    for v in gone:
        os.remove(tmp_path / "db" / "t" / VERSIONS / f"{v:020d}.json")
    fresh = Catalog(open_store(root))
    kept = [v for v in range(40) if v not in gone]
    assert fresh.versions("t") == kept
    for v in range(41):
        assert fresh.on_record("t", v) == (v in kept)
        if v in kept:
            assert fresh.snapshot("t", v).version == v
        else:
            with pytest.raises(TableNotFoundError, match=f"no version {v} on record"):
                fresh.snapshot("t", v)
    for v in range(40):   # at, and just after, each version's instant: the oracle by listing
        for moment in (times[v], times[v] + 1e-6):
            want = max(k for k in kept if times[k] <= moment)
            got = timeline.as_of(fresh, "t", timeline.committed(moment))
            assert got == want, (v, moment)
    with pytest.raises(ArgumentError, match="before table 't''s first version on record"):
        timeline.as_of(fresh, "t", timeline.committed(times[0] - 1))
