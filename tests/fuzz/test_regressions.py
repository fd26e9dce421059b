"""Regression tests of the SQL fuzzer's findings (issue 24): each a minimal reproducer the
shrinker found -- tables as plain data (columns and hfq types, partitioning, rows, append cuts)
and one statement -- run through ``db.sql`` and through DuckDB on the same rows at test time
(DuckDB's answer is the expected one; nothing is written by hand), compared as the fuzzer
compares (``sqlfuzz/compare.py``).

A case passes when hfq gives DuckDB's answer, or raises an HfqError where DuckDB raises at run
time (overflow, division by zero); ``refusal_ok`` cases may also be refused by name (a clause
hfq chooses not to support).  Cases whose fix has not landed on the compiler's branch are
``xfail(strict=True)`` with their finding id: they fail loudly once fixed, to be un-marked.
The findings are described in ``/work/notes/sql-findings.md``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pytest
from sqlfuzz.campaign import duckdb_connections
from sqlfuzz.data import Dataset, TableSpec, load_duckdb, load_hfq
from sqlfuzz.differential import run_query
from sqlfuzz.shrink import order_is_total

import hfq

NAN = float("nan")
INF = float("inf")
UTC = dt.timezone.utc


def Table(name: str, columns: list[tuple[str, str]], scheme: tuple, sort_by: tuple,
          rows: list[tuple], cuts: list[int]) -> TableSpec:
    return TableSpec(name, columns, scheme, sort_by, rows, cuts)


@dataclass(frozen=True)
class Case:
    id: str
    sql: str
    tables: list[TableSpec] = field(hash=False)
    note: str = ""
    refusal_ok: bool = False
    open: bool = False   # the fix has not landed: xfail(strict=True)


T3 = [("id", "LONG"), ("date", "DATE"), ("sym", "SYMBOL")]
CASES: list[Case] = [
]


def _param(case: Case):
    marks = [pytest.mark.xfail(strict=True, reason=f"finding {case.id} is open")] \
        if case.open else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_finding(case: Case, tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    dataset = Dataset(0, case.tables)
    load_hfq(db, dataset)
    cons = duckdb_connections(1)
    load_duckdb(cons[0], db, dataset)
    out = run_query(db, cons, case.sql, ordered=order_is_total(case.sql))
    allowed = {"same", "agreed_error"} | ({"refused"} if case.refusal_ok else set())
    assert out.status in allowed, f"{case.id}: {out.status}: {out.detail}\n{case.note}"
