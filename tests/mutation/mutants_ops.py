"""Mutants of the ops area (issue 25): maintenance that trusts no stale node list, settings
overrides scoped to their context, the command line's one filter language."""

from __future__ import annotations

from mutants import Mutant

CLI = "tests/unit/test_cli.py"
CONFIG = "tests/unit/test_config.py"
MAINTENANCE = "tests/unit/test_maintenance.py"
NODES = "tests/faults/test_nodes.py"
WHERE = "tests/unit/test_where.py"
PLANS = "tests/query/test_window_plans.py::{}"
KEPT = PLANS.format("test_an_aggregates_forms_are_kept_only_where_the_schema_alone_decides_them")

MUTANTS: list[Mutant] = [
    # -- a task pickled before this process's threads run units (the cluster fuzz hang) --
    Mutant("nodes-task-pickled-mid-query", "liveness", "hfq/runtime/nodes.py",
           "                # needs the GIL, and both waited forever (a hang of the 2-node "
           "fuzz run)\n                put_task()\n",
           "                # needs the GIL, and both waited forever (a hang of the 2-node "
           "fuzz run)\n                pass\n",
           "the task pickled when the first batch goes to a server, after this process's threads "
           "started on their units: DataFrame.serialize (GIL held, waiting on polars' pool) and a "
           "pool thread that needs the GIL to free Arrow memory wait for each other forever",
           ("tests/query/test_cluster_queries.py::test_a_task_is_pickled_before_any_unit_runs_"
            "here",)),
    # -- frames out of Ray over memory Arrow owns; a task's frames pickled as Arrow --
    Mutant("task-unship-python-owned", "liveness", "hfq/runtime/task.py",
           "    return _frame_from_arrow(value.table) if isinstance(value, _Frame) else value\n",
           "    return pl.from_arrow(value.table) if isinstance(value, _Frame) else value\n",
           "a result frame over the PyBuffers Ray deserialized: pickling it with its columns "
           "chunked differently realigns them in place on polars' pool, GIL held, and a pool "
           "thread freeing a PyBuffer waits for the GIL forever (the 2-node fuzz hang, seed 43)",
           ("tests/runtime/test_arrow_owned.py::test_a_frame_unshipped_from_ray_pickles_"
            "without_hanging",)),
    Mutant("task-frames-pickled-by-serialize", "liveness", "hfq/runtime/task.py",
           "        dispatch_table = ChainMap({pl.DataFrame: frame_reducer},\n",
           "        dispatch_table = ChainMap({},\n",
           "a task's frames pickled by DataFrame.serialize (plain cloudpickle): a frame over "
           "Python-owned memory with misaligned chunks hangs the driver in put_task",
           ("tests/runtime/test_arrow_owned.py::test_a_task_holding_a_frame_over_python_owned_"
            "memory_pickles_without_hanging",)),
    Mutant("executor-keeps-object-store-tables", "liveness", "hfq/runtime/executor.py",
           "                    value = _owned(value)\n", "",
           "a table a server sent kept over the object store's PyBuffers: a result frame over "
           "them hangs the user's pickle (and keeps the object store's copy pinned)",
           ("tests/query/test_cluster_queries.py::test_rows_a_server_sends_are_kept_over_"
            "memory_arrow_owns",)),
    # -- liveness --
    Mutant("liveness-ping-skipped", "liveness", "hfq/runtime/nodes.py",
           "silent = self.runtime.ping(timeout, skip=[self.local] if self.local else [])",
           "silent: list[str] = []",
           "maintenance trusting the runtime's list of live nodes: a node that crashed a "
           "moment ago stays on Ray's list for 10-30 s, so a rebalance right after the crash "
           "moves nothing ({'quotes': 0}) and leaves its partitions at one copy, silently",
           (f"{MAINTENANCE}::test_rebalance_counts_a_silent_node_as_down_and_copies_its_"
            "partitions",
            f"{NODES}::test_a_node_killed_then_rebalance_at_once_counts_it_down_and_restores_"
            "two_copies")),
    Mutant("liveness-silent-kept-alive", "liveness", "hfq/runtime/cluster.py",
           "return sorted(n for n in self._servers if n not in self._silent)",
           "return sorted(self._servers)",
           "a node that did not answer its ping still handed out as alive: the rebalance "
           "copies to it and fails, reads and writes keep going to it",
           (f"{NODES}::test_a_frozen_node_does_not_answer_its_ping_and_counts_as_down",)),

    # -- config --
    Mutant("config-override-global", "config", "hfq/config.py",
           '_overrides: ContextVar[tuple[dict[str, Any], ...]] = ContextVar("hfq_overrides", '
           'default=())\n',
           "class _Global:   # one stack for every thread and task: the old module-global list\n"
           "    value: tuple[dict[str, Any], ...] = ()\n\n"
           "    def get(self) -> tuple[dict[str, Any], ...]:\n"
           "        return self.value\n\n"
           "    def set(self, value: tuple[dict[str, Any], ...]) -> Any:\n"
           "        token, self.value = self.value, value\n"
           "        return token\n\n"
           "    def reset(self, token: Any) -> None:\n"
           "        self.value = token\n\n\n"
           "_overrides = _Global()\n",
           "settings overrides kept in module state: an override made in one thread (a "
           "request handler, a notebook's background job) changes the settings every other "
           "thread plans with",
           (f"{CONFIG}::test_two_threads_overriding_at_once_each_see_only_their_own",
            f"{CONFIG}::test_asyncio_tasks_inherit_at_creation_and_keep_their_overrides_to_"
            "themselves")),
    Mutant("config-override-not-unwound", "config", "hfq/config.py",
           "        _overrides.reset(token)", "        pass",
           "an override that outlives its with block (an error inside it included)",
           (f"{CONFIG}::test_overrides_unwind_on_errors_and_stand_above_the_environment",)),

    # -- cli: one filter language, clean output --
    Mutant("where-statement-constructs-kept", "cli", "hfq/engine/sql/where.py",
           'what = _STATEMENT_ONLY.get(type(node)) or ("an aggregate" if is_agg(node) else '
           'None)',
           "what = None",
           "a row filter taking what only a statement can have: a window function computed "
           "over each partition's rows alone (a different answer per partitioning), a "
           "subquery run against no table",
           (f"{WHERE}::test_what_is_refused_says_what_and_where",)),
    Mutant("where-not-a-condition", "cli", "hfq/engine/sql/where.py",
           'return compiler.predicate(tree, "a row filter")',
           "return compiler.expr(tree)",
           "a filter used as it comes: a number or NULL where a boolean is needed (DuckDB "
           "keeps the rows where an integer is non-zero; polars would refuse or keep none)",
           (f"{WHERE}::test_a_filter_keeps_the_rows_duckdb_keeps",)),
    Mutant("cli-json-stdout-shared", "cli", "hfq/cli/render.py",
           "with contextlib.redirect_stdout(sys.stderr):",
           "with contextlib.nullcontext():",
           "--json output mixed with whatever else prints on stdout meanwhile (Ray's log "
           "lines: seen under load, hfq repair --json unreadable)",
           (f"{CLI}::test_json_stdout_holds_the_json_only",)),
    Mutant("cli-closes-the-callers-ray", "cli", "hfq/cli/app.py",
           "if not ray_before and _ray_connected():", "if _ray_connected():",
           "main() shutting down a Ray connection its caller had open",
           (f"{CLI}::test_a_command_closes_the_ray_connection_it_opened",)),
    # -- issue 24's query speed: the cheaper plans stay exact --
    Mutant("ops-window-choice-not-local", "query-speed", "hfq/engine/exprs.py",
           "        return local_over(body[\"falsy\"], local)\n",
           "        return False\n",
           "a choice between two local forms (a narrow window sum's BIGINT or 128-bit sum) "
           "not local: the window over the partition columns no longer runs on the nodes",
           (PLANS.format("test_a_narrow_window_sum_over_the_partition_columns_runs_on_the_"
                         "nodes"),)),
    Mutant("ops-window-sum-never-long", "query-speed", "hfq/engine/sql/windows.py",
           "        return choice(pl.len() < WINDOW_ROWS, ",
           "        return choice(pl.lit(True), ",
           "a narrow window sum in BIGINT on every frame, however long: a window frame of "
           "2^32 values or more could wrap past BIGINT",
           (PLANS.format("test_window_sums_of_32_bit_extremes_are_duckdbs"),)),
    Mutant("ops-running-null-keys-first", "query-speed", "hfq/engine/sql/windows.py",
           "    by = phys.fill_null((phys.max() + 1).fill_null(0))",
           "    by = phys.fill_null(phys.min().fill_null(0))",
           "the NULL keys of a running RANGE frame placed with the smallest key: their frame "
           "is the first peers' (DuckDB: every row), and the smallest keys' frames hold them",
           (PLANS.format("test_running_range_frames_over_short_keys_are_duckdbs[sum-v-k1]"),
            PLANS.format("test_running_range_frames_over_null_keys_of_extremes[m]"))),
    Mutant("ops-divide-scalar-not-power-of-two", "query-speed", "hfq/engine/sql/literals.py",
           "    return abs(mantissa) == 0.5 and -1021 <= exponent - 1 <= 1021",
           "    return abs(mantissa) > 0 and -1021 <= exponent - 1 <= 1021",
           "any constant divisor left a scalar: polars multiplies by its reciprocal, one unit "
           "in the last place off (epoch() / 1e6 made one timestamp two GROUP BY keys)",
           ("tests/sql/test_findings.py::test_finding[F78]",
            "tests/sql/test_findings.py::test_finding[F78b]")),
    Mutant("ops-light-variance-always", "query-speed", "hfq/engine/aggs.py",
           "        return bool(states[HEAVY].any())",
           "        return False",
           "the light form of the scaled variance's states kept on every frame: where the "
           "sums overflow, the unscaled means are inf and merge to NaN, and so does the scaled "
           "variance derived from them (DuckDB: +inf)",
           (PLANS.format("test_grouped_variance_of_huge_doubles_in_some_partitions_is_duckdbs"),
            "tests/query/test_trust.py::test_same_as_duckdb[spread_overflow-m]")),
    Mutant("ops-light-variance-max-only", "query-speed", "hfq/engine/aggs.py",
           "        self.plan.heavy.append((x.max() > LIGHT) | (x.min() < -LIGHT))",
           "        self.plan.heavy.append(x.max() > LIGHT)",
           "the heavy test read from the max alone: a frame of large negative values takes "
           "the light form, whose unscaled states overflow and merge to NaN (DuckDB: +inf)",
           (PLANS.format("test_a_scaled_variance_takes_its_light_form_only_on_frames_of_small_"
                         "magnitudes"),)),
    Mutant("ops-lighter-no-test", "query-speed", "hfq/engine/aggs.py",
           "        if not any(test.meta.eq(h) for h in self.plan.heavy):\n"
           "            self.plan.heavy.append(test)\n",
           "        pass\n",
           "a lighter aggregate's light form used without its test: a partition of values of "
           "both signs ships the check's sums as one sign's",
           ("tests/fuzz/test_regressions.py::test_finding[F137]",
            "tests/fuzz/test_regressions.py::test_finding[F137e]",
            "tests/query/test_engine.py::test_a_joins_checked_sum_of_doubles_still_splits_into_"
            "partial_states")),
    Mutant("ops-narrow-sum-any-integer", "query-speed", "hfq/engine/aggs.py",
           "pl.UInt16: 2**16 - 1, pl.UInt32: 2**32 - 1}",
           "pl.UInt16: 2**16 - 1, pl.UInt32: 2**32 - 1, pl.Int64: 2**31}",
           "a BIGINT column summed as a narrow one, wrapping in BIGINT: a sum of 2^63 + 10 "
           "(past BIGINT: an error) answers -2^63 + 10",
           (PLANS.format("test_a_bigint_sum_that_leaves_bigint_only_on_one_day_is_duckdbs"),)),
    Mutant("ops-narrow-sum-never-long", "query-speed", "hfq/engine/aggs.py",
           "            self.plan.heavy.append(pl.len() >= rows)",
           "            self.plan.heavy.append(pl.lit(False))",
           "a narrow sum wrapped in BIGINT on every frame, however long: a group of 2^63 // B "
           "rows or more could wrap past BIGINT and merge to a wrong total",
           (PLANS.format(
               "test_a_narrow_sum_is_wrapped_in_bigint_only_on_frames_too_short_to_leave_it"),)),
    Mutant("ops-range-offset-always-one-window", "query-speed", "hfq/engine/ops.py",
           "            tests[key] = len(value) == 1 and value[0] is True\n",
           "            tests[key] = True\n",
           "the one-rolling-window form of a RANGE frame with an offset used on frames with NULL "
           "ORDER BY keys too: the NULL-key rows' frames are not every NULL-key row of their "
           "partition (DuckDB's peers), nor are they kept out of the other rows' frames",
           (PLANS.format("test_range_offset_frames_with_and_without_null_keys_are_duckdbs"),)),
    Mutant("ops-large-choice-tested-small", "query-speed", "hfq/engine/ops.py",
           "        if name == LARGE_CHOICE and frame.height < SHARED_ROWS:\n",
           "        if False:\n",
           "a large choice's test evaluated over a few rows too (the walk a window over 11 rows "
           "paid 0.7 ms for)",
           (PLANS.format("test_a_large_choice_is_made_only_over_many_rows"),)),
    Mutant("ops-choice-rebuilds-lossy-floats", "query-speed", "hfq/engine/ops.py",
           "    return all(_float_reads_back(v) for v in floats(to_tree(e)))\n",
           "    return True\n",
           "a statement with a choice rebuilt from polars' JSON tree whatever its floats: "
           "123456789.12345679 read back as 123456789.1234568 beside any ordered window",
           (PLANS.format("test_float_literals_beside_a_window_are_duckdbs_to_the_bit"),)),
    Mutant("ops-flat-window-not-local", "query-speed", "hfq/engine/exprs.py",
           "        return local_over(body[\"falsy\"], local)\n",
           "        return local_over(body[\"truthy\"], local) and local_over(body[\"falsy\"], "
           "local)\n",
           "a choice local only where both forms are: a window run flat (shifts cut where the "
           "partition keys change, no over) sends the rows to the driver",
           (PLANS.format("test_a_window_run_flat_over_the_partition_columns_runs_on_the_nodes"),)),
    Mutant("ops-tie-check-skipped-on-mixed-signs", "query-speed", "hfq/engine/sql/windows.py",
           "        tied = choice(known.all() & ~((v.min() < 0) & (v.max() > 0)), pl.lit(False),\n",
           "        tied = choice(known.all() & (v.max() > 0), pl.lit(False),\n",
           "F102's tie check skipped on any frame holding a positive value: a partition mixing "
           "signs over tied keys (+-2^63 and 3.0: 3.0 or 0.0 by the ties' order) among positive "
           "ones is answered in hfq's order, not refused",
           (PLANS.format("test_the_tie_check_runs_on_a_frame_with_mixed_signs_and_only_there"),)),
    Mutant("ops-lighten-drops-any-filter", "query-speed", "hfq/engine/aggs.py",
           "        return keeps[key]\n",
           "        return True\n",
           "an aggregate's row-wise filter dropped on every frame: arg_min/arg_max/FILTER over a "
           "frame with NULL values or keys pick or count the rows DuckDB skips",
           (PLANS.format("test_an_aggregate_drops_the_filters_that_keep_every_row_of_its_frame"),
            PLANS.format("test_lighten_drops_only_filters_true_on_every_row_and_wraps_only_"
                         "short_sums"))),
    Mutant("ops-lighten-sum-never-long", "query-speed", "hfq/engine/aggs.py",
           "            if light is not None and rows < light[1]:\n",
           "            if light is not None and rows >= 0:\n",
           "an aggregate's narrow 128-bit sum wrapped in BIGINT on every frame, however long: a "
           "group of 2^63 // B rows or more could wrap",
           (PLANS.format("test_lighten_drops_only_filters_true_on_every_row_and_wraps_only_"
                         "short_sums"),)),
    Mutant("ops-prepared-kept-whatever-the-rows", "query-speed", "hfq/engine/ops.py",
           "        if frame is not None and not (static and sums_light_over(frame.height)):\n",
           "        if frame is not None and not static:\n",
           "an aggregate's forms lightened over a short frame served to a long one: a group of "
           "2^63 // B rows or more could wrap", (KEPT,)),
    Mutant("ops-prepared-filters-kept", "query-speed", "hfq/engine/ops.py",
           "                    not any(lighten_looks_at_rows(a) for a in chosen), None]\n",
           "                    True, None]\n",
           "a FILTER dropped over a frame where it kept every row, then dropped on every frame "
           "after (a sum over the rows it should leave out)", (KEPT,)),
    Mutant("ops-prepared-schema-ignored", "query-speed", "hfq/engine/ops.py",
           "        key = (tuple(schema.items()), which)\n", "        key = ((), which)\n",
           "an aggregate's forms prepared for one input schema served to another (an INT "
           "column's BIGINT sum for a BIGINT column)", (KEPT,)),
    Mutant("ops-running-sum-light-with-null-values", "query-speed", "hfq/engine/sql/windows.py",
           "    return choice(known & value.is_not_null().all(),\n",
           "    return choice(known,\n",
           "a running RANGE sum rolled over the key itself on a frame with NULL values: a frame "
           "holding only NULL values sums to 0 (DuckDB NULL)",
           (PLANS.format("test_running_range_frames_over_short_keys_are_duckdbs"),)),
    Mutant("ops-running-light-with-null-keys", "query-speed", "hfq/engine/sql/windows.py",
           "    known = key.is_not_null().all()\n",
           "    known = key.is_not_null().any()\n",
           "a running RANGE count/sum/avg rolled over the unfilled key on a frame with NULL keys: "
           "the NULL keys' rows are not last, each other's peers",
           (PLANS.format("test_running_range_frames_over_short_keys_are_duckdbs"),)),
]
