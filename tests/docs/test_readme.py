"""Every ```python block of README.md runs as written.

The blocks run in order, in one fresh Python process (later blocks use the names of earlier
ones, as a reader typing them would), in an empty temporary directory with no ``HFQ_ROOT``: the
README's own small synthetic data and its default root ``./hfq_data`` land there.  A block that
cannot run here (it needs a Ray cluster, say) is preceded by an HTML comment
``<!-- readme-test: skip REASON -->``; it is still compiled, then skipped with that reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

README = Path(__file__).resolve().parents[2] / "README.md"
_FENCE = re.compile(r"^```python\s*$\n(.*?)^```\s*$", re.S | re.M)
_SKIP = re.compile(r"<!--\s*readme-test:\s*skip\s*(.*?)\s*-->\s*$")

RUNNER = textwrap.dedent("""
    import json, sys, traceback
    blocks, out = json.loads(open(sys.argv[1]).read()), sys.argv[2]
    status, namespace = {}, {"__name__": "__main__"}
    for line, code in blocks:
        print(f"----- README.md line {line}", flush=True)
        try:
            exec(compile(code, f"README.md (block at line {line})", "exec"), namespace)
        except BaseException:
            status[line] = traceback.format_exc()
            break
        status[line] = "ok"
    namespace.get("db") and hasattr(namespace["db"], "close") and namespace["db"].close()
    open(out, "w").write(json.dumps(status))
""")


def readme_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(line of the fence, code, skip reason or None) of each ```python block."""
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        blocks.append((line, match.group(1), skip.group(1) or "marked skip" if skip else None))
    return blocks


BLOCKS = readme_blocks(README.read_text())


def test_the_readme_has_python_blocks_and_the_extraction_finds_markers():
    assert len(BLOCKS) >= 3
    sample = "x\n<!-- readme-test: skip needs a cluster -->\n```python\na = 1\n```\n" \
             "```python\nb = 2\n```\n"
    assert readme_blocks(sample) == [(3, "a = 1\n", "needs a cluster"), (6, "b = 2\n", None)]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, str]:
    """Run every block that is not marked skip, in order; each block's status by line."""
    work = tmp_path_factory.mktemp("readme")
    todo = [(line, code) for line, code, skip in BLOCKS if skip is None]
    (work / "blocks.json").write_text(json.dumps(todo))
    (work / "runner.py").write_text(RUNNER)
    env = {k: v for k, v in os.environ.items() if k != "HFQ_ROOT"}
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run([sys.executable, "runner.py", "blocks.json", "status.json"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=280)
    status_file = work / "status.json"
    if not status_file.exists():
        pytest.fail(f"the README runner died (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    status = json.loads(status_file.read_text())
    status["__output__"] = proc.stdout[-4000:] + proc.stderr[-4000:]
    return status


@pytest.mark.parametrize("line,code,skip", BLOCKS, ids=[f"line{b[0]}" for b in BLOCKS])
def test_readme_python_block_runs_as_written(line, code, skip, request):
    compile(code, f"README.md (block at line {line})", "exec")   # every block: valid Python
    if skip is not None:
        pytest.skip(f"README.md line {line}: {skip}")
    status = request.getfixturevalue("results")
    got = status.get(str(line))
    assert got is not None, f"README.md line {line} did not run: an earlier block failed"
    assert got == "ok", f"README.md line {line} failed:\n{got}\n{status['__output__']}"


def test_every_hfq_function_the_readme_names_exists():
    """A name in backquotes such as ``hfq.synth.taq_batches`` is importable (the README's
    prose, e.g. which schemas hfq.synth generates, cannot drift from the code)."""
    import importlib
    import importlib.util
    names = sorted(set(re.findall(r"`(hfq(?:\.[a-z_][a-z0-9_]*)+)", README.read_text())))
    assert "hfq.synth.taq_batches" in names
    missing = []
    for name in names:
        module, _, attr = name.rpartition(".")
        try:
            found = hasattr(importlib.import_module(module), attr)
        except ImportError:
            found = False
        if not found and importlib.util.find_spec(name) is None:
            missing.append(name)
    assert not missing, f"README.md names what hfq does not have: {missing}"
