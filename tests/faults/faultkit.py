"""Helpers of the fault suite: which fault points the code has placed, processes that run one
operation with a fault point armed (``HFQ_FAULTS``), and what a table's directory must hold.

Test files here import them as ``from faultkit import ...``, a name no other directory uses: a
``conftest.py`` here would be imported as the module ``conftest`` beside
``tests/service/conftest.py``, and a run naming tests of both directories (the mutation check's
baseline) would find the other one's names missing.  ROOT, canonical, csv_nulls, python and
in_thread of ``tests/conftest.py`` are re-exported below.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable

import pytest

import hfq
from hfq import faults

_parent_spec = importlib.util.spec_from_file_location(
    "_hfq_tests_conftest", pathlib.Path(__file__).resolve().parents[1] / "conftest.py")
assert _parent_spec is not None and _parent_spec.loader is not None
_parent = importlib.util.module_from_spec(_parent_spec)
_parent_spec.loader.exec_module(_parent)
ROOT: str = _parent.ROOT
canonical = _parent.canonical
csv_nulls = _parent.csv_nulls
python = _parent.python
in_thread = _parent.in_thread

HFQ_SOURCE = pathlib.Path(hfq.__file__).resolve().parent


# -- fault points ------------------------------------------------------------------------------
def placed_points() -> set[str]:
    """Names of :data:`hfq.faults.POINTS` that some module of hfq (other than faults.py)
    names in a string literal: ``faults.point("x")``, or a name passed on to one."""
    text = "\n".join(p.read_text() for p in HFQ_SOURCE.rglob("*.py") if p.name != "faults.py"
                     or p.parent != HFQ_SOURCE)
    return {name for name in faults.POINTS if re.search(rf"[\"']{re.escape(name)}[\"']", text)}


def require_point(name: str) -> None:
    """Skip the calling test while the code does not reach fault point ``name`` yet."""
    assert name in faults.POINTS, f"{name!r} is not in hfq.faults.POINTS"
    if name not in placed_points():
        pytest.skip(f"fault point {name!r} is not placed in hfq yet")


# -- a process that runs one operation ------------------------------------------------------------
CHILD = textwrap.dedent("""
    import json, sys
    import hfq
    root, table, op = sys.argv[1], sys.argv[2], sys.argv[3]
    args = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    db = hfq.connect(root, **{"threads": 2, **args.pop("settings", {})})
    t = db[table]
    print("started", flush=True)
    if op == "append":
        t.append(hfq.synth.taq_table(**args))
    elif op == "load":
        db.load_csv(table, args["paths"])
    elif op == "compact":
        t.compact()
    elif op == "vacuum":
        t.vacuum(grace_s=0)
    else:
        raise SystemExit(f"unknown op {op}")
    print("done", t.version, flush=True)
""")


def child_env(fault: str | None = None) -> dict[str, str]:
    """This environment for a child process: hfq importable from this tree, Ray private,
    ``HFQ_FAULTS`` set to ``fault`` (or unset)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("RAY_TMPDIR", f"/tmp/hfq-tests-{os.getpid()}")
    env.setdefault("RAY_AUTH_MODE", "disabled")
    env.pop(faults.ENV, None)
    if fault:
        env[faults.ENV] = fault
    return env


def start_child(root: str | os.PathLike, table: str, op: str, args: dict | None = None, *,
                fault: str | None = None) -> subprocess.Popen:
    """Start ``op`` (append, load, compact, vacuum) on ``table`` in a new Python process."""
    import json
    return subprocess.Popen([sys.executable, "-c", CHILD, str(root), table, op,
                             json.dumps(args or {})], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env(fault))


def run_child(root: str | os.PathLike, table: str, op: str, args: dict | None = None, *,
              fault: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = start_child(root, table, op, args, fault=fault)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# -- what a table's directory holds ---------------------------------------------------------------
def files_under(root: str | os.PathLike) -> list[str]:
    """Every file below ``root``, relative to it, with ``/``."""
    root = os.fspath(root)
    return sorted(os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")
                  for d, _, fs in os.walk(root) for f in fs)


def referenced_files(table: hfq.Table) -> set[str]:
    """Every data file some kept version of ``table`` references (root-relative)."""
    catalog = table.db.session.catalog
    return {f.file for m in catalog.kept_manifests(table.name) for f in m.fragments()}


def assert_no_leftovers(table: hfq.Table, root: str | os.PathLike) -> None:
    """The table's data directory holds exactly the files its kept versions reference, and
    no temporary file is left anywhere under the root."""
    everything = files_under(root)
    temps = [f for f in everything if "/.tmp~" in f or f.startswith(".tmp~")]
    assert not temps, f"temporary files left: {temps}"
    data = {f for f in everything if f.startswith(f"{table.name}/data/")}
    referenced = referenced_files(table)
    assert data == referenced, (f"left over: {sorted(data - referenced)}; "
                                f"missing: {sorted(referenced - data)}")


def assert_versions(table: hfq.Table, expected: int, versions: Iterable[int] | None = None
                    ) -> None:
    """``table`` (refreshed) is at version ``expected``, with ``versions`` on record
    (default: every version from 0)."""
    table.refresh()
    assert table.version == expected
    assert table.versions() == list(versions if versions is not None else
                                    range(expected + 1))
