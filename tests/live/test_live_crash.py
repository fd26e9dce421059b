"""Crashes of live data at every fault point (issue 26 item 7), made exact with fault points.

A child process (the driver: publisher, write-down or subscriber, embedded) is killed as by
``kill -9`` (``os._exit(137)``) at each fault point of publish, write-down and subscribe.
After it, a fresh process finds every acknowledged batch exactly once (the log replayed), a
batch that was not acknowledged either whole or not at all -- never half -- and a publisher
restarting under the same name continues so that the stream ends with every batch once; a
write-down killed anywhere leaves every row once (live before its commit, in the files
after, never both: the planted 'log truncated before the commit' fails here); a subscriber
killed after taking a batch it had not handled resumes from its stored offset and handles
every batch exactly once.  Oracle: polars over the batches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import ROOT, canonical
from hfq import faults
from hfq.runtime.services import close_services

pytestmark = pytest.mark.timeout(300)

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))
BATCHES = 6
ROWS = 120

CHILD = r"""
import json, os, sys
import hfq
root, op = sys.argv[1], sys.argv[2]
args = json.loads(sys.argv[3])
db = hfq.connect(root, threads=2, live_grace_s=0)
t = db["q"]

def batch(i):
    ticks = hfq.synth.taq_table(dates=["2024-01-02"], rows_per_day=args["n"], symbols=6,
                                seed=2)
    return ticks.sort_by("time").slice(i * args["rows"], args["rows"])

if op == "publish":
    pub = t.publisher(name="feed")
    print("resumed", pub.seq, flush=True)
    for i in range(pub.seq, args["batches"]):
        pub.publish(batch(i))
        print("acked", i + 1, flush=True)
elif op == "write_down":
    print("wrote", t.write_down("2024-01-02").rows, flush=True)
elif op == "subscribe":
    state_path = args["state"]
    state = json.load(open(state_path)) if os.path.exists(state_path) else \
        {"offset": "sod", "seen": [], "rows": 0}
    sub = t.subscribe(start=state["offset"], wait_s=0)
    while (b := sub.poll()) is not None:
        # handle the batch and store the offset with it, atomically (a rename)
        state["seen"].append(int(b.schema.metadata[b"hfq.seq"]))
        state["rows"] += b.num_rows
        state["offset"] = sub.offset
        with open(state_path + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(state_path + ".tmp", state_path)
    print("done", len(state["seen"]), flush=True)
"""


def batch(i: int) -> pa.Table:
    ticks = hfq.synth.taq_table(dates=["2024-01-02"], rows_per_day=BATCHES * ROWS, symbols=6,
                                seed=2)
    return ticks.sort_by("time").slice(i * ROWS, ROWS)


def expected(n: int) -> pl.DataFrame:
    return canonical(pl.concat([pl.from_arrow(batch(i)) for i in range(n)]))


def run(root, op: str, fault: str | None = None, **args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop(faults.ENV, None)
    if fault:
        env[faults.ENV] = fault
    args = {"n": BATCHES * ROWS, "rows": ROWS, "batches": BATCHES, **args}
    return subprocess.run([sys.executable, "-c", CHILD, str(root), op, json.dumps(args)],
                          capture_output=True, text=True, timeout=240, env=env)


def fresh(root) -> hfq.Table:
    return hfq.connect(str(root))["q"]


@pytest.fixture
def root(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME, sort_by=("symbol", "time"))
    return tmp_path / "db"


def acked(out: str) -> list[int]:
    return [int(line.split()[1]) for line in out.splitlines() if line.startswith("acked")]


SLOW = pytest.mark.slow   # the same path as a neighbour; run with -m slow


@pytest.mark.parametrize("fault", [
    pytest.param("live.publish.before_send=crash@3", marks=SLOW),
    "live.log.before_fsync=crash@3",
    pytest.param("live.node.after_log=crash@3", marks=SLOW),
    "live.publish.before_ack=crash@3",
])
def test_a_publisher_killed_at_each_point_loses_and_duplicates_nothing(root, fault):
    died = run(root, "publish", fault)
    assert died.returncode == 137, died.stderr
    done = acked(died.stdout)
    assert done == [1, 2]                                    # the 3rd never acknowledged
    rows = canonical(fresh(root).scan().to_arrow())
    logged = rows.height // ROWS
    assert rows.height % ROWS == 0 and logged in (2, 3), "a batch half visible"
    assert rows.equals(expected(logged))                     # every acked batch, once
    again = run(root, "publish")                             # the feed handler restarts
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"resumed {logged}"
    assert canonical(fresh(root).scan().to_arrow()).equals(expected(BATCHES))


def publish_all(root) -> None:
    t = fresh(root)
    pub = t.publisher(name="feed")
    for i in range(BATCHES):
        pub.publish(batch(i))
    close_services(t.session.nodes.local, t.session.store.root)   # this process's stream


@pytest.mark.parametrize(("fault", "committed"), [
    pytest.param("write.fragment.after_put=crash@2", False, marks=SLOW),
    ("live.writedown.before_commit=crash", False),
    pytest.param("catalog.commit.before_publish=crash", False, marks=SLOW),
    ("catalog.commit.after_publish=crash", True),
    pytest.param("live.writedown.after_commit=crash", True, marks=SLOW),
    ("live.log.before_truncate=crash", True),
])
def test_a_write_down_killed_at_each_point_leaves_every_row_once(root, fault, committed):
    publish_all(root)
    died = run(root, "write_down", fault)
    assert died.returncode == 137, died.stderr
    t = fresh(root)
    assert len(t) == (BATCHES * ROWS if committed else 0)
    assert canonical(t.scan().to_arrow()).equals(expected(BATCHES))
    again = run(root, "write_down")
    assert again.returncode == 0, again.stderr
    t = fresh(root)
    assert len(t) == BATCHES * ROWS
    assert canonical(t.scan().to_arrow()).equals(expected(BATCHES))


def test_a_subscriber_killed_after_taking_a_batch_resumes_exactly_once(root, tmp_path):
    publish_all(root)
    state = str(tmp_path / "state.json")
    died = run(root, "subscribe", "live.subscribe.after_batch=crash@4", state=state)
    assert died.returncode == 137, died.stderr
    with open(state) as f:
        assert json.load(f)["seen"] == [1, 2, 3]          # the 4th taken, never handled
    again = run(root, "subscribe", state=state)
    assert again.returncode == 0, again.stderr
    with open(state) as f:
        done = json.load(f)
    assert done["seen"] == list(range(1, BATCHES + 1))
    assert done["rows"] == BATCHES * ROWS
