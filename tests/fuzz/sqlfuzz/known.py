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


def _outside_subqueries(node: exp.Expression, kinds: tuple[type, ...]) -> bool:
    """Whether ``node`` holds one of ``kinds`` other than inside a subquery."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        stack.extend(c for c in n.iter_expressions()
                     if not isinstance(c, (exp.Subquery, exp.Select)))
    return False


def _range_interval(tree: exp.Expression) -> bool:
    return any(str(w.args["spec"].args.get("kind") or "").upper() == "RANGE" and
               isinstance(w.args["spec"].args.get("start"), exp.Interval)
               for w in tree.find_all(exp.Window) if w.args.get("spec") is not None)


def _window_of_constant(tree: exp.Expression) -> bool:
    """A window function whose first argument names no column (``lag('x')``,
    ``sum(7) OVER ...``); ``count(*)`` and argument-less functions are not."""
    for w in tree.find_all(exp.Window):
        fn = w.this
        args = [a for a in fn.iter_expressions() if not isinstance(a, exp.Star)]
        if args and not args[0].find(exp.Column):
            return True
    return False


def _grouped_constants(tree: exp.Expression) -> bool:
    """A SELECT ... GROUP BY whose every item is free of columns, aggregates and windows."""
    for select in tree.find_all(exp.Select):
        if select.args.get("group") is None:
            continue
        items = select.expressions
        if items and not any(_outside_subqueries(i, (exp.Column, exp.AggFunc, exp.Window,
                                                     exp.Star)) for i in items):
            return True
    return False


def _constant_key(tree: exp.Expression) -> bool:
    for group in tree.find_all(exp.Group):
        for key in group.expressions:
            if not key.find(exp.Column) and not (isinstance(key, exp.Literal) and
                                                 not key.is_string):
                return True
    return False


def _count_distinct_constant(tree: exp.Expression) -> bool:
    return any(isinstance(c.this, exp.Distinct) and
               not any(e.find(exp.Column) for e in c.this.expressions)
               for c in tree.find_all(exp.Count))


def _ordered_window_avg(tree: exp.Expression) -> bool:
    return any(isinstance(w.this, exp.Avg) and w.args.get("order") is not None
               for w in tree.find_all(exp.Window))


def _arg_of_constant(tree: exp.Expression) -> bool:
    """arg_min/arg_max whose value names no column (``arg_max('x', id)``)."""
    return any(not node.this.find(exp.Column) for node in tree.find_all(exp.ArgMax, exp.ArgMin))


KNOWN: list[Known] = [
    # F1-F25 were fixed on sql@2d0d372 (F23 refused by name)
    Known("F26", "arg_min/arg_max of a constant in GROUP BY: the process segfaults (polars)",
          tree=_arg_of_constant, crashes=True),
    Known("F27", "LIMIT 0 raises IndexError",
          outcome=lambda status, detail: status == "crash" and detail.startswith("IndexError"),
          text=r"\blimit 0\b"),
    Known("F28", "ASOF joins drop the right side's key columns -> KeyError",
          outcome=lambda status, detail: status == "crash" and
          detail.startswith("KeyError: 'u.")),
    Known("F29", "RANGE frames with an INTERVAL over NULL order keys", tree=_range_interval),
    Known("F30", "window functions of constants", tree=_window_of_constant),
    Known("F31", "a grouped SELECT of constants returns one row", tree=_grouped_constants),
    Known("F32", "PIVOT count of no rows is NULL", text=r"\bpivot\b.*\bcount\("),
    Known("F33", "least/greatest of FLOAT functions in 32 bits",
          text=r"\b(least|greatest)\("),
    Known("F35", "ASOF ... USING: the right side's time is the left's",
          text=r"asof (left )?join u using"),
    Known("F36", "GROUP BY a constant over no rows gives a row", tree=_constant_key),
    Known("F37", "NULL % 0 on doubles is NaN", text=r"%\s*0\b"),
    Known("F42", "count(DISTINCT <constant>) over no rows is 1", tree=_count_distinct_constant),
    Known("F38", "comparisons with +-infinity timestamps", text=r"infinity"),
    Known("F46", "a running avg over BIGINT extremes wraps", tree=_ordered_window_avg),
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
