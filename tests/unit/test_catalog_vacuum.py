"""A vacuum that follows the change (issue 16): after a first vacuum, each one looks only at
the partitions the catalog changed (new pieces, forgotten versions), the directories changed
on the node and those where a file was spared -- and still never removes a file a retained
version references, and still removes every leftover.

Each test makes the directories look old (``age``) wherever the catalog alone must point the
vacuum at them; the oracle is the set of files the kept versions reference, computed from
every kept manifest (the full, pre-split way), and the rows of every version against polars.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from test_catalog_split import ids, make, oracle, rows

import hfq
from conftest import ROOT
from hfq.catalog.files import list_changed_files
from hfq.catalog.vacuum import vacuum_scope
from hfq.storage.store import HOST


def age(root: str, seconds: float = 3600) -> None:
    """Every directory of table ``t`` (and every file, with ``files``) looks ``seconds`` old:
    only the catalog, or the vacuum's own record, can point a vacuum at them now."""
    past = time.time() - seconds
    for d, _, _ in os.walk(os.path.join(root, "t", "data")):
        os.utime(d, (past, past))


def data_files(root: str) -> set[str]:
    base = os.path.join(root, "t", "data")
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(base)
            for f in fs}


def kept_files(t: hfq.Table) -> set[str]:
    catalog = t.db.session.catalog
    return {f.file for m in catalog.kept_manifests(t.name) for f in m.fragments()}


def plant(root: str, partition: str, name: str) -> str:
    """A copy of some data file of ``partition`` under ``name``; its path (root-relative)."""
    where = os.path.join(root, "t", "data", partition)
    source = next(f for f in sorted(os.listdir(where)) if f.endswith(".arrow"))
    with open(os.path.join(where, source), "rb") as f, \
            open(os.path.join(where, name), "wb") as out:
        out.write(f.read())
    return os.path.relpath(os.path.join(where, name), root)


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_retained_versions_keep_their_files_and_forgotten_ones_lose_them(tmp_path):
    root = str(tmp_path / "db")
    t, batches = make(root, 3)
    t.vacuum(grace_s=0)                           # full: the state is recorded
    t.append(rows(2, 7000))                       # version 4: day 2, two files a partition
    t.compact()                                   # version 5: day 2's old files replaced
    expected = {v: oracle(*batches[:v]) for v in (1, 2, 3)}
    expected[4] = expected[5] = oracle(*batches, rows(2, 7000))
    age(root)
    assert t.vacuum(grace_s=0)["files_removed"] == 0
    assert data_files(root) == kept_files(t)      # version 4 still needs day 2's old files
    fresh = hfq.connect(root)["t"]
    for version, want in expected.items():
        assert ids(fresh, version=version) == want, version
    age(root)                                     # only the forgotten pieces point at them
    report = t.vacuum(keep_versions=1, grace_s=0)
    assert report["versions_forgotten"] == 5 and report["files_removed"] > 0
    assert data_files(root) == kept_files(t) == hfq.connect(root)["t"].snapshot().files()
    assert ids(hfq.connect(root)["t"]) == expected[5]
    assert not [n for n in os.listdir(os.path.join(root, "t", "_manifests"))
                if n not in {r.name for r in t.refresh().snapshot().partitions.refs.values()}]
    assert hfq.connect(root).check() == []


def test_leftovers_where_nothing_was_committed_still_go(tmp_path):
    root = str(tmp_path / "db")
    t, batches = make(root, 2)
    t.vacuum(grace_s=0)
    part = "d=v2024-01-01/sym=h0"
    dead = plant(root, part, f"{int(time.time() * 1000)}-{HOST}-{dead_pid()}-0a1b2c3d-x-1.arrow")
    age(root, 0)                                  # its directory changed just now
    assert t.vacuum(grace_s=3600)["files_removed"] == 1 and dead not in data_files(root)
    # another host's file, young: spared; later, only the vacuum's record points back at it
    elsewhere = plant(root, part, f"{int(time.time() * 1000)}-ffffffff-1-0a1b2c3d-x-1.arrow")
    assert t.vacuum(grace_s=3600)["files_removed"] == 0 and elsewhere in data_files(root)
    past = time.time() - 7200
    os.utime(os.path.join(root, elsewhere), (past, past))
    age(root)
    assert t.vacuum(grace_s=3600)["files_removed"] == 1
    assert data_files(root) == kept_files(t)
    assert ids(hfq.connect(root)["t"]) == oracle(*batches)


def test_a_vacuum_after_a_one_day_append_lists_that_day_only(tmp_path):
    root = str(tmp_path / "db")
    t, _ = make(root, 3)
    t.vacuum(grace_s=0)
    age(root)
    t.append(rows(3, 5000))
    scope = vacuum_scope(t.db.session.catalog, "t")
    [node] = t.db.session.nodes.alive()
    listing = list_changed_files(t.db.session.nodes.context().store, "t", *scope.listing_args(node))
    data = {rel for rel, _ in listing.files if "/data/" in rel}
    assert not listing.full and data
    assert {rel.split("/")[2] for rel in data} == {"d=v2024-01-03"}
    assert all(f in data for f in kept_files(t) if "/d=v2024-01-03/" in f)


def test_an_unusable_vacuum_record_means_a_full_vacuum(tmp_path):
    root = str(tmp_path / "db")
    t, batches = make(root, 2)
    t.vacuum(grace_s=0)
    orphan = plant(root, "d=v2024-01-02/sym=h1",
                   f"{int(time.time() * 1000)}-{HOST}-{dead_pid()}-0a1b2c3d-x-1.arrow")
    age(root)                                     # nothing points at it but a full listing
    with open(os.path.join(root, "t", ".vacuum.json"), "w") as f:
        f.write('{"versions": [0, 1')
    assert t.vacuum(grace_s=0)["files_removed"] == 1 and orphan not in data_files(root)
    assert data_files(root) == kept_files(t)
    assert ids(hfq.connect(root)["t"]) == oracle(*batches)


CRASHING_APPEND = """
import datetime as dt, sys
import pyarrow as pa
import hfq
n = 30
hfq.connect(sys.argv[1])["t"].append(pa.table({
    "sym": pa.array([f"S{i % 11}" for i in range(n)]).dictionary_encode(),
    "d": pa.array([dt.date(2024, 1, 2)] * n, pa.date32()),
    "id": pa.array(range(9000, 9000 + n), pa.int64())}))
"""


def test_a_commit_killed_before_publishing_leaves_nothing_after_a_vacuum(tmp_path):
    """The writer dies (kill -9 at the fault point) with its pieces and files written; the
    directories look old, so only its orphan pieces point the vacuum at its files."""
    root = str(tmp_path / "db")
    t, batches = make(root, 2)
    t.vacuum(grace_s=0)
    env = dict(os.environ, HFQ_FAULTS="catalog.commit.before_publish=crash",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", CRASHING_APPEND, root], env=env,
                          capture_output=True)
    assert done.returncode == 137, done.stderr.decode()
    left = data_files(root) - kept_files(t)
    assert left, "the killed append wrote files"
    age(root)
    assert t.vacuum(grace_s=0)["files_removed"] >= len(left) + 1   # + its pieces
    assert data_files(root) == kept_files(t)
    head = {r.name for r in t.refresh().snapshot().partitions.refs.values()}
    assert set(os.listdir(os.path.join(root, "t", "_manifests"))) == head
    assert ids(hfq.connect(root)["t"]) == oracle(*batches)
