"""Mutants of issue 26's guarantees (area "live"): acknowledged only once durable, the log
truncated only after the write-down's commit, exact subscriber offsets, bars windows closed
at their end -- each killed by a fast, Ray-free test of ``tests/live``."""

from __future__ import annotations

from mutants import Mutant

LOG = "tests/live/test_log.py"
WRITEDOWN = "tests/live/test_writedown.py"
SUBSCRIBE = "tests/live/test_subscribe.py"
ENGINES = "tests/live/test_engines.py"
ROUTE = "tests/live/test_route.py"
ROWS = "tests/live/test_rows.py"
PUBLISH = "tests/live/test_publish.py"
HANDOVER = "tests/live/test_handover.py"

MUTANTS: list[Mutant] = [
    Mutant("live-ack-before-fsync", "live", "hfq/live/log.py",
           '            faults.point("live.log.before_fsync")\n            _sync(self._fd)\n',
           '            faults.point("live.log.before_fsync")\n',
           "a batch acknowledged once written to the page cache, before its fsync (what an "
           "asynchronous log does): a power cut loses acknowledged rows",
           (f"{LOG}::test_publish_returns_only_after_the_batch_is_fsynced",)),
    Mutant("live-truncate-before-commit", "live", "hfq/live/writedown.py",
           '        faults.point("live.writedown.before_commit")\n'
           '        committed = w.commit(f"write_down {day}")\n',
           '        faults.point("live.writedown.before_commit")\n'
           '        session.nodes.call_each(apply_cut, spec, {**before, **cut}, '
           'base.version + 1)\n'
           '        committed = w.commit(f"write_down {day}")\n',
           "the nodes told to drop the day (and truncate their logs) before the commit that "
           "puts it in the files: a commit that fails loses the day",
           (f"{WRITEDOWN}::test_the_log_is_truncated_only_after_the_commit",)),
    Mutant("live-cut-ignored", "live", "hfq/live/rows.py",
           "                keep &= run.seq > limit[run.day, run.pub]\n",
           "                pass\n",
           "a read of live rows ignoring its version's written-down cut: rows written down "
           "and still held are counted twice (files and live)",
           (f"{WRITEDOWN}::test_a_query_planned_before_the_write_down_sees_each_row_once",
            f"{ROWS}::test_every_snapshot_of_runs_spanning_many_batches")),
    Mutant("live-offset-off-by-one", "live", "hfq/live/subscribe.py",
           "            self._delivered[pub] = seq\n",
           "            self._delivered[pub] = seq - 1\n",
           "a subscriber's offset one batch behind what it delivered: after a restart the "
           "last batch it handled comes again",
           (f"{SUBSCRIBE}::test_a_subscriber_resumes_from_its_offset_and_gets_every_row_"
            "exactly_once",)),
    Mutant("live-window-closed-early", "live", "hfq/live/bars.py",
           "        done = self.state[_WHEN] <= to\n",
           "        done = self.state[_WHEN] <= to + 10**9\n",
           "a bar's window closed a second before the clock reaches its end: a row of its last "
           "second that comes after another of that second is late and dropped",
           (f"{ENGINES}::test_a_window_closes_when_the_clock_reaches_its_end_not_before",)),
    Mutant("live-ema-carry-forgets-nulls", "live", "hfq/live/state.py",
           "            self.carry[name] = both.filter((at >= last) & (at <= last + st.gap))",
           "            self.carry[name] = both.filter(at == last)",
           "the reactive state's carry keeps a symbol's last output but not the nulls after "
           "it: an EMA after a null that ends a batch weighs its next value as if no gap",
           (f"{ENGINES}::test_an_ema_decays_over_nulls_that_straddle_a_batch",
            f"{ENGINES}::test_reactive_state_equals_the_expressions_over_the_stored_rows")),
    Mutant("live-replay-speed-ignored", "live", "hfq/live/replay.py",
           "                due = (int(events[start]) - first_event) / 1e9 / speed\n",
           "                due = (int(events[start]) - first_event) / 1e9\n",
           "a replay paced at the events' own speed whatever speed= says",
           ("tests/live/test_replay.py::test_replay_waits_for_each_batch_at_its_event_time_"
            "over_speed",)),
    Mutant("live-half-logged-batch-visible", "live", "hfq/live/snapshot.py",
           "        out[pub] = seq if complete else seq - 1\n",
           "        out[pub] = seq\n",
           "a publisher's last batch visible once one of its nodes logged it: a query sees a "
           "batch that was never acknowledged (killed between the two nodes' logs)",
           ("tests/live/test_visible.py::test_a_batch_logged_on_one_of_its_two_nodes_is_not_"
            "visible_yet",)),
    Mutant("live-visible-waits-for-a-gone-node", "live", "hfq/live/snapshot.py",
           "        complete = all(reports[n][\"pubs\"].get(pub, [0])[0] >= seq\n"
           "                       for n in went.get(pub, ()) if n in reports)\n",
           "        complete = all(reports.get(n, {\"pubs\": {}})[\"pubs\"].get(pub, [0])[0]"
           " >= seq\n"
           "                       for n in went.get(pub, ()))\n",
           "a batch's visibility waiting for a node that did not answer: a dead node hides "
           "acknowledged rows its replica holds",
           ("tests/live/test_visible.py::test_a_node_that_did_not_answer_does_not_hold_a_"
            "batch_back",)),
    Mutant("live-feed-rate-per-batch", "live", "hfq/live/feed.py",
           "                wait = fed.rows / rate - (time.perf_counter() - started)\n",
           "                wait = fed.batches / rate - (time.perf_counter() - started)\n",
           "hfq publish --rate N paced at N batches a second, not N rows",
           ("tests/live/test_cli_live.py::test_publish_csv_waits_for_each_batch_at_its_share_"
            "of_the_rate",)),
    Mutant("live-node-takes-a-changed-retry", "live", "hfq/live/node.py",
           "                if not _same_slices(held, entry, rows):\n",
           "                if False:\n",
           "a node answering 'duplicate' to a batch number it logged with other rows: the "
           "publisher acknowledges rows nobody holds",
           (f"{PUBLISH}::test_a_retry_with_other_rows_of_a_batch_a_node_logged_is_refused_by_"
            "the_node",)),
    Mutant("live-carry-cast-to-the-input", "live", "hfq/live/state.py",
           "                   if carry.schema[_IN] == pl.Null else []))\n",
           "                   if True else []))\n",
           "the reactive state's carried output cast to the input's type: an EMA of integers "
           "carries 1.5 as 1, a cumulative sum of Int8 past 127 as NULL",
           (f"{ENGINES}::test_a_carried_output_keeps_its_type_not_the_inputs",)),
    Mutant("live-carry-unbounded", "live", "hfq/live/state.py",
           "            self.carry[name] = both.filter((at >= last) & (at <= last + st.gap))",
           "            self.carry[name] = both.filter(at >= last)",
           "every null after a symbol's last output carried: a symbol without a mid all day "
           "makes every batch slower",
           (f"{ENGINES}::test_a_long_run_of_nulls_keeps_the_carry_bounded",)),
    Mutant("live-route-stale-position", "live", "hfq/live/route.py",
           "            self.codes = np.concatenate([self.codes, codes])\n"
           "            pos = pc.index_in(dictionary, value_set=self.values)\n",
           "            self.codes = np.concatenate([self.codes, codes])\n"
           "            pos = pc.fill_null(pos, 0)\n",
           "the routing cache learns a new symbol's bucket but routes this batch's rows of it "
           "by a stale lookup: a symbol first seen mid-day lands in another symbol's "
           "partition, where a pruned scan never looks",
           (f"{ROUTE}::test_a_symbol_first_seen_mid_day_gets_its_own_bucket_not_a_neighbours",
            f"{ROUTE}::test_every_batch_routes_as_the_scheme_does")),
    Mutant("live-route-forget-half", "live", "hfq/live/route.py",
           "            self.values = pa.array([], dictionary.type)\n"
           "            self.codes = np.zeros(0, np.int64)\n",
           "            self.values = pa.array([], dictionary.type)\n",
           "the bounded cache forgets its values but keeps their buckets: every value after "
           "the reset takes the bucket of the value that was at its position before",
           (f"{ROUTE}::test_the_memory_is_bounded",)),
    Mutant("live-group-commit-two-leaders", "live", "hfq/live/log.py",
           "                if self._leading:\n",
           "                if False:\n",
           "an append that does not wait for the fsync under way but writes and syncs the "
           "queue itself: no batching of fsyncs across publishers (and frames of one "
           "leader's batch acknowledged by another's fsync)",
           (f"{LOG}::test_appends_made_while_an_fsync_runs_share_the_next_one",)),
    Mutant("live-rows-dictionary-unused", "live", "hfq/live/rows.py",
           "        encoded = pc.dictionary_encode(chunk.dictionary_decode())\n",
           "        encoded = pa.DictionaryArray.from_arrays(chunk.indices, pc.unique(\n"
           "            chunk.dictionary_decode()), safe=False)\n",
           "compacting a dictionary to the values used without remapping the indices: live "
           "rows read back with other rows' symbols",
           (f"{ROWS}::test_every_read_gives_the_oracles_rows", "tests/live/test_publish.py")),
    Mutant("live-rows-kept-column-stale", "live", "hfq/live/rows.py",
           "    frames = {name: a.series(name).clone().extend(b.series(name))\n",
           "    frames = {name: a.series(name)\n",
           "the polars columns kept for queries not given a newly joined run's rows: a query "
           "after a batch misses the batch's rows (or reads rows out of step with the mask)",
           (f"{ROWS}::test_every_read_gives_the_oracles_rows",
            f"{ROWS}::test_a_query_after_each_slice_converts_each_row_once")),
    Mutant("live-batch-slice-offset-lost", "live", "hfq/live/rows.py",
           "            out.append((part, rows.slice(offset, n), 1, (batch, offset)))\n",
           "            out.append((part, rows.slice(offset, n), 1, (batch, 0)))\n",
           "a slice's run reads its batch's converted column from the batch's first row: "
           "a partition's query reads another partition's rows of the batch",
           (f"{ROWS}::test_a_batch_read_after_it_arrives_is_converted_once_for_all_its_"
            "slices",)),
    Mutant("live-conform-skipped-always", "live", "hfq/schema.py",
           "        if table.schema.equals(exact, check_metadata=True):",
           "        if True:",
           "conform's shortcut for a batch already in the table's schema taken for every "
           "batch: a batch of another schema (bid as text, a column missing) is published "
           "unconverted",
           (f"{PUBLISH}::test_a_batch_that_does_not_conform_is_refused_whole",
            f"{PUBLISH}::test_a_batch_already_in_the_tables_schema_is_still_checked")),
    Mutant("live-conform-shortcut-skips-chars", "live", "hfq/schema.py",
           "                        for name, ctype in chars\n",
           "                        for name, ctype in []\n",
           "conform's shortcut for a batch already in the table's schema not checking the "
           "CHAR limit: a two-character exchange code is stored",
           (f"{PUBLISH}::test_a_batch_already_in_the_tables_schema_is_still_checked",)),
    Mutant("live-meta-text-day-forgotten", "live", "hfq/live/log.py",
           '    where = ("p", s.partition, repr(s.key), s.day)   # repr: 0, 0.0, -0.0, False '
           'apart\n',
           '    where = ("p", s.partition, repr(s.key))\n',
           "the remembered JSON of a slice keyed without its day: a partition's slice of the "
           "next day is logged as the first day's, and write-down and replay file it there",
           (f"{LOG}::test_the_meta_is_the_json_of_the_entry",)),
    Mutant("live-route-days-sorted", "live", "hfq/live/route.py",
           "        return rank[inverse.reshape(-1)], [self._name(int(d)) for d in "
           "uniq[order].tolist()]\n",
           "        return rank[inverse.reshape(-1)], [self._name(int(d)) for d in "
           "uniq.tolist()]\n",
           "a batch of several days routed by day numbers whose keys are listed in sorted "
           "order while the codes count days in order of appearance: rows filed under "
           "another day's partition",
           (f"{ROUTE}::test_every_batch_routes_as_the_scheme_does",)),
    Mutant("live-days-joined-run-oldest", "live", "hfq/live/rows.py",
           "        stats[k] = _spanning(stats.get(k, st), st)\n",
           "        stats[k] = stats.get(k, st)\n",
           "two runs joined keep the older run's last sequence number per day and publisher: "
           "a day whose later rows are not written down is reported as written down, and a "
           "snapshot skips its live rows",
           (f"{ROWS}::test_every_read_gives_the_oracles_rows",
            f"{ROWS}::test_a_day_is_live_until_the_cut_holds_its_last_slice")),
    Mutant("live-stats-greatest-seq-least", "live", "hfq/live/rows.py",
           "        np.maximum.reduceat(seq, starts), np.minimum.reduceat(pseq, starts),\n",
           "        np.minimum.reduceat(seq, starts), np.minimum.reduceat(pseq, starts),\n",
           "a run's greatest sequence number per day and publisher taken as its least: a day "
           "whose later rows are not written down is reported as written down, and a run "
           "cut through by a snapshot is taken whole",
           (f"{ROWS}::test_every_read_gives_the_oracles_rows",
            f"{ROWS}::test_a_day_is_live_until_the_cut_holds_its_last_slice",
            f"{ROWS}::test_every_snapshot_of_runs_spanning_many_batches")),
    Mutant("live-run-whole-by-least-seq", "live", "hfq/live/rows.py",
           "                every = every and s1 <= top[p] and lo[p] <= p0 and p1 <= hi[p] and "
           "s0 > cut_to\n",
           "                every = every and s0 <= top[p] and lo[p] <= p0 and p1 <= hi[p] and "
           "s0 > cut_to\n",
           "a run taken whole by a snapshot when its first batch is within the snapshot, "
           "though later ones are not: rows of a batch not yet acknowledged everywhere are "
           "half-visible",
           (f"{ROWS}::test_every_read_gives_the_oracles_rows",
            f"{ROWS}::test_every_snapshot_of_runs_spanning_many_batches")),
    Mutant("live-run-none-by-cut-least", "live", "hfq/live/rows.py",
           "                none = none and (s0 > top[p] or p1 < lo[p] or p0 > hi[p] or "
           "s1 <= cut_to)\n",
           "                none = none and (s0 > top[p] or p1 < lo[p] or p0 > hi[p] or "
           "s0 <= cut_to)\n",
           "a run skipped by a snapshot when its first batch is written down, though later "
           "ones are not: live rows missing from the query",
           (f"{ROWS}::test_every_read_gives_the_oracles_rows",
            f"{ROWS}::test_every_snapshot_of_runs_spanning_many_batches")),
    Mutant("live-runs-joined-past-cap", "live", "hfq/live/rows.py",
           "                runs[-2].rows + runs[-1].rows <= RUN_ROWS:\n",
           "                True:\n",
           "runs joined whatever their size: a publish or read that completes a binary "
           "counter copies a whole partition (a stall of the ack growing with the day)",
           (f"{ROWS}::test_runs_stop_joining_past_their_size",)),
    Mutant("live-joined-run-forgets-series", "live", "hfq/live/rows.py",
           "              for name in a.frames.keys() | b.frames.keys()}\n",
           "              for name in a.frames.keys() & b.frames.keys()}\n",
           "a joined run keeps only the polars columns both parts had: after a new batch's run "
           "is joined, the next read converts the whole joined run again",
           (f"{ROWS}::test_a_query_after_each_slice_converts_each_row_once",)),
    Mutant("live-days-first-slice", "live", "hfq/live/rows.py",
           "                    stats[day, pub] = _spanning(stats.get((day, pub), one), one)\n",
           "                    stats.setdefault((day, pub), one)\n",
           "a new run of a few slices remembers the first slice's numbers of each day and "
           "publisher, not the span: its later rows are taken for written down by a cut "
           "between them",
           (f"{ROWS}::test_a_day_is_live_until_the_cut_holds_its_last_slice",
            f"{ROWS}::test_every_snapshot_of_runs_spanning_many_batches")),
    Mutant("live-handover-on-the-ack-path", "live", "hfq/live/node.py",
           "        if self.pending.due():\n            self._wake_handover()\n",
           "        if self.pending.due():\n            self.pending.flush()\n",
           "the held batches handed over to their partitions by the publish that fills the "
           "tail, before it answers: every 128th acknowledgement waits for the rows of 128 "
           "batches to be put together (the ack p99)",
           (f"{HANDOVER}::test_a_publish_never_hands_over_on_its_own_thread",)),
    Mutant("live-read-does-not-wait-for-handover", "live", "hfq/live/rows.py",
           "            while self.moving:\n                self.cond.wait()\n",
           "            while False:\n                self.cond.wait()\n",
           "a read hands over the batches held while a handover's are out: the partitions' "
           "slices are paired with the wrong rows, or the read misses acknowledged rows",
           (f"{ROWS}::test_a_read_waits_for_the_handover_out_and_pairs_each_slice_with_its_"
            "rows",)),
    Mutant("live-handover-under-the-lock", "live", "hfq/live/node.py",
           "            batches = self.pending.take()\n        try:\n"
           "            ready = prepare(batches)\n",
           "            batches = self.pending.take()\n            ready = prepare(batches)\n"
           "        try:\n            pass\n",
           "the handover puts the rows together holding the node's lock: a publish arriving "
           "meanwhile waits for it (the stall moved, not removed)",
           (f"{HANDOVER}::test_a_read_waits_for_the_handover_out_and_a_publish_does_not",)),
    Mutant("live-failed-handover-loses-batches", "live", "hfq/live/node.py",
           "            with self.lock:\n                self.pending.give_back(batches)\n",
           "            with self.lock:\n                self.pending.moving = False\n",
           "a handover that fails forgets the batches it took: their rows are never given to "
           "their partitions (acknowledged rows lost, or every later read fails)",
           (f"{HANDOVER}::test_a_handover_that_fails_is_done_by_the_next_read",)),
    Mutant("live-handover-takes-later-slices", "live", "hfq/live/rows.py",
           "        given = self.tail if slices is None else self.tail[:slices]\n",
           "        given = self.tail\n",
           "a handover's rows paired with every slice its partition holds, including those "
           "of batches that came after it took its batches",
           (f"{ROWS}::test_a_read_waits_for_the_handover_out_and_pairs_each_slice_with_its_"
            "rows", f"{ROWS}::test_every_read_gives_the_oracles_rows")),
    Mutant("live-route-last-dictionary-by-size", "live", "hfq/live/route.py",
           "        if last is not None and dictionary.equals(last[0]):\n",
           "        if last is not None and len(dictionary) == len(last[0]):\n",
           "the router takes a batch's dictionary for the last one when it has as many "
           "values: a symbol renamed or reordered is routed to another symbol's partition",
           (f"{ROUTE}::test_a_dictionary_like_the_last_is_not_taken_for_it",)),
    Mutant("live-chars-last-dictionary-by-size", "live", "hfq/schema.py",
           "        if known and dictionary.equals(known[0]):\n",
           "        if known and len(dictionary) == len(known[0]):\n",
           "the CHAR limit skipped for a dictionary of as many values as the last good one: "
           "a two-character exchange code is published",
           (f"{PUBLISH}::test_a_char_dictionary_like_the_last_good_one_is_still_measured",)),
    Mutant("live-chars-remembered-before-measured", "live", "hfq/schema.py",
           "        dictionary = chunk.dictionary\n        known = _CHARS_OK[:1]\n",
           "        dictionary = chunk.dictionary\n        known = _CHARS_OK[:1]\n"
           "        _CHARS_OK[:] = [dictionary]\n",
           "a CHAR dictionary remembered as good before it is measured: a batch refused once "
           "is accepted when sent again",
           (f"{PUBLISH}::test_a_char_dictionary_like_the_last_good_one_is_still_measured",)),
]
