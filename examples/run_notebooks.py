"""Execute the example notebooks and save them with their outputs (what is committed).

    python examples/run_notebooks.py                    # every notebook, default sizes
    HFQ_NOTEBOOK_ROWS=20000 python examples/run_notebooks.py quickstart.ipynb

Each runs top to bottom in a fresh kernel, with this directory as its working directory;
``tests/integration/test_notebook.py`` runs them the same way at a small size.
"""

from __future__ import annotations

import os
import sys
import time

import nbformat
from nbclient import NotebookClient

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOKS = ["quickstart.ipynb", "read_day.ipynb", "ingest_footprint.ipynb",
             "scale_out.ipynb", "live.ipynb"]


def execute(path: str, *, cwd: str = HERE, timeout: int = 600) -> nbformat.NotebookNode:
    """Run the notebook at ``path`` in a fresh kernel; returns it with its outputs."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": cwd}}).execute()
    return nb


def main(names: list[str]) -> None:
    for name in names or NOTEBOOKS:
        path = os.path.join(HERE, name)
        start = time.perf_counter()
        nb = execute(path)
        nbformat.write(nb, path)
        print(f"{name}: executed in {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
