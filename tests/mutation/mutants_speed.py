"""Mutants of the symbol-selective fast path (:mod:`hfq.engine.fastpath`): a time range cut
one row short at a run of duplicate timestamps, a symbol's run losing its last row, a run
spanning two record batches read from the first only, and the query's filter left out (the
slice taken for the whole answer); each killed by the fast tests of
``tests/query/test_fastpath.py`` (against DuckDB and the general engine, and the binary
search against a scan)."""

from __future__ import annotations

from mutants import Mutant

FAST = "hfq/engine/fastpath.py"
TESTS = "tests/query/test_fastpath.py"
SLICES = f"{TESTS}::test_slices_keep_every_row_a_bound_keeps"
DUCK = f"{TESTS}::test_one_symbol_aggregates_are_duckdbs_and_the_general_engines"
SHAPES = f"{TESTS}::test_other_shapes_on_the_fast_path_are_duckdbs"
KERNEL = "hfq/engine/fastagg.py"
K_DUCK = f"{TESTS}::test_the_kernel_answers_as_duckdb_and_the_general_engine"
K_RANDOM = f"{TESTS}::test_the_kernel_is_duckdb_and_polars_on_random_rows"
K_ZEROS = f"{TESTS}::test_a_min_among_both_zeros_is_polars_own"
K_NOT = f"{TESTS}::test_what_the_kernel_does_not_take_is_the_polars_plans"
K_WITHIN = f"{TESTS}::test_within_checks_every_bound_on_the_rows"
K_ARG = f"{TESTS}::test_arg_min_and_max_by_time_in_the_kernel"
PLAIN = f"{TESTS}::test_a_plain_read_of_a_few_symbols_takes_the_fast_path"
WHOLE = f"{TESTS}::test_a_filter_over_the_whole_input_is_not_run_on_a_symbols_slices"
LIGHT = f"{TESTS}::test_the_fast_paths_sums_are_bigint_only_where_no_group_can_leave_it"
ERROR = f"{TESTS}::test_an_error_of_the_plain_read_stays_its_error"

MUTANTS: list[Mutant] = [
    Mutant("speed-range-lower-bound", "speed", FAST,
           'np.searchsorted(t, v, "right" if op == "Gt" else "left")',
           'np.searchsorted(t, v, "right")',
           "time >= v cut after the rows equal to v (the binary search off by one at a run "
           "of duplicate timestamps)", (SLICES, DUCK)),
    Mutant("speed-range-upper-bound", "speed", FAST,
           'np.searchsorted(t, v, "left" if op == "Lt" else "right")',
           'np.searchsorted(t, v, "left")',
           "time <= v cut before the rows equal to v", (SLICES, DUCK)),
    Mutant("speed-run-last-row", "speed", FAST,
           "    stops = np.append(starts[1:], len(codes))\n    return dict(",
           "    stops = np.append(starts[1:], len(codes) - 1)\n    return dict(",
           "the last symbol of a batch loses its last row (a run's end off by one)", (DUCK,)),
    Mutant("speed-first-batch-only", "speed", FAST,
           "        for b in wanted:\n",
           "        for b in list(wanted)[:1]:\n",
           "a symbol whose rows span two record batches read from the first", (DUCK,)),
    Mutant("speed-filter-left-out", "speed", FAST,
           "    for op in ops:\n        if isinstance(op, Aggregate):",
           "    for op in ops[1:]:\n        if isinstance(op, Aggregate):",
           "the query's first filter left out, the slice trusted to hold only its rows "
           "(a filter on another column than symbol and time is then lost)", (SHAPES, DUCK)),
    Mutant("speed-kernel-nan-max", "speed", KERNEL,
           'if nans == n or (nans and how.endswith("_nan")):',
           "if nans == n:",
           "the kernel's max skips NaN (DuckDB's NaN is the largest double)", (K_DUCK, K_RANDOM)),
    Mutant("speed-kernel-zero-sign", "speed", KERNEL,
           "if got == 0.0 and pos0 and neg0:", "if False:",
           "a min or max of 0.0 among both zeros answered by the kernel's order, not "
           "polars' (the sign of the zero differs)", (K_ZEROS, K_RANDOM)),
    Mutant("speed-kernel-int-low-bits", "speed", KERNEL,
           "low += v & 0xFFFFFFFF", "low += v & 0x7FFFFFFF",
           "the exact integer sum loses bit 31 of each value", (K_DUCK, K_RANDOM)),
    Mutant("speed-kernel-null-mask", "speed", KERNEL,
           "    if s.null_count():\n        return s.fill_null(0)",
           "    if False:\n        return s.fill_null(0)",
           "a column's NULLs read as the values behind them (NaN, 0)", (K_DUCK, K_RANDOM)),
    Mutant("speed-kernel-first-null", "speed", KERNEL,
           "if valid is not None and not valid[at]:",
           "if False:",
           "first/last of a NULL gives the value behind it", (K_DUCK, K_RANDOM)),
    Mutant("speed-kernel-incomplete-filter", "speed", FAST,
           "            else:\n                complete = False",
           "            else:\n                pass",
           "a filter on another column taken as complete: the kernel answers over the whole "
           "slice", (K_NOT, SHAPES)),
    Mutant("speed-kernel-bounds-unchecked", "speed", FAST,
           "    return all(_HOLDS[op](lo, hi, v) for op, v in chosen.bounds)",
           "    return True",
           "slices kept whole (unsorted or NULL times) taken as exactly the bounds' rows",
           (K_WITHIN,)),
    Mutant("speed-kernel-arg-ties", "speed", KERNEL,
           "            if ties:\n", "            if False:\n",
           "arg_min/arg_max at a key in two rows answered by the kernel's first, not the row "
           "polars takes", (K_ARG,)),
    Mutant("speed-kernel-last-part-only", "speed", KERNEL,
           "    for values, valid in vec.chunks:\n", "    for values, valid in vec.chunks[-1:]:\n",
           "the state of the reductions not carried across the parts of the rows (a symbol "
           "over two batches, a symbol list)", (K_DUCK, K_RANDOM)),
    Mutant("speed-plain-read-not-fast", "speed", "hfq/engine/execute.py",
           "    return run_one(staged)\n", "    return None\n",
           "a plain read of one symbol's time range decodes and filters every batch of the "
           "symbol's run, query after query (TAQ q_top_window: ~12x slower)", (PLAIN,)),
    Mutant("speed-whole-input-filter-on-slices", "speed", FAST,
           "        if not op.local(frozenset()):", "        if False:",
           "a filter over the query's whole input (px > mean(px)) evaluated over the few "
           "symbols' slices only", (WHOLE,)),
    Mutant("speed-unsplit-grouping-to-driver", "speed", "hfq/engine/execute.py",
           "        (isinstance(merge, Aggregate) and bool(merge.keys))\n",
           "        False\n",
           "a grouping by symbol over one day that has no partial states (corr) sends every "
           "row to the driver",
           ("tests/query/test_engine.py::test_a_grouping_without_partial_states_finishes_on_"
            "the_nodes_of_one_day",)),
    Mutant("speed-join-sum-check-unsplit", "speed", "hfq/engine/sql/windows.py",
           "    infinite = (~v.is_finite() & ~v.is_nan()).sum()\n",
           "    infinite = v.is_infinite().any().cast(pl.Int64)\n",
           "the order check of a join's sum of DOUBLEs written with any(): the grouping "
           "cannot be split and every joined row goes to the driver",
           ("tests/query/test_engine.py::test_a_joins_checked_sum_of_doubles_still_splits_"
            "into_partial_states",)),
    Mutant("speed-plain-read-error-class", "speed", "hfq/engine/execute.py",
           "    except HfqError:   # the plain read raises its own error", "    except KeyError:",
           "a plain read's error (SchemaMismatchError) raised as the staged plan's QueryError",
           (ERROR,)),
    Mutant("speed-fast-sums-light-past-the-rows", "speed", FAST,
           "light_sums(aggs, here, FAST_ROWS)", "light_sums(aggs, here, 0)",
           "the fast path's 128-bit sums taken in BIGINT whatever the bound on the rows: a "
           "group of 2^63 // B rows or more could wrap", (LIGHT,)),
    Mutant("speed-fast-sums-light-after-explode", "speed", FAST,
           "        bounded = bounded and _bounded(op)\n", "        pass\n",
           "the fast path's 128-bit sums taken in BIGINT after a step that may make more rows "
           "than FAST_ROWS (an explode)", (LIGHT,)),
    Mutant("speed-fast-sums-light-after-keyless-aggregate", "speed", FAST,
           "        return bool(op.keys)\n", "        return True\n",
           "an aggregate without keys (whose expressions may make any number of rows: "
           "repeat_by(n).explode()) taken for one that gives at most the rows it reads",
           (LIGHT,)),
    Mutant("speed-fast-sums-projection-unchecked", "speed", FAST,
           "        return all(is_rowwise(to_tree(e)) for e in op.exprs)\n",
           "        return True\n",
           "a projection that explodes a list taken for one that keeps the rows", (LIGHT,)),
]
