"""Shrunk mismatches written out: deduplicated, as a regression case (Python) and as a section
of the findings notes (Markdown) for the engineer who owns the compiler."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sqlfuzz.compare import render
from sqlfuzz.data import Dataset
from sqlfuzz.differential import Outcome

__all__ = ["markdown", "normalized", "python_case", "pyrepr"]


def normalized(sql: str) -> str:
    """``sql`` with every literal a placeholder: shrunk findings with the same text here are
    one finding (``SELECT 1 FROM t`` and ``SELECT NULL FROM t`` are)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        return sql
    for node in list(tree.find_all(exp.Literal, exp.Null, exp.Boolean)):
        node.replace(exp.Placeholder())
    return tree.sql(dialect="duckdb").lower()


def pyrepr(v: Any) -> str:
    """A Python expression for one cell (``nan``, ``inf``, ``dt.date(...)`` ...)."""
    if isinstance(v, float):
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INF" if v > 0 else "-INF"
        return repr(v)
    if isinstance(v, dt.datetime):
        tz = ", tzinfo=UTC" if v.tzinfo is not None else ""
        micro = f", {v.microsecond}" if v.microsecond else ""
        return f"dt.datetime({v.year}, {v.month}, {v.day}, {v.hour}, {v.minute}, " \
               f"{v.second}{micro}{tz})"
    if isinstance(v, dt.date):
        return f"dt.date({v.year}, {v.month}, {v.day})"
    if isinstance(v, dt.time):
        micro = f", {v.microsecond}" if v.microsecond else ""
        return f"dt.time({v.hour}, {v.minute}, {v.second}{micro})"
    return repr(v)


def python_case(fid: str, dataset: Dataset, sql: str, *, note: str = "",
                params: tuple[Any, ...] = ()) -> str:
    """A ``Case(...)`` of ``test_regressions.py``."""
    lines = [f"    Case({fid!r},", f"         {sql!r},"]
    tables = []
    for t in dataset.tables:
        if t.name not in sql and t.rows == []:
            continue
        rows = ", ".join("(" + ", ".join(pyrepr(v) for v in r) + (",)" if len(r) == 1 else ")")
                         for r in t.rows)
        tables.append(f"         Table({t.name!r}, {t.columns!r},\n"
                      f"               {t.scheme!r}, {t.sort_by!r}, [{rows}], {t.cuts!r})")
    lines.append("         [" + ",\n".join(tables).lstrip() + "],")
    if params:
        lines.append(f"         params=({', '.join(pyrepr(p) for p in params)},),")
    if note:
        lines.append(f"         note={note!r}),")
    else:
        lines[-1] = lines[-1][:-1] + "),"
    return "\n".join(lines)


def markdown(fid: str, dataset: Dataset, sql: str, outcome: Outcome, *, cause: str = "",
             oracle: str = "differential", params: tuple[Any, ...] = ()) -> str:
    out = [f"## {fid}: {outcome.status} ({oracle})", "", "```sql", sql, "```", ""]
    if params:
        out += [f"params: `[{', '.join(pyrepr(p) for p in params)}]`", ""]
    for t in dataset.tables:
        if t.name not in sql:
            continue
        out.append(f"Table `{t.name}` ({', '.join(f'{n} {ty}' for n, ty in t.columns)}; "
                   f"partitioned {t.scheme}, appends cut at {t.cuts or 'none'}), rows:")
        out.append("")
        for r in t.rows:
            out.append("    " + ", ".join(pyrepr(v) for v in r))
        out.append("")
    if outcome.hfq is not None:
        out.append(f"- hfq:    `{render(outcome.hfq.rows)}` ({', '.join(outcome.hfq.kinds)})")
    elif outcome.error:
        out.append(f"- hfq:    raised `{outcome.error}`")
    if outcome.duck is not None:
        out.append(f"- DuckDB: `{render(outcome.duck.rows)}` ({', '.join(outcome.duck.kinds)})")
    elif outcome.status == "answered_error":
        out.append(f"- DuckDB: raised `{outcome.detail}`")
    out.append(f"- difference: {outcome.detail}")
    if cause:
        out.append(f"- guess: {cause}")
    out.append("")
    return "\n".join(out)
