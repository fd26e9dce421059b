"""The SQL fuzzer run long (issue 24): hfq's ``db.sql`` against DuckDB on adversarial rows,
plus the metamorphic oracles (TLP, NoREC), embedded or on a 2-node cluster.

    python benchmarks/fuzz.py --minutes N [--seed S] [--cluster] [--strict] [--shrink K]
                              [--out DIR] [--block-minutes M]

* ``--minutes`` -- how long to run (``--queries`` stops earlier at a count); the campaign
  draws datasets from ``--seed`` (default 1) and 50 queries on each (``tests/fuzz/sqlfuzz``).
* ``--cluster`` -- on ``hfq.testing.local_cluster(nodes=2)``, tables with one replica each, so
  that about half the partitions are on the other node and run there (a small query over
  partitions all held here runs inline in the driver).
* ``--strict``  -- count every mismatch, also those the open findings explain
  (``tests/fuzz/sqlfuzz/known.py``; by default they are counted apart, per finding).
* ``--shrink K`` -- shrink up to K mismatches (the first of each distinct shrunk text) and
  write each as a findings section and a regression case.

The run is supervised: blocks of ``--block-minutes`` (default 10) run each in a child process
that writes its counts after every dataset and the statement it is about to run to a trace, so
a crash of the process itself (a segfault in a native library) is recorded as a finding --
dataset and statement -- and the run goes on with the next dataset; so is a hang (no progress
for ``--hang-minutes``, default 10: the worker and its local cluster are killed).

Writes ``<out>/fuzz-<embedded|cluster>-seed<S>.md`` and ``.json`` (default
``benchmarks/results/fuzz``): queries run, outcomes (same, refused, agreed errors, invalid,
mismatches), hfq's errors in polars' words (``leaked``: a defect on its own line), the
refusals by construct, the metamorphic checks, the process crashes, the
shrunk mismatches, and apart from the mismatches the differences where DuckDB disagrees with
itself (``unstable``: its answer moves with the row order; ``plan_error``: it raises only with
its optimizer on; ``plan_answer``: its plan of a small ASOF JOIN answers otherwise than its ASOF
operator, or its optimizer moves the answer to one side of hfq's; ``near_tie``: an ulp in a
float sort key moved which rows a LIMIT keeps -- the rules are in ``docs/sql.md``,
"Evaluation order").  Not part of CI:
``tests/fuzz/test_fuzz.py`` runs a fixed-seed budget.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import json
import os
import pathlib
import signal
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

COUNTERS = ("outcomes", "refused", "refused_tags", "invalid", "shapes", "tags", "known",
            "leaked")


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


# -- the worker: one block of datasets in this process ------------------------------------------
def worker(args: argparse.Namespace) -> int:
    state = pathlib.Path(args.state)
    with database(args.cluster) as (db, replicas):
        kw: dict[str, Any] = {"replicas": replicas, "trace": args.trace}
        if args.strict:
            kw["known"] = []
        campaign = Campaign(db, seed=args.seed, **kw)
        shrunk: list[dict[str, str]] = []

        def save(report: Report) -> None:
            state.write_text(json.dumps({**report.counts(), "shrunk": shrunk}))

        report = campaign.run(queries=args.queries, seconds=args.minutes * 60,
                              first_round=args.first_round, progress=save)
        save(report)
        seen = set(args.seen or [])
        for f in report.found:
            if len(shrunk) >= args.shrink:
                break
            ds, sql, outcome = shrink(campaign, f.dataset, f.sql, f.outcome,
                                      seconds=args.shrink_seconds, known=campaign.known,
                                      params=f.params)
            key = normalized(sql)
            if key in seen:
                continue
            seen.add(key)
            fid = f"S{args.seed}-{f.dataset.seed}-{len(shrunk)}"
            shrunk.append({"key": key, "markdown": markdown(fid, ds, sql, outcome,
                                                            oracle=f.oracle, params=f.params),
                           "case": python_case(fid, ds, sql, params=f.params)})
            save(report)
    return 0


# -- the supervisor ---------------------------------------------------------------------------
def supervise(args: argparse.Namespace) -> dict[str, Any]:
    total: dict[str, Any] = {"queries": 0, "datasets": 0, "seconds": 0.0, "found": [],
                             "apart": [],
                             "shrunk": [], "crashes": [], "blocks": 0, "examples": {},
                             **{k: collections.Counter() for k in COUNTERS}}
    started = time.monotonic()
    next_round = 0
    work = pathlib.Path(tempfile.mkdtemp(prefix="hfq-fuzz-run-"))
    while time.monotonic() - started < args.minutes * 60 and \
            total["queries"] < (args.queries or 10**12):
        left = args.minutes * 60 - (time.monotonic() - started)
        block = min(args.block_minutes * 60, left)
        state, trace = work / f"state{total['blocks']}.json", work / f"trace{total['blocks']}"
        cmd = [sys.executable, __file__, "--worker", "--seed", str(args.seed),
               "--first-round", str(next_round), "--minutes", str(block / 60),
               "--queries", str((args.queries or 10**12) - total["queries"]),
               "--state", str(state), "--trace", str(trace),
               "--shrink", str(max(0, args.shrink - len(total["shrunk"]))),
               "--shrink-seconds", str(args.shrink_seconds)]
        cmd += ["--cluster"] if args.cluster else []
        cmd += ["--strict"] if args.strict else []
        for s in total["shrunk"]:
            cmd += ["--seen", s["key"]]
        returncode = _run_watched(cmd, [state, trace], args.hang_minutes * 60)
        total["blocks"] += 1
        part = json.loads(state.read_text()) if state.exists() else {"next_round": next_round}
        for k in ("queries", "datasets", "seconds"):
            total[k] += part.get(k, 0)
        for k in COUNTERS:
            total[k].update(part.get(k, {}))
        total["found"] += part.get("found", [])
        total["apart"] += part.get("apart", [])
        for k, v in part.get("examples", {}).items():
            total["examples"].setdefault(k, v)
        total["shrunk"] += part.get("shrunk", [])
        next_round = part.get("next_round", next_round)
        if returncode != 0:
            lines = trace.read_text().splitlines() if trace.exists() else []
            dataset = next((ln for ln in reversed(lines) if ln.startswith("-- dataset")), "")
            last = lines[-1] if lines else ""
            hung = returncode is None
            total["crashes"].append({"returncode": returncode, "dataset": dataset,
                                     "statement": last, "hang": hung})
            what = "hung (killed)" if hung else f"died ({returncode})"
            print(f"worker {what} at {dataset}: {last[:300]}", flush=True)
            if dataset:   # go on after the dataset it died on
                next_round = int(dataset.split()[-1]) - args.seed * 1000 + 1
        print(f"{total['queries']} queries, {len(total['found'])} mismatches, "
              f"{len(total['crashes'])} crashes, "
              f"{sum(total['refused'].values())} refused", flush=True)
    return total


def _run_watched(cmd: list[str], progress: list[pathlib.Path], patience: float) -> int | None:
    """Run a worker; its exit code, or None when it hung: none of the ``progress`` files
    (its state after each dataset, its trace before each statement) changed for ``patience``
    seconds -- then its process group (its local Ray cluster with it) is killed.  A hang is
    a finding like a crash: the run goes on after that dataset."""
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    begun = time.time()
    while proc.poll() is None:
        time.sleep(2.0)
        last = max([p.stat().st_mtime for p in progress if p.exists()] + [begun])
        if time.time() - last > patience:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None
    return proc.returncode


def render(total: dict[str, Any], args: argparse.Namespace, where: str) -> str:
    q = total["queries"]
    lines = [f"# SQL fuzzer: {where}, seed {args.seed}", "",
             f"- commit {commit()}, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"{total['seconds'] / 60:.1f} minutes of fuzzing in {total['blocks']} blocks; "
             + ("every mismatch counted" if args.strict else
                "mismatches explained by open findings counted apart "
                "(tests/fuzz/sqlfuzz/known.py)"),
             f"- command: `python benchmarks/fuzz.py --minutes {args.minutes:g} --seed "
             f"{args.seed}{' --cluster' if args.cluster else ''}"
             f"{' --strict' if args.strict else ''}`",
             f"- queries run: **{q}** on {total['datasets']} datasets "
             f"({q / max(total['seconds'], 1e-9):.0f} per second)",
             f"- mismatches: **{len(total['found'])}**; process crashes: "
             f"**{len(total['crashes'])}**",
             f"- explained by open findings: {dict(sorted(total['known'].items()))}",
             f"- counted apart, DuckDB disagreeing with itself (not mismatches; rules in "
             f"docs/sql.md, listed below): unstable **{total['outcomes'].get('unstable', 0)}** "
             f"(its answer moves with the row order), plan_error "
             f"**{total['outcomes'].get('plan_error', 0)}** (it raises only with its "
             f"optimizer), plan_answer **{total['outcomes'].get('plan_answer', 0)}** (its "
             f"nested-loop plan of a small ASOF JOIN answers otherwise than its ASOF operator"
             f", or its optimizer's plan otherwise than without it)"
             f", near_tie **{total['outcomes'].get('near_tie', 0)}** (rows an ulp apart in a "
             f"float sort key moved which rows a LIMIT keeps)",
             f"- errors in polars' words (a defect, not counted as a mismatch): "
             f"**{sum(total['leaked'].values())}** (listed below)", "",
             "## Outcomes", "", "| outcome | queries |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(total["outcomes"].items())]
    lines += ["", "## Errors in polars' words (refusals and shared errors; each a defect: hfq "
              "must refuse by name, in its own words)", ""]
    lines += [f"- {k.replace('|', '/')} x{v}: `{total['examples'].get(k, '')}`"
              for k, v in total["leaked"].most_common()] or ["none"]
    lines += ["", "## Refused by construct (hfq raised an HfqError, DuckDB answered)", "",
              "| construct | queries |", "|---|---|"]
    lines += [f"| {k.replace('|', '/')} | {v} |" for k, v in total["refused"].most_common()]
    lines += ["", "An example of each refusal:", ""]
    lines += [f"- {k}: `{total['examples'].get(k, '')}`" for k, _ in
              total["refused"].most_common()]
    lines += ["", "## Query shapes", "", "| shape | queries |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in total["shapes"].most_common()]
    lines += ["", "## Invalid in DuckDB (the grammar's misses, not held against hfq)", ""]
    lines += [f"- {k} x{v}" for k, v in total["invalid"].most_common(20)]
    lines += ["", "## Counted apart: DuckDB disagrees with itself", ""]
    lines += [f"- [{a['status']}] dataset {a['dataset']} `{a['sql']}`: {a['detail'][:300]}"
              for a in total["apart"][:200]] or ["none"]
    lines += ["", "## Process crashes", ""]
    lines += [f"- {'hung, killed' if c.get('hang') else 'exit ' + str(c['returncode'])} at "
              f"{c['dataset']}: `{c['statement']}`" for c in total["crashes"]] or ["none"]
    lines += ["", "## Mismatches", ""]
    lines += [s["markdown"] for s in total["shrunk"]]
    if len(total["found"]) > len(total["shrunk"]):
        lines += [f"- [{f['oracle']}/{f['status']}] `{f['sql']}`: {f['detail']}"
                  for f in total["found"][:200]]
    if not total["found"]:
        lines.append("none")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--shrink-seconds", type=float, default=90.0)
    ap.add_argument("--block-minutes", type=float, default=10.0)
    ap.add_argument("--hang-minutes", type=float, default=10.0,
                    help="a worker that makes no progress this long is killed: a finding")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fuzz"))
    # the worker's own arguments
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--first-round", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--state", help=argparse.SUPPRESS)
    ap.add_argument("--trace", help=argparse.SUPPRESS)
    ap.add_argument("--seen", action="append", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.queries = args.queries or 10**12
        return worker(args)
    where = "cluster" if args.cluster else "embedded"
    total = supervise(args)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = out / f"fuzz-{where}-seed{args.seed}"
    base.with_suffix(".md").write_text(render(total, args, where))
    base.with_suffix(".json").write_text(json.dumps({
        "where": where, "seed": args.seed, "commit": commit(), "strict": args.strict,
        **{k: total[k] for k in ("queries", "datasets", "blocks", "crashes")},
        "seconds": round(total["seconds"], 1), "mismatches": len(total["found"]),
        **{k: dict(total[k]) for k in COUNTERS},
        "found": total["found"][:500], "apart": total["apart"][:500]}, indent=1))
    if total["shrunk"]:
        base.with_suffix(".cases.py").write_text(
            "\n".join(s["case"] for s in total["shrunk"]) + "\n")
    print(f"wrote {base}.md ({total['queries']} queries, {len(total['found'])} mismatches, "
          f"{len(total['crashes'])} crashes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    sys.exit(main())
