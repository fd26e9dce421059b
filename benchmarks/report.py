"""What a run leaves in --out: report.md, results.json and the PNG plots."""

from __future__ import annotations

import json
import os
import platform
import re

from harness import SHAPES, Bench, Result, mrows, speedup, tie


def scenarios(bench: Bench) -> dict[str, list[Result]]:
    """Scenario -> its results, in the order they ran."""
    out: dict[str, list[Result]] = {}
    for r in bench.results:
        out.setdefault(r.scenario, []).append(r)
    return out


def timed(r: Result) -> bool:
    return r.median == r.median      # NaN: a reference row (the CSV size), not a run


def reference(rows: list[Result]) -> Result | None:
    """What a scenario's ratios are relative to: its first timed hfq contender."""
    return next((r for r in rows if r.contender.startswith("hfq") and timed(r)), None)


def plot_name(scenario: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", scenario.lower()).strip("_") + ".png"


# -- report.md -----------------------------------------------------------------------------------
SMOKE = ("**Smoke test (`--quick`)**: tiny data and one timed run per contender, to check "
         "that every scenario runs end to end and every answer agrees. The figures below are "
         "not measurements; the targets are not judged.")


def markdown(bench: Bench, plots: dict[str, str]) -> str:
    shapes = "; ".join(f"{v[0]}: {v[1](bench.rows):,} tickers" for v in SHAPES.values())
    lines = ["# hfq benchmarks", ""]
    if bench.quick:
        lines += [SMOKE, ""]
    lines += [f"{bench.days} day(s) x {bench.rows:,} rows of synthetic TAQ in two shapes "
              f"({shapes}; scenarios on the second shape are marked with it); "
              f"{os.cpu_count()} cores; Python {platform.python_version()}; "
              + ("one run per contender, checked and timed, no warm-up (a smoke test); "
                 if bench.quick else f"{bench.repeats} timed runs per contender after a "
                 "warm-up, in alternating order; ")
              + "median, min and max seconds. Page cache: warm unless a table says "
              "cold (then every file of every contender is evicted with "
              "`posix_fadvise(DONTNEED)` before each run and each store is opened afresh). "
              "Every contender's whole answer (every value of every row, or the query's "
              "numbers) was checked against the others on its first run, and rows are "
              "counted from the answers. A speed-up whose run ranges overlap is marked "
              f"(tie). Whole run: {bench.seconds / 60:.1f} min.", ""]
    for scenario, rows in scenarios(bench).items():
        ours = [r for r in rows if r.contender.startswith("hfq") and timed(r)]
        peers = [r for r in rows if not r.contender.startswith("hfq") and timed(r)]
        cache = next((r.cache for r in rows if timed(r)), "warm")
        lines += [f"## {scenario}", "", f"Page cache: {cache}.", "",
                  "| contender | median s | min s | max s | M rows/s | bytes | notes |",
                  "|---|---|---|---|---|---|---|"]
        for r in rows:
            secs = f"{r.median:.4f} | {r.low:.4f} | {r.high:.4f}" if timed(r) else " | | "
            rate = f"{mrows(r.rows, r.median):,.2f}" if timed(r) and r.rows else ""
            size = f"{r.bytes:,}" if r.bytes else ""
            notes = "" if bench.quick else r.notes
            lines.append(f"| {r.contender} | {secs} | {rate} | {size} | {notes} |")
        if bench.summary.get(scenario) and not bench.quick:
            lines += ["", *bench.summary[scenario]]
        if ours and peers:
            lines += ["", "Speed-up of hfq over each peer (peer time / hfq time; above 1: hfq "
                      "is faster; (tie): the run ranges overlap):", "",
                      "| hfq \\ peer | " + " | ".join(p.contender for p in peers) + " |",
                      "|---|" + "---|" * len(peers)]
            for r in ours:
                cells = " | ".join(speedup(p, r) for p in peers)
                lines.append(f"| {r.contender} | {cells} |")
        for name, caption in plots.get(scenario, ()):
            lines += ["", f"![{caption}](plots/{name})"]
        lines.append("")
    return "\n".join(lines) + "\n"


# -- results.json --------------------------------------------------------------------------------
def machine_readable(bench: Bench) -> dict:
    """scenario -> contender -> median seconds, every run, rows, bytes, and the ratio to the
    scenario's reference (its first hfq contender): this contender's median time over the
    reference's, so above 1 the reference is faster; ``bytes_ratio`` likewise for sizes."""
    data: dict = {"_meta": {"rows_per_day": bench.rows, "days": bench.days,
                            "repeats": bench.repeats, "quick": bench.quick,
                            "cores": os.cpu_count(), "python": platform.python_version(),
                            "smoke_test": bench.quick, "seconds": bench.seconds,
                            "shapes": {k: v[0] for k, v in SHAPES.items()},
                            "cache": "warm unless an entry says cold (posix_fadvise)"}}
    for scenario, rows in scenarios(bench).items():
        ref = reference(rows)
        entry = data.setdefault(scenario, {})
        for r in rows:
            item = {"median_s": r.median if timed(r) else None,
                    "min_s": r.low if timed(r) else None, "max_s": r.high if timed(r) else None,
                    "runs_s": r.seconds if timed(r) else [], "cache": r.cache,
                    "rows": r.rows, "bytes": r.bytes,
                    "rows_per_s": r.rows / r.median if timed(r) else None,
                    "reference": ref.contender if ref else None,
                    "ratio": r.median / ref.median if ref and timed(r) else None,
                    "tie_with_reference": tie(r, ref) if ref and timed(r) else None,
                    "bytes_ratio": (r.bytes / ref.bytes if ref and ref.bytes and r.bytes
                                    else None),
                    "notes": r.notes}
            item.update(r.extra)
            entry[r.contender] = item
    return data


# -- plots ---------------------------------------------------------------------------------------
def draw(bench: Bench, folder: str) -> dict[str, list[tuple[str, str]]]:
    """One bar chart of throughput per scenario, and line charts for the families measured
    over a count (clients, nodes).  Returns scenario -> the (PNG file, caption) shown under
    it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(folder, exist_ok=True)
    shown: dict[str, list[tuple[str, str]]] = {}
    for scenario, rows in scenarios(bench).items():
        rows = [r for r in rows if timed(r)]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
        rates = [mrows(r.rows, r.median) for r in rows]
        colors = ["tab:blue" if r.contender.startswith("hfq") else "tab:gray" for r in rows]
        ax.barh(range(len(rows)), rates, color=colors)
        ax.set_yticks(range(len(rows)), [r.contender for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("M rows/s (higher is better)")
        ax.set_title(scenario + (" (smoke test: not a measurement)" if bench.quick else ""))
        for i, rate in enumerate(rates):
            ax.text(rate, i, f" {rate:,.1f}", va="center", fontsize=7)
        fig.tight_layout()
        name = plot_name(scenario)
        fig.savefig(os.path.join(folder, name), dpi=100)
        plt.close(fig)
        shown.setdefault(scenario, []).append((name, f"{scenario}: M rows/s per contender"))
    for axis in ("clients", "nodes"):      # one line per contender over the count
        series: dict[str, list[tuple[int, float]]] = {}
        family = ""
        for r in bench.results:
            if axis in r.extra and timed(r) and "[" not in r.scenario:   # the first shape
                series.setdefault(r.extra.get("series", r.contender), []).append(
                    (r.extra[axis], mrows(r.rows, r.median)))
                family = r.scenario     # shown under the family's last table
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, points in series.items():
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        counts = sorted({p[0] for pts in series.values() for p in pts})
        ax.set_xticks(counts)
        ax.set_xlabel(axis)
        ax.set_ylabel("total M rows/s")
        ax.set_title(f"throughput by {axis}")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        name = f"by_{axis}.png"
        fig.savefig(os.path.join(folder, name), dpi=100)
        plt.close(fig)
        shown.setdefault(family, []).append((name, f"total M rows/s by {axis}"))
    return shown


def write(bench: Bench, out: str) -> str:
    """report.md, results.json and plots/ into ``out``; returns the report's text."""
    plots = draw(bench, os.path.join(out, "plots"))
    text = markdown(bench, plots)
    with open(os.path.join(out, "report.md"), "w") as fh:
        fh.write(text)
    with open(os.path.join(out, "results.json"), "w") as fh:
        json.dump(machine_readable(bench), fh, indent=2, default=str)
    return text
