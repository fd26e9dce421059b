"""Mutants of the SQL aggregates (issue 24, area "sql-aggregates": the fuzzer's findings F48+):
each plants back a difference from DuckDB the long fuzz run found, and names the fast, Ray-free
tests that compare with DuckDB and must fail."""

from __future__ import annotations

from mutants import Mutant

AREA = "sql-aggregates"
TRUST = "tests/query/test_trust.py::test_same_as_duckdb[{}-m]"
AGG = "hfq/engine/sql/aggregates.py"

MUTANTS: list[Mutant] = [
    Mutant("sqlagg-constant-spread-always-0", AREA, AGG,
           "pl.when((n == 1) | v.is_finite()).then(pl.lit(0.0)).otherwise(_NAN))",
           "pl.lit(0.0))",
           "F48: the variance of a constant inf or NaN over two rows or more is 0 (DuckDB: NaN, "
           "Welford's inf - inf)",
           (TRUST.format("spread_special"), TRUST.format("spread_special_grouped"))),
    Mutant("sqlagg-spread-ignores-inf", AREA, AGG,
           "        .when(~_finite(x)).then(_NAN).when(_flat(x))",
           "        .when(_flat(x))",
           "F48: a variance over inf/NaN values is polars' (0 or inf) where DuckDB says NaN",
           (TRUST.format("spread_special_grouped"), TRUST.format("spread_of_inf_literals"))),
    Mutant("sqlagg-spread-overflow-nan", AREA, AGG,
           "    spread = pl.when(spread.is_nan()).then(scaled).otherwise(spread)\n",
           "",
           "F48: a variance whose squares leave DOUBLE is NaN (polars' merge) where DuckDB "
           "says inf",
           (TRUST.format("spread_overflow"),)),
    Mutant("sqlagg-filter-constant-once", AREA, AGG,
           "where = pl.repeat(where, pl.len())",
           "where = where",
           "F49: count(*) FILTER (WHERE TRUE) is 1 (a literal condition sums once)",
           (TRUST.format("filter_constant"), TRUST.format("filter_constant_grouped"))),
    Mutant("sqlagg-first-last-empty-partition", AREA, "hfq/engine/aggs.py",
           'kept = col(p + "c") > 0',
           'kept = col(p + "c") >= 0',
           "F50: last(x ORDER BY k) merged across partitions takes a partition whose filtered "
           "input kept no row: its NULL keys sort last and its NULL wins",
           (TRUST.format("first_last_filtered"),)),
    Mutant("sqlagg-quantile-polars-interpolation", AREA, AGG,
           "between = lo * (1 - d) + hi * d",
           "between = lo + d * (hi - lo)",
           "F51: a continuous quantile of DOUBLE between -inf and a number is NaN (polars' "
           "interpolation) where DuckDB says -inf",
           (TRUST.format("quantile_infinite"),)),
    Mutant("sqlagg-quantile-float-rule", AREA, AGG,
           "        return _interpolated(x, 0.5, ranked=self._ranked(x, dtype))\n",
           "        if dtype == pl.Float32:\n"
           "            lo, hi = x.quantile(0.5, 'lower'), x.quantile(0.5, 'higher')\n"
           "            return pl.when(x.count() % 2 == 1).then(lo).otherwise(lo + (hi - lo) / 2)\n"
           "        return _interpolated(x, 0.5, ranked=self._ranked(x, dtype))\n",
           "F57: FLOAT quantiles by DuckDB's FLOAT rule lo + d * (hi - lo): the median of two "
           "-inf is NaN where hfq's FLOAT-in-DOUBLE says -inf",
           ("tests/fuzz/test_regressions.py::test_finding[F57]",)),
    Mutant("sqlagg-count-constant-counts-rows", AREA, AGG,
           "            if inner is None or isinstance(inner, exp.Star) or "
           "isinstance(inner, exp.Literal):\n",
           "            if True:\n",
           "F52: count(CAST(NULL AS INTEGER)) counts the rows (a constant taken as non-NULL)",
           (TRUST.format("aggregates_of_cte_constants"),)),
    Mutant("sqlagg-quantile-disc-through-doubles", AREA, AGG,
           "            if dtype.is_integer():   # exactly",
           "            if False:   # exactly",
           "F53: quantile_disc of BIGINT past 2^53 through polars' quantile: rounded, or a polars "
           "conversion error at BIGINT's ends",
           (TRUST.format("quantile_disc_exact"),
            "tests/fuzz/test_regressions.py::test_finding[F68]")),
    Mutant("sqlagg-sum-bigint-constant-wraps", AREA, AGG,
           'if (name == "sum" and dtype.is_integer()) or (',
           'if (name == "sum" and dtype == pl.Int8) or (',
           "F55: sum(<BIGINT constant>) over the rows is value * n and wraps past BIGINT",
           ("tests/fuzz/test_regressions.py::test_finding[F55]",)),
    Mutant("sqlagg-decimal-median-double", AREA, AGG,
           "        if isinstance(dtype, pl.Decimal):\n            return _decimal_interpolated(",
           "        if False:\n            return _decimal_interpolated(",
           "F56: median of a DECIMAL is a DOUBLE (DuckDB: the DECIMAL, truncated toward zero)",
           (TRUST.format("quantile_decimal"),)),
    Mutant("sqlagg-covariance-infinite-x-answered", AREA, AGG,
           "            bad = (n >= 2) & ~_finite(xx) & (xx.is_nan().sum() == 0) & _finite(y) \\\n",
           "            bad = pl.lit(False) & _finite(y) \\\n",
           "F58: covar_samp with an infinite x answered NaN where DuckDB's row-order-dependent "
           "co-moment says inf",
           ("tests/fuzz/test_regressions.py::test_finding[F58]",)),
]
