"""The fault campaign of issue 14 ("Done when"): damage, kill and starve hfq on purpose and
count what happens -- with whatever is implemented today.

    python benchmarks/faults.py [--small] [--only SECTION ...] [--seed N]

Sections (all by default):

* ``flips``      -- single-bit flips (>= 200) and truncations (>= 50) of stored partition files,
  across codecs, embedded: every full read, point read and map_reduce must give the right answer
  or a :class:`~hfq.errors.CorruptPartitionError` naming the file -- never a silent wrong answer.
* ``replicas``   -- the same damage (>= 200 flips, >= 50 truncations, one table per codec) to
  one copy of two on a 2-node cluster: the right answer from the good copy, for a scan and a
  map_reduce, and every bad copy repaired (by the read, else by ``db.repair()``).
* ``kills``      -- a writer process killed (``os._exit(137)`` at a fault point, i.e. kill -9)
  during load / append / compact / vacuum (embedded; each point at its 1st, 2nd, ... hit until
  it is no longer reached) and rebalance / repair (a driver on a growing cluster, 4 tables):
  the table is at exactly the old or the new version, intact, and ``vacuum()`` leaves no file
  no version references, on any node (>= 100 kills).
* ``manifests``  -- 6 kinds of damage to the head manifest: a named error, recovery to the
  newest intact version (``hfq.connect(..., recover=True)`` when it exists), and no version
  number used twice.
* ``head``       -- the head node's disk lost (its whole root: catalog and data): a new head
  over the other nodes, ``hfq.connect(address=..., recover=True)``, finds every table at its
  last version with the same versions, checksums and rows.
* ``enospc``     -- the disk full at each file write of an append, a CSV load and a
  compaction: the table unchanged and no file left (no vacuum needed).
* ``nodes``      -- a node killed before each call (verify, vacuum, rebalance, repair, compact,
  load_csv, append, partitions, scan, map_reduce, drop_table), and during those with a fault
  point in the driver (the call held there while the node dies): success or an hfq error,
  never a raw Ray one; then ``rebalance()`` restores every partition's replicas and a scan
  has ``len(t)`` rows.

Prints one table of counts per section and a verdict against the issue's bar, and writes it
as Markdown to ``--out`` (default ``benchmarks/results/faults.md`` for a full run).
``--small`` runs a few trials of each (minutes); without it the counts reach the issue's
numbers (about 10 minutes on 2 cores).  Not part of CI: the fault *tests* (``tests/faults/``)
are.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import errno
import functools
import inspect
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("RAY_TMPDIR", f"/tmp/hfq-faults-{os.getpid()}")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402

import hfq  # noqa: E402
from hfq import faults, synth  # noqa: E402
from hfq import reduce as hr  # noqa: E402
from hfq.errors import CorruptPartitionError, HfqError  # noqa: E402
from hfq.storage.store import LocalStore  # noqa: E402

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2))
DAYS = ("2024-01-02", "2024-01-03")
CODECS = ("zstd", "lz4", "none")


# -- the report --------------------------------------------------------------------------------
@dataclass
class Section:
    """One line of the report: what was tried, how often each outcome happened, the bar."""

    name: str
    bar: str
    counts: collections.Counter = field(default_factory=collections.Counter)
    trials: int = 0
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""

    def count(self, outcome: str, ok: bool, detail: str = "") -> None:
        self.counts[outcome] += 1
        if not ok:
            self.failures.append(f"{outcome}: {detail}" if detail else outcome)

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "not run"
        return "PASS" if not self.failures and self.trials else "FAIL"


REPORT: list[Section] = []


def section(name: str, bar: str) -> Section:
    s = Section(name, bar)
    REPORT.append(s)
    return s


def print_report() -> None:
    print("\n" + "=" * 100)
    print(f"{'check':44} {'trials':>6}  verdict  outcomes")
    print("-" * 100)
    for s in REPORT:
        outcomes = ", ".join(f"{k}: {v}" for k, v in sorted(s.counts.items())) or s.skipped
        print(f"{s.name:44} {s.trials:6d}  {s.verdict:7}  {outcomes}")
        print(f"{'':44} {'':6}  bar: {s.bar}")
        for note in s.notes:
            print(f"{'':52} note: {note}")
        for failure in list(dict.fromkeys(s.failures))[:6]:
            print(f"{'':52} ! {failure[:400]}")
    print("=" * 100)


def write_report(path: str, argv: list[str], seconds: float,
                 times: dict[str, float]) -> None:
    """The report as Markdown: the command, when, and one row per check with every count."""
    lines = ["# Fault campaign (issue 14)", "",
             f"`python benchmarks/faults.py {' '.join(argv)}`".replace(" `", "`"), "",
             f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} "
             f"cores, hfq at {_commit()}; {seconds:.0f} s "
             f"({', '.join(f'{k} {v:.0f} s' for k, v in times.items())}).", "",
             f"**{sum(s.verdict == 'FAIL' for s in REPORT)} of {len(REPORT)} checks fail.**",
             "", "| check | trials | verdict | bar | outcomes (count) |",
             "|---|---:|---|---|---|"]
    for s in REPORT:
        outcomes = "<br>".join(f"{k}: {v}" for k, v in sorted(s.counts.items())) or s.skipped
        lines.append(f"| {s.name} | {s.trials} | {s.verdict} | {s.bar} | {outcomes} |")
    notes = [(s.name, n) for s in REPORT for n in s.notes] + \
        [(s.name, "FAILED: " + f) for s in REPORT for f in list(dict.fromkeys(s.failures))[:10]]
    if notes:
        lines += ["", "Notes and failures:", ""]
        lines += [f"- {name}: {text}".replace("\n", " ") for name, text in notes]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"report written to {path}")


def _commit() -> str:
    """The commit the tree is at (read from .git, no git command), with '+' if edited."""
    try:
        head = open(os.path.join(ROOT, ".git", "HEAD")).read().strip()
        if head.startswith("ref: "):
            head = open(os.path.join(ROOT, ".git", head[5:])).read().strip()
        return head[:7] + " (plus uncommitted edits, if any)"
    except OSError:
        return "an unknown commit"


# -- helpers -----------------------------------------------------------------------------------
def canonical(table: pa.Table | pl.DataFrame) -> pl.DataFrame:
    """Rows in one order, floats compared bit for bit."""
    df = table if isinstance(table, pl.DataFrame) else pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    exprs = [pl.col(n).cast(pl.String) if t in (pl.Categorical, pl.Enum) else
             pl.col(n).cast(pl.Float64).reinterpret(signed=True) if t in (pl.Float32, pl.Float64)
             else pl.col(n) for n, t in df.schema.items()]
    out = df.select(exprs)
    return out.sort(out.columns, nulls_last=True, maintain_order=True)


LAST_ERROR: list[str] = [""]


def classify(run: Callable[[], Any], expected: Any, file: str | None = None) -> str:
    """``correct``, ``named error`` (a CorruptPartitionError naming ``file``), ``SILENT
    WRONG``, or how else it failed (the message is kept in ``LAST_ERROR``)."""
    LAST_ERROR[0] = ""
    try:
        got = run()
    except CorruptPartitionError as exc:
        LAST_ERROR[0] = str(exc)
        return "named error" if file is None or file in str(exc) else "error naming another file"
    except HfqError as exc:
        LAST_ERROR[0] = str(exc)
        return f"other hfq error ({type(exc).__name__})"
    except Exception as exc:  # noqa: BLE001 - counted: a raw library error reached the user
        LAST_ERROR[0] = str(exc)
        return f"RAW {type(exc).__name__}"
    same = got.equals(expected) if isinstance(got, pl.DataFrame) else got == expected
    return "correct" if same else "SILENT WRONG"


def taq(seed: int, rows: int, days: tuple[str, ...] = DAYS, symbols: int = 20) -> pa.Table:
    return synth.taq_table(dates=days, rows_per_day=rows, symbols=symbols, seed=seed)


def _full(t: hfq.Table) -> pl.DataFrame:
    return canonical(t.to_arrow())


def bid_sum(t: hfq.Table) -> Any:
    return t.map_reduce(None, hr.Sum(on="bid"))


def damage_file(path: str, rng: random.Random, kind: str) -> bytes:
    """Flip one bit (``flip``, in place: bit rot) or cut the file short (``truncate``: a
    shorter file replaces it); returns the original.

    Never truncates in place: a node may still be reading the file for a call that already
    failed (a map_reduce returns its first error without waiting for the rest), and a file
    shrunk under a memory map kills that process with SIGBUS -- see the report's notes."""
    with open(path, "rb") as f:
        good = f.read()
    if kind == "flip":
        at = rng.randrange(len(good))
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(bytes([good[at] ^ (1 << rng.randrange(8))]))
    else:
        replace_file(path, good[:rng.randrange(len(good))])
    return good


def replace_file(path: str, data: bytes) -> None:
    """Put ``data`` at ``path`` through a temporary and a rename (readers of the old file
    keep it)."""
    tmp = f"{path}.campaign-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def files_under(root: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def has_repair() -> bool:
    return hasattr(hfq.Database, "repair")


def supports_recover() -> bool:
    return "recover" in inspect.signature(hfq.connect).parameters


def run_section(fn: Callable[[argparse.Namespace], None], args: argparse.Namespace) -> None:
    started = time.perf_counter()
    print(f"\n--- {fn.__name__} ---", flush=True)
    before = len(REPORT)
    try:
        fn(args)
    except Exception:  # noqa: BLE001 - the campaign reports and goes on
        text = traceback.format_exc()
        print(text)
        s = REPORT[-1] if len(REPORT) > before else section(fn.__name__, "ran to the end")
        s.failures.append("the section itself failed: " + text.strip().splitlines()[-1])
    print(f"    ({time.perf_counter() - started:.0f} s)", flush=True)


# -- bit flips and truncations, embedded -------------------------------------------------------
def flips(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    n_flips, n_trunc = (24, 9) if args.small else (210, 54)
    reads = {kind: section(f"embedded {kind}: damaged file", "0 silent wrong answers; 100% "
                           "named errors when the damage is read")
             for kind in ("full scan", "point scan", "map_reduce")}
    with tempfile.TemporaryDirectory(prefix="hfq-flips-") as tmp:
        for ci, codec in enumerate(CODECS):
            db = hfq.connect(os.path.join(tmp, codec), compression=codec, batch_rows=500,
                             cache_bytes=0)
            t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=SCHEME,
                                sort_by=("symbol", "time"))
            t.append(taq(seed=ci, rows=3000))
            full = canonical(t.to_arrow())
            symbol = str(full["symbol"][len(full) // 3])
            point = canonical(t.to_arrow(symbols=[symbol]))
            total = bid_sum(t) if not args.no_map_reduce else None
            fragments = list(t.snapshot().fragments())
            trials = [("flip", n_flips // len(CODECS)), ("truncate", n_trunc // len(CODECS))]
            for kind, n in trials:
                for _ in range(n):
                    f = rng.choice(fragments)
                    path = os.path.join(db.session.store.root, f.file)
                    good = damage_file(path, rng, kind)
                    try:
                        for name, run, want, strict in _reads(t, symbol, full, point, total):
                            if name == "map_reduce" and args.no_map_reduce:
                                continue
                            outcome = classify(run, want, f.file)
                            # a full read touches every byte: damage must be named
                            ok = outcome == "named error" or (not strict and outcome == "correct")
                            reads[name].trials += 1
                            reads[name].count(f"{kind}: {outcome}", ok,
                                              f"{codec} {f.file}: {LAST_ERROR[0][-200:]}")
                    finally:
                        replace_file(path, good)
            db.close()
    if args.no_map_reduce:
        reads["map_reduce"].skipped = "--no-map-reduce"


# -- one damaged copy of two, on a cluster -----------------------------------------------------
def replicas(args: argparse.Namespace) -> None:
    from hfq.testing import local_cluster
    rng = random.Random(args.seed + 1)
    answers = section("cluster, 1 of 2 copies damaged: answers",
                      "100% correct answers from the good copy")
    repaired = section("cluster, 1 of 2 copies damaged: repair",
                       "every bad copy repaired (by the read or db.repair())")
    n_flips, n_trunc = (6, 2) if args.small else (201, 51)
    kinds = ["flip"] * n_flips + ["truncate"] * n_trunc
    rng.shuffle(kinds)
    with local_cluster(nodes=2, cpus_per_node=1, object_store_mb=100) as cluster:
        cases = []
        for codec in CODECS:   # one table per codec, written through its own connection
            db = cluster.connect(cache_bytes=0, batch_rows=500, compression=codec)
            t = db.create_table(f"quotes_{codec}", hfq.schemas.TAQ, partition_by=SCHEME,
                                sort_by=("symbol", "time"), replicas=2)
            t.append(taq(seed=7, rows=3000))
            cases.append((codec, db, t, canonical(t.to_arrow()), bid_sum(t),
                          list(t.snapshot().fragments())))
        roots = {i.name: i.root for i in db.session.runtime().infos()}
        for trial, kind in enumerate(kinds):
            codec, db, t, full, total, fragments = cases[trial % len(cases)]
            f = rng.choice(fragments)
            node = rng.choice(sorted(roots))
            path = os.path.join(roots[node], f.file)
            damage_file(path, rng, kind)
            where = "driver's node" if node == db.session.nodes.local else "other node"
            for name, run, want in (("scan", functools.partial(_full, t), full),
                                    ("map_reduce", functools.partial(bid_sum, t), total)):
                outcome = classify(run, want, f.file)
                answers.trials += 1
                answers.count(f"{kind}, {name} ({where}): {outcome}", outcome == "correct",
                              f"{codec} {kind} {node} {f.file}: {LAST_ERROR[0][-200:]}")
            repaired.trials += 1
            if _intact(path, f.crc32):
                repaired.count(f"{kind}: repaired by the reads", True)
                continue
            if not has_repair():
                repaired.count("NOT repaired (no db.repair)", False, f.file)
            else:
                db.repair()
                repaired.count(f"{kind}: repaired by db.repair()" if _intact(path, f.crc32)
                               else f"{kind}: NOT repaired", _intact(path, f.crc32),
                               f"{codec} {node} {f.file}")
            if not _intact(path, f.crc32):   # put it back for the next trials
                good = os.path.join(roots[next(n for n in roots if n != node)], f.file)
                with open(good, "rb") as fh:
                    replace_file(path, fh.read())
        answers.notes.append(f"{n_flips} single-bit flips and {n_trunc} truncations of one "
                             f"copy, across {', '.join(CODECS)}; each read twice "
                             "(scan, map_reduce)")


def _reads(t: hfq.Table, symbol: str, full: pl.DataFrame, point: pl.DataFrame, total: Any
           ) -> list[tuple[str, Callable[[], Any], Any, bool]]:
    """(name, read, its right answer, whether it reads every byte) for the flip trials."""
    return [("full scan", lambda: canonical(t.to_arrow()), full, True),
            ("point scan", lambda: canonical(t.to_arrow(symbols=[symbol])), point, False),
            ("map_reduce", lambda: bid_sum(t), total, True)]


def _intact(path: str, crc: int) -> bool:
    if not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        return zlib.crc32(f.read()) == crc


# -- kill -9 at fault points -------------------------------------------------------------------
CHILD = textwrap.dedent("""
    import json, sys
    import hfq
    spec = json.loads(sys.argv[1])
    if spec.get("address"):
        db = hfq.connect(address=spec["address"], **spec.get("settings", {}))
    else:
        db = hfq.connect(spec["root"], **spec.get("settings", {}))
    t = db[spec["table"]] if spec.get("table") else None
    op = spec["op"]
    if op == "append":
        t.append(hfq.synth.taq_table(**spec["data"]))
    elif op == "load":
        db.load_csv(spec["table"], spec["paths"])
    elif op == "compact":
        t.compact()
    elif op == "vacuum":
        t.vacuum(grace_s=0)
    elif op == "rebalance":
        db.rebalance()
    elif op == "repair":
        db.repair()
    print("done", flush=True)
""")


def child(spec: dict[str, Any], fault: str, timeout: float = 300) -> int:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               HFQ_FAULTS=fault)
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode not in (0, 137):
        print(f"    child {spec['op']} {fault}: exit {done.returncode}: "
              f"{done.stderr.strip().splitlines()[-1:]}")
    return done.returncode


def kills(args: argparse.Namespace) -> None:
    s = section("kill -9 at fault points", ">= 100 kills; old or new version exactly, intact; "
                "0 files left after vacuum")
    _kills_embedded(args, s)
    if not (args.small and args.skip_cluster_kills):
        _kills_cluster(args, s)
    if not args.small and s.trials < 100:
        s.failures.append(f"only {s.trials} kills reached their point (the bar: 100)")


def _kill_plan(small: bool) -> list[tuple[str, str]]:
    """(operation, fault) pairs: every point of each operation at several hits (the run
    stops counting up a point's hits once one is not reached)."""
    many = (1, 2, 3) if small else tuple(range(1, 41))
    plan = [("append", f"write.fragment.after_put=crash@{k}") for k in many]
    plan += [("append", "write.before_commit=crash"),
             ("append", "write.before_commit=raise,write.abort.before_remove=crash")]
    plan += [("load", f"ingest.csv.after_block=crash@{k}") for k in many]
    plan += [("load", f"write.fragment.after_put=crash@{k}") for k in many]
    plan += [("load", "write.before_commit=crash"),
             ("load", "write.before_commit=raise,write.abort.before_remove=crash")]
    plan += [("compact", f"write.fragment.after_put=crash@{k}") for k in many]
    plan += [("compact", "compact.before_commit=crash"), ("vacuum", "vacuum.before_remove=crash")]
    for op in ("append", "load", "compact"):
        for k in (1,) if small else (1, 2, 3):
            plan += [(op, f"catalog.commit.before_publish=crash@{k}"),
                     (op, f"catalog.commit.after_publish=crash@{k}")]
    return plan


def _kills_embedded(args: argparse.Namespace, s: Section) -> None:
    settings = {"batch_rows": 200, "csv_block_bytes": 8192, "memory_budget": 1 << 20,
                "threads": 2}
    with tempfile.TemporaryDirectory(prefix="hfq-kills-") as tmp:
        template = os.path.join(tmp, "template")
        db = hfq.connect(template, **settings)
        # up to 32 partitions a day pair: a fragment put for each, each a point to die at
        t = db.create_table("q", hfq.schemas.TAQ, sort_by=("symbol", "time"),
                            partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 16)))
        old_parts = [taq(seed=1, rows=600, symbols=40), taq(seed=2, rows=600, symbols=40)]
        for part in old_parts:
            t.append(part)
        append = {"dates": ["2024-01-03", "2024-01-04"], "rows_per_day": 600, "symbols": 40,
                  "seed": 3}
        load_days = ("2024-01-05", "2024-01-08")
        paths = [str(p) for p in synth.taq_csv_files(os.path.join(tmp, "csv"), dates=load_days,
                                                      rows_per_day=1500, symbols=40, seed=4)]
        old = canonical(pa.concat_tables(old_parts))
        new = {"append": canonical(pa.concat_tables([*old_parts, synth.taq_table(
                   **{**append, "dates": tuple(append["dates"])})])),
               "load": canonical(pa.concat_tables([*old_parts, taq(4, 1500, load_days, 40)])),
               "compact": old, "vacuum": old}
        placed = _placed()
        exhausted: set[tuple[str, str]] = set()   # (op, fault without its hit number)
        for i, (op, fault) in enumerate(_kill_plan(args.small)):
            if any(item.split("=")[0] not in placed for item in fault.split(",")):
                s.counts[f"{op}: point not placed yet"] += 1
                continue
            if (op, fault.split("@")[0]) in exhausted:
                continue
            root = os.path.join(tmp, f"case{i}")
            shutil.copytree(template, root)
            old_version = 2
            if op == "vacuum":   # give vacuum files to remove: the pre-compaction ones
                old_version = hfq.connect(root, **settings)["q"].compact() or old_version
            spec = {"root": root, "table": "q", "op": op, "settings": settings,
                    "data": append, "paths": paths}
            code = child(spec, fault)
            if code == 0:
                s.counts[f"{op}: point not reached (exit 0)"] += 1
                exhausted.add((op, fault.split("@")[0]))
                shutil.rmtree(root)
                continue
            s.trials += 1
            if code != 137:
                s.count(f"{op}: child failed (exit {code})", False, fault)
                continue
            _check_after_kill(s, op, fault, hfq.connect(root)["q"], old_version, old, new[op],
                              functools.partial(_leftovers_embedded, root=root))
            shutil.rmtree(root)


def _placed() -> set[str]:
    text = "\n".join(open(os.path.join(d, f)).read()
                     for d, _, fs in os.walk(os.path.join(ROOT, "hfq")) for f in fs
                     if f.endswith(".py") and f != "faults.py")
    return {p for p in faults.POINTS if f'"{p}"' in text}


def _check_after_kill(s: Section, op: str, fault: str, t: hfq.Table, old_version: int,
                      old: pl.DataFrame, new: pl.DataFrame,
                      leftovers: Callable[[hfq.Table], list[str]],
                      before_verify: Callable[[], Any] | None = None) -> None:
    """The table is at exactly ``old_version`` with ``old`` rows or the next version with
    ``new`` rows; then (after ``before_verify``) every copy verifies and ``vacuum()`` leaves
    no file no kept version references."""
    try:
        t.refresh()
        got = canonical(t.to_arrow())
        if t.version == old_version and got.equals(old):
            state = "old version"
        elif t.version == old_version + 1 and got.equals(new):
            state = "new version"
        else:
            s.count(f"{op}: WRONG STATE (version {t.version})", False, fault)
            return
        versions = t.versions()   # vacuum may forget old versions, never a middle one
        if versions != list(range(versions[0] if op == "vacuum" else 0, t.version + 1)):
            s.count(f"{op}: versions not contiguous {versions}", False, fault)
        if before_verify is not None:
            before_verify()
        t.verify()
        t.vacuum(grace_s=0)
        left = leftovers(t)
        if left:
            s.count(f"{op}: {state}, FILES LEFT after vacuum", False, f"{fault}: {left[:3]}")
        else:
            s.count(f"{op}: {state}, clean", True)
    except Exception as exc:  # noqa: BLE001 - counted
        s.count(f"{op}: error afterwards ({type(exc).__name__})", False, f"{fault}: {exc}")


def _leftovers_embedded(t: hfq.Table, root: str) -> list[str]:
    catalog = t.db.session.catalog
    referenced = {f.file for m in catalog.kept_manifests(t.name) for f in m.fragments()}
    return sorted(f for f in files_under(root)
                  if ".tmp~" in f or (f.startswith(f"{t.name}/data/") and f not in referenced))


def _leftovers_cluster(t: hfq.Table, roots: dict[str, str]) -> list[str]:
    """Files on a node that no kept version places on that node (and temporaries)."""
    placed: dict[str, set[str]] = {n: set() for n in roots}
    for m in t.db.session.catalog.kept_manifests(t.name):
        for f in m.fragments():
            for n in t.db.session.nodes.holders(f):
                placed.setdefault(n, set()).add(f.file)
    out = []
    for node, root in roots.items():
        for f in files_under(root):
            if ".tmp~" in f or (f.startswith(f"{t.name}/data/") and f not in placed[node]):
                out.append(f"{node}:{f}")
    return sorted(out)


def _kills_cluster(args: argparse.Namespace, s: Section) -> None:
    """A driver process killed during rebalance (a node joined) and repair (damaged copies)."""
    from hfq.testing import local_cluster
    placed = _placed()
    tables = 2 if args.small else 4
    rounds = 1 if args.small else 3
    rng = random.Random(args.seed + 2)
    with local_cluster(nodes=2, cpus_per_node=1, object_store_mb=100) as cluster:
        db = cluster.connect(cache_bytes=0, batch_rows=500)
        names = [f"t{i}" for i in range(tables)]
        oracle = {}
        for i, name in enumerate(names):
            t = db.create_table(name, hfq.schemas.TAQ, partition_by=SCHEME,
                                sort_by=("symbol", "time"), replicas=2)
            t.append(taq(seed=20 + i, rows=800))
            oracle[name] = canonical(t.to_arrow())
        cluster.add_node()
        db.session.nodes_for(start=True)
        roots = {i.name: i.root for i in db.session.runtime().infos()}
        for r in range(rounds):
            # rebalance: a node holding nothing joined; kill the driver before each commit
            if "rebalance.copy.before_commit" in placed:
                for k in range(1, tables + 1):
                    versions = {n: db[n].version for n in names}
                    code = child({"address": cluster.address, "op": "rebalance"},
                                 f"rebalance.copy.before_commit=crash@{k}")
                    if code == 0:
                        s.counts["rebalance: point not reached (exit 0)"] += 1
                        continue
                    s.trials += 1
                    for n in names:
                        _check_after_kill(s, "rebalance", f"@{k}", db[n], versions[n],
                                          oracle[n], oracle[n],
                                          functools.partial(_leftovers_cluster, roots=roots))
            # repair: damage copies, kill the driver between fetching a good copy and the swap
            if "repair.copy.before_swap" in placed and has_repair():
                for k in (1, 2):
                    # copies on the driver's node: a driver repairs those itself (the other
                    # nodes repair theirs in their servers, where the point does not crash it)
                    bad = []
                    local = db.session.nodes.local
                    for n in names:
                        mine = [f for f in db[n].refresh().snapshot().fragments()
                                if local in db.session.nodes.holders(f)]
                        if not mine:
                            continue
                        f = rng.choice(mine)
                        damage_file(os.path.join(roots[local], f.file), rng, "flip")
                        bad.append((n, f, local))
                    code = child({"address": cluster.address, "op": "repair"},
                                 f"repair.copy.before_swap=crash@{k}")
                    if code == 0:
                        s.counts["repair: point not reached in the driver (exit 0)"] += 1
                    else:
                        s.trials += 1
                        # the killed repair left some of the damage: the reads must still
                        # be right (from the good copies); a new db.repair() then fixes it all
                        for n in names:
                            _check_after_kill(s, "repair", f"@{k}", db[n], db[n].version,
                                              oracle[n], oracle[n],
                                              functools.partial(_leftovers_cluster, roots=roots),
                                              before_verify=db.repair)
                    db.repair()
                    for n, f, node in bad:
                        placed_here = any(g.file == f.file and node in db.session.nodes.holders(g)
                                          for g in db[n].refresh().snapshot().fragments())
                        if placed_here and not _intact(os.path.join(roots[node], f.file),
                                                       f.crc32):
                            s.count("repair: copy still bad after db.repair()", False,
                                    f"{node} {f.file}")
            if r + 1 < rounds:   # a fresh joiner for the next round
                cluster.add_node()
                db.session.nodes_for(start=True)
                roots = {i.name: i.root for i in db.session.runtime().infos()}
            db.rebalance()
        if "rebalance.copy.before_commit" not in placed:
            s.notes.append("rebalance.copy.before_commit not placed: no rebalance kills")
        if not has_repair() or "repair.copy.before_swap" not in placed:
            s.notes.append("no db.repair() or repair.copy.before_swap: no repair kills")


# -- the catalog's own damage ------------------------------------------------------------------
def _damage_manifest(kind: str, path: str) -> None:
    with open(path, "rb") as f:
        data = f.read()
    if kind == "deleted":
        os.remove(path)
        return
    if kind == "truncated":
        out = data[:len(data) // 2]
    elif kind == "empty":
        out = b""
    elif kind == "bit flip":
        b = bytearray(data)
        b[len(b) // 2] ^= 0x04
        out = bytes(b)
    else:
        doc = json.loads(data)
        if kind == "missing key":
            doc.pop("version", None)
        elif kind == "edited rows":
            _edit_rows(doc)
        out = json.dumps(doc).encode()
    with open(path, "wb") as f:
        f.write(out)


def _edit_rows(doc: Any) -> bool:
    """Add 1000 to the first ``rows`` found below the top level of a manifest document."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) \
        else []
    for key, value in items:
        if key == "rows" and isinstance(value, int):
            doc[key] = value + 1000
            return True
        if isinstance(value, (dict, list)) and _edit_rows(value):
            return True
    return False


MANIFEST_DAMAGE = ("truncated", "empty", "bit flip", "missing key", "edited rows", "deleted")


def manifests(args: argparse.Namespace) -> None:
    named = section("head manifest damaged: error", "a named error (HfqError naming the file)")
    recovered = section("head manifest damaged: recovery",
                        "recover=True opens the newest intact version")
    reused = section("head manifest damaged: next commit",
                     "the damaged version's number is never used again")
    recover = supports_recover()
    with tempfile.TemporaryDirectory(prefix="hfq-manifests-") as tmp:
        template = os.path.join(tmp, "template")
        db = hfq.connect(template)
        t = db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME,
                            sort_by=("symbol", "time"))
        parts = [taq(seed=s, rows=300) for s in (1, 2, 3)]
        for p in parts:
            t.append(p)
        v2 = canonical(pa.concat_tables(parts[:2]))
        head = _head_manifest(template, "q", 3)
        for kind in MANIFEST_DAMAGE * (1 if args.small else 3):
            root = os.path.join(tmp, f"{kind.replace(' ', '-')}-{len(os.listdir(tmp))}")
            shutil.copytree(template, root)
            _damage_manifest(kind, _head_manifest(root, "q", 3) or head or "")
            # 1. the damage is seen and named
            named.trials += 1
            outcome, table = _open_and_read(root)
            named.count(f"{kind}: {outcome}", outcome.startswith("named"))
            # 2. recovery to the newest intact version
            recovered.trials += 1
            if not recover:   # the next commit is tried on the table as it opened, if it did
                recovered.count(f"{kind}: no recover=True in hfq.connect", False)
            else:
                try:
                    rt = hfq.connect(root, recover=True)["q"]
                    ok = rt.version == 2 and canonical(rt.to_arrow()).equals(v2)
                    recovered.count(f"{kind}: {'recovered v2' if ok else f'v{rt.version}'}",
                                    ok)
                    table = rt
                except Exception as exc:  # noqa: BLE001 - counted
                    recovered.count(f"{kind}: recovery failed ({type(exc).__name__})", False,
                                    str(exc))
            # 3. the next commit never reuses version 3
            reused.trials += 1
            if table is None:
                reused.count(f"{kind}: cannot commit (table not open)", False)
                continue
            try:
                v = table.append(taq(seed=9, rows=50))
                reused.count(f"{kind}: next version {v}", v >= 4, f"reused {v}")
            except Exception as exc:  # noqa: BLE001 - counted
                reused.count(f"{kind}: commit failed ({type(exc).__name__})", False, str(exc))


def _head_manifest(root: str, table: str, version: int) -> str | None:
    for d, _, fs in os.walk(os.path.join(root, table)):
        for f in fs:
            if f.startswith(f"{version:020d}") and f.endswith(".json"):
                return os.path.join(d, f)
    return None


def _open_and_read(root: str) -> tuple[str, hfq.Table | None]:
    """How opening and reading the damaged table went, and the table if it opened."""
    try:
        t = hfq.connect(root)["q"]
        n, rows = len(t), t.to_arrow().num_rows
    except HfqError as exc:
        text = str(exc)
        return ("named error" if "q" in text and ("json" in text or "manifest" in text
                                                   or "version" in text)
                else f"hfq error not naming the manifest ({type(exc).__name__})"), None
    except Exception as exc:  # noqa: BLE001 - counted
        return f"RAW {type(exc).__name__}", None
    if t.version == 3 and n == rows:
        return "no error, table intact?!", t
    return f"SILENT (version {t.version}, len {n}, scan {rows})", t


# -- the head node's disk lost -----------------------------------------------------------------
def head(args: argparse.Namespace) -> None:
    from hfq.testing import local_cluster
    s = section("head node's disk lost", "recover=True: every table at its last version, "
                "same checksums")
    rounds = 1 if args.small else 3
    with tempfile.TemporaryDirectory(prefix="hfq-head-") as tmp:
        for r in range(rounds):
            root = os.path.join(tmp, f"round{r}")
            with local_cluster(nodes=3, cpus_per_node=1, object_store_mb=100,
                               root=root) as cluster:
                db = cluster.connect()
                before = {}
                for i in range(2):
                    t = db.create_table(f"t{i}", hfq.schemas.TAQ, partition_by=SCHEME,
                                        sort_by=("symbol", "time"), replicas=2)
                    for k in range(1 + r + i):
                        t.append(taq(seed=30 + 10 * k + i, rows=500))
                    if r == 2:   # a compaction and a vacuum: fewer versions, other files
                        t.compact()
                        t.vacuum(keep_versions=2, grace_s=0)
                    before[t.name] = (t.version, t.versions(), _checksums(t),
                                      canonical(t.to_arrow()))
            shutil.rmtree(os.path.join(root, "node0"))   # the head's disk: catalog and data
            with local_cluster(nodes=3, cpus_per_node=1, object_store_mb=100,
                               root=root) as cluster:
                # a plain connect to the new head: what a user who forgot recover=True sees
                try:
                    plain = hfq.connect(address=cluster.address).tables()
                    s.notes.append(f"round {r}: a plain connect (no recover) lists "
                                   f"{len(plain)} of 2 tables")
                except Exception as exc:  # noqa: BLE001 - reported
                    s.notes.append(f"round {r}: a plain connect fails: {type(exc).__name__}")
                s.trials += 1
                try:
                    db = hfq.connect(address=cluster.address, recover=True)
                    found = {n: (db[n].version, db[n].versions(), _checksums(db[n]),
                                 canonical(db[n].to_arrow())) for n in db.tables()}
                except Exception as exc:  # noqa: BLE001 - counted
                    s.count(f"recover=True: {type(exc).__name__}", False, str(exc))
                    continue
                lost = [n for n in before if n not in found or found[n][:3] != before[n][:3]
                        or not found[n][3].equals(before[n][3])]
                s.count("recovered: same versions, checksums and rows" if not lost else
                        f"LOST or different: {lost}", not lost)


def _checksums(t: hfq.Table) -> dict[str, list[int]]:
    return {p: [f.crc32 for f in e.fragments] for p, e in t.snapshot().partitions.items()}


# -- a full disk -------------------------------------------------------------------------------
@contextlib.contextmanager
def full_disk(at: int) -> Iterator[list[str]]:
    """``LocalStore.write_bytes`` fails with ENOSPC on its ``at``-th call (half written)."""
    original = LocalStore.write_bytes
    calls: list[str] = []
    lock = threading.Lock()

    def write_bytes(store: LocalStore, rel: str, data: Any, *, sync: bool = False) -> None:
        with lock:
            calls.append(rel)
            nth = len(calls)
        if nth == at:
            with open(store.path(rel), "wb") as f:
                f.write(bytes(data)[:len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), store.path(rel))
        original(store, rel, data, sync=sync)

    LocalStore.write_bytes = write_bytes   # type: ignore[method-assign]
    try:
        yield calls
    finally:
        LocalStore.write_bytes = original   # type: ignore[method-assign]


def enospc(args: argparse.Namespace) -> None:
    s = section("ENOSPC at the n-th file write", "table unchanged, 0 files left (no vacuum)")
    settings = {"batch_rows": 200, "csv_block_bytes": 8192, "memory_budget": 1 << 20}
    with tempfile.TemporaryDirectory(prefix="hfq-enospc-") as tmp:
        paths = [str(p) for p in synth.taq_csv_files(os.path.join(tmp, "csv"),
                                                      dates=("2024-01-05", "2024-01-08"),
                                                      rows_per_day=800, symbols=20, seed=5)]
        ops: dict[str, Callable[[hfq.Database, hfq.Table], Any]] = {
            "append": lambda db, t: t.append(taq(seed=6, rows=800)),
            "load": lambda db, t: db.load_csv("q", paths),
            "compact": lambda db, t: t.compact(),
        }
        for op, run in ops.items():
            writes = None
            for at in range(1, 10_000):
                root = os.path.join(tmp, f"{op}-{at}")
                db = hfq.connect(root, **settings)
                t = db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME,
                                    sort_by=("symbol", "time"))
                t.append(taq(seed=1, rows=300))
                t.append(taq(seed=2, rows=300))
                before, files = canonical(t.to_arrow()), files_under(root)
                with full_disk(at) as calls:
                    try:
                        run(db, t)
                        failed = None
                    except Exception as exc:  # noqa: BLE001 - classified below
                        failed = exc
                if failed is None:   # fewer writes than ``at``: every write point was tried
                    writes = at - 1
                    break
                s.trials += 1
                t.refresh()
                left = sorted(files_under(root) - files)
                unchanged = t.version == 2 and canonical(t.to_arrow()).equals(before)
                kind = "HfqError" if isinstance(failed, HfqError) else \
                    f"RAW {type(failed).__name__}"
                s.count(f"{op}: {kind}, {'unchanged' if unchanged else 'CHANGED'}, "
                        f"{len(left)} files left", unchanged and not left and
                        kind == "HfqError", f"write {at} ({calls[at - 1]}): {left[:2]}")
                shutil.rmtree(root)
                if args.small and at >= 6:
                    break
            s.notes.append(f"{op}: {writes if writes is not None else 'more than tried'} "
                           "file writes")


# -- a node killed around each maintenance call ------------------------------------------------
def nodes(args: argparse.Namespace) -> None:
    from hfq.testing import local_cluster
    s = section("node killed before/during each call",
                "success or an hfq error (never raw Ray); rebalance restores replicas")
    restored = section("replicas restored after each node loss",
                       "every partition has `replicas` copies on live nodes")
    with tempfile.TemporaryDirectory(prefix="hfq-nodes-") as tmp:
        csv = [str(p) for p in synth.taq_csv_files(tmp, dates=("2024-01-09",),
                                                    rows_per_day=500, symbols=20, seed=8)]
        with local_cluster(nodes=3, cpus_per_node=1, object_store_mb=100) as cluster:
            db = cluster.connect(cache_bytes=0)
            t = db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME,
                                sort_by=("symbol", "time"), replicas=2)
            t.append(taq(seed=50, rows=800))
            victim = 1
            rng = random.Random(args.seed + 3)

            def damage_a_copy() -> None:
                """Flip a bit of one copy on the driver's node: repair has a copy to replace,
                here, where the point holds it (other nodes repair in their servers)."""
                roots = {i.name: i.root for i in db.session.runtime().infos()}
                local = db.session.nodes.local
                f = rng.choice([f for f in t.refresh().snapshot().fragments()
                                if local in db.session.nodes.holders(f)])
                damage_file(os.path.join(roots[local], f.file), rng, "flip")

            # run before the node dies, so that the call has work to do
            prepare: dict[str, Callable[[], Any]] = {
                "repair": damage_a_copy,
                "compact": lambda: t.append(taq(seed=52, rows=100, days=("2024-01-10",))),
            }
            calls: dict[str, Callable[[], Any]] = {
                "verify": lambda: t.verify(),
                "vacuum": lambda: t.vacuum(grace_s=0),
                "rebalance": lambda: db.rebalance(),
                "repair": lambda: db.repair(),
                "load_csv": lambda: db.load_csv("q", csv, duplicates="append"),
                "append": lambda: t.append(taq(seed=51, rows=100, days=("2024-01-10",))),
                "compact": lambda: t.compact(),
                "partitions": lambda: t.partitions(),
                "scan": lambda: t.to_arrow(),
                "map_reduce": lambda: bid_sum(t),
                "drop_table": lambda: _drop_other(db),
            }
            # a point in the driver where the call is held while the node dies
            during = {"vacuum": "vacuum.before_remove",
                      "rebalance": "rebalance.copy.before_commit",
                      "repair": "repair.copy.before_swap",
                      "compact": "compact.before_commit",
                      "load_csv": "write.before_commit",   # its blocks parse on the nodes
                      "append": "write.before_commit"}
            for name, call in calls.items():
                for when in ("before", "during") if name in during else ("before",):
                    if cluster.nodes[victim] is None:
                        victim = cluster.add_node()
                        db.session.nodes_for(start=True)
                        db.rebalance()
                    if name in prepare:
                        prepare[name]()
                    s.trials += 1
                    outcome = _call_with_node_killed(cluster, victim, call,
                                                     during[name] if when == "during" else None)
                    s.count(f"{name} ({when}): {outcome}", not outcome.startswith("RAW"))
                    restored.trials += 1
                    try:
                        db.rebalance()
                        outcome, ok = _replicas_ok(db, t)
                        rows = t.to_arrow().num_rows
                        if rows != len(t):
                            outcome, ok = f"scan {rows} rows, len {len(t)}", False
                        restored.count(outcome, ok)
                    except Exception as exc:  # noqa: BLE001 - counted
                        restored.count(f"rebalance failed ({type(exc).__name__})", False,
                                       str(exc))


def _drop_other(db: hfq.Database) -> None:
    name = f"scratch{len(db.tables())}"
    t = db.create_table(name, hfq.schemas.TAQ, partition_by=SCHEME, sort_by=("symbol", "time"),
                        replicas=2)
    t.append(taq(seed=60, rows=100))
    db.drop_table(name)


def _call_with_node_killed(cluster: Any, victim: int, call: Callable[[], Any],
                           point: str | None) -> str:
    """Kill node ``victim`` right before ``call`` or (``point``) while it is held there."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            call()
            result["outcome"] = "success"
        except HfqError as exc:
            result["outcome"] = f"hfq error ({type(exc).__name__})"
        except Exception as exc:  # noqa: BLE001 - counted
            result["outcome"] = f"RAW {type(exc).__name__}: {str(exc)[:80]}"

    if point is None:
        cluster.kill_node(victim)
        run()
        return result["outcome"]
    gate = os.path.join(tempfile.mkdtemp(prefix="hfq-gate-"), "gate")
    faults.arm(point, f"pause:{gate}")
    thread = threading.Thread(target=run)
    try:
        thread.start()
        deadline = time.monotonic() + 120
        while not os.path.exists(gate + ".reached") and thread.is_alive() and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        reached = os.path.exists(gate + ".reached")
        cluster.kill_node(victim)
    finally:
        open(gate, "w").close()
        thread.join(300)
        faults.disarm()
    return result.get("outcome", "hung") + ("" if reached else " (point not reached)")


def _replicas_ok(db: hfq.Database, t: hfq.Table) -> tuple[str, bool]:
    alive = set(db.session.nodes_for(start=True).alive())
    want = min(2, len(alive))
    short = [f.file for f in t.refresh().snapshot().fragments()
             if len(set(db.session.nodes.holders(f)) & alive) < want]
    return ("all replicas on live nodes" if not short else
            f"{len(short)} files short of replicas"), not short


SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "flips": flips, "replicas": replicas, "kills": kills, "manifests": manifests,
    "head": head, "enospc": enospc, "nodes": nodes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="a few trials of each (minutes)")
    parser.add_argument("--only", nargs="*", choices=list(SECTIONS), help="sections to run")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--no-map-reduce", action="store_true",
                        help="flips: no map_reduce reads (they start an embedded Ray)")
    parser.add_argument("--skip-cluster-kills", action="store_true",
                        help="kills: only the embedded ones (with --small)")
    parser.add_argument("--out", help="write the report as Markdown here (default: "
                        "benchmarks/results/faults.md for a full run, none with --small)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    times = {}
    for name in args.only or list(SECTIONS):
        begun = time.perf_counter()
        run_section(SECTIONS[name], args)
        times[name] = time.perf_counter() - begun
    print_report()
    seconds = time.perf_counter() - started
    print(f"campaign: {seconds:.0f} s; "
          f"{sum(s.verdict == 'FAIL' for s in REPORT)} of {len(REPORT)} checks fail")
    out = args.out or (None if args.small or args.only else
                       os.path.join(ROOT, "benchmarks", "results", "faults.md"))
    if out:
        write_report(out, sys.argv[1:] if argv is None else argv, seconds, times)
    return 1 if any(s.verdict == "FAIL" for s in REPORT) else 0


if __name__ == "__main__":
    sys.exit(main())
