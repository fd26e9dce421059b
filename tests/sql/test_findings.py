"""Fuzzer findings F76+ (issue 24) whose reproducer needs a table layout the corpus files
cannot state (which rows share a partition, which append they came in): each a table as plain
data and one statement, run through ``db.sql`` and DuckDB on the same rows at test time
(DuckDB's answer is the expected one), compared as the fuzzer compares
(``tests/fuzz/sqlfuzz/compare.py``).  Each case's note says what went wrong and where the
fuzzer found it.
"""

from __future__ import annotations

import datetime as dt
import pathlib
import sys
from dataclasses import dataclass, field

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "fuzz"))
from sqlfuzz.campaign import duckdb_connections  # noqa: E402
from sqlfuzz.data import Dataset, TableSpec, load_duckdb, load_hfq  # noqa: E402
from sqlfuzz.differential import on_both_engines  # noqa: E402
from sqlfuzz.shrink import order_is_total  # noqa: E402

import hfq  # noqa: E402

D1, D2 = dt.date(2024, 1, 5), dt.date(2024, 1, 8)
TS = dt.datetime(2024, 1, 5, 23, 59, 59, 999999)
T3 = [("id", "LONG"), ("date", "DATE"), ("sym", "SYMBOL")]


@dataclass(frozen=True)
class Case:
    id: str
    sql: str
    tables: list[TableSpec] = field(hash=False)
    note: str = ""
    refusal_ok: bool = False
    refuses: str = ""   # hfq must raise an HfqError matching this (DuckDB may or may not)
    params: tuple = ()   # the values of the statement's $n, bound (db.sql(params=...))


_F134 = TableSpec("t", [*T3, ("i0", "INT"), ("d0", "DOUBLE"), ("i1", "INT")], ("compo", 2),
                  ("id",), [(91, D1, "A", -1, -0.75, -5), (134, D2, "A", 100, 0.0, -2),
                            (130, D1, "A", -1, 1.0, 5), (7, D2, "B", 3, 0.5, 1)], [1, 2])
# prices: 40 rows of two symbols over both days, p about 100 and q about 50 (+-1),
# correlated, |r| 0.4 and 0.55 (a fixed draw, so the test's data never changes)
_PRICES = TableSpec("t", [*T3, ("p", "DOUBLE"), ("q", "DOUBLE")], ("compo", 2), ("id",),
                    [(k, D1 if k % 2 else D2, "AB"[k % 3 % 2], 100 + ((k * 37) % 41 - 20) / 20,
                      50 + ((k * 11) % 23 - 11) / 11 + ((k * 37) % 41 - 20) / 40)
                     for k in range(40)], [13, 27])

# y = 0.5 x + 0.3 (+- 3e-4) over x = 1e5 ... 1e5 + 100, 50 rows (the stop-15 review's line)
_LINE = TableSpec("t", [*T3, ("x", "DOUBLE"), ("y", "DOUBLE")], ("compo", 2), ("id",),
                  [(k, D1 if k % 2 else D2, "AB"[k % 3 % 2], 1e5 + (k * 37) % 101,
                    0.5 * (1e5 + (k * 37) % 101) + 0.3 + ((k * 13) % 7 - 3) * 1e-4)
                   for k in range(50)], [17, 33])
# one symbol's 28 DOUBLEs of one sign with 1.08e13 and 4.3e16 among them (the review's data)
_PASSED = TableSpec("t", [*T3, ("v", "DOUBLE")], ("compo", 2), ("id",),
                    [(k, D1 if k < 14 else D2, "A", float(v)) for k, v in enumerate(
                        [10770656992123] + [1] * 9 + [43050278918858184, 0, 3442814, 0, 0, 0,
                                                      3879708, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0,
                                                      0])], [20])

#: prices of 2 places, then zero bids for longer than a frame: summed exactly in units of
#: 1e-4 (W3) -- and the same prices off their decimals (times 1.0000001, W2), rolled
#: natively: polars' rolled sum of the frames of zeros kept 2.3e-10 of the prices that left,
#: where DuckDB's tree sums exactly 0
_CENTS = [132179.71, 386731.19, 339195.55, 874441.33, 418753.6, 82045.92, 926805.28,
          622313.74, 116710.74, 113175.05, 465933.78, 92089.87, 631752.56, 616384.17,
          32082.32, 807422.97, 786794.97, 915308.35, 670306.98, 692862.54, 163742.49,
          23889.79, 65564.09, 964461.38, 645721.72, 946906.72, 349385.01, 755221.82, 65399.9,
          166206.0]
_DECIMALS = TableSpec("t", [*T3, ("v", "DOUBLE")], ("date",), ("id",),
                      [(k, D1, "A", v) for k, v in enumerate(_CENTS + [0.0] * 20)])
_ZEROS = TableSpec("t", _DECIMALS.columns, ("date",), ("id",),
                   [(k, D1, "A", v * 1.0000001) for k, v in enumerate(_CENTS + [0.0] * 20)])
#: the prices of 2 places with a 1e-11 before the zeros (no longer decimals of 4 places):
#: a frame holding only the 1e-11 rolled to -1.06e-10, under half the smallest value -- it
#: cannot be told from a frame of zeros: to the tree
_TINY = TableSpec("t", _DECIMALS.columns, ("date",), ("id",),
                  [*_DECIMALS.rows[:30], (30, D1, "A", 1e-11),
                   *[(k, D1, "A", 0.0) for k in range(31, 51)]])
#: values near 1e-4 off any decimal of 4 places (W4)
_SMALL = TableSpec("t", _DECIMALS.columns, ("date",), ("id",),
                   [(k, D1, "A", (k % 7 + 1) / 7e3) for k in range(40)])
#: decimals of both signs that cancel: no longer summed in units of 1e-4 (W5)
_CANCEL = TableSpec("t", _DECIMALS.columns, ("date",), ("id",),
                    [(k, D1, "A", v) for k, v in enumerate(
                        [1000000000.1, -1000000000.0, 0.2, 0.3] * 6 + [0.0] * 25)])
#: the W cases' frames of 17 rows (the shortest rolled natively), by rows and by key
_FRAMES16 = (("rows", "ORDER BY id ROWS BETWEEN 16 PRECEDING AND CURRENT ROW"),
             ("range", "ORDER BY id RANGE BETWEEN 16 PRECEDING AND CURRENT ROW"))

CASES: list[Case] = [
    Case("F78", "SELECT epoch(ts) AS k, count(*) AS n FROM t WHERE isinf(d0) IS NULL GROUP BY 1",
         [TableSpec("t", [*T3, ("ts", "TIMESTAMP"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", TS, None), (2, D1, "A", TS, 1.0), (3, D2, "B", TS, None),
                     (4, D2, "B", TS, None), (5, D2, "B", TS, 2.0)])],
         note="epoch(): polars divides a column of two rows by 1e6 as a product with 1e-6 "
              "(1704499199.9999988) and a one-row chunk truly (1704499199.999999): one "
              "timestamp made two GROUP BY keys"),
    Case("F78b", "SELECT count(*) AS n, count(*) FILTER (WHERE epoch(ts) = 1704499199.999999) "
                 "AS e FROM t WHERE isinf(d0) IS NULL",
         [TableSpec("t", [*T3, ("ts", "TIMESTAMP"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", TS, None), (2, D1, "A", TS, 1.0), (3, D2, "B", TS, None),
                     (4, D2, "B", TS, None), (5, D2, "B", TS, None), (6, D2, "B", TS, 2.0)])],
         note="F78 once its filter runs on the nodes (isinf is row-wise since stop 18): "
              "every partition's rows then divide alike, one GROUP BY key either way, and "
              "only the value shows polars' product with 1e-6 (1704499199.9999988, an ulp "
              "off DuckDB's 1704499199.999999): compared exactly"),
    Case("F80", "SELECT corr(d0, d0) AS c, corr(d0, d0) > CAST('-0.0' AS DOUBLE) AS h, "
                "corr(d1, d0) AS c1, corr(d1, d1) AS c2 FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 100.25, 1e160), (2, D1, "A", 1e300, -1e160),
                     (3, D1, "A", -3.75, 3e160)])],
         note="corr past DOUBLE's range: DuckDB's cov / (std_x * std_y) is inf / inf = NaN "
              "(NaN > -0.0 holds: the HAVING kept the group); hfq's correlation of the "
              "values scaled by 2^-600 gave 0.0"),
    Case("F81", "SELECT id, floor(log(d0)) AS a, floor(log10(d0)) AS b, ceil(log(d0)) AS c FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1000.0), (2, D1, "A", 1e300), (3, D1, "A", 0.001),
                     (4, D2, "B", 1e-300), (5, D2, "B", 100.0), (6, D2, "B", None)])],
         note="polars' log10 is ln(x) / ln(10): log10(1000) = 2.9999999999999996, its "
              "floor 2 (DuckDB 3)"),
    Case("F82", "SELECT sym, corr(l0, d0) AS c, corr(d0, l0) AS r FROM t GROUP BY sym",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("l0", "LONG")], ("date",), (),
                    [(k, D1 if k % 2 else D2, "A" if k < 9 else "B", x, y)
                     for k, (y, x) in enumerate(
                         [(y, x) for y in (-1, 2**63 - 1, 2) for x in (-1e300, -2.5, -0.5)]
                         + [(1, 1e300), (2, -1e300), (4, 0.5)])])],
         note="corr where a variance leaves DOUBLE's range: DuckDB's co-moment leaves it too "
              "when a product of deviations does (+-inf / inf = NaN, group A), else cov / inf "
              "= -0.0 (group B); polars' corr said 0.0"),
    Case("F82b", "SELECT corr(d1, d0) AS c, corr(d0, d1) AS r, corr(d0, d0) AS s FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1e300, 1.0), (2, D1, "A", 0.5, 4.0),
                     (3, D2, "B", -1e300, 2.0), (4, D2, "B", 0.25, -1.0)], [2])],
         note="F82 merged across partitions: the deviations' bound from min, max and mean"),
    Case("F83", "SELECT id, coalesce(length(sym), EXTRACT(hour FROM CAST(NULL AS TIME))) AS c, "
                "lag(EXTRACT(day FROM CAST(NULL AS DATE)), 1, 7) OVER (ORDER BY id) AS l, "
                "date_part('dow', CAST(NULL AS TIMESTAMP)) AS d, day(CAST(NULL AS DATE)) AS e, "
                "EXTRACT(day FROM date) AS f FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "IBM")])],
         note="DuckDB types EXTRACT/date_part of a constant NULL as DOUBLE (day() of one "
              "stays BIGINT): coalesce(length(sym), EXTRACT(...)) is a DOUBLE"),
    Case("F84", "SELECT count(*) AS n FROM t WHERE (1 + 9223372036854775807) <= "
                "(SELECT sum(2) FROM u WHERE id > 5)",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")]),
          TableSpec("u", T3, ("date",), (), [(3, D1, "A")])],
         note="polars simplifies x <= NULL (the subquery's sum over no rows) to NULL without "
              "evaluating x: the overflow DuckDB raises was never checked, hfq answered 0"),
    Case("F86", "SELECT id, avg((NULL + NULL)) OVER (ORDER BY d0 NULLS LAST, id ROWS BETWEEN "
                "1 PRECEDING AND CURRENT ROW) AS a, max(NULL) OVER (PARTITION BY sym ORDER BY "
                "id ROWS UNBOUNDED PRECEDING) AS b, min(NULL) OVER (ORDER BY id ROWS BETWEEN 1 "
                "PRECEDING AND 1 FOLLOWING) AS c, sum(NULL) OVER (ORDER BY id RANGE BETWEEN 2 "
                "PRECEDING AND CURRENT ROW) AS d, sum(NULL) OVER (ORDER BY id) AS e, "
                "avg(NULL) OVER (ORDER BY date RANGE BETWEEN INTERVAL 2 DAYS PRECEDING AND "
                "CURRENT ROW) AS f, count(NULL) OVER (ORDER BY id ROWS 1 PRECEDING) AS g, "
                "sum(NULL) OVER () AS h FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1.0), (2, D1, "A", None), (3, D2, "B", 2.0)])],
         note="window aggregates of an untyped NULL: polars rolls no Null column ('rolling_sum "
              "operation not supported for dtype null' reached the user); DuckDB: NULL (count "
              "0)"),
    Case("F87", "SELECT CASE WHEN (d1 IS NOT NULL) THEN (i0 + i0) ELSE (date - date) END AS c1, "
                "CASE WHEN TRUE THEN CAST(7 AS VARCHAR) ELSE nullif(c2, c1) END AS c4, "
                "if(id > 1, y0, 'q') AS c5, coalesce(c2, s0) AS c6 FROM t ORDER BY 1, 2, 3, 4",
         [TableSpec("t", [*T3, ("c1", "CHAR"), ("c2", "CHAR"), ("y0", "SYMBOL"),
                          ("s0", "STRING"), ("d1", "DOUBLE"), ("i0", "INT")], ("date",), (),
                    [(1, D1, "A", "x", "A", "IBM", "p", 1.0, 3),
                     (2, D1, "A", None, None, None, None, None, None),
                     (3, D2, "B", "B", "B", "x", "", None, 4)], [1])],
         note="a CASE of text and a CHAR/SYMBOL column: polars' type at run time is the "
              "dictionary, the plan's schema says text, and sorting by it failed in polars' "
              "words ('type Categorical is incompatible with expected type String')"),
    Case("F88", "SELECT id, lead(CAST(TRUE AS INTEGER), 1, 9223372036854775807) OVER "
                "(ORDER BY id) AS w FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="DuckDB casts a lead/lag default to the value's type, INTEGER here: 2^63 - 1 "
              "fails; hfq computes CAST(... AS INTEGER) in BIGINT and answered"),
    Case("F88b", "SELECT id, lag(CAST(id AS SMALLINT) * 2, 1, 40000) OVER (ORDER BY id) AS a, "
                 "lag(CAST(id AS TINYINT), 1, 100) OVER (ORDER BY id) AS b, "
                 "lag(CAST(id AS INTEGER), 2, 2147483647) OVER (ORDER BY id) AS c FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="F88 for SMALLINT (fails) and defaults that fit (answered)"),
    Case("F89", "SELECT id, CAST(d0 * 1e300 AS FLOAT) AS f FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1.5), (2, D2, "B", None)])],
         note="a finite DOUBLE past FLOAT's range: DuckDB fails the cast, polars gave inf"),
    Case("F89b", "SELECT id, CAST(d0 AS FLOAT) AS f, TRY_CAST(d0 * 1e300 AS FLOAT) AS g, "
                 "CAST(d0 * 1e-300 AS FLOAT) AS h FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1.5), (2, D2, "B", None), (3, D2, "B", float("inf")),
                     (4, D2, "B", float("nan")), (5, D1, "A", -3.4028234663852886e38)])],
         note="F89: infinities, NaN, FLOAT's largest and underflow to 0 cast; TRY_CAST NULL"),
    Case("F90", "SELECT id, lead(abs(7), 1, 9223372036854775807) OVER (ORDER BY id) AS w FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="DuckDB types abs(7) INTEGER (abs keeps its argument's type): the default 2^63 - 1 "
              "fails; hfq answered (fuzz seed 23)"),
    Case("F90b", "SELECT id, lag(CASE CAST(NULL AS BIGINT) WHEN 9223372036854775807 THEN 100 "
                 "END, 1, 9223372036854775807) OVER (ORDER BY id) AS w FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="a CASE of integer literals is an INTEGER in DuckDB (fuzz2 12149)"),
    Case("F90c", "SELECT id, lag(greatest(7, 2147483648), 1, 9223372036854775807) OVER (ORDER "
                 "BY id) AS a, lag(abs(-2.5), 1, 1.25) OVER (ORDER BY id) AS b, "
                 "lag(coalesce(NULL, 7), 1, 5) OVER (ORDER BY id) AS c, lag(7 % 2, 1, -3) "
                 "OVER (ORDER BY id) AS d FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="F90's types where the default fits (a BIGINT greatest; abs of a DECIMAL)"),
    Case("F91", "SELECT id, 1 / greatest(CAST('-0.0' AS DOUBLE), d0 * 0) AS a, "
                "1 / least(CAST(NULL AS DOUBLE), CAST('-0.0' AS DOUBLE), d0 * 0) AS b, "
                "1 / greatest(-d0 * 0, CAST('-0.0' AS DOUBLE)) AS c, "
                "1 / greatest(i0 - i0, CAST('-0.0' AS DOUBLE)) AS d, "
                "1 / greatest(d0, -d0, CAST('nan' AS DOUBLE)) AS e FROM t",
         [TableSpec("t", [*T3, ("i0", "INT"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 3, 1.5), (2, D1, "A", None, None), (3, D2, "B", 4, -2.5),
                     (4, D2, "B", 0, 0.0)])],
         note="greatest/least of equal values keep the first in DuckDB: greatest(-0.0, 0.0) is "
              "-0.0 (polars 0.0), and 1 / it -inf (fuzz seed 23: id / greatest('-0.0', d0))"),
    Case("F92", "SELECT sym, median(0.5 * l0) AS a, quantile_cont(0.5 * l0, 0.1) AS b, "
                "percentile_cont(0.5) WITHIN GROUP (ORDER BY 0.5 * l0 DESC) AS c, "
                "median(CAST(0.5 * l0 AS DECIMAL(18, 1))) AS d, "
                "percentile_cont(0.5) WITHIN GROUP (ORDER BY CAST(0.5 * l0 AS DECIMAL(18, 1)) "
                "DESC) AS e FROM t GROUP BY sym",
         [TableSpec("t", [*T3, ("l0", "LONG")], ("date",), (),
                    [(1, D1, "A", -2), (2, D1, "A", -3), (3, D2, "B", 2), (4, D2, "B", 3),
                     (5, D2, "B", None), (6, D1, "C", 5)])],
         note="DuckDB interpolates a DECIMAL of 19+ digits (HUGEINT) as lo + trunc((hi - lo) "
              "* d): median(0.5 * l0) of -1.0, -1.5 is -1.3; of 18 digits or fewer trunc(lo + "
              "(hi - lo) * d), -1.2 (fuzz seed 29)"),
    Case("F93", "WITH s AS (SELECT id, CAST(d0 AS BIGINT) AS c1 FROM t) "
                "SELECT c1 - id AS k, c1 FROM s WHERE (CASE id WHEN 2 THEN id END > (id + 1))",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", float("-inf")), (2, D1, "A", 2.5), (3, D2, "B", 1.0)])],
         note="a CTE's CAST fails on a row the outer WHERE drops: DuckDB (optimized or not) "
              "evaluates the CTE's items on all its rows and fails; polars pushed the outer "
              "filter below the CTE's projection and hfq answered (fuzz e17)"),
    Case("F93b", "SELECT k FROM (SELECT sym, CAST(sum(d0) AS BIGINT) AS k FROM t GROUP BY sym) "
                 "AS s WHERE abs(length(s.sym) - 2) = 0",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1e300), (2, D1, "A", 2.5), (3, D2, "BB", 1.0)])],
         note="the same for a grouped subquery in FROM: DuckDB casts every group's sum"),
    Case("F94", "SELECT id, power(d0, 0.5) AS a, 1 / power(d0, 0.5) AS b, power(d0, 2) AS c, "
                "power(d0, 3) AS d, power(d0, 4.0) AS e, min(power(d0, 0.5)) OVER () AS f, "
                "d0 ^ 0.5 AS g, d0 ** 2 AS h "
                "FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", float("-inf")), (2, D1, "A", -0.0),
                     (3, D1, "A", 605.4230616007137), (4, D2, "B", -731.2715117751975),
                     (5, D2, "B", -9.129825816118114), (6, D2, "B", None),
                     (7, D2, "B", float("inf"))])],
         note="polars' pow with a constant exponent: 0.5 by sqrt (power(-inf, 0.5) NaN, DuckDB "
              "+inf; power(-0.0, 0.5) -0.0, so 1 / it -inf, DuckDB +inf) and 2, 3, 4 by "
              "multiplying (an ulp off C's pow) (fuzz seed 31: min(power(d0, 0.5)))"),
    Case("F94b", "SELECT id, power(d0, 0.5) AS a, 1 / power(d0, 0.5) AS b, "
                 "min(power(d0, 0.5)) OVER (PARTITION BY sym) AS c FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", float("-inf")), (2, D2, "B", -0.0)])],
         note="one row per partition: polars takes sqrt for a constant 0.5 even as a column "
              "(fuzz seed 31, 31120: min(power(d0, 0.5)) over one row)"),
    Case("F96", "SELECT id, log10(d0 + d0) AS a, log(d0) AS b, floor(log10(d0)) AS c FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 5e-324), (2, D1, "A", 1e-308), (3, D2, "B", 1e-310),
                     (4, D2, "B", 1e3)])],
         note="F81's rule (n when 10^n == x) took 9.9e-324 (d0 + d0 of the smallest subnormal) "
              "for 10^-323: log10 -323.0, DuckDB -323.005 (fuzz seed 31, 32006)"),
    Case("F95", "SELECT id, lead((2.0 + 0.1), 1, 100.25) OVER (ORDER BY id) AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="DuckDB types 2.0 + 0.1 DECIMAL(3, 1) and fails casting the default 100.25 to "
              "it; hfq's DECIMAL(38, 1) took it (fuzz seed 31, 31723)"),
    Case("F95b", "SELECT id, lead(2.0 + 0.1, 1, 99.25) OVER (ORDER BY id) AS a, "
                 "lag(12.5 * 0.1, 1, 1.255) OVER (ORDER BY id) AS b, "
                 "lag(2.0 - 0.15, 1, 9.999) OVER (ORDER BY id) AS c FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="the default rounded to DuckDB's scale: 99.3, 1.26, 10.00"),
    Case("F97", "SELECT u.id AS c4, CAST(CAST(9223372036854775807 AS DOUBLE) AS BIGINT) AS c3 "
                "FROM t JOIN u USING (sym)",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")]),
          TableSpec("u", T3, ("date",), (), [(3, D1, "A")])],
         note="2^63 - 1 as a DOUBLE is 2^63, past BIGINT: the range check compared it with "
              "2^63 - 1 (itself rounded to 2^63) and let polars' strict cast fail in its own "
              "words ('conversion from f64 to i64 failed'; fuzz seed 31)"),
    Case("F97b", "SELECT id, TRY_CAST(d0 AS BIGINT) AS a, TRY_CAST(d0 AS INTEGER) AS b, "
                 "TRY_CAST(d0 AS TINYINT) AS c, TRY_CAST(-d0 AS SMALLINT) AS d FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 9223372036854775807.0), (2, D1, "A", -9223372036854775808.0),
                     (3, D1, "A", 9223372036854774784.0), (4, D2, "B", 2147483647.5),
                     (5, D2, "B", 127.5), (6, D2, "B", 127.4), (7, D2, "B", 32768.4),
                     (8, D2, "B", 32767.5), (9, D2, "B", -128.5), (10, D2, "B", None)])],
         note="F97 at every width: 2^63 NULL, -2^63 and the largest double under 2^63 kept, "
              "x.5 rounded to even before the range check"),
    Case("F98", "SELECT id, date_trunc('day', (NULL + INTERVAL '8 hours 30 minutes')) AS c "
                "FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         refuses=r"NULL's type is ambiguous",
         note="DuckDB's binder cannot type NULL + INTERVAL; hfq typed it an INTERVAL and "
              "date_trunc of it failed in polars' words ('truncate operation not supported "
              "for dtype duration'; fuzz seed 31)"),
    Case("F98b", "SELECT id, INTERVAL '8 hours' + NULL AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A")])], refuses=r"NULL's type is ambiguous",
         note="F98 the other way round (INTERVAL - NULL is an INTERVAL in DuckDB: F98c)"),
    Case("F98c", "SELECT id, INTERVAL '8 hours' - NULL AS a, TIME '10:00' - NULL AS b FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A")])]),
    Case("F98d", "SELECT id, date_trunc('hour', CAST(NULL AS INTERVAL)) AS a, "
                 "date_trunc('day', INTERVAL '1 day 8 hours') AS b FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A")])], refusal_ok=True,
         refuses=r"unsupported SQL: date_trunc of an INTERVAL",
         note="date_trunc of an INTERVAL (DuckDB truncates its months, days and micros "
              "apart): refused by name, not polars' 'truncate operation not supported'"),
    Case("F99", "SELECT id, lead(round(0.5), 1, 100.25) OVER (PARTITION BY sym ORDER BY id) "
                "AS w1 FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B"), (3, D2, "B")])],
         note="DuckDB keeps round(DECIMAL(2, 1)) a DECIMAL(2, 0) and fails casting the default "
              "100.25 to it; hfq answered (fuzz seed 31, 32307)"),
    Case("F99b", "SELECT id, lead(round(0.5), 1, 1.25) OVER (ORDER BY id) AS a, "
                 "lag(round(12.345, 1), 1, 12.35) OVER (ORDER BY id) AS b, "
                 "lag(ceil(0.5), 1, -1.5) OVER (ORDER BY id) AS d, "
                 "lag(floor(-0.5), 2, 9.5) OVER (ORDER BY id) AS e, "
                 "lag(round(12.345, 5), 1, 1.2345) OVER (ORDER BY id) AS f, "
                 "lag(round(12.345, -1), 1, 4.5) OVER (ORDER BY id) AS h, "
                 "lag(round(0.5) + 0.1, 1, 99.95) OVER (ORDER BY id) AS i, "
                 "lag(ceil(7), 1, 2.5) OVER (ORDER BY id) AS g FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B"), (3, D2, "B")])],
         note="F99's types where the default fits: rounded half away to the kept scale (the "
              "digits asked for, at most the argument's, negative as none); ceil(7) a DOUBLE"),
    Case("F99c", "SELECT id, lag(round(0.5) + 0.1, 1, 1000.25) OVER (ORDER BY id) AS i FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="round(0.5) + 0.1 is DECIMAL(4, 1): 1000.25 fails"),
    Case("F100", "SELECT sym, regr_slope(l0, greatest(CAST('-0.0' AS DOUBLE), d0)) AS s, "
                 "regr_intercept(l0, greatest(CAST('-0.0' AS DOUBLE), d0)) AS i, "
                 "regr_slope(d0, l0) AS s2, regr_intercept(d0, l0) AS i2 FROM t GROUP BY sym",
         [TableSpec("t", [*T3, ("l0", "LONG"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 3, 5e-324), (2, D2, "A", -4, -0.0),
                     (3, D1, "B", 7, 2.5), (4, D1, "C", 1, 1.5), (5, D2, "C", 2, 1.5),
                     (6, D1, "D", 1, 1.0), (7, D2, "D", 2, 3.0), (8, D2, "D", None, 2.0),
                     (9, D1, "E", 5, None)])],
         note="an x-variance that underflows to 0 (x = 5e-324, -0.0): DuckDB's slope NaN and "
              "intercept NULL, hfq's slope cov / 0 = inf and intercept NaN (fuzz seed 31, "
              "32218); one pair, a constant x, no pair"),
    Case("F103", "SELECT sym, corr(l0, d0) AS r, corr(d0, l0) AS r2, corr(d0, d0) AS r3 "
                 "FROM t GROUP BY sym",
         [TableSpec("t", [*T3, ("l0", "LONG"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 5, 5e-324), (2, D2, "A", -1, 0.0),
                     (3, D1, "B", 7, 2.5), (4, D2, "B", 8, 1.5), (5, D1, "C", 1, 1e-160),
                     (6, D2, "C", 2, -1e-160), (7, D1, "D", 3, 1.0)])],
         note="a variance that underflows to 0 (x = 5e-324, 0.0) without a constant: DuckDB's "
              "corr is NaN (stddev_pop(x) * stddev_pop(y) = 0), hfq's cov / 0 was inf (fuzz "
              "seed 43 on a cluster, dataset 43016)"),
    Case("F105", "SELECT id, round((0.1 * i0), -1) AS a, round(0.25 * i0, -2) AS b, "
                 "round(-0.5 * i0, -1) AS c, round(0.01 * i0, 1) AS d FROM t",
         [TableSpec("t", [*T3, ("i0", "INT")], ("date",), (),
                    [(1, D1, "A", 2147483647), (2, D2, "A", -2147483648), (3, D1, "B", 15),
                     (4, D1, "B", -15), (5, D2, "C", 0), (6, D2, "C", None),
                     (7, D1, "D", 5), (8, D1, "D", 199)])],
         note="round of a DECIMAL(12, 1) to -1 digits: 214748364.7 is 214748360, hfq said "
              "214748370 (scaled by 0.1 first, polars' product kept one decimal: rounded "
              "twice; fuzz seed 41, dataset 41513)"),
    Case("F101", "SELECT sym, (regr_intercept(d0, power(-1.25, l0)) - 7) AS a FROM t GROUP BY sym",
         [TableSpec("t", [*T3, ("l0", "LONG"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 136, -1e300), (2, D2, "A", 147, 1.7976931348623157e308),
                     (3, D1, "B", 1, 2.5), (4, D2, "B", 2, 3.5)])],
         refusal_ok=True, refuses=r"regr_intercept where the pairs' spread leaves DOUBLE",
         note="two pairs whose y spread leaves DOUBLE (-1e300, DBL_MAX): DuckDB's one-pass "
              "Welford update gives +inf (y - mean is -inf: the sign flipped), its merge of "
              "partial states (a window's segment tree) -inf, three pairs NaN or +-inf by the "
              "row order; hfq gave -inf: refused by name (fuzz2 12434)"),
    Case("F101b", "SELECT sym, covar_pop(d0, d1) AS c, covar_samp(d1, d0) AS s, regr_sxy(d0, d1) "
                  "AS x, regr_slope(d0, d1) AS r FROM t GROUP BY sym",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1e300, 1.0), (2, D1, "A", 1.7976931348623157e308, 2.0),
                     (3, D2, "A", -1e308, 3.0), (4, D2, "B", 1.0, 2.0)])],
         refusal_ok=True,
         refuses=r"(covar_pop|covar_samp|regr_sxy|regr_slope) where the pairs' spread leaves "
                 r"DOUBLE",
         note="three pairs whose y spread leaves DOUBLE: DuckDB NaN, +-inf or finite by the "
              "row order"),
    Case("F101d", "SELECT sym, covar_pop(d0, d0) AS c, covar_pop(d0, d1) AS d, "
                  "regr_slope(d0, d1) AS r FROM t GROUP BY sym",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1e200, 1e200), (2, D1, "A", -1e200, -1e200),
                     (3, D2, "A", 0.0, 0.0), (4, D2, "B", 1.0, 2.0)])],
         note="a co-moment past DOUBLE from the deviations' product alone (spreads finite): "
              "+inf in DuckDB's every order, hfq's too -- answered"),
    Case("F101c", "SELECT sym, covar_pop(d0, d1) AS c, regr_slope(d0, d1) AS r, "
                  "regr_intercept(d0, d1) AS i, corr(d0, d1) AS k FROM t GROUP BY sym",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1e300, 1.0), (2, D1, "A", -1e300, 2.0),
                     (3, D2, "A", 5e299, 4.0), (4, D2, "B", float("inf"), 2.0),
                     (5, D2, "B", 1.0, 3.0), (6, D1, "C", 1e300, 7.0)])],
         note="F101's check lets wide but representable spreads, infinite values (NaN) and one "
              "pair through"),
    Case("F125", "SELECT covar_samp(d1, i0) AS c, covar_pop(d1, i0) AS p, regr_sxy(d1, i0) "
                 "AS x, regr_slope(d1, i0) AS r FROM t WHERE 1 > d0 * i0",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE"), ("i0", "INT")], ("date",),
                    (), [(146, D1, "A", 0.0, -1e300, 5), (-45, D1, "A", 1.5, 0.0, -2147483648),
                         (-57, D2, "B", -2.0, -0.0, 2147483647),
                         (173, D2, "B", -1e300, -0.5, 2147483647),
                         (20, D1, "C", 0.25, None, 0), (-5, D1, "C", -2.5, None, -3)])],
         refusal_ok=True,
         refuses=r"(covar_samp|covar_pop|regr_sxy|regr_slope) where the sum of the "
                 r"deviations' products, or one of them, leaves DOUBLE",
         note="spreads inside DOUBLE (1e300, 4.3e9) but the co-moment 5.4e308 past it: DuckDB "
              "+inf or -inf by the row order, hfq gave the finite 1.79e308 of the scaled "
              "covariance: refused by name (2-node fuzz seed 101, dataset 102057)"),
    *[Case(f"F146{suffix}", sql,
           [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                      [(1, D1, "A", 2.5, 8e-300), (2, D1, "A", 1.7976931348623157e308, 1.4e-299),
                       (3, D1, "A", 2.5, 7e-300), (4, D1, "A", 1.7976931348623157e308, 1.5e-299),
                       (5, D1, "B", -3e-299, 1e308), (6, D2, "B", 1e-300, 1.7e308),
                       (7, D2, "B", 5e-300, 1.6e308), (8, D1, "C", 1.5, 2.0),
                       (9, D2, "C", 1.75, 2.5), (10, D1, "D", -2.5, 8e-300),
                       (11, D1, "D", -1.7976931348623157e308, 1.4e-299),
                       (12, D1, "D", -2.5, 7e-300),
                       (13, D1, "D", -1.7976931348623157e308, 1.5e-299)])],
           note="a covariance of values past DOUBLE's sums (DBL_MAX) beside values near 1e-299: "
                "hfq scaled both sides by 2^-600 where polars' was NaN, and the small side "
                "fell to 0 (answer 0.0, DuckDB's 3.6e8): now only a side with a value past "
                "2^480 is scaled (fuzz seed 439, case 439091)")
      for suffix, sql in (
          ("", "SELECT covar_samp(d0, d1) AS c, covar_pop(d1, d0) AS p, regr_sxy(d0, d1) AS s, "
               "corr(d0, d1) AS k FROM t WHERE sym = 'A'"),
          ("b", "SELECT sym, covar_samp(d1, d0) AS c, covar_pop(d0, d1) AS p, "
                "regr_sxy(d1, d0) AS s, regr_slope(d1, d0) AS r, regr_intercept(d0, d1) AS i, "
                "corr(d1, d0) AS k FROM t GROUP BY sym"))],
    Case("F146d", "SELECT corr(d0, d1) AS k, regr_r2(d0, d1) AS r FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1e112, 1e205), (2, D1, "A", -1e112, 1.01e205),
                     (3, D2, "A", 1e112, 1.02e205), (4, D2, "A", -1e112, 1.03e205)])],
         note="the covariance past DOUBLE's range (co-moment 1e317) with both spreads inside "
              "it: DuckDB's corr and regr_r2 are NaN, and so are hfq's (F134's check reads "
              "|r| as at most 1 there; it refused them when it took r over both sides "
              "scaled: F146's review)"),
    Case("F147", "SELECT covar_pop(d1, d0) AS c, covar_samp(d0, d1) AS s, "
                 "regr_sxy(d1, d0) AS x, regr_slope(d1, d0) AS r, regr_intercept(d1, d0) AS i "
                 "FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 0.8e308, 1e10), (2, D1, "A", -0.8e308, 1e10),
                     (3, D1, "A", 0.8e308, -1e10), (4, D1, "A", -0.8e308, -1e10 + 1)])],
         refusal_ok=True,
         refuses=r"(covar_pop|covar_samp|regr_sxy|regr_slope|regr_intercept) where the sum of "
                 r"the deviations' products, or one of them, leaves DOUBLE",
         note="one product of deviations past DOUBLE (8e307 x 1e10) whose sum cancels into "
              "it: DuckDB's running co-moment meets -inf (-inf, -inf, -inf, NaN, NULL); hfq "
              "answered -2e307 over the scaled pairs: refused by name (F146's review)"),
    Case("F148", "SELECT regr_r2(d1, d0) AS a, regr_r2(d0, d1) AS b FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", -0.0, 5e-324), (2, D2, "A", 1.7976931348623157e308, 1.0)])],
         note="regr_r2 is DuckDB's corr squared: corr is 0.0 here (a variance past DOUBLE's "
              "range), where hfq's cxy^2 / (vx vy) was inf / inf, NaN (F146's review)"),
    Case("F146c", "SELECT covar_pop(d0, d1) AS c FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",), (),
                    [(k, D1, "A", (2.5, 1.7976931348623157e308)[k % 2],
                      1e-299 * (1 + (k * 7 % 5) * 1e-13)) for k in range(8)])],
         refusal_ok=True, refuses=r"covar_pop over values whose offset dwarfs their spread",
         note="F134's offset check over F146's pairs: y near 1e-299, 1e-312 apart (offset / "
              "stddev 1e13), beside an x of DBL_MAX: the check scaled y to 0 with x and let "
              "the covariance's rounding through"),
    Case("F149", "SELECT ARG_MAX(NULLIF(ts0, CAST(NULL AS TIMESTAMP)), CAST(id AS DOUBLE)) AS a, "
                 "ARG_MIN(NULLIF(id, NULL + 1), ts0) AS b FROM t GROUP BY time",
         [TableSpec("t", [*T3, ("time", "TIMESTAMP"), ("ts0", "TIMESTAMP")], ("date",), (),
                    [(12, dt.date(2024, 1, 7), "A", dt.datetime(2024, 1, 7),
                      dt.datetime(2024, 1, 5, 9, 30, 1)),
                     (11, dt.date(2024, 1, 7), "A", dt.datetime(2024, 1, 7),
                      dt.datetime(2024, 1, 5, 10)),
                     (-3, D1, "A", dt.datetime(2024, 1, 5, 23, 59, 59),
                      dt.datetime(2024, 1, 5, 9, 30, 0, 123456))])],
         note="nullif against a NULL cast to TIMESTAMP (NULL.dt.cast_time_unit(), not a "
              "literal): polars (2.1) makes x = NULL a NULL of the wrong length inside a "
              "group, and arg_max's sort_by over it read memory past the one-row group's end "
              "(1.4e14, a new value on each run) -- F84's rule now holds for any NULL constant "
              "(fuzz seed 449, case 449187)"),
    Case("F102", "SELECT id, sum(d0) OVER (ORDER BY tm0 RANGE BETWEEN INTERVAL '90 minutes' "
                 "PRECEDING AND CURRENT ROW) AS w FROM t",
         [TableSpec("t", [*T3, ("tm0", "TIME"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", dt.time(15, 59, 59), -95.25),
                     (2, D1, "A", dt.time(15, 59, 59), 9.223372036854776e18),
                     (3, D1, "A", dt.time(15, 59, 59), 3.0),
                     (4, D2, "A", dt.time(15, 59, 59), -9.223372036854776e18),
                     (5, D2, "A", dt.time(15, 59, 59), 998.25),
                     (6, D2, "A", dt.time(12, 0), 1.5), (7, D2, "A", dt.time(12, 0, 1), 2.5)])],
         refusal_ok=True, refuses=r"RANGE frame's sum of DOUBLEs over tied ORDER BY keys",
         note="a RANGE frame over tied keys whose sum depends on the ties' order (+-2^63 among "
              "small values): DuckDB sorts ties in no defined order (alone its answer moves "
              "with the input order; beside another window it follows that window's "
              "partitioning: fuzz7 7926 stable on three orders); hfq's rolled sum is none of "
              "them: refused by name"),
    Case("F102b", "SELECT id, avg(d0) OVER (ORDER BY tm0 RANGE BETWEEN INTERVAL '90 minutes' "
                  "PRECEDING AND CURRENT ROW) AS w, sum(d1) OVER (ORDER BY tm0 RANGE BETWEEN "
                  "INTERVAL '90 minutes' PRECEDING AND CURRENT ROW) AS v FROM t",
         [TableSpec("t", [*T3, ("tm0", "TIME"), ("d0", "DOUBLE"), ("d1", "DOUBLE")], ("date",),
                    (), [(1, D1, "A", dt.time(15, 59, 59), -95.25, 1.0),
                         (2, D1, "A", dt.time(15, 59, 59), 3.0, -3.0),
                         (3, D2, "A", dt.time(15, 59, 59), 998.25, 2.5),
                         (4, D2, "A", dt.time(12, 0), 1.5, 1e300),
                         (5, D2, "A", dt.time(12, 0, 1), 2.5, -1e300),
                         (8, D2, "A", dt.time(12, 0, 2), 2.5, 2.5),
                         (6, D2, "A", None, 1.0, 2.0), (7, D1, "A", None, 2.0, None)])],
         note="F102's check lets well-conditioned tied frames and ill-conditioned frames "
              "without ties through (the latter's order is the keys')"),
    Case("F106", "SELECT id, lead(coalesce(1.25, 1.25), 1, 100.25) OVER (ORDER BY id) AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="DuckDB types coalesce(1.25, 1.25) DECIMAL(3, 2) and fails casting the default "
              "100.25 to it; hfq answered (fuzz seed 41, S41-42068-0)"),
    Case("F106b", "SELECT id, lead(coalesce(1, 1.25), 1, 1000.25) OVER (ORDER BY id) AS a, "
                  "lag(greatest(CAST(1 AS TINYINT), 1.25), 1, 999.99) OVER (ORDER BY id) AS b, "
                  "lag(CASE WHEN id > 1 THEN 2.5 END, 1, -9.5) OVER (ORDER BY id) AS c, "
                  "lag(least(1.5, 22.125, NULL), 1, 99.999) OVER (ORDER BY id) AS d FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B"), (3, D2, "B")])],
         note="F106's types where the default fits: the widest integer part (an INTEGER as "
              "DECIMAL(10, 0), a TINYINT as DECIMAL(3, 0)) and the largest scale"),
    Case("F106c", "SELECT id, lead(coalesce(1.5, 22.125), 1, 100.25) OVER (ORDER BY id) AS a "
                  "FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="coalesce(1.5, 22.125) is DECIMAL(5, 3): 100.25 fails"),
    Case("F106d", "SELECT id, lag(l0 * 1.5, 1, 0) OVER (ORDER BY id) AS a FROM t",
         [TableSpec("t", [*T3, ("l0", "LONG")], ("date",), (), [(1, D1, "A", 3), (2, D2, "B", 4)])],
         refusal_ok=True, refuses=r"lag\(\) with a default, of a DECIMAL expression whose "
                                  r"precision hfq does not track",
         note="a DECIMAL whose DuckDB precision hfq does not derive (BIGINT * DECIMAL(2, 1) is "
              "DuckDB's DECIMAL(20, 1)): whether the default fits is unknown, so refused"),
    Case("F107", "SELECT id, CASE (id + 1) WHEN DATE '2024-01-05' THEN 1 END AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A")])],
         refuses=r"type mismatch in .*CASE \(id \+ 1\) WHEN .*: \(id \+ 1\) is a number",
         note="a CASE subject of another type than a WHEN value: the check named the WHEN "
              "branch's missing right side and failed with AttributeError (fuzz seed 47, "
              "dataset 47864, with a bound parameter for id)"),
    Case("F108", "SELECT id, round(l0, -38) AS a, round(l0, -19) AS b, round(l0, -40) AS c, "
                 "round(l0, -18) AS d, round(l0, -1) AS e, round(i0, -9) AS f FROM t",
         [TableSpec("t", [*T3, ("l0", "LONG"), ("i0", "INT")], ("date",), (),
                    [(1, D1, "A", 4223372036854775807, 2147483647),
                     (2, D1, "A", -9223372036854775807 + 7, 1247483647),
                     (3, D2, "B", None, None), (4, D2, "B", -15, 5)])],
         note="round of an integer to 19+ places before the point: 10^38 and past did not fit "
              "polars' literals (a raw TypeError); to -19 an exact 0"),
    Case("F108b", "SELECT id, round(l0, -1) AS e FROM t",
         [TableSpec("t", [*T3, ("l0", "LONG")], ("date",), (),
                    [(1, D1, "A", 3), (2, D1, "A", 9223372036854775807)])],
         refuses=r"Overflow in ROUND of integer",
         note="rounded past BIGINT: DuckDB's 'Overflow in ROUND of integer'"),
    Case("F108c", "SELECT id, round(CAST(l0 AS INTEGER), -1) AS e FROM t",
         [TableSpec("t", [*T3, ("l0", "LONG")], ("date",), (),
                    [(1, D1, "A", 3), (2, D1, "A", 2147483647)])],
         refuses=r"Overflow in ROUND of integer",
         note="an INTEGER rounded past INTEGER fails in DuckDB (an INT column is read as "
              "BIGINT, docs/sql.md: F108 rounds 2147483647 to 2147483650)"),
    Case("F109", "SELECT id, lead(coalesce(CAST(1 AS TINYINT), 2), 1, 40000) OVER (ORDER BY id) "
                 "AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         refuses=r"the type of an integer literal beside a TINYINT or SMALLINT value",
         note="DuckDB types the literal 2 beside a TINYINT a TINYINT (coalesce is TINYINT: "
              "40000 fails); hfq counted it an INTEGER and answered (review of 4fec99b)"),
    Case("F109b", "SELECT id, lag(greatest(sign(l0), 0, 2.5), 1, 1000.5) OVER (ORDER BY id) AS a "
                  "FROM t",
         [TableSpec("t", [*T3, ("l0", "LONG")], ("date",), (), [(1, D1, "A", 3), (2, D2, "B", 4)])],
         refuses=r"the type of an integer literal beside a TINYINT or SMALLINT value",
         note="sign() is a TINYINT, so is 0 beside it: DuckDB's DECIMAL(4, 1) fails 1000.5"),
    Case("F110", "SELECT id, round($1, -1) AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         params=(-2147483648,), refuses=r"Overflow in ROUND of integer",
         note="DuckDB binds the parameter -2147483648 an INTEGER (the literal -2147483648 is a "
              "BIGINT: 2147483648 negated); hfq bound it a BIGINT and answered -2147483650"),
    Case("F110b", "SELECT id, lag($1, 1, 4294967296) OVER (ORDER BY id) AS b FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         params=(-2147483648,), refuses=r"conversion failed \(CAST to INT",
         note="F110: the default cast to the INTEGER parameter's type fails in both"),
    Case("F111", "SELECT id, round(d0, -324) AS a, round(d0, -400) AS b, round(d0, 309) AS c, "
                 "round(d0, 400) AS e, round(d0, -309) AS f FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 1.5), (2, D1, "A", -1.5), (3, D1, "A", 1e300),
                     (4, D2, "B", float("inf")), (5, D2, "B", float("nan")),
                     (6, D2, "B", None), (7, D2, "B", -0.0), (8, D2, "B", 5e-324)])],
         note="round of a DOUBLE to digits past DOUBLE's exponent: 10^-324 is 0.0 (x * 0 / 0: "
              "NaN, DuckDB 0.0) and 10.0 ** 309 a Python OverflowError (review of 06bff34)"),
    Case("F112", "SELECT id, coalesce(sign(l0), '0') AS a, CASE WHEN id > 1 THEN l0 ELSE '7' END "
                 "AS b, if(id > 1, l0, '3') AS c, coalesce(CASE WHEN id > 1 THEN date END, "
                 "'2024-03-01') AS d, CASE WHEN id > 1 THEN l0 > 0 ELSE 'true' END AS e, "
                 "coalesce(sym, 'N/A') AS f FROM t",
         [TableSpec("t", [*T3, ("l0", "LONG")], ("date",), (),
                    [(1, D1, "A", 3), (2, D2, "B", -4), (3, D2, "B", None)])],
         note="a string literal among values of another type is cast to their type, as DuckDB "
              "binds it; hfq answered text ('0', '2024-03-01') (review of 06bff34)"),
    Case("F112b", "SELECT id, coalesce(sign(l0), '300') AS a FROM t",
         [TableSpec("t", [*T3, ("l0", "LONG")], ("date",), (), [(1, D1, "A", None)])],
         refuses=r"conversion failed \(CAST to TINYINT\)",
         note="F112 in DuckDB's type: sign() is a TINYINT, '300' does not convert"),
    Case("F112c", "SELECT id, coalesce(l0 * 1.5, '2.25') AS a FROM t",
         [TableSpec("t", [*T3, ("l0", "LONG")], ("date",), (), [(1, D1, "A", None)])],
         refusal_ok=True, refuses=r"a string literal among values of DECIMAL\(38, 1\)",
         note="F112 where DuckDB's DECIMAL precision is not known to hfq: refused by name"),
    Case("F113", "SELECT id, lag(if(id > 1, 1, 0), 1, 4000000000) OVER (ORDER BY id) AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         refuses=r"conversion failed \(CAST to INT\)",
         note="if(c, 1, 0) is DuckDB's INTEGER: the default fails; duck_type knew CASE, not "
              "if() (review of 06bff34)"),
    Case("F114", "SELECT id, avg(d0) OVER (ORDER BY tm RANGE BETWEEN INTERVAL '5 minutes' "
                 "PRECEDING AND CURRENT ROW) AS a FROM t",
         [TableSpec("t", [*T3, ("tm", "TIME"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", dt.time(0, 0), 0.0), (2, D1, "A", dt.time(9, 29, 59), None),
                     (3, D1, "A", dt.time(9, 29, 59), 1.7976931348623157e308),
                     (4, D1, "A", dt.time(9, 29, 59), 1.0), (5, D2, "B", dt.time(9, 30), -1.25),
                     (6, D2, "B", dt.time(9, 30), 1.7976931348623157e308),
                     (7, D2, "B", dt.time(9, 30), 0.5)])],
         refusal_ok=True, refuses=r"a sliding frame's avg of DOUBLEs past DOUBLE's range",
         note="a RANGE frame whose finite values sum past DOUBLE's range: polars' rolled sum "
              "gave NaN where DuckDB's is inf (fuzz seed 59, 2-node, dataset 59689); the "
              "value there moves with the order of the additions: refused by name"),
    Case("F114b", "SELECT id, sum(d0) OVER (ORDER BY id ROWS BETWEEN 40 PRECEDING AND CURRENT "
                  "ROW) AS a FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(k, D1, "A", 1.7976931348623157e308 if k in (3, 9) else 0.5)
                     for k in range(50)])],
         refusal_ok=True, refuses=r"a sliding frame's sum of DOUBLEs past DOUBLE's range",
         note="F114 on a ROWS frame of 32 rows or more (rolled, not added afresh)"),
    Case("F114c", "SELECT id, avg(d0) OVER (ORDER BY tm RANGE BETWEEN INTERVAL '5 minutes' "
                  "PRECEDING AND CURRENT ROW) AS a, sum(d0) OVER (ORDER BY id ROWS BETWEEN 40 "
                  "PRECEDING AND CURRENT ROW) AS b FROM t",
         [TableSpec("t", [*T3, ("tm", "TIME"), ("d0", "DOUBLE")], ("date",), (),
                    [(k, D1, "A", dt.time(9, 30 + k % 7), v) for k, v in enumerate(
                        [1e300, float("inf"), -2.5, None, 1e300, float("nan"), 3.0] * 8)])],
         note="large values and infinities that do not sum past DOUBLE's range: answered"),
    Case("F115", "SELECT id, avg(date - NULL) OVER (ORDER BY id ROWS BETWEEN 0 PRECEDING AND 1 "
                 "FOLLOWING) AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         refusal_ok=True, refuses=r"window avg\(\) over INTERVAL values",
         note="a window sum/avg of dates or intervals reached polars: 'rolling_sum operation "
              "not supported for dtype duration' (fuzz seeds 53 and 59, in polars' words)"),
    Case("F116", "SELECT id, coalesce(round(100.25), (0.0 + NULL)) AS a, "
                 "coalesce(1.5 + NULL, 2) AS b, coalesce(id * 1.5 - NULL, id) AS c, "
                 "coalesce(NULL % 2.5, -id) AS d, 1.5 * NULL + 1 AS e FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="a DECIMAL + - * % an untyped NULL is an untyped NULL in DuckDB; hfq typed it "
              "DECIMAL(38, s): coalesce(1.5 + NULL, 2) answered 2.0 where DuckDB's is the "
              "INTEGER 2 (fuzz seed 61)"),
    Case("F117", "SELECT weighted_avg(-2.5 * id, id) AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(2 ** 63 - 1, D1, "A"), (2, D2, "B")])],
         refusal_ok=True, refuses=r"weighted_avg\(\) of DECIMAL values",
         note="weighted_avg of a DECIMAL value: DuckDB multiplies in DECIMAL and fails past 38 "
              "digits, hfq answered in DOUBLE (fuzz seed 61)"),
    Case("F118", "SELECT id, 1 / (0.0 + d0) AS a, 1 / (d0 + 0.0) AS b, 1 / (0.0 - d0) AS c, "
                 "1 / (d0 - CAST('-0.0' AS DOUBLE)) AS d, 1 / (d0 + (1 - 1)) AS e FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", -0.0), (2, D1, "A", 0.0), (3, D2, "B", None),
                     (4, D2, "B", 2.0)])],
         note="-0.0 + 0.0 gave -0.0 (IEEE and DuckDB: 0.0): polars skips adding a length-1 "
              "zero, so 1 / (0.0 + d0) was -inf where DuckDB's is inf (2-node fuzz seed 67)"),
    Case("F118b", "SELECT sym, 1 / (min(d0) + 0.0) AS a, 1 / (0.0 - max(d0)) AS b FROM t "
                  "GROUP BY sym",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", -0.0), (2, D1, "A", -0.0), (3, D2, "B", 0.0)])],
         note="the same with an aggregate beside the zero"),
    Case("F119", "SELECT id, d0 % 2 AS a, 1 % d0 AS b, d0 % -3 AS c, 1 / (d0 % 2) AS z, "
                 "d0 % 0 AS e, d0 % CAST(0 AS DOUBLE) AS f FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", -4.0), (2, D1, "A", 7.0), (3, D2, "B", float("inf")),
                     (4, D2, "B", -0.0), (5, D2, "B", 1e15 + 1), (6, D1, "A", None),
                     (7, D1, "A", float("nan")), (8, D2, "B", float("-inf"))])],
         note="DOUBLE %: polars' float remainder goes through a division (1 % inf NaN, "
              "DuckDB's fmod 1; 1e300 % -17 0.0, fmod 6.0); now fmod exactly for whole numbers "
              "(review of F116)"),
    Case("F119b", "SELECT id, d0 % 0.1 AS a, d0 % -0.3 AS b, -d0 % 0.7 AS c FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 5.0), (2, D1, "A", 2.5), (3, D2, "B", -7.3),
                     (4, D2, "B", 0.3), (5, D2, "B", 1e-5), (6, D1, "A", 123456.789)])],
         note="polars' 5.0 % 0.1 is 0.0, fmod's 0.09999999999999973 (the division rounds the "
              "quotient up across 50): now exact"),
    Case("F119e", "SELECT id, d0 % 2.1693300879063171e-10 AS a, d0 % 0.3e0 AS b FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(k, D1, "A", v) for k, v in enumerate(
                        [1505450.7864699457, 5.0, 2.5, -7.3, 0.9, 123456.789, 1e-3, 3.3,
                         -1505450.7864699457, 17.7, 0.3, 0.6, 0.9000000000000001, 42.0,
                         1e6 + 0.1, -2.2, 8.8, 99.99, 0.15, 1e5 / 3])])],
         note="a literal divisor on 16 rows or more: polars multiplies by its reciprocal, the "
              "quotient two off (1505450.78... % 2.169e-10 gave -2.6e-11, DuckDB 1.9e-10; "
              "review of F119): the quotient is divided as IEEE's"),
    Case("F119d", "SELECT CAST(1e300 AS DOUBLE) % 7 AS a",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A")])],
         refusal_ok=True, refuses=r"DOUBLE % with a quotient past 2\^53",
         note="fmod with a quotient past 2^53 (DuckDB 1.0 here) is refused by name"),
    Case("F119c", "SELECT 1 // 100000000000000000000 AS a",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A")])],
         refusal_ok=True, refuses=r"integer literal 100000000000000000000 past BIGINT",
         note="an integer literal past BIGINT is DuckDB's HUGEINT; hfq typed it DECIMAL(38, 0) "
              "and answered 1e-20 for 1 // 1e20 (DuckDB 0): refused by name"),
    Case("F120", "SELECT id, date - INTERVAL '2 hours' AS a, INTERVAL 1 DAY + date AS b, "
                 "(SELECT count(*) FROM t WHERE date - INTERVAL '2 hours' = DATE '2024-01-04') "
                 "AS n FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="DATE - INTERVAL '2 hours' kept a DATE (hours dropped; a filter on it counted "
              "rows DuckDB does not): DuckDB's is a TIMESTAMP (review of F116)"),
    Case("F122", "SELECT sym, count(*) FILTER (WHERE (DATE '1970-01-01' BETWEEN date AND "
                 "date)) AS n FROM t GROUP BY sym",
         [TableSpec("t", [("id", "LONG"), ("date", "DATE"), ("sym", "SYMBOL")], ("date",), (),
                    [(1, dt.date(2024, 1, 7), "O'Neil"), (-2, dt.date(2024, 2, 29), "O'Neil"),
                     (0, dt.date(2024, 1, 7), " ")], [2])],
         note="polars panicked ('index: 1 out of bounds for len: 1') and the raw "
              "PanicException reached the user (fuzz seed 71); it was refused as a polars "
              "panic until F136: BETWEEN put the constant left of the column, the polars "
              "bug compare() works around, and now answers as DuckDB"),
    Case("F123", "SELECT id, sum(d0) OVER (ORDER BY k DESC) AS a FROM t",
         [TableSpec("t", [*T3, ("k", "LONG"), ("d0", "DOUBLE")], ("date",), (),
                    [(1, D1, "A", 10, float("inf")), (2, D1, "A", 0, -1.7976931348623157e308),
                     (3, D2, "B", 0, -1.7976931348623157e308), (4, D2, "B", -1, 2.0)])],
         refusal_ok=True, refuses=r"a running frame's sum of DOUBLEs past DOUBLE's range",
         note="a running sum meeting inf - inf at a row that moves with the order of the "
              "additions: DuckDB NaN, hfq inf (2-node fuzz seed 73): refused by name"),
    Case("F124", "SELECT nullif(NULL, date) AS k, min(id) AS a FROM t WHERE id > 5 "
                 "GROUP BY ALL",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="nullif(NULL, date) made an untyped NULL constant: GROUP BY ALL over no rows "
              "gave one group, DuckDB none (2-node fuzz seed 83)"),
    Case("F121d", "SELECT coalesce(nullif(NULL, 1), DATE '2024-01-01') AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A")])],
         refusal_ok=True, refuses=r"a date/time and a number",
         note="the day number 19723 was answered; DuckDB's nullif(NULL, 1) is untyped and its "
              "answer a DATE: refused by name"),
    Case("F121", "SELECT id, "
                 "coalesce(sym || NULL, 2) AS b, coalesce(NULL // NULL, 2) AS c, "
                 "coalesce(NULL + NULL, '300') AS d FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         note="untyped NULLs typed as DuckDB types them: nullif(NULL, 1) and x || NULL are "
              "untyped NULLs, NULL // NULL and NULL + NULL BIGINTs (hfq: the day number 19723, "
              "text '2', DOUBLE 2.0, text '300'; reviews of F116)"),
    Case("F121b", "SELECT coalesce(id, date) AS a FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         refuses=r"a date/time and a number",
         note="coalesce of a number and a date answered day numbers; DuckDB's binder refuses"),
    Case("F121c", "SELECT coalesce(upper(NULL), 2) AS a, CASE WHEN id > 0 THEN sym ELSE id END "
                  "AS b FROM t",
         [TableSpec("t", T3, ("date",), (), [(1, D1, "A"), (2, D2, "B")])],
         refusal_ok=True, refuses=r"a number and text",
         note="text beside a number in coalesce/CASE answered text; DuckDB's binder refuses "
              "(or, for upper(NULL), folds it to an untyped NULL): refused by name"),
    Case("F129d", "SELECT id, sum(d0) OVER (PARTITION BY sym ORDER BY id) AS w FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(k + 1, D1, "A" if k < 40 else "B",
                      {5: 1e300, 30: -1e300}.get(k, 0.25 * (k % 7) - 0.5)) for k in range(44)])],
         refusal_ok=True, refuses=r"PARTITION BY whose values cancel",
         note="F129 with PARTITION BY: DuckDB lays its segment tree over a hash bucket of "
              "partitions, so where partition A's blocks of 16 rows start depends on the "
              "partitions before it in its bucket; with -1e300 ... 1e300 among small values "
              "the order decides the sum (0.0 or the small rows' total): refused by name "
              "(the small values are quarters, so only the total, past 2^37, tells it from "
              "an exact sum)"),
    Case("F129h", "SELECT id, avg(d0) OVER (PARTITION BY sym ORDER BY id RANGE BETWEEN 30 "
                  "PRECEDING AND CURRENT ROW) AS w FROM t",
         [TableSpec("t", [*T3, ("d0", "DOUBLE")], ("date",), (),
                    [(k + 1, D1, "A" if k < 40 else "B",
                      {5: 1e300, 30: -1e300}.get(k, 0.1 * (k % 7) - 0.25)) for k in range(44)])],
         refusal_ok=True, refuses=r"PARTITION BY whose values cancel",
         note="F129d in a RANGE frame with an offset: refused by name as well"),
    Case("F129e", "SELECT id, sum(q) OVER (PARTITION BY sym ORDER BY id) AS w, "
                  "avg(p) OVER (PARTITION BY sym ORDER BY id ROWS BETWEEN 20 PRECEDING AND "
                  "CURRENT ROW) AS a, sum(d0) OVER (PARTITION BY sym ORDER BY id ROWS "
                  "BETWEEN 3 PRECEDING AND CURRENT ROW) AS s FROM t",
         [TableSpec("t", [*T3, ("q", "DOUBLE"), ("p", "DOUBLE"), ("d0", "DOUBLE")], ("date",),
                    (), [(k + 1, D1, "A" if k < 40 else "B", (k % 5 - 2) * 1000.25,
                          100.0 + 0.01 * k, {5: 1e300, 7: -1e300}.get(k, 0.5))
                         for k in range(44)])],
         note="what F129's check with PARTITION BY answers: a running sum of quarter units "
              "of both signs (every order adds exactly), an avg of positive prices (orders "
              "differ by rounding only) and a frame of 4 rows (never an aligned block of 16 "
              "past its start), each DuckDB's"),
    *[Case(f"F134-{name}", f"SELECT sym, {name}(i0 - d0, -2147483648 + i1) AS c FROM t "
           "GROUP BY sym", [_F134], refusal_ok=True, refuses=r"offset dwarfs their spread",
           note="pairs near -2^31 with a spread of 10 (offset / stddev 5e8): DuckDB's "
                "Welford state lost ~3e-9 of corr to the offset (-0.23959317457, exact "
                "-0.23959317530) and hfq's merge of per-partition moments ~6e-9 "
                "(-0.23959317674, fuzz seed 211): refused by name wherever the rounding "
                "bound reaches 1e-9 of the answer")
      for name in ("corr", "covar_pop", "covar_samp", "regr_slope", "regr_intercept",
                   "regr_r2", "regr_sxy")],
    Case("F134d", "SELECT corr(x * x, x) AS c, covar_pop(x * x, x) AS v, "
                  "regr_slope(x * x, x) AS s FROM t",
         [TableSpec("t", [*T3, ("x", "DOUBLE")], ("compo", 2), ("id",),
                    [(k, D1 if k % 2 else D2, "AB"[k % 3 % 2], float(k - 5)) for k in range(11)],
                    [4])],
         note="a correlation of exactly 0 (y = x^2 over -5 ... 5): answered 0.0 as DuckDB "
              "does -- the offset bound is held against the comparator's 1e-12 absolute "
              "slack too, not against 1e-9 of a zero (stop-15 review)"),
    Case("F134e", "SELECT regr_intercept(y, x) AS i FROM t", [_LINE], refusal_ok=True,
         refuses=r"regr_intercept over values whose offset",
         note="x near 1e5 with a spread of 100, y = 0.5 x + 0.3: the intercept keeps 0.3 of "
              "terms near 5e4, so the slopes' last digits (which agree to 1e-13) move it by "
              "~1e-8 of itself; DuckDB and hfq's formula parted by up to 6e-8 in the review: "
              "refused by name (F134e-slope: the slope answers)"),
    Case("F134e-slope", "SELECT regr_slope(y, x) AS s FROM t", [_LINE],
         note="F134e's slope: answered, DuckDB's"),
    *[Case(f"W1-{k}", f"SELECT id, sum(v) OVER ({over}) AS s, avg(v) OVER ({over}) AS a "
           "FROM t", [_PASSED],
           note="one-sign DOUBLEs after a 4.3e16 passed through the partition: polars' "
                "rolled sum (the row coming in added, the one leaving subtracted) kept 8 of "
                "its rounding, 7322524 where the frame's sum is 7322532 (1.1e-6 off; stop-15 "
                "review); such partitions are summed in DuckDB's tree, not rolled")
      for k, over in (*_FRAMES16, ("part", "PARTITION BY sym ORDER BY id ROWS BETWEEN 16 "
                                           "PRECEDING AND CURRENT ROW"))],
    *[Case(f"W2-{k}", f"SELECT id, sum(v) OVER ({over}) AS s, avg(v) OVER ({over}) AS a "
           "FROM t", [_ZEROS],
           note="prices off their decimals, then zeros for longer than a frame: polars' "
                "rolled sum of a frame of zeros kept 2.3e-10 of the prices that left, DuckDB's "
                "tree 0.0; such "
                "partitions are rolled natively (stop 16: they had gone to the tree, 7x "
                "slower on the query suite's moving_5m, whose quotes hold zero bids) and "
                "the frames of zeros answer exactly 0")
      for k, over in _FRAMES16],
    *[Case(f"W3-{k}", f"SELECT id, sum(v) OVER ({over}) AS s, avg(v) OVER ({over}) AS a "
           "FROM t", [_DECIMALS],
           note="W2's prices on their decimals (2 places): rolled natively they too left "
                "-1.16e-10 in the frames of zeros; summed in whole units of 1e-4 every frame "
                "is exact")
      for k, over in _FRAMES16],
    *[Case(f"W4-{k}", f"SELECT id, sum(v) OVER ({over}) AS s, avg(v) OVER ({over}) AS a "
           "FROM t", [_SMALL],
           note="DOUBLEs near 1e-4 off any decimal of 4 places: not summed in units of 1e-4")
      for k, over in _FRAMES16],
    *[Case(f"W5-{k}", f"SELECT id, sum(v) OVER ({over}) AS s, avg(v) OVER ({over}) AS a "
           "FROM t", [_CANCEL],
           note="decimals of both signs (1000000000.1 beside -1000000000.0): their sum in "
                "units of 1e-4 is the decimals' (0.1), DuckDB's tree keeps the DOUBLEs' "
                "rounding (0.10000002384...): decimals are summed in units only when of one "
                "sign (stop-16 review)")
      for k, over in (("rows", "ORDER BY id ROWS BETWEEN 17 PRECEDING AND CURRENT ROW"),
                      ("range", "ORDER BY id RANGE BETWEEN 17 PRECEDING AND CURRENT ROW"))],
    *[Case(f"W2b-{k}", f"SELECT id, sum(v) OVER ({over}) AS s FROM t", [_TINY],
           note="W2's prices, a 1e-11, then zeros: the frame holding only the 1e-11 rolled "
                "to -1.06e-10, which no threshold tells from a frame of zeros' residue; "
                "such partitions go to the tree (DuckDB's 1e-11)")
      for k, over in _FRAMES16],
    Case("F134f", "SELECT regr_r2(y, x) AS r2 FROM t",
         [TableSpec("t", [*T3, ("x", "DOUBLE"), ("y", "DOUBLE")], ("date",), ("id",),
                    [(2 * k + j, D1, "A",
                      1e11 + (1 - 2 * j) * (((53 * k) % 97 + 1) / 64), ((29 * k) % 31) / 32)
                     for k in range(19) for j in (0, 1)], [])],
         refusal_ok=True, refuses=r"regr_r2 over values whose offset",
         note="x = 1e11 +- a, each y beside both signs: r is 0 but for the offset's noise, "
              "of which r^2 keeps the square -- DuckDB 1.4e-12 where the exact r^2 is 0, so "
              "any other rounding parts past the 1e-12 slack: refused by name (stop-15 "
              "second review)"),
    *[Case(f"F134b-{name}", f"SELECT sym, {name}(p, q) AS c, {name}(p - 1e4, q) AS o, "
           f"{name}(p * 1e-200, q) AS s, {name}(p, 7.5) AS k FROM t GROUP BY sym",
           [_PRICES],
           note="what F134's check answers, each DuckDB's: prices (offset / stddev near "
                "100, |r| 0.4 and 0.55), the same 10,000 away (offset / stddev 1e4), "
                "values near 1e-198, and a constant x (exactly 0 or NaN)")
      for name in ("corr", "covar_pop", "regr_slope", "regr_intercept", "regr_r2")],
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_finding(case: Case, tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    dataset = Dataset(0, case.tables)
    load_hfq(db, dataset)
    cons = duckdb_connections(1)
    load_duckdb(cons[0], db, dataset)
    allowed = {"same", "agreed_error"} | ({"refused"} if case.refusal_ok else set()) | \
        ({"invalid"} if case.refuses else set())
    for out, engine in zip(on_both_engines(db, cons, case.sql, ordered=order_is_total(case.sql),
                                           params=case.params), ("in memory", "streaming")):
        assert out.status in allowed, \
            f"{case.id} ({engine}): {out.status}: {out.detail}\n{case.note}"
        assert not out.leak, \
            f"{case.id} ({engine}): an error in polars' words: {out.leak}\n{case.note}"
    if case.refuses:
        with pytest.raises(hfq.errors.HfqError, match=case.refuses):
            db.sql(case.sql, params=case.params or None).collect()
