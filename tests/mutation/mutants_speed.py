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
]
