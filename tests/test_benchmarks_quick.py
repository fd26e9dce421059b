"""benchmarks/run.py --quick: every scenario end to end at a tiny size, labelled a smoke test
(no speed is asserted: the figures are not measurements)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

LOCAL = {"ingest", "read day", "read day (cold)", "fresh process", "read one symbol (warm)",
         "read one symbol (cold)", "concurrent: 1 client", "concurrent: 2 clients"}
CLUSTER = {"packed_scan", "scaling: full scan (spread map_reduce)", "scaling: spread_by_minute",
           "scaling: minute_bars", "scaling: ols", "overhead", "scan_kernel", "cluster_read",
           "analytics: spread", "analytics: spread (cold)", "analytics: minute bars",
           "analytics: ols"}


def run_quick(out, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"),
                           "--quick", "--out", str(out), *args], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.timeout(1200)   # every scenario, three Ray clusters: ~7 min on 2 loaded cores
def test_benchmark_quick_run(tmp_path):
    """Every scenario on the first data shape, the local ones on the second too: the report
    (a smoke-test banner, no targets judged), the JSON with min/median/max, ratios, ties and
    cache states, the plots, and nothing left of the generated data."""
    out = tmp_path / "bench"
    proc = run_quick(out, "--shapes", "many")
    assert "SMOKE TEST" in proc.stdout
    assert re.search(r"\[1/\d+\] ingest \(many symbols\) done in", proc.stdout)  # progress
    results = json.loads((out / "results.json").read_text())
    assert results["_meta"]["smoke_test"] is True
    assert set(results) >= LOCAL | CLUSTER     # and any scenario other helpers registered
    day = results["read day"]
    ref = day["hfq -> pyarrow (zstd)"]
    assert ref["rows"] == 20_000
    pickle_day = day["pickle.load (pandas, str objects)"]
    assert pickle_day["reference"] == "hfq -> pyarrow (zstd)"
    assert pickle_day["ratio"] == pickle_day["median_s"] / ref["median_s"]
    assert pickle_day["min_s"] <= pickle_day["median_s"] <= pickle_day["max_s"]
    assert isinstance(pickle_day["tie_with_reference"], bool)
    assert {c["cache"] for c in results["read day (cold)"].values()} == {"cold"}
    assert {c["cache"] for c in results["analytics: spread (cold)"].values()} == {"cold"}
    peak = day["hfq -> pandas (zstd)"]
    assert peak["peak_rss_bytes"] >= 0 and peak["result_bytes"] > 0   # from its own process
    assert results["ingest"]["CSV (reference)"]["bytes_ratio"] > 1   # zstd beats the CSV
    two = results["concurrent: 2 clients"]
    assert {c["rows"] for c in two.values()} == {two["hfq scan -> pyarrow"]["rows"]}
    assert two["hfq scan -> pyarrow"]["clients"] == 2
    assert {c["nodes"] for c in results["scaling: ols"].values()} == {1, 2}   # quick: no 3
    assert {c["rows"] for c in results["packed_scan"].values()} == {20_000}
    report = (out / "report.md").read_text()
    assert "Smoke test" in report and "published 290" not in report
    assert "target" not in report.split("## ingest")[1]   # no targets judged on tiny data
    assert "| pickle.load (pandas, str objects) |" in report
    for png in ("read_day.png", "packed_scan.png", "by_clients.png", "by_nodes.png",
                "analytics_spread_cold.png"):
        assert (out / "plots" / png).stat().st_size > 1000
        assert f"(plots/{png})" in report
    assert "![total M rows/s by clients](plots/by_clients.png)" in report
    assert not (out / "work").exists()


def test_benchmark_quick_second_shape(tmp_path):
    """The scenarios without a cluster on the few-symbols shape, named with it."""
    out = tmp_path / "bench"
    run_quick(out, "--shapes", "few", "--only", "ingest", "read", "point", "concurrent")
    results = json.loads((out / "results.json").read_text())
    assert set(results) - {"_meta"} == {f"{s} [few symbols]" for s in LOCAL}


def harness():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import harness
    return harness


def test_target_line_counts_a_tie_as_no_win():
    """A ratio target is met only when the median ratio reaches it and the two contenders'
    run ranges do not overlap (the issue: a ratio whose ranges overlap is a tie, not a win)."""
    h = harness()
    ours = h.Result("s", "hfq", [1.0, 1.1, 1.2], 10)
    close = h.Result("s", "peer", [1.15, 1.3, 1.4], 10)     # 1.18x, ranges overlap
    apart = h.Result("s", "peer", [2.5, 2.6, 2.7], 10)      # 2.36x, apart
    assert h.target_line("x", ours, close, 1.0) == \
        "- x: **1.18x (tie)** peer (target >= 1x: not met)."
    assert h.target_line("x", ours, apart, 2.0, "DuckDB") == \
        "- x: **2.36x** DuckDB (target >= 2x: met)."
    assert h.target_line("x", ours, apart, 2.5).endswith("(target >= 2.5x: not met).")


def test_ingest_target_from_the_median_of_the_runs():
    """The ingest line: the default codec's median rate over its timed runs, judged >= 3 M
    rows/s."""
    Result = harness().Result
    from hfq.config import Settings
    from scenarios.store import ingest_targets
    codec = Settings().compression
    ours = f"hfq load_csv ({'no codec' if codec == 'none' else codec})"

    def res(name, seconds):
        return Result("ingest", name, seconds, 6_000_000)
    lines = ingest_targets([res(ours, [1.0, 1.9, 2.1, 2.2, 5.0]),
                            res("pyarrow read_csv only (no store)", [1.0, 1.0, 1.0])])
    assert lines[0].startswith(f"- ingest, default codec ({codec}): **2.86 M rows/s** (median "
                               "of 5 timed runs after a warm-up; runs 1.20-6.00; 6,000,000 rows)")
    assert lines[0].endswith("(target >= 3 M rows/s: not met).")
    fast = ingest_targets([res(ours, [1.9, 2.0, 2.1]),
                           res("pyarrow read_csv only (no store)", [1.0])])
    assert fast[0].endswith("(target >= 3 M rows/s: met).")
