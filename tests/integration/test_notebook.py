"""examples/quickstart.ipynb runs top to bottom (at a small size) and shows what it promises."""

from __future__ import annotations

import os

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.timeout(300)

NOTEBOOK = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "quickstart.ipynb")


def test_quickstart_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("HFQ_QUICKSTART_ROWS", "20000")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
                     for cell in nb.cells if cell.cell_type == "code"
                     for out in cell.get("outputs", []))
    assert "60,000 rows" in text            # 3 days of 20,000 rows loaded
    images = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert len(images) == 1                   # the spread curve
    assert "bars written; table version 1" in text
    assert "OLS of" in text and "quote_size" in text and "HC1" in text
    errors = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors
