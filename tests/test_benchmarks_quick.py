"""benchmarks/run.py --quick: every scenario end to end at a tiny size (no speed assertions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT


def test_benchmark_quick_run(tmp_path):
    out = tmp_path / "bench"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"),
                           "--quick", "--out", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert set(results) == {"ingest", "read day", "read one symbol"}
    assert results["read day"]["hfq -> pyarrow (zstd)"]["rows"] == 20_000
    report = (out / "report.md").read_text()
    assert "| pickle.load (pandas, str objects) |" in report
    assert not (out / "work").exists()
