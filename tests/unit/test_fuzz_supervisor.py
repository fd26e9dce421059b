"""The long fuzz run's supervisor (benchmarks/fuzz.py): a worker that hangs is killed and
recorded like a crash, so one hang (a deadlock in a native library) cannot stall the run."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _fuzz():
    spec = importlib.util.spec_from_file_location("hfq_fuzz_runner", ROOT / "benchmarks" /
                                                  "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_worker_without_progress_is_killed_and_one_with_progress_is_not(tmp_path):
    run = _fuzz()._run_watched
    mark = tmp_path / "trace"
    # no progress: killed after the patience, with the child it started (its process group)
    child = tmp_path / "child.pid"
    script = (f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
              f"'import time; time.sleep(60)']); open({str(child)!r}, 'w').write(str(p.pid)); "
              f"time.sleep(60)")
    started = time.monotonic()
    assert run([sys.executable, "-c", script], [mark], patience=3.0) is None
    assert time.monotonic() - started < 30
    pid = int(child.read_text())
    deadline = time.monotonic() + 10
    while pathlib.Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        status = pathlib.Path(f"/proc/{pid}/status").read_text() if \
            pathlib.Path(f"/proc/{pid}/status").exists() else ""
        if "zombie" in status:
            break
        time.sleep(0.2)
    status = pathlib.Path(f"/proc/{pid}/status")
    assert not status.exists() or "zombie" in status.read_text()
    # progress (the trace touched every second for 6 s, past the 3 s patience): left alone
    busy = (f"import pathlib, time\nfor _ in range(6):\n    pathlib.Path({str(mark)!r})"
            f".write_text('x')\n    time.sleep(1)\n")
    assert run([sys.executable, "-c", busy], [mark], patience=3.0) == 0
    # an exit code passes through
    assert run([sys.executable, "-c", "raise SystemExit(3)"], [mark], patience=3.0) == 3
