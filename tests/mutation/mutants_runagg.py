"""Mutants of the aggregates over runs of keys (:mod:`hfq.engine.runagg`): keys in two runs
taken for two groups, a state carried wrongly from one chunk of the rows to the next, a sum
past BIGINT, a zero sum or both zeros not refused, NaN read as polars does not, a filter or a
NULL left out of a count; each killed by ``tests/query/test_run_aggregates.py`` (against
DuckDB, and frame by frame against polars' own grouping)."""

from __future__ import annotations

from mutants import Mutant

RUNS = "hfq/engine/runagg.py"
TESTS = "tests/query/test_run_aggregates.py"
DUCK = f"{TESTS}::test_a_grouping_over_runs_is_duckdbs"
CHUNKS = f"{TESTS}::test_runs_across_chunks_with_nulls_are_polars"
FIRST = f"{TESTS}::test_runs_starting_at_a_chunks_first_row_are_polars"
TWICE = f"{TESTS}::test_keys_in_two_runs_are_refused"
OVER = f"{TESTS}::test_an_integer_sum_past_bigint_is_refused"
ZEROS = f"{TESTS}::test_zeros_polars_decides_are_refused"
NAN = f"{TESTS}::test_nan_is_polars"

MUTANTS: list[Mutant] = [
    Mutant("runagg-key-in-two-runs", "speed", RUNS,
           "    if first.is_duplicated().any():\n        return None\n",
           "    pass\n",
           "a key whose rows lie in two runs (a symbol in two partitions' rows of one batch) "
           "answered as two groups", (TWICE,)),
    Mutant("runagg-chunk-start-unmarked", "speed", RUNS,
           "            if i == 0 or c[0] != codes[i - 1][-1]:\n",
           "            if i == 0:\n",
           "a new key at the first row of a chunk (a partition's first symbol) not seen as a "
           "new run", (FIRST, DUCK)),
    Mutant("runagg-chunk-carry-lost", "speed", RUNS,
           "        c, t, a, b = n[j], s[j], lo[j], hi[j]\n",
           "        c, t, a, b = 0, np.int64(0), lo[j], hi[j]\n",
           "a run spanning two chunks counted and summed from the last chunk only",
           (CHUNKS,)),
    Mutant("runagg-sum-overflow-ignored", "speed", RUNS,
           "            return None if got[4][0] else (got[1], None)\n",
           "            return got[1], None\n",
           "an integer sum that left BIGINT on the way answered with its wrapped value",
           (OVER,)),
    Mutant("runagg-zero-sum-kept", "speed", RUNS,
           "        return None if ((n > 0) & (total == 0.0)).any() else (total, None)\n",
           "        return total, None\n",
           "a sum of doubles of 0 answered with the sign row order gives, not polars'",
           (ZEROS,)),
    Mutant("runagg-both-zeros-kept", "speed", RUNS,
           "    if (~nan & (n > nans) & (extreme == 0.0) & pos0 & neg0).any():\n",
           "    if False:\n",
           "a min or max among -0.0 and 0.0 answered with the first zero, not polars' pick",
           (ZEROS,)),
    Mutant("runagg-nan-min-propagates", "speed", RUNS,
           "    nan = (nans > 0) if st.how.startswith(\"nan_\") else (nans == n)\n",
           "    nan = nans > 0\n",
           "min and max of doubles NaN where a run holds a NaN (polars skips it but for a run "
           "of NaN only)", (NAN, CHUNKS)),
    Mutant("runagg-count-filter-ignored", "speed", RUNS,
           "    if kept is not None:\n        flag = inputs.to_series(kept)\n",
           "    if False:\n        flag = inputs.to_series(kept)\n",
           "an aggregate's FILTER (WHERE ...) left out: every row counted and compared",
           (DUCK,)),
    Mutant("runagg-count-nulls", "speed", RUNS,
           "    if value is not None and inputs.to_series(value).null_count():\n",
           "    if False:\n",
           "count(x) counting the rows where x is NULL", (DUCK, CHUNKS)),
]
