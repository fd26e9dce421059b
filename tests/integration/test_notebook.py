"""The example notebooks run top to bottom at a small size and show what they promise; the
committed copies carry their outputs (plots included); temporary data is cleaned up.

Each notebook runs in a fresh kernel (as `examples/run_notebooks.py` does), with
``HFQ_NOTEBOOK_ROWS`` small and ``TMPDIR`` pointing at an empty directory that must be empty
again afterwards.  The kernel inherits this suite's private Ray settings (tests/conftest.py).
"""

from __future__ import annotations

import os
import sys

import nbformat
import pytest

pytestmark = pytest.mark.timeout(300)

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
sys.path.insert(0, EXAMPLES)
from run_notebooks import NOTEBOOKS, execute  # noqa: E402

ROWS = 20_000

#: per notebook: texts its outputs must contain, and how many plots
EXPECT = {
    "quickstart.ipynb": (["60,000 rows", "bars written; table version 1",
                          "OLS of ofr/bid - 1 on 2 coefficients", "quote_size", "HC1",
                          "removed"], 1),
    "read_day.ipynb": ([f"{ROWS:,} rows", "hfq -> pyarrow", "pickle (str objects)",
                        "pickle (categoricals)", "partitions: 1 kept", "removed"], 1),
    "ingest_footprint.ipynb": ([f"loaded {2 * ROWS:,} rows", "parquet zstd", "CSV / disk",
                                "load quotes: 100%", "removed"], 1),   # + its progress bar
    "scale_out.ipynb": (["2 nodes up", "files moved: {'quotes':",
                         "same answer after losing a node: True", "removed"], 2),
    "live.ipynb": (["(10x real time", "every quote replayed, once: True", "each row once: True",
                    "rows written down", "equal to the streamed bars: True", "removed"], 1),
}


def _outputs(nb: nbformat.NotebookNode) -> list[dict]:
    return [out for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", [])]


def _text(nb: nbformat.NotebookNode) -> str:
    return "\n".join(out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
                     for out in _outputs(nb))


def _images(nb: nbformat.NotebookNode) -> int:
    return sum("image/png" in out.get("data", {}) for out in _outputs(nb))


def test_every_notebook_is_listed_and_expected():
    on_disk = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".ipynb"))
    mine = sorted(NOTEBOOKS)
    assert sorted(EXPECT) == mine
    # examples/quality.ipynb (and later ones) are executed by their own tests
    assert set(mine) <= set(on_disk)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_has_its_outputs(name):
    """What GitHub shows: every code cell executed, in order, plots inline, no errors."""
    nb = nbformat.read(os.path.join(EXAMPLES, name), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), name
    texts, plots = EXPECT[name]
    assert _images(nb) == plots
    assert not [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert "IProgress not found" not in _text(nb)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes_at_a_small_size_and_cleans_up(name, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("HFQ_NOTEBOOK_ROWS", str(ROWS))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = execute(os.path.join(EXAMPLES, name), cwd=str(tmp_path), timeout=240)
    errors = [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert not errors, "\n".join("\n".join(e.get("traceback", [])) for e in errors)[-4000:]
    text = _text(nb)
    texts, plots = EXPECT[name]
    for want in texts:
        assert want in text, f"{name}: no {want!r} in the outputs"
    assert _images(nb) == plots
    assert "IProgress not found" not in text
    assert os.listdir(scratch) == [], f"{name} left temporary files: {os.listdir(scratch)}"
    assert sorted(os.listdir(tmp_path)) == ["tmp"]     # nothing in the working directory
