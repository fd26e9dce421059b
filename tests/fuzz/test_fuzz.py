"""The CI budget of the differential SQL fuzzer (issue 24): a fixed seed, >= 2,000 queries
through ``db.sql`` and DuckDB on adversarial rows, plus TLP and NoREC checks on hfq alone --
no mismatch allowed.  Embedded and Ray-free: the tables are small, so every query runs inline
in this process (the node stage on each partition, then the driver's merge).

Constructs with an open finding are switched off here (``sqlfuzz/known.py``, each naming its
finding); their reproducers are the xfail(strict) cases of ``test_regressions.py``.  A failure
prints the mismatches, the first of them shrunk to a minimal reproducer (in the mutation
check, ``tests/mutation/mutants_sql.py``, it stops at the first mismatch, unshrunk).

About 90 s on the shared 2-core machine; ``benchmarks/fuzz.py`` runs the same campaign for as
long as asked, embedded or on a 2-node cluster.
"""

from __future__ import annotations

import os
import time

from sqlfuzz.campaign import Campaign
from sqlfuzz.findings import markdown
from sqlfuzz.shrink import shrink

import hfq

SEED = 24
QUERIES = 2000
#: the mutation check (tests/mutation/run.py sets this profile) needs a kill, not a reproducer:
#: the run stops at the first mismatch and does not shrink it
MUTATION = os.environ.get("HYPOTHESIS_PROFILE") == "mutation"


def test_the_fuzz_budget_finds_no_mismatch(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    campaign = Campaign(db, seed=SEED)
    started = time.perf_counter()
    report = campaign.run(queries=QUERIES, stop_on_mismatch=MUTATION)
    print(report.summary())
    print(f"{report.queries} queries in {time.perf_counter() - started:.1f} s")
    if MUTATION and report.found:
        raise AssertionError(f"mismatch: {report.found[0].sql}: {report.found[0].outcome.detail}")
    assert report.queries >= QUERIES
    # a fuzzer that only meets refusals tests nothing: many queries must get the same answer
    # from both (raise the bar as the dialect grows: 16% at the first cut, 40% refused)
    assert report.outcomes["same"] >= 0.15 * QUERIES, report.summary()
    if report.found:
        first = report.found[0]
        ds, sql, out = shrink(campaign, first.dataset, first.sql, first.outcome, seconds=60,
                            known=campaign.known, params=first.params)
        text = markdown("first", ds, sql, out, params=first.params)
        raise AssertionError(f"{report.mismatches} mismatches\n{report.summary()}\n\n"
                             f"the first, shrunk:\n{text}")
