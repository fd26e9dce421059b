"""examples/changing_data.ipynb (issue 27) runs top to bottom at a small size and shows what it
promises -- the correction stored as new rows, the backtest whose P&L it changes only with
lookahead, the table as delivered -- and cleans up; the committed copy carries its outputs."""

from __future__ import annotations

import os
import sys

import nbformat
import pytest

pytestmark = pytest.mark.timeout(300)

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
NOTEBOOK = os.path.join(EXAMPLES, "changing_data.ipynb")
sys.path.insert(0, EXAMPLES)
from run_notebooks import execute  # noqa: E402


def _text(nb: nbformat.NotebookNode) -> str:
    return "\n".join(out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
                     for cell in nb.cells if cell.cell_type == "code"
                     for out in cell.get("outputs", []))


def _check(nb: nbformat.NotebookNode) -> None:
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, "\n".join("\n".join(e.get("traceback", [])) for e in errors)[-4000:]
    text = _text(nb)
    assert "symbols whose P&L the correction changes: 1 (BBB only: ['BBB'])" in text
    assert "corrections are new rows" in text and "upsert on 'quotes':" in text
    assert "partition/s" not in text       # no progress bars in the committed outputs


def test_committed_notebook_has_its_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    _check(nb)


def test_notebook_executes_at_a_small_size_and_cleans_up(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("HFQ_NOTEBOOK_ROWS", "5000")
    monkeypatch.setenv("TMPDIR", str(scratch))
    nb = execute(NOTEBOOK, cwd=str(tmp_path), timeout=240)
    _check(nb)
    assert os.listdir(scratch) == []
    assert sorted(os.listdir(tmp_path)) == ["tmp"]
