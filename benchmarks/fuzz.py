"""The SQL fuzzer run long (issue 24): hfq's ``db.sql`` against DuckDB on adversarial rows,
plus the metamorphic oracles (TLP, NoREC), embedded or on a 2-node cluster.

    python benchmarks/fuzz.py --minutes N [--seed S] [--cluster] [--strict] [--shrink K]
                              [--out DIR]

* ``--minutes`` -- how long to run (or ``--queries`` for a count); the campaign draws datasets
  from ``--seed`` (default 1) and 50 queries on each (``tests/fuzz/sqlfuzz``).
* ``--cluster`` -- on ``hfq.testing.local_cluster(nodes=2)``, tables with one replica each, so
  that about half the partitions are on the other node and run there (a small query over
  partitions all held here runs inline in the driver).
* ``--strict``  -- count every mismatch, also those the open findings explain
  (``tests/fuzz/sqlfuzz/known.py``; by default they are counted apart, per finding).
* ``--shrink K`` -- shrink up to K mismatches (the first of each distinct shrunk text) and
  write each as a regression case and a findings section.

Writes ``<out>/fuzz-<embedded|cluster>-seed<S>.md`` and ``.json`` (default
``benchmarks/results/fuzz``): queries run, outcomes (same, refused, agreed errors, invalid,
mismatches), the refusals by construct, the metamorphic checks, the shrunk mismatches.  Not
part of CI: ``tests/fuzz/test_fuzz.py`` runs a fixed-seed budget.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))

from sqlfuzz.campaign import Campaign, Report  # noqa: E402
from sqlfuzz.findings import markdown, normalized, python_case  # noqa: E402
from sqlfuzz.shrink import shrink  # noqa: E402

import hfq  # noqa: E402


@contextlib.contextmanager
def database(cluster: bool) -> Iterator[tuple[hfq.Database, int | None]]:
    if not cluster:
        with tempfile.TemporaryDirectory(prefix="hfq-fuzz-") as root:
            yield hfq.connect(root), None
        return
    from hfq.testing import local_cluster
    with local_cluster(nodes=2) as lc:
        yield lc.connect(), 1


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def render(report: Report, args: argparse.Namespace, where: str, shrunk: list[str]) -> str:
    lines = [f"# SQL fuzzer: {where}, seed {args.seed}", "",
             f"- commit {commit()}, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"{report.seconds / 60:.1f} minutes, "
             "every mismatch counted" if args.strict else
             "mismatches explained by open findings counted apart (tests/fuzz/sqlfuzz/known.py)",
             f"- queries run: **{report.queries}** on {report.datasets} datasets "
             f"({report.queries / max(report.seconds, 1e-9):.0f} per second)",
             f"- mismatches: **{report.mismatches}**",
             f"- explained by open findings: {dict(sorted(report.known.items()))}", "",
             "## Outcomes", "",
             "| outcome | queries |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(report.outcomes.items())]
    lines += ["", "## Refused by construct (hfq raised an HfqError, DuckDB answered)", "",
              "| construct | queries |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in report.refused.most_common()]
    lines += ["", "## Query shapes", "", "| shape | queries |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in report.shapes.most_common()]
    lines += ["", "## Invalid in DuckDB (the grammar's misses, not held against hfq)", ""]
    lines += [f"- {k} x{v}" for k, v in report.invalid.most_common(20)]
    lines += ["", "## Mismatches", ""]
    if shrunk:
        lines += shrunk
    else:
        lines += [f"- [{f.oracle}/{f.outcome.status}] `{f.sql}`: {f.outcome.detail}"
                  for f in report.found[:200]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--shrink-seconds", type=float, default=90.0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fuzz"))
    args = ap.parse_args(argv)
    where = "cluster" if args.cluster else "embedded"
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = out / f"fuzz-{where}-seed{args.seed}"
    with database(args.cluster) as (db, replicas):
        kw: dict[str, Any] = {"replicas": replicas}
        if args.strict:
            kw["known"] = []
        campaign = Campaign(db, seed=args.seed, **kw)
        last = [time.monotonic()]

        def progress(r: Report) -> None:
            if time.monotonic() - last[0] > 30:
                last[0] = time.monotonic()
                print(f"{r.queries} queries, {r.mismatches} mismatches, "
                      f"{sum(r.refused.values())} refused", flush=True)

        report = campaign.run(queries=args.queries or 10**12, seconds=args.minutes * 60,
                              progress=progress)
        shrunk: list[str] = []
        cases: list[str] = []
        seen: set[str] = set()
        for i, f in enumerate(report.found):
            if len(shrunk) >= args.shrink:
                break
            ds, sql, outcome = shrink(campaign, f.dataset, f.sql, f.outcome,
                                      seconds=args.shrink_seconds,
                                      known=campaign.known)
            key = normalized(sql)
            if key in seen:
                continue
            seen.add(key)
            fid = f"S{args.seed}-{i}"
            shrunk.append(markdown(fid, ds, sql, outcome, oracle=f.oracle))
            cases.append(python_case(fid, ds, sql))
            print(shrunk[-1], flush=True)
    print(report.summary())
    base.with_suffix(".md").write_text(render(report, args, where, shrunk))
    base.with_suffix(".json").write_text(json.dumps({
        "where": where, "seed": args.seed, "commit": commit(), "queries": report.queries,
        "datasets": report.datasets, "seconds": round(report.seconds, 1),
        "mismatches": report.mismatches, "outcomes": dict(report.outcomes),
        "refused": dict(report.refused), "strict": args.strict,
        "known": dict(report.known),
        "found": [{"oracle": f.oracle, "status": f.outcome.status, "sql": f.sql,
                   "detail": f.outcome.detail} for f in report.found[:500]]}, indent=1))
    if cases:
        base.with_suffix(".cases.py").write_text("\n".join(cases) + "\n")
    print(f"wrote {base}.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    sys.exit(main())
