"""Open findings: mismatches the fuzzer has already reported, recognised so that the CI budget
can stay strict about everything else while the compiler's fixes land.

Each :class:`Known` names a finding of ``/work/notes/sql-findings.md`` (its reproducer is an
``xfail(strict=True)`` case of ``test_regressions.py``) and says which mismatches it explains:
by the grammar tags the query used, by the query's tree, or by what DuckDB said.  A mismatch it
explains is counted as ``known:<id>`` and does not fail the budget; a finding whose fix has
landed is deleted here (its regression case then passes, and the budget is strict about it
again).  ``benchmarks/fuzz.py --strict`` ignores this list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

__all__ = ["KNOWN", "Known", "explain", "skip"]


@dataclass(frozen=True)
class Known:
    id: str
    what: str
    tags: frozenset[str] = frozenset()
    tree: Callable[[exp.Expression], bool] | None = None
    outcome: Callable[[str, str], bool] | None = None   # (status, detail)
    text: str = ""   # a regex searched in the lower-cased SQL
    crashes: bool = False   # the process dies: such a query is not run at all (``skip``)


KNOWN: list[Known] = [
    # F1-F25 were fixed on sql@2d0d372 (F23 refused by name); F26-F33, F35-F38 and F42
    # since (their regression cases and corpus records pass); F43, F45, F46 on sql after ee3730a
]


def skip(sql: str, known: list[Known] | None = None) -> str | None:
    """The id of the open finding whose queries kill the process, when ``sql`` is one (the
    campaign does not run it), else None."""
    table = [k for k in (KNOWN if known is None else known) if k.crashes]
    return explain(sql, frozenset(), "", "", table) if table else None


def explain(sql: str, tags: frozenset[str], status: str, detail: str,
            known: list[Known] | None = None) -> str | None:
    """The id of the open finding that explains this mismatch, or None."""
    table = KNOWN if known is None else known
    tree: exp.Expression | None = None
    for k in table:
        if k.tags & tags:
            return k.id
        if k.outcome is not None and k.outcome(status, detail):
            return k.id
        if k.text and re.search(k.text, sql.lower()):
            return k.id
        if k.tree is not None:
            if tree is None:
                try:
                    tree = sqlglot.parse_one(sql, read="duckdb")
                except SqlglotError:
                    continue
            if k.tree(tree):
                return k.id
    return None
