"""The mutation check: the test suite must kill every curated mutant (``mutants.py``).

    python tests/mutation/run.py [--jobs 2] [--timeout 240] [--only ID ...] [--list]
                                 [--cold] [--no-baseline]

For each mutant, on a private copy of the repository (never on the tree it runs from: other
people may be editing it), the mutant's ``old`` text is replaced by ``new`` in its file, the
mutant's tests are run (``pytest -x``), and the file is restored.  A mutant is

* ``killed``   -- its tests failed (or timed out: reported as ``killed (timeout)``);
* ``SURVIVED`` -- its tests passed with the bug in place: a test is missing;
* ``STALE``    -- its ``old`` text does not occur exactly once in the file any more: the code
  changed and the list must be updated (the check fails until it is);
* ``INVALID``  -- its tests do not pass on the unmutated code (the baseline), so killing the
  mutant would prove nothing.

First, the baseline: every test a mutant names must pass on the unmutated copy, and a run
that cannot collect them stops the check (exit 2).  Each copy has a warm pytest (``warm.py``):
the heavy libraries imported once and a fork per run, about 3 s less per mutant than a new
``python -m pytest``; ``--cold`` starts a new one each time.

Exit status 0 only when every mutant is killed.  Copies have no bytecode caches and run with
``PYTHONDONTWRITEBYTECODE`` (a restored file never meets a stale ``.pyc``), hypothesis stops at
the first failing example (``hypothesis_mutation.py``: no shrinking), and Ray, if some test
starts it, stays private.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from mutants import MUTANTS, Mutant  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
#: what a copy needs to run the tests
COPY = ("hfq", "tests", "conftest.py", "pyproject.toml")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis",
                                ".mypy_cache", ".ruff_cache")


@dataclass
class Outcome:
    mutant: Mutant
    status: str
    seconds: float = 0.0
    detail: str = ""


def stale(mutant: Mutant, repo: pathlib.Path = REPO) -> str | None:
    """Why ``mutant`` cannot be applied to ``repo`` (None: its text occurs exactly once)."""
    path = repo / mutant.file
    if not path.exists():
        return f"{mutant.file} does not exist"
    n = path.read_text().count(mutant.old)
    return None if n == 1 else f"its text occurs {n} times in {mutant.file}"


def make_copy(dest: pathlib.Path) -> pathlib.Path:
    dest.mkdir(parents=True)
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=IGNORE)
        else:
            shutil.copy2(src, dest / name)
    # numba's on-disk caches of the kernels compiled so far (the suite's own run made them):
    # keyed by a hash of the source, so a copy reuses them only for unchanged files
    for cache in REPO.glob("hfq/**/__pycache__/*.nb[ic]"):
        target = dest / cache.relative_to(REPO)
        target.parent.mkdir(exist_ok=True)
        shutil.copy2(cache, target)
    return dest


def numba_caches(path: pathlib.Path) -> dict[pathlib.Path, bytes]:
    """numba's cached kernels of the module at ``path`` (index and data files)."""
    return {f: f.read_bytes() for f in path.parent.glob(f"__pycache__/{path.stem}.*.nb[ic]")}


def restore_numba_caches(path: pathlib.Path, saved: dict[pathlib.Path, bytes]) -> None:
    """Put back the cached kernels of the unmutated module: a mutant's run replaced them by its
    own (numba keeps one source's kernels per function), and every later run would compile
    the whole module again."""
    for f in set(numba_caches(path)) - set(saved):
        f.unlink(missing_ok=True)
    for f, data in saved.items():
        f.write_bytes(data)


def environment(copy: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HFQ_FAULTS", "HFQ_MUTATION_CHECK", "PYTEST_ADDOPTS")}
    env.update(PYTHONPATH=os.pathsep.join([str(copy), str(copy / "tests" / "mutation")]),
               PYTHONDONTWRITEBYTECODE="1", RAY_TMPDIR=str(copy / ".ray"),
               RAY_AUTH_MODE="disabled", HYPOTHESIS_PROFILE="mutation")
    return env


class Warm:
    """The warm pytest of one copy (``warm.py``): the heavy imports done once, a fork per run."""

    def __init__(self, copy: pathlib.Path) -> None:
        self.copy = copy
        self.runs = 0
        self.process = subprocess.Popen(
            [sys.executable, str(copy / "tests" / "mutation" / "warm.py")], cwd=copy,
            env=environment(copy), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if "ready" not in ready:
            raise SystemExit(f"mutation check: the warm pytest of {copy} did not start")

    def run(self, args: list[str], timeout: float) -> tuple[int | None, str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.runs += 1
        out = self.copy / f".mutation-out-{self.runs}.txt"
        self.process.stdin.write(json.dumps({"args": args, "timeout": timeout,
                                             "out": str(out)}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise SystemExit(f"mutation check: the warm pytest of {self.copy} died")
        text = out.read_text(errors="replace") if out.exists() else ""
        out.unlink(missing_ok=True)
        return json.loads(answer)["code"], text

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


#: each copy's warm pytest (none: every run is a new ``python -m pytest``, ``--cold``)
WARM: dict[pathlib.Path, Warm] = {}

#: mutant id -> the test that killed it in the last recorded run (``--record``): run first,
#: it usually kills at once, where the named tests in their order could run minutes before
#: reaching it.  Only an order: a killer that no longer kills changes no verdict.
KILLERS_FILE = pathlib.Path(__file__).resolve().parent / "killers.json"
KILLERS: dict[str, str] = json.loads(KILLERS_FILE.read_text()) if KILLERS_FILE.exists() else {}


def pytest(copy: pathlib.Path, tests: list[str], timeout: float, *, first: bool = True,
           cold: bool = False) -> tuple[int | None, str, float]:
    """Run pytest on ``tests`` in ``copy``: (exit code or None on timeout, output, seconds)."""
    args = ["-q", "-p", "no:cacheprovider", "-p", "hypothesis_mutation", "--no-header", "-rfE",
            "-o", "addopts=-m 'not slow' --strict-markers",
            f"--timeout={int(timeout)}", *(["-x"] if first else []), *tests]
    started = time.perf_counter()
    if copy in WARM and not cold:
        code, output = WARM[copy].run(args, timeout + 30)
        return code, output, time.perf_counter() - started
    cmd = [sys.executable, "-m", "pytest", *args]
    try:
        done = subprocess.run(cmd, cwd=copy, env=environment(copy), capture_output=True,
                              text=True, timeout=timeout + 30)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return None, out, time.perf_counter() - started
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - started


def covers(selection: str, test: str) -> bool:
    """Does the pytest argument ``selection`` (a file or node id) select node id ``test``?"""
    return test == selection or test.startswith((selection + "::", selection + "["))


def first_failure(output: str) -> str:
    m = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.M)
    return m.group(1) if m else output.strip().splitlines()[-1] if output.strip() else ""


def check_copy(copy: pathlib.Path) -> None:
    """The copy's hfq is the one its tests import (not the editable install's)."""
    out = subprocess.run([sys.executable, "-c", "import hfq; print(hfq.__file__)"], cwd=copy,
                         env=environment(copy), capture_output=True, text=True, check=True)
    where = pathlib.Path(out.stdout.strip()).resolve()
    if copy.resolve() not in where.parents:
        raise SystemExit(f"mutation check: the copy at {copy} imports hfq from {where}")


def run_mutant(mutant: Mutant, copies: queue.Queue, timeout: float) -> Outcome:
    copy = copies.get()
    try:
        path = copy / mutant.file
        original = path.read_text()
        if original.count(mutant.old) != 1:
            return Outcome(mutant, "STALE", detail=stale(mutant, copy) or "")
        caches = numba_caches(path)
        path.write_text(original.replace(mutant.old, mutant.new))
        try:
            tests = list(mutant.tests)
            killer = KILLERS.get(mutant.id)
            if killer and killer not in tests and any(covers(t, killer) for t in tests):
                # the test that killed it last time first: -x stops there if it still does;
                # if not, the named tests run after it as ever (any other exit: without it)
                code, output, seconds = pytest(copy, [killer, *tests], timeout)
                if code not in (0, 1, None):
                    code, output, seconds = pytest(copy, tests, timeout)
            else:
                code, output, seconds = pytest(copy, tests, timeout)
            if code is None and copy in WARM:
                # a hang in a forked child is the mutant's, or a lock the fork copied held:
                # only a new process's timeout counts
                code, output, seconds = pytest(copy, tests, timeout, cold=True)
        finally:
            path.write_text(original)
            restore_numba_caches(path, caches)
        if code is None:
            return Outcome(mutant, "killed (timeout)", seconds)
        if code == 0:
            return Outcome(mutant, "SURVIVED", seconds, "its tests pass with the bug in place")
        if code == 5:
            return Outcome(mutant, "INVALID", seconds, "no test collected")
        kind = "killed" if code == 1 else f"killed (pytest exit {code})"
        return Outcome(mutant, kind, seconds, first_failure(output))
    finally:
        copies.put(copy)


def baseline(copy: pathlib.Path, live: list[Mutant], timeout: float) -> list[Outcome] | None:
    """Run every test the mutants name on the unmutated ``copy``: the mutants whose tests fail
    there are INVALID (killing them would prove nothing); None when the run itself broke
    (collection errors, interrupted: then no "killed" would mean anything)."""
    tests = sorted({t for m in live for t in m.tests if not t.startswith("-")})
    doctests = sorted({t for m in live if "--doctest-modules" in m.tests for t in m.tests
                       if not t.startswith("-")})
    code, output, seconds = pytest(copy, tests, timeout * 2, first=False)
    if code == 0 and doctests:
        code, more, extra = pytest(copy, ["--doctest-modules", *doctests], timeout,
                                   first=False)
        output, seconds = output + more, seconds + extra
    print(f"baseline: {len(tests)} test selections {'pass' if code == 0 else 'FAIL'} "
          f"({seconds:.0f} s)", flush=True)
    if code not in (0, 1):
        print(output[-6000:])
        print(f"mutation check: the baseline did not run its tests (pytest exit {code})")
        return None
    failing = set(re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.M)) if code else set()
    if code and not failing:
        print(output[-3000:])
    return [Outcome(m, "INVALID", detail="its tests fail without the mutant: "
                    f"{', '.join(sorted(failing)) or 'see above'}")
            for m in live if code and (not failing or any(covers(t, f) or covers(f, t)
                                                          for f in failing for t in m.tests))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=240,
                        help="seconds for one mutant's tests (default 240)")
    parser.add_argument("--only", nargs="*", help="mutant ids (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--cold", action="store_true",
                        help="a new python process per run, no warm pytest (warm.py)")
    parser.add_argument("--record", action="store_true",
                        help=f"write each killed mutant's killing test to {KILLERS_FILE.name} "
                             "(run first next time)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip checking that the named tests pass unmutated (only where "
                             "they just ran on the same tree: the suite's own run in CI)")
    args = parser.parse_args(argv)
    mutants = [m for m in MUTANTS if not args.only or m.id in args.only]
    if args.only and len(mutants) != len(set(args.only)):
        parser.error(f"unknown ids: {sorted(set(args.only) - {m.id for m in MUTANTS})}")
    if args.list:
        for m in mutants:
            print(f"{m.id:36} {m.area:9} {m.file:26} {stale(m) or 'ok'}\n    {m.why}\n"
                  f"    killed by: {' '.join(m.tests)}")
        return 0
    started = time.perf_counter()
    outcomes = [Outcome(m, "STALE", detail=why) for m in mutants if (why := stale(m))]
    live = [m for m in mutants if not stale(m)]
    with tempfile.TemporaryDirectory(prefix="hfq-mutation-") as tmp:
        copies: queue.Queue = queue.Queue()
        for i in range(max(1, args.jobs)):
            copy = make_copy(pathlib.Path(tmp) / f"copy{i}")
            if i == 0:   # the copies are alike: one new process proves the import path
                check_copy(copy)
            if not args.cold:
                WARM[copy] = Warm(copy)
            copies.put(copy)
        try:
            if not args.no_baseline:
                invalid = baseline(pathlib.Path(tmp) / "copy0", live, args.timeout)
                if invalid is None:
                    return 2
                outcomes += invalid
                live = [m for m in live if m.id not in {o.mutant.id for o in invalid}]
            with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
                futures = {pool.submit(run_mutant, m, copies, args.timeout): m for m in live}
                for future in concurrent.futures.as_completed(futures):
                    o = future.result()
                    outcomes.append(o)
                    print(f"  {o.status:18} {o.mutant.id:36} {o.seconds:5.1f} s  {o.detail}",
                          flush=True)
        finally:
            for warm in WARM.values():
                warm.close()
            WARM.clear()
    order = {m.id: i for i, m in enumerate(mutants)}
    outcomes.sort(key=lambda o: order[o.mutant.id])
    bad = [o for o in outcomes if not o.status.startswith("killed")]
    if args.record:
        found = {o.mutant.id: o.detail for o in outcomes
                 if o.status == "killed" and "::" in o.detail}
        KILLERS_FILE.write_text(json.dumps({**KILLERS, **found}, indent=0, sort_keys=True)
                                + "\n")
    print(f"\nmutation check: {len(outcomes) - len(bad)} of {len(outcomes)} mutants killed "
          f"in {time.perf_counter() - started:.0f} s")
    by_area: dict[str, list[int]] = {}
    for o in outcomes:
        counts = by_area.setdefault(o.mutant.area, [0, 0])
        counts[0] += o.status.startswith("killed")
        counts[1] += 1
    print("  " + ", ".join(f"{area} {k}/{n}" for area, (k, n) in by_area.items()))
    for o in bad:
        print(f"  {o.status}: {o.mutant.id} ({o.mutant.file}): {o.detail}\n"
              f"      {o.mutant.why}; tests: {' '.join(o.mutant.tests)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
