"""The mutation check as part of the suite.

The list itself is checked on every run (fast): enough mutants, in every area issue 14 names,
each anchor present exactly once in today's code (a *stale* mutant means the code it mutates
changed: update ``mutants.py``), each naming test files that exist.  Applying every mutant and
running its tests takes minutes: CI does it (``.ci/run`` sets ``HFQ_MUTATION_CHECK=1``); by
hand, ``python tests/mutation/run.py``.
"""

from __future__ import annotations

import os
import pathlib
import queue
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402
from mutants import MUTANTS, Mutant  # noqa: E402
from run import REPO, stale  # noqa: E402

#: the areas issue 14 named; later issues add their own (``mutants_<area>.py``)
AREAS = {"commit", "pruning", "read", "checksum", "merge", "failover", "hashing"}


def test_the_list_has_enough_mutants_in_every_area():
    assert len(MUTANTS) >= 25
    assert len({m.id for m in MUTANTS}) == len(MUTANTS)
    assert {m.area for m in MUTANTS} >= AREAS
    for m in MUTANTS:
        assert m.old != m.new and m.why and m.tests, m.id


def test_no_mutant_is_stale():
    problems = {m.id: why for m in MUTANTS if (why := stale(m))}
    assert not problems, ("the code these mutants change moved; update "
                          f"tests/mutation/mutants.py: {problems}")


def test_every_named_test_exists():
    for m in MUTANTS:
        for selection in m.tests:
            if selection.startswith("-"):
                continue
            path, _, name = selection.partition("::")
            assert (REPO / path).exists(), f"{m.id}: no {path}"
            if name:
                function = name.split("[")[0]
                assert f"def {function}(" in (REPO / path).read_text(), \
                    f"{m.id}: no test {function} in {path}"


def test_a_baseline_that_cannot_collect_stops_the_check(monkeypatch, tmp_path):
    """pytest's exit 2 (a collection error: two ``conftest`` modules once hid each other) is no
    verdict on any mutant: the check stops; a failing test or file makes its mutants INVALID."""
    named = [Mutant("a", "x", "f.py", "1", "2", "why", ("tests/x.py::test_a",)),
             Mutant("b", "x", "f.py", "3", "4", "why", ("tests/y.py::test_b",))]
    answers: list[tuple[int, str]] = []
    monkeypatch.setattr(run, "pytest", lambda *a, **k: (*answers.pop(0), 0.0))
    answers.append((2, "ERROR tests/x.py\nInterrupted: 1 error during collection"))
    assert run.baseline(tmp_path, named, 1) is None
    answers.append((1, "FAILED tests/x.py::test_a - assert 0"))
    assert [o.mutant.id for o in run.baseline(tmp_path, named, 1) or []] == ["a"]
    answers.append((1, "ERROR tests/y.py"))   # a whole file failing covers its tests
    assert [o.mutant.id for o in run.baseline(tmp_path, named, 1) or []] == ["b"]
    answers.append((0, ""))
    assert run.baseline(tmp_path, named, 1) == []


@pytest.mark.timeout(2100)   # ~260 mutants: ~14 min on 2 quiet cores, 19+ beside other work
@pytest.mark.skipif(os.environ.get("HFQ_MUTATION_CHECK") != "1",
                    reason="minutes long: CI runs it (HFQ_MUTATION_CHECK=1), or "
                           "python tests/mutation/run.py")
def test_the_suite_kills_every_mutant():
    # no baseline: this suite runs every test the mutants name on this same tree, and fails
    # if one of them fails; the check by hand (run.py) runs it first
    done = subprocess.run([sys.executable, str(HERE / "run.py"), "--jobs", "2",
                           "--no-baseline"], capture_output=True, text=True, timeout=2050)
    print(done.stdout[-20000:], done.stderr[-5000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]


def test_the_last_killer_runs_first_and_changes_no_verdict(monkeypatch, tmp_path):
    """A recorded killer (killers.json) covered by the mutant's tests runs before them, -x
    stopping at it; one that pytest cannot run (renamed: exit 4) gives way to the named tests
    alone; one outside the named tests is never run."""
    (tmp_path / "f.py").write_text("x = 1\n")
    m = Mutant("m", "x", "f.py", "x = 1", "x = 2", "why", ("tests/a.py", "tests/b.py::t"))
    calls: list[list[str]] = []
    answers: list[int] = []
    monkeypatch.setattr(run, "pytest", lambda copy, tests, *a, **k: (
        calls.append(tests) or answers.pop(0), "FAILED tests/a.py::k - assert 0", 0.0))
    copies: queue.Queue = queue.Queue()
    copies.put(tmp_path)
    monkeypatch.setattr(run, "KILLERS", {"m": "tests/a.py::k"})
    answers[:] = [1]
    assert run.run_mutant(m, copies, 10).status == "killed"
    assert calls == [["tests/a.py::k", "tests/a.py", "tests/b.py::t"]]
    calls.clear()
    answers[:] = [4, 0]
    assert run.run_mutant(m, copies, 10).status == "SURVIVED"
    assert calls == [["tests/a.py::k", "tests/a.py", "tests/b.py::t"],
                     ["tests/a.py", "tests/b.py::t"]]
    calls.clear()
    monkeypatch.setattr(run, "KILLERS", {"m": "tests/c.py::k"})
    answers[:] = [1]
    assert run.run_mutant(m, copies, 10).status == "killed"
    assert calls == [["tests/a.py", "tests/b.py::t"]]
    assert (tmp_path / "f.py").read_text() == "x = 1\n"
