"""examples/quality.ipynb runs top to bottom at a small size, shows what it promises and
cleans up after itself; the committed copy carries its outputs (run the same way as the other
notebooks: tests/integration/test_notebook.py, whose list leaves this one to this file)."""

from __future__ import annotations

import os
import re
import sys

import nbformat
import pytest

pytestmark = pytest.mark.timeout(300)

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
NOTEBOOK = os.path.join(EXAMPLES, "quality.ipynb")
sys.path.insert(0, EXAMPLES)
from run_notebooks import execute  # noqa: E402

ROWS = 20_000
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _outputs(nb: nbformat.NotebookNode) -> list[dict]:
    return [out for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", [])]


def _text(nb: nbformat.NotebookNode) -> str:
    return _ANSI.sub("", "\n".join(out.get("text", "") + str(out.get("data", {}).get(
        "text/plain", "")) for out in _outputs(nb)))


def _check(nb: nbformat.NotebookNode, rows: int) -> None:
    errors = [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert not errors, "\n".join("\n".join(e.get("traceback", [])) for e in errors)[-4000:]
    text = _text(nb)
    assert f"quality of quotes @ version 1: {3 * rows:,} rows" in text
    for check in ("nonpositive", "sentinel", "crossed", "gap_minutes", "jumps"):
        assert check in text
    assert "every symbol-day: hfq quality quotes --all" in text   # the shell's summary
    spread = dict(re.findall(r"mean spread, (.*?):\s+\$([0-9,.]+)", text))
    assert float(spread["clean_quotes()"]) < 0.2 < 100 < float(
        spread["ofr > bid > 0"].replace(",", ""))
    # the planted rows, each in its column
    assert ("grew by: {'rows': 4, 'clean': 2, 'sentinel': 1, 'crossed': 1, 'duplicates': 1, "
            "'jumps': 2}") in text
    assert sum("image/png" in o.get("data", {}) for o in _outputs(nb)) == 1


def test_the_committed_notebook_has_its_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    rows = int(re.search(r"loaded ([0-9,]+) rows", _text(nb)).group(1).replace(",", "")) // 3
    _check(nb, rows)


def test_the_notebook_runs_at_a_small_size_and_cleans_up(tmp_path, monkeypatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("HFQ_NOTEBOOK_ROWS", str(ROWS))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = execute(NOTEBOOK, cwd=str(tmp_path), timeout=240)
    _check(nb, ROWS)
    assert os.listdir(scratch) == [], f"left temporary files: {os.listdir(scratch)}"
    assert sorted(os.listdir(tmp_path)) == ["tmp"]     # nothing in the working directory
