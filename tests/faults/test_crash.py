"""Crashes and races made exact with fault points (issue 14 item 6): no sleep-and-hope.

* A writer killed (``os._exit(137)``, as ``kill -9``) at each fault point of an append, a CSV
  load, a compaction, a failed write's cleanup and a vacuum leaves the table at exactly the old
  version (or, once published, the new one): every row compared with a polars oracle, every
  copy verified, and ``vacuum()`` then leaves exactly the files the kept versions reference.
* Two writers: A has read the head and is held before it publishes while B commits; when A
  goes on, both appends are there and no version number was used twice (this fails when the
  commit's create-if-absent is replaced by a plain rename or overwrite).
* Two compactions of one partition: the one that commits second is a conflict, not a doubled
  partition.
* A node's server dies while a job runs: each of its units runs again on another holder and
  every result is delivered exactly once; a unit with no live holder is a named error.

Every writer here runs embedded (no Ray): the same commit, write and cleanup code as a cluster.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest
from faultkit import (
    assert_no_leftovers,
    assert_versions,
    canonical,
    in_thread,
    require_point,
    run_child,
    start_child,
)

import hfq
from hfq import faults, synth
from hfq.errors import CommitConflictError, HfqError, PartitionUnavailableError

pytestmark = pytest.mark.timeout(180)

TABLE = "q"
SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))
ROWS = 400
SETTINGS = {"batch_rows": 128, "csv_block_bytes": 4096, "memory_budget": 1 << 20}

#: what the template holds: two appends, so every partition has two files (for compaction)
OLD = [{"dates": ["2024-01-02", "2024-01-03"], "rows_per_day": ROWS, "symbols": 20, "seed": 1},
       {"dates": ["2024-01-02", "2024-01-03"], "rows_per_day": ROWS, "symbols": 20, "seed": 2}]
#: what an append adds (a new day and an old one)
NEW_APPEND = {"dates": ["2024-01-03", "2024-01-04"], "rows_per_day": ROWS, "symbols": 20,
              "seed": 3}
#: what a CSV load adds
NEW_LOAD = {"dates": ["2024-01-05", "2024-01-08"], "rows_per_day": ROWS, "symbols": 20,
            "seed": 4}


def frame(spec: dict[str, Any]) -> pl.DataFrame:
    return canonical(synth.taq_table(**{**spec, "dates": tuple(spec["dates"])}))


def oracle(*specs: dict[str, Any]) -> pl.DataFrame:
    return canonical(pl.concat([frame(s) for s in specs]))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> dict[str, Any]:
    """A database root at version 2 (two appends), and the CSV files of a load."""
    base = tmp_path_factory.mktemp("crash")
    db = hfq.connect(str(base / "db"), **SETTINGS)
    t = db.create_table(TABLE, hfq.schemas.TAQ, partition_by=SCHEME,
                        sort_by=("symbol", "time"))
    for spec in OLD:
        t.append(synth.taq_table(**{**spec, "dates": tuple(spec["dates"])}))
    assert t.version == 2
    csv = synth.taq_csv_files(base / "csv", dates=tuple(NEW_LOAD["dates"]),
                              rows_per_day=ROWS, symbols=20, seed=NEW_LOAD["seed"])
    return {"root": base / "db", "csv": [str(p) for p in csv], "old": oracle(*OLD)}


def fresh(template: dict[str, Any], tmp_path) -> str:
    root = tmp_path / "db"
    shutil.copytree(template["root"], root)
    return str(root)


def op_args(op: str, template: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = {"settings": SETTINGS}
    if op == "append":
        args.update(NEW_APPEND)
    elif op == "load":
        args["paths"] = template["csv"]
    return args


def expected_rows(op: str, version: int, template: dict[str, Any]) -> pl.DataFrame:
    if version == 2 or op in ("compact", "vacuum"):
        return template["old"]
    return oracle(*OLD, NEW_APPEND if op == "append" else NEW_LOAD)


# (operation, HFQ_FAULTS, the version the table must be at afterwards)
CRASHES = [
    ("append", "write.fragment.after_put=crash", 2),
    ("append", "write.fragment.after_put=crash@3", 2),
    ("append", "write.before_commit=crash", 2),
    ("append", "write.before_commit=raise,write.abort.before_remove=crash", 2),
    ("append", "catalog.commit.before_publish=crash", 2),
    ("append", "catalog.commit.before_claim=crash", 3),   # published, its number unclaimed
    ("append", "catalog.commit.after_publish=crash", 3),
    ("load", "ingest.csv.after_block=crash@2", 2),
    ("load", "write.fragment.after_put=crash@4", 2),
    ("load", "write.before_commit=crash", 2),
    ("load", "catalog.commit.before_publish=crash", 2),
    ("compact", "write.fragment.after_put=crash@2", 2),
    ("compact", "compact.before_commit=crash", 2),
    ("compact", "catalog.commit.after_publish=crash", 3),
    ("vacuum", "vacuum.before_remove=crash", 2),
]


@pytest.mark.parametrize("op,fault,version", CRASHES,
                         ids=[f"{op}-{fault}" for op, fault, _ in CRASHES])
def test_killed_at_a_fault_point_the_table_is_at_the_old_or_the_new_version(
        template, tmp_path, op, fault, version):
    for item in fault.split(","):
        require_point(item.split("=")[0])
    root = fresh(template, tmp_path)
    if op == "vacuum":   # something for vacuum to remove: the files of a killed append
        crashed = run_child(root, TABLE, "append", op_args("append", template),
                            fault="write.before_commit=crash")
        assert crashed.returncode == 137, crashed.stderr
    done = run_child(root, TABLE, op, op_args(op, template), fault=fault)
    assert done.returncode == 137, (f"{op} did not die at {fault} (exit {done.returncode}):\n"
                                    f"{done.stdout}\n{done.stderr}")
    assert "done" not in done.stdout

    db = hfq.connect(root)
    t = db[TABLE]
    assert_versions(t, version)
    want = expected_rows(op, version, template)
    assert canonical(t.to_arrow()).equals(want)
    assert len(t) == want.height
    assert t.verify() == len(t.snapshot().files())
    if op == "vacuum":   # the killed vacuum removed nothing a version needs; this one the rest
        assert t.vacuum(grace_s=0)["files_removed"] > 0
    else:
        t.vacuum(grace_s=0)
    assert_no_leftovers(t, root)
    assert canonical(t.to_arrow()).equals(want)
    # and it takes the next commit, under the next number
    assert t.append(synth.taq_table(dates=("2024-01-09",), rows_per_day=50, symbols=3)) == \
        version + 1
    assert_versions(t, version + 1)


def test_a_point_that_is_not_reached_is_noticed(template, tmp_path):
    """The harness itself: an armed point the operation never reaches leaves the process
    running to the end (exit 0), so a crash test cannot pass by accident."""
    root = fresh(template, tmp_path)
    done = run_child(root, TABLE, "vacuum", {}, fault="compact.before_commit=crash")
    assert done.returncode == 0, done.stderr
    assert "done 2" in done.stdout


# -- two writers ---------------------------------------------------------------------------------
def append_in_thread(db: hfq.Database) -> tuple[threading.Thread, dict[str, Any]]:
    """Writer A: ``NEW_APPEND`` appended in a started thread (see ``in_thread``)."""
    return in_thread(lambda: db[TABLE].append(synth.taq_table(**{
        **NEW_APPEND, "dates": tuple(NEW_APPEND["dates"])})))


def test_a_writer_held_before_its_publish_while_another_commits_loses_nothing(template,
                                                                              tmp_path):
    """A has read the head (version 2) and written its next manifest; it is held at the
    atomic publish while B commits version 3; then A's publish of 3 must lose and A commit
    4 -- an overwrite there would silently drop B's rows."""
    root = fresh(template, tmp_path)
    db_a, db_b = hfq.connect(root, **SETTINGS), hfq.connect(root, **SETTINGS)
    reached, release = threading.Event(), threading.Event()
    publish = db_a.session.store.create_exclusive
    calls: list[str] = []

    def held(src: str, dst: str) -> bool:
        calls.append(dst)
        if len(calls) == 1:
            reached.set()
            assert release.wait(60)
        return publish(src, dst)

    db_a.session.store.create_exclusive = held   # type: ignore[method-assign]
    thread, result = append_in_thread(db_a)
    try:
        wait_for(lambda: reached.is_set() or not thread.is_alive())
        assert reached.is_set(), f"writer A never reached its atomic publish ({result})"
        b = db_b[TABLE]
        assert b.append(synth.taq_table(**{**NEW_LOAD, "dates": tuple(NEW_LOAD["dates"])})) == 3
    finally:
        release.set()
        thread.join(60)
    assert "error" not in result, result.get("error")
    assert result["value"] == 4
    assert len(calls) >= 2, "A's first publish went through although B had taken its number"
    t = hfq.connect(root)[TABLE]
    assert_versions(t, 4)
    assert canonical(t.to_arrow()).equals(oracle(*OLD, NEW_APPEND, NEW_LOAD))
    t.vacuum(grace_s=0)
    assert_no_leftovers(t, root)


def test_a_writer_held_between_reading_the_claims_and_the_head_loses_nothing(template,
                                                                             tmp_path):
    """A is held between its two reads of the catalog (the version claims and the head)
    while B commits version 3.  Read in that order, A's head includes B's version and A
    commits 4 on top of it; read the other way round (head 2, then claim 3), A would number
    its commit 4 on base 2 and publish it as the newest version without B's rows -- a lost
    append (seen once under load in tests/unit/test_catalog.py's two-process test)."""
    root = fresh(template, tmp_path)
    db_a, db_b = hfq.connect(root, **SETTINGS), hfq.connect(root, **SETTINGS)
    gate = tmp_path / "gate"
    faults.arm("catalog.commit.between_claims_and_head", f"pause:{gate}@1")
    thread, result = append_in_thread(db_a)
    try:
        wait_for(lambda: os.path.exists(f"{gate}.reached") or not thread.is_alive())
        assert os.path.exists(f"{gate}.reached"), f"writer A never got there ({result})"
        b = db_b[TABLE]
        assert b.append(synth.taq_table(**{**NEW_LOAD, "dates": tuple(NEW_LOAD["dates"])})) == 3
    finally:
        gate.touch()
        thread.join(60)
        faults.disarm()
    assert "error" not in result, result.get("error")
    assert result["value"] == 4
    t = hfq.connect(root)[TABLE]
    assert canonical(t.to_arrow()).equals(oracle(*OLD, NEW_APPEND, NEW_LOAD))
    t.vacuum(grace_s=0)
    assert_no_leftovers(t, root)


def test_a_writer_held_right_after_its_publish_does_not_commit_twice(template, tmp_path):
    """A has published version 3 and is held before it checks that 3 is the head, while B
    commits version 4 on top of A's 3.  A must then count its commit as done: withdrawing 3
    and applying its change again on top of 4 would store A's rows twice (seen as
    "duplicated rows" under load in tests/unit/test_catalog.py's two-process test)."""
    root = fresh(template, tmp_path)
    db_a, db_b = hfq.connect(root, **SETTINGS), hfq.connect(root, **SETTINGS)
    gate = tmp_path / "gate"
    faults.arm("catalog.commit.after_publish", f"pause:{gate}@1")
    thread, result = append_in_thread(db_a)
    try:
        wait_for(lambda: os.path.exists(f"{gate}.reached") or not thread.is_alive())
        assert os.path.exists(f"{gate}.reached"), f"writer A never got there ({result})"
        b = db_b[TABLE]
        assert b.append(synth.taq_table(**{**NEW_LOAD, "dates": tuple(NEW_LOAD["dates"])})) == 4
    finally:
        gate.touch()
        thread.join(60)
        faults.disarm()
    assert "error" not in result, result.get("error")
    assert result["value"] == 3
    t = hfq.connect(root)[TABLE]
    assert_versions(t, 4)
    assert canonical(t.to_arrow()).equals(oracle(*OLD, NEW_APPEND, NEW_LOAD))
    t.vacuum(grace_s=0)
    assert_no_leftovers(t, root)


def test_a_writer_process_paused_between_reading_the_head_and_publishing(template, tmp_path):
    """The same race across processes, with the commit's own fault point as the gate."""
    require_point("catalog.commit.before_publish")
    root = fresh(template, tmp_path)
    gate = tmp_path / "gate"
    a = start_child(root, TABLE, "append", op_args("append", template),
                    fault=f"catalog.commit.before_publish=pause:{gate}")
    try:
        wait_for(lambda: os.path.exists(f"{gate}.reached") or a.poll() is not None)
        assert a.poll() is None, a.communicate()[1]
        b = hfq.connect(root, **SETTINGS)[TABLE]
        assert b.append(synth.taq_table(**{**NEW_LOAD, "dates": tuple(NEW_LOAD["dates"])})) == 3
    finally:
        gate.touch()
        out, err = a.communicate(timeout=120)
    assert a.returncode == 0, err
    assert "done 4" in out
    t = b.refresh()
    assert_versions(t, 4)
    assert canonical(t.to_arrow()).equals(oracle(*OLD, NEW_APPEND, NEW_LOAD))


def wait_for(condition: Any, timeout: float = 60) -> None:
    """Poll ``condition`` (a file a gated process creates) until true."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the other process"
        time.sleep(0.01)


def test_two_compactions_of_one_partition_the_second_is_a_conflict(template, tmp_path):
    root = fresh(template, tmp_path)
    gate = tmp_path / "gate"
    db_a, db_b = hfq.connect(root, **SETTINGS), hfq.connect(root, **SETTINGS)
    faults.arm("compact.before_commit", f"pause:{gate}")   # the first to get there waits
    thread, result = in_thread(db_a[TABLE].compact)
    try:
        wait_for(lambda: os.path.exists(f"{gate}.reached") or not thread.is_alive())
        assert thread.is_alive(), result
        assert db_b[TABLE].compact() == 3
    finally:
        gate.touch()
        thread.join(60)
        faults.disarm()
    assert isinstance(result.get("error"), CommitConflictError), result
    t = hfq.connect(root)[TABLE]
    assert_versions(t, 3)
    assert canonical(t.to_arrow()).equals(template["old"])
    assert all(n == 1 for n in t.partitions()["files"])
    t.vacuum(grace_s=0)
    assert_no_leftovers(t, root)


# -- a node dies while a job runs ----------------------------------------------------------------
class _Ref:
    def __init__(self, server: str, units: list[Any]) -> None:
        self.server, self.units = server, units


class _Runtime:
    """Nodes ``n1..n3`` with one CPU each; the servers in ``dying`` fail every call they
    took (a dead actor) -- the node died with the job's units on it."""

    def __init__(self, names: list[str], dying: set[str]) -> None:
        self.names, self.dying = names, dying
        self.dead: set[str] = set()

    def alive(self) -> list[str]:
        return [n for n in self.names if n not in self.dead]

    def info(self, name: str) -> Any:
        return SimpleNamespace(cpus=1)

    def server(self, name: str) -> str:
        if name in self.dead:
            raise HfqError(f"node {name} is gone")
        return name

    def mark_dead(self, name: str) -> None:
        self.dead.add(name)


def _run_job(monkeypatch: pytest.MonkeyPatch, holders: list[tuple[str, ...]],
             dying: set[str]) -> tuple[dict[int, list[int]], dict[int, list[str]], _Runtime]:
    """Run one job of ``len(holders)`` units (unit i held by ``holders[i]``) through the
    executor with Ray's calls replaced: results by unit, and the nodes each unit ran on."""
    import ray
    from ray.exceptions import RayActorError

    from hfq.runtime.executor import execute
    from hfq.runtime.nodes import Nodes

    ran: dict[int, list[str]] = {}

    def get(ref: _Ref) -> list[int]:
        for u in ref.units:
            ran.setdefault(u.index, []).append(ref.server)
        if ref.server in dying:
            raise RayActorError()
        return [u.index * 10 for u in ref.units]

    monkeypatch.setattr(ray, "get", get)
    monkeypatch.setattr(ray, "wait", lambda refs, **kw: (refs[:1], refs[1:]))
    monkeypatch.setattr(ray, "cancel", lambda ref: None)
    runtime = _Runtime(sorted({n for h in holders for n in h} | dying), dying)
    nodes = Nodes(None, None, runtime)   # type: ignore[arg-type]
    units = [SimpleNamespace(index=i, partition=f"p{i}", rows=1,
                             fragments=[SimpleNamespace(file=f"t/data/p{i}/f", nodes=h)])
             for i, h in enumerate(holders)]
    results: dict[int, list[int]] = {}
    execute(nodes, units, lambda server, batch: _Ref(server, batch),
            lambda i, v: results.setdefault(i, []).append(v))
    return results, ran, runtime


def test_the_units_of_a_node_that_dies_run_again_on_another_holder(monkeypatch):
    holders = [("n1", "n2"), ("n1", "n3"), ("n2", "n1"), ("n1", "n2"), ("n3", "n1"),
               ("n1", "n2"), ("n1", "n3"), ("n2", "n3")]
    results, ran, runtime = _run_job(monkeypatch, holders, {"n1"})
    assert results == {i: [i * 10] for i in range(len(holders))}   # each exactly once
    assert runtime.dead == {"n1"}
    rerun = [i for i, nodes in ran.items() if nodes[0] == "n1"]
    assert rerun, "no unit was ever given to the node that died"
    for i in rerun:   # ... and each of those ran again, on a live holder
        assert len(ran[i]) == 2 and ran[i][1] in holders[i] and ran[i][1] != "n1"


def test_a_unit_whose_only_holder_dies_is_a_named_error(monkeypatch):
    holders = [("n2", "n3"), ("n1",), ("n1", "n2"), ("n1",)]
    with pytest.raises(PartitionUnavailableError) as info:
        _run_job(monkeypatch, holders, {"n1"})
    assert set(info.value.partitions) == {"p1", "p3"}
    assert "p1" in str(info.value) and "p3" in str(info.value)
