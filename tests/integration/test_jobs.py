"""The jobs on a real 2-node Ray cluster on this machine (``cluster/local.sh``), submitted with
``ray job submit``, checked against polars over the same CSV files; and the same jobs embedded.

One cluster per module (starting one takes ~10 s): every test shares it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

import hfq

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cluster/local.sh uses /proc"),
    pytest.mark.timeout(300),
]

REPO = Path(__file__).resolve().parents[2]
LOCAL_SH = REPO / "cluster" / "local.sh"
RAY = str(Path(sys.executable).with_name("ray")) if Path(sys.executable).with_name(
    "ray").exists() else shutil.which("ray")
DAYS = ["2007-08-01", "2007-08-02"]
ROWS_PER_DAY = 20_000
EXCLUDES = [".git", ".venv", ".hypothesis", ".pytest_cache", ".ruff_cache", "*.egg-info",
            "__pycache__", "bench_out", "hfq_data", "hfq_cluster"]


def _env() -> dict[str, str]:
    """This process's environment for the cluster and its clients: token auth off (tests only),
    no address or token of some other cluster."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    env.update(RAY_AUTH_MODE="disabled", RAY="" if RAY is None else RAY)
    return env


def _run(cmd: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout,
                          **kwargs)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd[:6])} ... exited {proc.returncode}\n--- stdout\n"
                    f"{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


def _result(output: str, job: str) -> dict:
    """The job's JSON result line in its output (logs around it are ignored)."""
    for line in reversed(output.splitlines()):
        if line.startswith('{"job": "' + job + '"'):
            return json.loads(line)
    raise AssertionError(f"no JSON result line of {job} in the output:\n{output[-6000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if RAY is None:
        pytest.skip("no ray command")
    root = tmp_path_factory.mktemp("cluster")
    try:
        _run(["bash", str(LOCAL_SH), "start", "--nodes", "2", "--cpus", "1",
              "--root", str(root), "--object-store-mb", "256"], timeout=150)
        state = root / ".cluster"
        yield SimpleNamespace(root=root, dashboard=(state / "dashboard_url").read_text().strip())
    finally:
        subprocess.run(["bash", str(LOCAL_SH), "stop", "--root", str(root)], env=_env(),
                       capture_output=True, timeout=60)


def _submit_all(cluster, *jobs: tuple[str, ...], timeout: float = 150) -> dict[str, dict]:
    """One ``ray job submit`` running the jobs ``(name, *args)`` one after another (each its own
    ``python jobs/<name>.py``: one upload and one job driver for all): their results by name."""
    script = " && ".join(shlex.join(["python", f"jobs/{name}.py", *args])
                         for name, *args in jobs)
    proc = _run([RAY, "job", "submit", "--address", cluster.dashboard,
                 "--working-dir", str(REPO), "--runtime-env-json",
                 json.dumps({"excludes": EXCLUDES}), "--", "bash", "-c", script],
                timeout=timeout * len(jobs), cwd=REPO)
    return {name: _result(proc.stdout, name) for name, *_ in jobs}


def _submit(cluster, *args: str, job: str, timeout: float = 150) -> dict:
    return _submit_all(cluster, (job, *args), timeout=timeout)[job]


@pytest.fixture(scope="module")
def ingested(cluster, tmp_path_factory):
    """The ingest job, run once: synthetic CSV files written by the job, loaded into quotes."""
    csv_dir = tmp_path_factory.mktemp("csv")
    result = _submit(cluster, "--synth-days", str(len(DAYS)), "--rows-per-day",
                     str(ROWS_PER_DAY), "--symbols", "300", "--start", DAYS[0],
                     "--out", str(csv_dir), job="ingest")
    return SimpleNamespace(result=result, csv_dir=csv_dir)


@pytest.fixture(scope="module")
def oracle(ingested) -> pl.DataFrame:
    """The same CSV files, read by polars on its own."""
    files = sorted(ingested.csv_dir.glob("*.csv"))
    assert len(files) == len(DAYS)
    return pl.concat([pl.read_csv(f, columns=["date", "bid", "ofr"],
                                  schema_overrides={"date": pl.String, "bid": pl.Float64,
                                                    "ofr": pl.Float64}) for f in files])


def _expect(df: pl.DataFrame) -> dict:
    # the clean quotes (hfq.quality.clean_quotes), written out
    bid, ofr = pl.col("bid"), pl.col("ofr")
    quoted = df.filter((ofr > bid) & (bid > 0) & (ofr / bid < 1.2) & (ofr != 214748.3647))
    return {"rows": df.height, "sum_bid": df["bid"].sum(), "quoted_rows": quoted.height,
            "mean_spread": (quoted["ofr"] - quoted["bid"]).mean()}


def _check_aggregates(got: dict, df: pl.DataFrame) -> None:
    want = _expect(df)
    assert got["rows"] == want["rows"]
    assert got["quoted_rows"] == want["quoted_rows"]
    assert got["sum_bid"] == pytest.approx(want["sum_bid"], rel=1e-9)
    assert got["mean_spread"] == pytest.approx(want["mean_spread"], rel=1e-9)


def test_ingest_job_loads_every_row_twice(ingested, oracle):
    r = ingested.result
    assert r["rows"] == r["table_rows"] == oracle.height == len(DAYS) * ROWS_PER_DAY
    assert r["version"] == 1 and r["files"] == len(DAYS)
    assert r["min_copies"] == 2 and len(r["nodes"]) == 2
    assert r["partitions"] == len(DAYS) * 8


def test_each_partition_is_intact_on_two_distinct_nodes(cluster, ingested):
    db = hfq.connect(str(cluster.root / "node0"))      # the catalog, read from the head's disk
    roots = {json.loads((d / ".hfq-node").read_text())["name"]: d
             for d in sorted(cluster.root.glob("node*"))}
    assert len(roots) == 2
    parts = db["quotes"].partitions()
    assert parts.height == ingested.result["partitions"]
    assert parts["rows"].sum() == ingested.result["rows"]
    m = db["quotes"].snapshot()
    for path, part in m.partitions.items():
        for fragment in part.fragments:
            holders = fragment.nodes
            assert len(holders) == len(set(holders)) == 2, path
            for node in holders:
                data = (roots[node] / fragment.file).read_bytes()
                assert len(data) == fragment.bytes
                assert zlib.crc32(data) == fragment.crc32, (path, node)


@pytest.fixture(scope="module")
def submitted(cluster, ingested) -> dict[str, dict]:
    """The query and analytics jobs on the cluster, submitted once, one after another."""
    return _submit_all(cluster, ("scan_agg", "--dates", DAYS[1], DAYS[1]), ("spread",),
                       ("minute_bars", "--dest", "quotes_1m"), ("ols", "--robust", "HC1"))


@pytest.fixture(scope="module")
def embedded(ingested, tmp_path_factory) -> SimpleNamespace:
    """The same CSV files loaded by the ingest job embedded (``--address local``), once."""
    root = str(tmp_path_factory.mktemp("embedded") / "db")
    files = [str(f) for f in sorted(ingested.csv_dir.glob("*.csv"))]
    loaded = _result(_run([sys.executable, "jobs/ingest.py", "--address", "local", "--root",
                           root, "--csv", *files], timeout=120, cwd=REPO).stdout, "ingest")
    return SimpleNamespace(root=root, loaded=loaded)


def test_scan_agg_job_matches_polars(submitted, ingested, oracle):
    day = DAYS[1]
    got = submitted["scan_agg"]
    _check_aggregates(got, oracle.filter(pl.col("date") == day.replace("-", "")))
    assert got["dates"] == [day, day]
    assert got["partitions"] == 8 and got["nodes"] == 2
    assert got["version"] == ingested.result["version"]


def test_jobs_run_embedded_with_address_local(embedded, oracle):
    loaded = embedded.loaded
    assert loaded["rows"] == oracle.height and loaded["min_copies"] == 1
    got = _result(_run([sys.executable, "jobs/scan_agg.py", "--address", "local", "--root",
                        embedded.root], timeout=120, cwd=REPO).stdout, "scan_agg")
    _check_aggregates(got, oracle)
    assert got["partitions"] == len(DAYS) * 8 and got["nodes"] == 1


@pytest.fixture(scope="module")
def quotes_oracle(ingested) -> pl.DataFrame:
    """Every column the analytics jobs use, read from the CSV files by polars."""
    files = sorted(ingested.csv_dir.glob("*.csv"))
    df = pl.concat([pl.read_csv(f, columns=["symbol", "date", "time", "bid", "ofr", "bidsiz",
                                            "ofrsiz"], schema_overrides={"date": pl.String})
                    for f in files])
    return df.with_columns(pl.col("time").cast(pl.String).str.to_time("%H:%M:%S"))


def _check_analytics(spread: dict, bars: dict, ols: dict, df: pl.DataFrame) -> None:
    """The three analytics jobs' printed results against polars and statsmodels."""
    import statsmodels.api as sm
    bid, ofr, t = pl.col("bid"), pl.col("ofr"), pl.col("time")
    quoted = df.filter(t.is_between(pl.time(9, 30), pl.time(15, 59, 59)) & (ofr > bid)
                       & (bid > 0) & (ofr / bid < 1.2))
    assert spread["quotes"] == quoted.height
    assert spread["avg_spread"] == pytest.approx(
        quoted.select(((ofr - bid) / (ofr + bid) * 2).mean()).item(), rel=1e-9)
    minute = t.dt.hour().cast(pl.Int32) * 60 + t.dt.minute()
    assert spread["minutes"] == quoted.select(minute).n_unique()
    assert bars["rows"] == bars["dest_rows"] == df.select("symbol", "date", minute).n_unique()
    kept = df.filter((ofr > bid) & (bid > 0) & (ofr / bid < 1.2))
    y = (kept["ofr"] / kept["bid"] - 1).to_numpy()
    x = ((kept["bidsiz"] + kept["ofrsiz"]) * (kept["ofr"] + kept["bid"]) / 2).to_numpy()
    ref = sm.OLS(y, sm.add_constant(x)).fit(method="qr", cov_type="HC1", use_t=True)
    assert ols["n"] == kept.height
    assert [ols["coef"]["intercept"], ols["coef"]["quote_size"]] == pytest.approx(
        list(ref.params), rel=1e-8)
    assert [ols["stderr"]["intercept"], ols["stderr"]["quote_size"]] == pytest.approx(
        list(ref.bse), rel=1e-8)
    assert ols["r2"] == pytest.approx(ref.rsquared, rel=1e-8)


def test_analytics_jobs_on_the_cluster(submitted, ingested, quotes_oracle):
    spread, bars, ols = submitted["spread"], submitted["minute_bars"], submitted["ols"]
    _check_analytics(spread, bars, ols, quotes_oracle)
    assert bars["version"] == 1 and bars["partitions"] == ingested.result["partitions"]


def test_analytics_jobs_embedded(embedded, quotes_oracle, tmp_path):
    local = ["--address", "local", "--root", embedded.root]
    png = tmp_path / "spread.png"
    spread = _result(_run([sys.executable, "jobs/spread.py", *local, "--plot", str(png)],
                          timeout=120, cwd=REPO).stdout, "spread")
    bars = _result(_run([sys.executable, "jobs/minute_bars.py", *local], timeout=120,
                        cwd=REPO).stdout, "minute_bars")
    ols = _result(_run([sys.executable, "jobs/ols.py", *local, "--robust", "HC1"], timeout=120,
                       cwd=REPO).stdout, "ols")
    _check_analytics(spread, bars, ols, quotes_oracle)
    assert bars["dest"] == "quotes_1m" and png.read_bytes()[:4] == b"\x89PNG"


def test_sourcing_the_cluster_env_is_enough_for_ray_job_submit(cluster):
    """cluster/README.md: after ``source <root>/.cluster/env``, ``ray job submit`` works in a
    fresh shell whose PATH has no venv (the env puts the cluster's ``ray`` first)."""
    env = {k: v for k, v in _env().items() if k != "RAY"}
    env["PATH"] = "/usr/bin:/bin"
    script = (f"source {cluster.root}/.cluster/env && ray job submit --address "
              f"{cluster.dashboard} -- python -c 'print(\"from-the-cluster\")'")
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "from-the-cluster" in proc.stdout
