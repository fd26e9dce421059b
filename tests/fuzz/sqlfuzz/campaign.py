"""A fuzzing campaign: datasets from a seed, queries on each, every outcome tallied.

``Campaign(db, seed=...).run(queries=N)`` draws dataset after dataset (seed ``seed * 1000 +
round``), loads it into hfq (``db``) and DuckDB, and runs ``per_dataset`` queries on it: most
differential (:mod:`sqlfuzz.differential`), some metamorphic on hfq alone
(:mod:`sqlfuzz.metamorphic`).  The :class:`Report` counts outcomes, refusals by construct,
hfq's errors in polars' words (``leaked``: a defect, though not a mismatch) and keeps every
mismatch (its seed, dataset and SQL: enough to shrink and replay it).
"""

from __future__ import annotations

import collections
import random
import time
from dataclasses import dataclass, field
from typing import Any

import duckdb

import hfq
from sqlfuzz import metamorphic
from sqlfuzz.data import ORDERS, SHUFFLES, Dataset, load_duckdb_orders, load_hfq, random_dataset
from sqlfuzz.differential import APART, Outcome, run_query
from sqlfuzz.known import KNOWN, Known, explain, skip
from sqlfuzz.queries import QueryGen

__all__ = ["Campaign", "Found", "Report", "duckdb_connections"]


@dataclass
class Found:
    """One mismatch: where it came from and what happened."""

    dataset: Dataset
    sql: str
    ordered: bool
    outcome: Outcome
    oracle: str = "differential"   # or "tlp", "norec"
    params: tuple[Any, ...] = ()
    tags: frozenset[str] = frozenset()
    related: list[str] = field(default_factory=list)   # the metamorphic oracle's other queries


@dataclass
class Report:
    queries: int = 0
    datasets: int = 0
    seconds: float = 0.0
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    refused: collections.Counter[str] = field(default_factory=collections.Counter)
    refused_tags: collections.Counter[str] = field(default_factory=collections.Counter)
    invalid: collections.Counter[str] = field(default_factory=collections.Counter)
    shapes: collections.Counter[str] = field(default_factory=collections.Counter)
    tags: collections.Counter[str] = field(default_factory=collections.Counter)
    found: list[Found] = field(default_factory=list)   # mismatches no open finding explains
    known: collections.Counter[str] = field(default_factory=collections.Counter)
    #: hfq's errors in polars' words (refusals or errors DuckDB shares), by construct
    leaked: collections.Counter[str] = field(default_factory=collections.Counter)
    next_round: int = 0   # the dataset round a continuation starts at
    examples: dict[str, str] = field(default_factory=dict)   # a statement per refusal
    #: differences that are DuckDB's own instability (``differential.APART``), listed apart
    apart: list[dict[str, Any]] = field(default_factory=list)

    _COUNTERS = ("outcomes", "refused", "refused_tags", "invalid", "shapes", "tags", "known",
                 "leaked")

    def counts(self) -> dict[str, Any]:
        """The counts as plain JSON (the mismatches as SQL, status and detail)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in ("queries", "datasets", "seconds",
                                                             "next_round")}
        out.update({k: dict(getattr(self, k)) for k in self._COUNTERS})
        out["examples"] = self.examples
        out["found"] = [{"oracle": f.oracle, "status": f.outcome.status, "sql": f.sql,
                         "params": [repr(p) for p in f.params],
                         "detail": f.outcome.detail, "dataset": f.dataset.seed}
                        for f in self.found]
        out["apart"] = self.apart
        return out

    @property
    def leaks(self) -> int:
        """Errors of hfq in polars' words (a defect: every error must be hfq's own)."""
        return sum(self.leaked.values())

    @property
    def mismatches(self) -> int:
        """Mismatches that no open finding explains (``known`` counts the others)."""
        return len(self.found)

    def merge(self, other: Report) -> None:
        self.queries += other.queries
        self.datasets += other.datasets
        self.seconds += other.seconds
        for name in self._COUNTERS:
            getattr(self, name).update(getattr(other, name))
        for k, v in other.examples.items():
            self.examples.setdefault(k, v)
        self.found += other.found
        self.apart += other.apart

    def summary(self) -> str:
        lines = [f"{self.queries} queries on {self.datasets} datasets in {self.seconds:.1f} s: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
                 f"mismatches: {self.mismatches}" + (
                     " (besides those of open findings: " + ", ".join(
                         f"{k} x{v}" for k, v in sorted(self.known.items())) + ")"
                     if self.known else ""),
                 f"in polars' words (a defect, not a mismatch): {self.leaks}" + (
                     ": " + "; ".join(f"{k} x{v}" for k, v in self.leaked.most_common(10))
                     if self.leaked else "")]
        if self.refused:
            lines.append("refused by construct: " + "; ".join(
                f"{k} x{v}" for k, v in self.refused.most_common(25)))
        if self.invalid:
            lines.append("invalid in DuckDB: " + "; ".join(
                f"{k} x{v}" for k, v in self.invalid.most_common(10)))
        for f in self.found[:20]:
            lines.append(f"  [{f.oracle}/{f.outcome.status}] {f.sql}\n      {f.outcome.detail}")
        return "\n".join(lines)


def duckdb_connections(n: int = len(ORDERS)) -> list[duckdb.DuckDBPyConnection]:
    """DuckDB sessions as the oracle: one thread (a deterministic order), UTC."""
    cons = []
    for _ in range(n):
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET threads = 1")
        cons.append(con)
    return cons


class Campaign:
    """Datasets and queries from ``seed``, run against ``db`` (embedded or on a cluster)."""

    def __init__(self, db: hfq.Database, *, seed: int, per_dataset: int = 50,
                 metamorphic_share: float = 0.15, known: list[Known] | None = None,
                 disabled: frozenset[str] = frozenset(), replicas: int | None = None,
                 trace: str | None = None) -> None:
        self.db = db
        self.seed = seed
        self.per_dataset = per_dataset
        self.metamorphic_share = metamorphic_share
        self.disabled = disabled
        self.known = KNOWN if known is None else known
        self.replicas = replicas
        self.cons = duckdb_connections()
        self.more_cons: list[duckdb.DuckDBPyConnection] = []   # SHUFFLES, made when needed
        self.dataset: Dataset | None = None   # the one loaded
        self.more_for: Dataset | None = None  # the dataset more_cons hold
        self.trace = open(trace, "a", buffering=1) if trace else None   # noqa: SIM115

    def note(self, text: str) -> None:
        """The statement about to run, written before it runs (a crash of the process --
        a segfault in a native library -- leaves it as the trace's last line)."""
        if self.trace is not None:
            self.trace.write(text.replace("\n", " ") + "\n")
            self.trace.flush()

    def load(self, dataset: Dataset) -> None:
        load_hfq(self.db, dataset, replicas=self.replicas)
        load_duckdb_orders(self.cons, self.db, dataset)
        self.dataset = dataset

    def more(self) -> list[duckdb.DuckDBPyConnection]:
        """DuckDB on :data:`SHUFFLES` of the loaded dataset's rows (loaded on the first call
        for each dataset: only a difference the other orders leave a mismatch asks)."""
        assert self.dataset is not None
        if not self.more_cons:
            self.more_cons = duckdb_connections(len(SHUFFLES))
        if self.more_for is not self.dataset:
            load_duckdb_orders(self.more_cons, self.db, self.dataset, orders=SHUFFLES)
            self.more_for = self.dataset
        return self.more_cons

    def run(self, *, queries: int, seconds: float | None = None, progress: Any = None,
            first_round: int = 0, rounds: int | None = None,
            stop_on_mismatch: bool = False) -> Report:
        """Datasets ``first_round``, ``first_round + 1``, ... (at most ``rounds`` of them)
        until ``queries`` have run or ``seconds`` have passed (or, with ``stop_on_mismatch``,
        a mismatch no open finding explains is found)."""
        report = Report()
        started = time.perf_counter()
        round_ = first_round
        while report.queries < queries and (rounds is None or round_ < first_round + rounds) \
                and not (stop_on_mismatch and report.found):
            if seconds is not None and time.perf_counter() - started > seconds:
                break
            dataset = random_dataset(self.seed * 1000 + round_)
            round_ += 1
            report.next_round = round_
            self.note(f"-- dataset {dataset.seed}")
            self.load(dataset)
            report.datasets += 1
            rng = random.Random(dataset.seed)
            gen = QueryGen(rng, dataset, disabled=self.disabled)
            for _ in range(min(self.per_dataset, queries - report.queries)):
                if stop_on_mismatch and report.found:
                    break
                if rng.random() < self.metamorphic_share:
                    self.one_metamorphic(gen, dataset, report)
                else:
                    self.one_differential(gen, dataset, report)
            report.seconds = time.perf_counter() - started
            if progress is not None:
                progress(report)
        report.seconds = time.perf_counter() - started
        return report

    def one_differential(self, gen: QueryGen, dataset: Dataset, report: Report) -> None:
        q = gen.query()
        fid = skip(q.sql, self.known)
        if fid is not None:   # it would kill this process: counted, not run
            report.known[f"{fid} (not run)"] += 1
            return
        self.note(q.sql)
        out = run_query(self.db, self.cons, q.sql, ordered=q.ordered, params=q.params,
                        more=self.more)
        report.queries += 1
        report.outcomes[out.status] += 1
        report.shapes[q.shape] += 1
        report.tags.update(q.tags)
        if out.leak:
            report.leaked[out.leak] += 1
            report.examples.setdefault(out.leak, q.sql)
        if out.status in ("refused", "leaked"):
            report.refused[out.detail] += 1
            report.examples.setdefault(out.detail, q.sql)
            report.refused_tags.update(q.tags)
        elif out.status == "invalid":
            report.invalid[out.error[:90]] += 1
        elif out.mismatch:
            self.record(report, Found(dataset, q.sql, q.ordered, out, tags=q.tags,
                                      params=q.params))
        elif out.status in APART:
            report.apart.append({"status": out.status, "sql": q.sql, "detail": out.detail,
                                 "params": [repr(p) for p in q.params],
                                 "dataset": dataset.seed})

    def record(self, report: Report, found: Found) -> None:
        """Keep a mismatch, or count it against the open finding that explains it."""
        fid = explain(found.sql, found.tags, found.outcome.status, found.outcome.detail,
                      self.known)
        if fid is None:
            report.found.append(found)
        else:
            report.known[fid] += 1

    def one_metamorphic(self, gen: QueryGen, dataset: Dataset, report: Report) -> None:
        check = metamorphic.random_check(gen)
        fid = skip(check.queries[0], self.known)
        if fid is not None:
            report.known[f"{fid} (not run)"] += 1
            return
        self.note(" ;; ".join(check.queries))
        result = check.run(self.db)
        report.queries += len(check.queries)
        report.outcomes[f"{check.oracle}:{result.status}"] += 1
        report.tags.update(check.tags)
        if result.status == "violated":
            report.outcomes[check.oracle] += 1
            # the query of the check that DuckDB answers differently: a shrinkable finding
            culprit = None
            for sql in check.queries:
                out = run_query(self.db, self.cons, sql, ordered=False, more=self.more)
                if out.mismatch:
                    culprit = Found(dataset, sql, False, out, oracle=check.oracle,
                                    tags=check.tags, related=list(check.queries))
                    break
            self.record(report, culprit or Found(
                dataset, check.queries[0], False, Outcome(check.oracle, result.detail),
                oracle=check.oracle, tags=check.tags, related=list(check.queries)))
        elif result.status == "refused":
            if result.leak:
                report.leaked[result.detail] += 1
            report.refused[result.detail] += 1
            report.examples.setdefault(result.detail, " ;; ".join(check.queries))
