"""A warm pytest for the mutation check: one per copy of the repository, it imports the heavy
third-party libraries once (pytest, hypothesis, numpy, pyarrow, polars, duckdb, numba, ray:
about 3 s of each pytest start on 2 cores), then forks a fresh child for every mutant's tests.

The child imports hfq and the tests itself, after the mutant was written into the copy, so it
sees the mutated code exactly as a new ``python -m pytest`` would; only modules hfq never
changes are shared.  Nothing here imports hfq, conftest or a test module, and no library above
runs a task before the fork (their pools start on first use).

Protocol (one JSON object per line): the runner writes ``{"args": [...], "timeout": s,
"out": path}`` on stdin; the worker forks, the child runs ``pytest.main(args)`` with its
stdout and stderr in ``out`` and its own session (so a timeout kills everything it started),
and the worker answers ``{"code": exit code or null on timeout}`` on stdout.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import sys
import time

import duckdb  # noqa: F401
import hypothesis  # noqa: F401
import hypothesis.strategies  # noqa: F401
import numba  # noqa: F401
import numpy  # noqa: F401
import polars  # noqa: F401
import pyarrow  # noqa: F401
import pyarrow.compute  # noqa: F401
import pyarrow.ipc  # noqa: F401
import pytest
import ray  # noqa: F401


def child(args: list[str], out: str) -> None:
    """In the forked child: run pytest, never return."""
    code = 3
    try:
        os.setsid()
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        # hypothesis's pytest plugin was imported here before pytest could rewrite its asserts
        # (it has none to rewrite): pytest's warning about that is not the mutant's failure
        code = int(pytest.main(["-W", "ignore::pytest.PytestAssertRewriteWarning", *args]))
        atexit._run_exitfuncs()   # what a process exit would run (Ray's shutdown among them)
    except BaseException as exc:   # noqa: BLE001 -- reported in the output file
        print(f"mutation warm child: {exc!r}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run(args: list[str], timeout: float, out: str) -> int | None:
    pid = os.fork()
    if pid == 0:
        child(args, out)
    fd = os.pidfd_open(pid)
    try:
        deadline = time.monotonic() + timeout
        while not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            if time.monotonic() >= deadline:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(pid, 0)
                return None
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
    finally:
        os.close(fd)


def main() -> None:
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        code = run(request["args"], request["timeout"], request["out"])
        print(json.dumps({"code": code}), flush=True)


if __name__ == "__main__":
    main()
