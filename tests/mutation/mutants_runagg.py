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
NO_PLAN = f"{TESTS}::test_inputs_the_kernels_do_not_read_exactly_have_no_plan"
ANSWERED = f"{TESTS}::test_what_polars_answers_is_answered"

MUTANTS: list[Mutant] = [
    Mutant("runagg-key-in-two-runs", "speed", RUNS,
           "    if first.is_duplicated().any():\n        return None\n",
           "    pass\n",
           "a key whose rows lie in two runs (a symbol in two partitions' rows of one batch) "
           "answered as two groups", (TWICE,)),
    Mutant("runagg-first-key-only", "speed", RUNS,
           "        for k in keys.iter_columns():\n"
           "            codes = k.to_physical().to_numpy()\n",
           "        for k in list(keys.iter_columns())[:1]:\n"
           "            codes = k.to_physical().to_numpy()\n",
           "runs cut where the first key changes only: a symbol's hours taken for one group",
           (f"{TESTS}::test_runs_end_where_any_key_changes",)),
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
    Mutant("runagg-input-dropping-rows", "speed", RUNS,
           "        if not is_rowwise(tree):   # (a drop_nulls, a filter inside a cast: rows "
           "dropped)\n",
           "        if False:\n",
           "an input with fewer values than rows (drop_nulls, an average's FILTER inside its "
           "cast) laid over the runs by position: other groups' values",
           (NO_PLAN, f"{TESTS}::test_an_input_dropping_rows_is_not_read_by_runs")),
    Mutant("runagg-sum-of-dates", "speed", RUNS,
           "        if t.is_temporal() and t != pl.Duration and \\\n",
           "        if False and \\\n",
           "a sum of dates answered as a date (polars has none)", (NO_PLAN,)),
    Mutant("runagg-decimal-of-doubles-uncast", "speed", RUNS,
           "            type_of(body[\"expr\"]).is_integer():\n",
           "            True:\n",
           "a DECIMAL(38, 0) sum of doubles read as a sum of the doubles (0.6 + 0.6: 1, not 2)",
           (NO_PLAN,)),
    Mutant("runagg-collects-unread-columns", "speed", "hfq/engine/ops.py",
           "                frame = collect(lf.select(sorted(read)), rows)\n",
           "                frame = collect(lf, rows)\n",
           "the grouping's input computed whole: a column nobody reads, whose values all fail "
           "(CAST(name AS INTEGER)), raises", (ANSWERED,)),
]
