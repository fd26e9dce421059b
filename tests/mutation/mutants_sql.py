"""Mutants of the SQL compiler that the differential fuzzer must find (issue 24, "Done when":
the CI budget finds each of 10 planted compiler bugs).  Area "sql".

Each plants back one of the silent differences issue 24 found, or a plausible slip in today's
compiler (``hfq/engine/sql/``), and names the CI fuzz budget (``tests/fuzz/test_fuzz.py``:
seed 24, 2,000 queries, Ray-free) as the test that must fail: the fuzzer, not a hand-written
case, has to notice.  The conformance corpus (``tests/sql``) kills each of them too (checked by
hand: ``python tests/mutation/run.py --only <id>`` with the corpus named instead).  In the
mutation check the budget stops at the first mismatch and does not shrink it.
"""

from __future__ import annotations

from mutants import Mutant

AREA = "sql"
SQL = "hfq/engine/sql/"
FUZZ = ("tests/fuzz/test_fuzz.py",)

MUTANTS: list[Mutant] = [
    Mutant("fuzz-not-in-drops-nulls", AREA, SQL + "subqueries.py",
           "        if values.null_count():\n",
           "        if False:\n",
           "x NOT IN (subquery) ignores the subquery's NULLs: rows pass that DuckDB's "
           "three-valued logic filters out (issue 24 item 2)", FUZZ),
    Mutant("fuzz-exclude-dropped", AREA, SQL + "star.py",
           "    items = [(n, x) for n, x in items if n not in drop]\n",
           "",
           "SELECT * EXCLUDE (...) answered as SELECT * (a clause silently dropped, issue 24 "
           "item 5)", FUZZ),
    Mutant("fuzz-max-skips-nan", AREA, SQL + "aggregates.py",
           "        return x.nan_max() if self.dtype(x).is_float() else x.max()",
           "        return x.max()",
           "max() skips NaN (polars' max) where DuckDB orders NaN above +inf (issue 24 item 4)",
           FUZZ),
    Mutant("fuzz-frame-off-by-one", AREA, SQL + "windows.py",
           "    head = fwd(before + 1, 0)",
           "    head = fwd(before, 0)",
           "ROWS BETWEEN n PRECEDING AND ... frames one row short (issue 24 item 3)", FUZZ),
    Mutant("fuzz-nulls-first-on-desc", AREA, SQL + "select.py",
           '                nulls_first = o.args.get("nulls_first")',
           '                nulls_first = o.args.get("nulls_first") or desc',
           "ORDER BY ... DESC puts NULLs first, as Postgres does (DuckDB: last in both "
           "directions)", FUZZ),
    Mutant("fuzz-count-literal", AREA, SQL + "aggregates.py",
           "            n = where.cast(pl.Int64).sum() if where is not None else "
           "pl.len().cast(pl.Int64)\n            if inner is None",
           "            n = pl.lit(1, dtype=pl.Int64)\n            if inner is None",
           "count(*) / count(1) give 1 instead of counting rows (issue 24 item 1)",
           FUZZ),
    Mutant("fuzz-round-half-even", AREA, SQL + "functions.py",
           '        return x.round(0, mode="half_away_from_zero")',
           "        return x.round(0)",
           "round() half to even (polars' default) where DuckDB rounds half away from zero "
           "(issue 24 item 8)", FUZZ),
    Mutant("fuzz-bucket-epoch-origin", AREA, SQL + "functions.py",
           "_ORIGIN_US = 946857600 * 10**6",
           "_ORIGIN_US = 0",
           "time_bucket aligned to 1970-01-01 (a Thursday) instead of DuckDB's 2000-01-03 "
           "(issue 24 item 7)", FUZZ),
    Mutant("fuzz-overflow-wraps", AREA, SQL + "expressions.py",
           "            bad = (left.xor(out) & right.xor(out)) < 0",
           "            bad = pl.lit(False)",
           "64-bit integer addition wraps silently where DuckDB raises (issue 24 item 9)",
           FUZZ),
    Mutant("fuzz-distinct-dropped", AREA, SQL + "select.py",
           "            q = q.unique()\n",
           "            q = q\n",
           "SELECT DISTINCT answered as SELECT (a clause silently dropped)", FUZZ),
]
