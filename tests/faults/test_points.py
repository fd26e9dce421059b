"""The fault points themselves: each one listed is placed in hfq, each one placed is listed,
and arming them does what :mod:`hfq.faults` says (crash, raise, pause; ``@N``; the
environment for other processes)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading

import pytest
from faultkit import HFQ_SOURCE, child_env, placed_points

from hfq import faults
from hfq.errors import HfqError
from hfq.faults import FaultInjected

POINT = "write.before_commit"   # any listed name will do for the semantics


@pytest.fixture(autouse=True)
def _disarmed():
    faults.disarm()
    yield
    faults.disarm()


@pytest.mark.parametrize("name", sorted(faults.POINTS))
def test_every_listed_point_is_placed_in_hfq(name):
    if name not in placed_points():
        pytest.fail(f"fault point {name!r} is listed in hfq.faults.POINTS but no module of "
                    "hfq reaches it")


def test_every_placed_point_is_listed():
    calls = set()
    for path in HFQ_SOURCE.rglob("*.py"):
        calls |= set(re.findall(r"faults\.point\(\s*[\"']([^\"']+)[\"']", path.read_text()))
    assert calls, "no fault point found in hfq at all"
    assert calls <= set(faults.POINTS), f"not in POINTS: {sorted(calls - set(faults.POINTS))}"


def test_an_unarmed_point_does_nothing():
    for name in faults.POINTS:
        faults.point(name)


def test_arming_checks_names_and_actions():
    with pytest.raises(ValueError, match="unknown fault point"):
        faults.arm("no.such.point", "crash")
    for bad in ("explode", "pause", "crash:/tmp/x", "raise@x", "raise@0", ""):
        with pytest.raises(ValueError, match="fault action"):
            faults.arm(POINT, bad)


def test_raise_fires_on_the_nth_hit_only_and_disarm_forgets():
    faults.arm(POINT, "raise@2")
    faults.point(POINT)                      # hit 1: nothing
    with pytest.raises(FaultInjected, match="hit 2") as info:
        faults.point(POINT)
    assert isinstance(info.value, HfqError)
    faults.point(POINT)                      # hit 3: nothing
    faults.disarm(POINT)
    faults.point(POINT)
    faults.arm(POINT, "raise")               # re-arming starts counting again
    with pytest.raises(FaultInjected):
        faults.point(POINT)


def test_pause_holds_the_thread_that_reaches_it_until_the_gate_opens(tmp_path):
    gate = tmp_path / "gate"
    faults.arm(POINT, f"pause:{gate}")
    passed = threading.Event()

    def reach() -> None:
        faults.point(POINT)
        passed.set()

    thread = threading.Thread(target=reach)
    thread.start()
    try:
        reached = tmp_path / "gate.reached"
        for _ in range(6000):
            if reached.exists():
                break
            threading.Event().wait(0.01)
        assert reached.exists()
        assert not passed.is_set() and thread.is_alive()
        faults.point(POINT)                  # hit 2, another thread: not held
    finally:
        gate.touch()
        thread.join(30)
    assert passed.is_set()


def run(code: str, env_faults: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(env_faults), timeout=120)


def test_crash_from_the_environment_is_an_immediate_exit_137():
    code = ("from hfq import faults\n"
            f"faults.point({POINT!r}); print('first', flush=True)\n"
            f"faults.point({POINT!r}); print('second', flush=True)\n")
    done = run(code, f"{POINT}=crash@2")
    assert done.returncode == 137, done.stderr
    assert done.stdout.split() == ["first"]
    done = run(code, "")                     # unarmed: runs to the end
    assert done.returncode == 0 and done.stdout.split() == ["first", "second"]


def test_the_environment_arms_several_points():
    other = "compact.before_commit"
    code = ("from hfq import faults\n"
            f"faults.point({POINT!r}); print('passed', flush=True)\n"
            f"faults.point({other!r})\n")
    done = run(code, f"{POINT}=raise@2, {other}=raise")
    assert done.returncode == 1 and done.stdout.split() == ["passed"]
    assert "FaultInjected" in done.stderr and other in done.stderr
