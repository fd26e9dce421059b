"""kill -9 at every fault point of each change of stored rows (issue 27): a delete, an update,
an overwrite, an upsert and a keyed append, each killed (``os._exit(137)``) at every point it
reaches, leave the table at exactly the old version -- or, once published, exactly the new
one (what the same operation gives when it runs to the end); then a vacuum leaves exactly the
files the kept versions reference, and the table takes its next commit."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import pytest
from faultkit import assert_no_leftovers, require_point

import hfq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "change"))
from changekit import KEY, canonical, make, rows, run_child  # noqa: E402

pytestmark = pytest.mark.timeout(300)

OPS = ["delete", "update", "overwrite", "upsert", "append"]

#: (fault, does the table end at the new version?)
POINTS = [
    ("change.partition.after_write=crash", False),
    ("change.partition.after_write=crash@2", False),
    ("write.fragment.after_put=crash", False),
    ("write.before_commit=crash", False),
    ("catalog.commit.before_publish=crash", False),
    ("catalog.commit.after_publish=crash", True),
]
#: the cases run by default (each point once, the operations in turn); the whole matrix is
#: marked slow (each case starts a Python process: ~6 s)
FAST = {("delete", POINTS[0][0]), ("update", POINTS[1][0]), ("overwrite", POINTS[2][0]),
        ("upsert", POINTS[3][0]), ("append", POINTS[4][0]), ("upsert", POINTS[5][0]),
        ("delete", POINTS[5][0])}
CASES = [pytest.param(op, fault, published, id=f"{op}-{fault}",
                      marks=() if (op, fault) in FAST else pytest.mark.slow)
         for op in OPS for fault, published in POINTS]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> dict[str, Any]:
    """A keyed table at version 1, and what each operation makes of it (run to the end)."""
    base = tmp_path_factory.mktemp("crash-change")
    root = str(base / "db")
    t = make(hfq.connect(root, batch_rows=32), unique=KEY, keep="last")
    t.append(rows(300, 1))
    old = canonical(t.to_polars())
    new = {}
    for op in OPS:
        copy = str(base / f"done-{op}")
        shutil.copytree(root, copy)
        done = run_child(copy, op)
        assert done.returncode == 0, done.stderr
        assert "done 2" in done.stdout
        new[op] = canonical(hfq.connect(copy)["t"].to_polars())
        assert not new[op].equals(old), op
    return {"root": root, "old": old, "new": new}


@pytest.mark.parametrize("op,fault,published", CASES)
def test_killed_at_a_fault_point_a_change_leaves_the_old_or_the_new_version(
        template, tmp_path, op, fault, published):
    require_point(fault.split("=")[0])
    root = str(tmp_path / "db")
    shutil.copytree(template["root"], root)
    done = run_child(root, op, fault=fault)
    assert done.returncode == 137, f"{op} did not die at {fault}:\n{done.stdout}\n{done.stderr}"
    t = hfq.connect(root)["t"]
    want = template["new"][op] if published else template["old"]
    assert t.version == (2 if published else 1) and t.versions() == list(range(t.version + 1))
    assert canonical(t.to_polars()).equals(want)
    assert canonical(t.scan(version=1).to_polars()).equals(template["old"])
    assert t.verify() == len(t.snapshot().files())
    t.vacuum(grace_s=0)
    assert_no_leftovers(t, root)
    assert canonical(t.to_polars()).equals(want)
    assert t.append(rows(20, 77)) == t.version == (3 if published else 2)
