"""History, reads as of a time/version/tag, snapshots and retention (issue 27, What to build
3-4): every commit's who/what/when/why; as_of's written semantics (UTC, naive is UTC, the
newest version at or before the instant, an error before the first) in O(log versions)
record reads; vacuum keeping what tags, snapshots and keep_for need; a catalog written by
main at 13134c5 still reads, travels in time and takes commits."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import shutil

import numpy as np
import polars as pl
import pytest
from changekit import DAYS, make, rows, same

import hfq
from hfq.catalog import timeline
from hfq.catalog.history import annotate
from hfq.errors import ArgumentError

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "main-13134c5")
UTC = dt.timezone.utc


@pytest.fixture
def db(tmp_path):
    return hfq.connect(str(tmp_path / "db"), user="ana", batch_rows=16)


def at(m) -> dt.datetime:
    return dt.datetime.fromtimestamp(m.committed_at, UTC)


# -- history --
def test_every_commit_records_who_what_when_and_why(db, tmp_path, monkeypatch):
    t = make(db)
    first = rows(120, 1)
    t.append(first, message="vendor file 1")
    csv = tmp_path / "day.csv"
    rows(50, 2).write_csv(csv)
    monkeypatch.setenv("HFQ_JOB_ID", "env-job")
    with annotate(message="nightly load", job="job-42"):
        db.load_csv("t", str(csv))
    t.delete(dates=DAYS[0], where=pl.col("seq") == 0, message="busted trades")
    h = t.refresh().history()
    assert h["version"].to_list() == [3, 2, 1, 0]
    assert h["operation"].to_list() == ["delete", "load_csv", "append", "create"]
    assert h["user"].to_list() == ["ana"] * 4
    assert h["message"].to_list() == ["busted trades", "nightly load", "vendor file 1", None]
    assert h["job"].to_list() == ["env-job", "job-42", None, None]
    assert h["committed_at"].is_sorted(descending=True)
    assert h["committed_at"].dtype == pl.Datetime("us", "UTC")
    deleted = t.scan(version=2, dates=DAYS[0], where=pl.col("seq") == 0).count()
    assert h.row(0, named=True)["rows_removed"] == deleted > 0
    assert json.loads(h["arguments"][0]) == {"where": str(pl.col("seq") == 0),
                                            "dates": DAYS[0].isoformat(), "symbols": None}
    assert h.row(1, named=True)["source_files"] == [str(csv)]
    assert h.row(1, named=True)["source_sha256"] == [hashlib.sha256(csv.read_bytes())
                                                     .hexdigest()]
    per = t.history(partitions=True)
    appended = per.filter(pl.col("version") == 1)
    assert appended["rows_added"].sum() == 120 and appended["rows_removed"].sum() == 0
    parts = t.snapshot(1).partitions
    assert {p: (a, r) for p, a, r in appended.select("partition", "rows_added",
                                                    "rows_removed").rows()} == \
        {p: (e.rows, 0) for p, e in parts.items()}


def test_the_user_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HFQ_USER", "bot")
    t = make(hfq.connect(str(tmp_path / "db")))
    t.append(rows(10, 1))
    assert t.history()["user"].to_list() == ["bot", "bot"]


# -- as of --
def test_as_of_a_time_names_the_newest_version_at_or_before_it(db):
    t = make(db)
    frames = [rows(30, i) for i in range(1, 5)]
    for f in frames:
        t.append(f)
    ms = [t.snapshot(v) for v in t.versions()]
    for m in ms:
        assert t.scan(as_of=at(m)).count() == m.rows                          # at the instant
        assert t.scan(as_of=at(m) + dt.timedelta(microseconds=1)).count() == m.rows
    for older, newer in zip(ms, ms[1:]):
        between = at(older) + (at(newer) - at(older)) / 2
        assert t.query(as_of=between).source.manifest.version == older.version
        naive = between.replace(tzinfo=None)                                    # naive is UTC
        assert t.query(as_of=naive).source.manifest.version == older.version
        paris = between.astimezone(dt.timezone(dt.timedelta(hours=1)))          # aware: converted
        assert t.query(as_of=paris).source.manifest.version == older.version
        iso = between.isoformat().replace("+00:00", "Z")
        assert t.query(as_of=iso).source.manifest.version == older.version
        as_np = np.datetime64(naive, "us")
        assert t.query(as_of=as_np).source.manifest.version == older.version
    assert same(t.scan(as_of=2), pl.concat(frames[:2]))
    with pytest.raises(ArgumentError, match="before table 't''s first version") as err:
        t.scan(as_of=at(ms[0]) - dt.timedelta(seconds=1))
    assert err.value.argument == "as_of"
    with pytest.raises(ArgumentError, match="nor a tag"):
        t.scan(as_of="no-such-tag")
    with pytest.raises(ArgumentError):
        t.scan(as_of=2, version=2)


def test_as_of_reads_log_versions_records_not_the_chain(db, monkeypatch):
    t = make(db)
    for i in range(64):
        t.append(rows(2, i))
    catalog = hfq.connect(db.session.store.root).session.catalog   # nothing cached
    reads: list[str] = []
    read, listdir = catalog.store.read_bytes, catalog.store.listdir
    monkeypatch.setattr(catalog.store, "read_bytes", lambda rel: (reads.append(rel), read(rel))[1])
    monkeypatch.setattr(catalog.store, "listdir", lambda rel: (reads.append(rel), listdir(rel))[1])
    target = t.snapshot(40)
    assert timeline.as_of(catalog, "t", at(target)) == 40
    assert not [r for r in reads if r.endswith("_versions")]   # never listed
    # bisection and interpolation alternate: at most 2 log2 records on any history
    assert len([r for r in reads if "/_versions/" in r]) <= 2 * math.ceil(math.log2(65))


def test_the_versions_times_never_go_back_with_the_clock(db, monkeypatch):
    t = make(db)
    t.append(rows(5, 1))
    import hfq.catalog.records as records
    real = records.time.time
    monkeypatch.setattr(records.time, "time", lambda: real() - 3600)   # the clock set back
    t.append(rows(5, 2))
    assert t.snapshot(2).committed_at >= t.snapshot(1).committed_at


def test_tags_and_snapshots_pin_versions_vacuum_keeps(db):
    t = make(db)
    other = db.create_table("u", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    frames = [rows(40, i) for i in range(1, 6)]
    for f in frames[:2]:
        t.append(f)
    t.tag("paper-v1")                                   # version 2
    pins = db.snapshot("eod-2024-01-02")
    assert pins == {"t": 2, "u": 0}
    for f in frames[2:]:
        t.append(f)
    other.append(hfq.synth.taq_table(rows_per_day=50, symbols=3))
    with pytest.raises(ArgumentError, match="exists already"):
        t.tag("paper-v1", version=4)
    with pytest.raises(ArgumentError, match="starting with a letter"):
        t.tag("2024-01-02")
    report = t.vacuum(keep_versions=1, grace_s=0)
    assert t.versions() == [2, 5] and report["versions_forgotten"] == 4
    assert same(t.scan(as_of="paper-v1"), pl.concat(frames[:2]))
    assert same(t.scan(as_of="eod-2024-01-02"), pl.concat(frames[:2]))
    assert other.scan(as_of="eod-2024-01-02").count() == 0
    db.drop_snapshot("eod-2024-01-02")
    t.drop_tag("paper-v1")
    t.vacuum(keep_versions=1, grace_s=0)
    assert t.versions() == [5]
    assert same(t, pl.concat(frames))


def test_keep_for_keeps_every_version_a_read_in_the_window_needs(db, monkeypatch):
    t = make(db)
    for i in range(4):
        t.append(rows(10, i))
    ms = {v: t.snapshot(v) for v in t.versions()}
    now = at(ms[4]) + dt.timedelta(hours=1)
    import hfq.catalog.catalog as catalog_module
    monkeypatch.setattr(catalog_module.time, "time", lambda: now.timestamp())
    # the window starts between versions 2 and 3 (by their times, shifted): 2 is needed
    start = at(ms[2]) + (at(ms[3]) - at(ms[2])) / 2
    t.vacuum(keep_for=now - start, grace_s=0)
    assert t.versions() == [2, 3, 4]
    assert t.query(as_of=start).source.manifest.version == 2
    with pytest.raises(ArgumentError, match="forgotten by vacuum"):
        t.scan(as_of=at(ms[1]))


# -- a catalog written by today's main --
def test_a_catalog_written_by_main_reads_travels_and_takes_commits(tmp_path):
    root = str(tmp_path / "db")
    shutil.copytree(FIXTURE, root)
    t = hfq.connect(root)["q"]
    assert t.version == 3 and len(t) == 150
    want = hfq.synth.taq_table(dates=("2024-01-02", "2024-01-03"), rows_per_day=60, symbols=6,
                               seed=1)
    assert same(t.scan(version=1), pl.from_arrow(want))
    h = t.history()
    assert h["operation"].to_list() == ["compact", "append", "append", "create"]
    assert h["user"].null_count() == 4 and h["rows_added"].null_count() == 4
    assert t.query(as_of=at(t.snapshot(2))).source.manifest.version == 2
    report = t.delete(symbols=t.to_polars()["symbol"].cast(pl.String)[0])
    assert report.changed and t.version == 4
    assert t.history()["user"][0] is not None
    t.tag("after-upgrade")
    assert hfq.connect(root)["q"].scan(as_of="after-upgrade").count() == len(t)


def test_hfq_history_prints_and_emits_the_history(db, capsys):
    from hfq.cli import main
    t = make(db)
    t.append(rows(30, 1), message="first")
    t.delete(where=pl.col("seq") == 0)
    root = db.session.store.root
    assert main(["--root", root, "--json", "history", "t", "--last", "2"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = t.history().head(2)
    assert [r["version"] for r in got] == want["version"].to_list() == [2, 1]
    assert [r["rows_removed"] for r in got] == want["rows_removed"].to_list()
    assert got[1]["message"] == "first" and got[0]["user"] == "ana"
    assert main(["--root", root, "history", "t", "--partitions"]) == 0
    out = capsys.readouterr().out
    assert all(p in out for p in t.history(partitions=True)["partition"].to_list())
