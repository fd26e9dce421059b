"""benchmarks/run.py --quick: every scenario end to end at a tiny size (no speed assertions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT

SCENARIOS = {"ingest", "read day", "read one symbol", "concurrent: 1 client",
             "concurrent: 2 clients", "packed_scan", "scaling: full scan (spread map_reduce)",
             "scaling: spread_by_minute", "scaling: minute_bars", "scaling: ols", "overhead",
             "scan_kernel", "cluster_read", "analytics: spread", "analytics: minute bars",
             "analytics: ols"}


def test_benchmark_quick_run(tmp_path):
    """The default run (every scenario) at --quick size: the report, the JSON with its ratios,
    the plots, and nothing left of the generated data."""
    out = tmp_path / "bench"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"),
                           "--quick", "--out", str(out)], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for i, name in enumerate(["ingest", "read", "concurrent", "packed_scan", "scaling"], 1):
        assert f"[{i}/9] {name} done in" in proc.stdout      # a progress line per scenario
    results = json.loads((out / "results.json").read_text())
    assert set(results) - {"_meta"} == SCENARIOS
    day = results["read day"]
    assert day["hfq -> pyarrow (zstd)"]["rows"] == 20_000
    pickle_day = day["pickle.load (pandas, str objects)"]
    assert pickle_day["reference"] == "hfq -> pyarrow (zstd)"
    assert pickle_day["ratio"] == pickle_day["median_s"] / day["hfq -> pyarrow (zstd)"][
        "median_s"]
    ingest = results["ingest"]
    assert ingest["CSV (reference)"]["bytes_ratio"] > 1          # hfq zstd is smaller than CSV
    two = results["concurrent: 2 clients"]
    assert {c["rows"] for c in two.values()} == {two["hfq scan -> pyarrow"]["rows"]}
    assert two["hfq scan -> pyarrow"]["clients"] == 2
    nodes = {c["nodes"] for c in results["scaling: ols"].values()}
    assert nodes == {1, 2, 3}
    packed = results["packed_scan"]
    assert {c["rows"] for c in packed.values()} == {20_000}
    report = (out / "report.md").read_text()
    assert "| pickle.load (pandas, str objects) |" in report
    for png in ("read_day.png", "packed_scan.png", "by_clients.png", "by_nodes.png"):
        assert (out / "plots" / png).stat().st_size > 1000
        assert f"(plots/{png})" in report
    assert not (out / "work").exists()
