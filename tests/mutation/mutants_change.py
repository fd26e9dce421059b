"""Mutants of issue 27's guarantees (area "change"): mutations re-run on a changed head, dedup
keys on every writer, history counts, as-of semantics, retention pins, knowledge time, column
layouts, slices."""

from __future__ import annotations

from mutants import Mutant

MUT = "tests/change/test_mutations.py"
HIST = "tests/change/test_history_asof.py"
KNOW = "tests/change/test_knowledge.py"
COLS = "tests/change/test_columns.py"
HEAD = "tests/unit/test_catalog_head.py"
PUB = "tests/faults/test_write_published.py"

MUTANTS: list[Mutant] = [
    Mutant("change-stale-read-ignored", "change", "hfq/catalog/catalog.py",
           "        if self.check_reads is not None and head.version != self.base.version and \\",
           "        if self.check_reads is None and head.version != self.base.version and \\",
           "a change computed from partitions another writer changed meanwhile is published "
           "as it is: a delete misses the rows appended meanwhile, two keyed writers both "
           "add a key",
           (f"{MUT}::test_a_delete_held_before_its_publish_misses_no_row_appended_meanwhile",
            f"{MUT}::test_an_upsert_and_an_append_at_once_lose_and_duplicate_nothing")),
    Mutant("change-dedup-skipped-for-appends", "change", "hfq/write.py",
           "        if not self.settled and op not in NO_DEDUP and dedup_key(self.base.options) "
           "and \\",
           "        if False and \\",
           "appends and CSV loads commit without keeping the table's dedup key (only upsert "
           "does): a resent file stores its keys twice",
           (f"{MUT}::test_keyed_appends_never_store_a_key_twice",
            f"{MUT}::test_a_keyed_csv_load_keeps_the_key")),
    Mutant("change-dedup-keeps-first-for-last", "change", "hfq/change/dedup.py",
           '        kept = nk.unique(subset=list(self.key), keep="last" if last else "first",',
           '        kept = nk.unique(subset=list(self.key), keep="first",',
           "of the rows of one key written together, keep='last' keeps the first",
           (f"{MUT}::test_keyed_appends_never_store_a_key_twice",
            f"{MUT}::test_upsert_equals_the_model")),
    Mutant("change-history-counts-files", "change", "hfq/catalog/catalog.py",
           "            per_partition = dict(self.counts)",
           "            pass",
           "a delete's history counts the rows of the files it rewrote, not the rows it "
           "removed",
           (f"{HIST}::test_every_commit_records_who_what_when_and_why",)),
    Mutant("change-asof-strictly-before", "change", "hfq/catalog/timeline.py",
           "        elif (at := time_of(probe)) > target:",
           "        elif (at := time_of(probe)) >= target:",
           "as_of an instant names the version committed strictly before it, not at it",
           (f"{HEAD}::test_versions_by_number_and_time_with_gaps_from_vacuum_and_lost_numbers",
            f"{HIST}::test_as_of_a_time_names_the_newest_version_at_or_before_it")),
    Mutant("change-times-follow-the-clock-back", "change", "hfq/catalog/records.py",
           "                       committed_at=max(time.time(), self.committed_at),",
           "                       committed_at=time.time(),",
           "a clock set back numbers a version earlier than its parent: the binary search of "
           "as_of finds the wrong version",
           (f"{HIST}::test_the_versions_times_never_go_back_with_the_clock",)),
    Mutant("change-vacuum-forgets-pins", "change", "hfq/catalog/catalog.py",
           "        keep = set(pinned)",
           "        keep: set[int] = set()",
           "vacuum forgets the versions a tag or a database snapshot names",
           (f"{HIST}::test_tags_and_snapshots_pin_versions_vacuum_keeps",)),
    Mutant("change-known-at-ignored", "change", "hfq/engine/known.py",
           "    v = pl.max_horizontal(pl.col(on), known_col)",
           "    v = pl.col(on)",
           "a known_at join sees a quote from when it happened, not from when it was known: "
           "the lookahead it exists to prevent",
           (f"{KNOW}::test_a_quote_known_after_the_trade_is_not_joined_with_known_at",
            f"{KNOW}::test_known_at_asof_join_equals_the_rule_read_plainly")),
    Mutant("change-known-window-prevailing-any", "change", "hfq/engine/kernels.py",
           "                if visible[j] <= t:\n                    left[k] = i\n"
           "                    right[k] = j\n                    k += 1\n"
           "                    break",
           "                if True:\n                    left[k] = i\n"
           "                    right[k] = j\n                    k += 1\n"
           "                    break",
           "wj's row in effect at the window's start taken whether or not it was known then",
           (f"{KNOW}::test_known_at_window_join_equals_the_rule_read_plainly",)),
    Mutant("change-known-view-two-filters", "change", "hfq/change/knowledge.py",
           "    latest = pl.when(known).then(pl.col(column)).otherwise(None).max()"
           ".over(list(key))",
           "    latest = pl.col(column).max().over(list(key))",
           "scan(known_at=T) keeps a key's latest row of all time, so a key corrected after T "
           "vanishes from the view at T",
           (f"{KNOW}::test_scan_known_at_gives_the_rows_as_known_then",)),
    Mutant("change-old-layout-read-as-new", "change", "hfq/query/read.py",
           "        return self.layouts is not None and fragment.layout != self.layouts.current",
           "        return False",
           "files written before a column was added or renamed read with today's layout",
           (f"{COLS}::test_add_column_rewrites_no_file_and_old_rows_read_the_default",
            f"{COLS}::test_rename_and_drop_follow_the_options_and_time_travel_keeps_each_schema")),
    Mutant("change-schema-race-ignored", "change", "hfq/catalog/catalog.py",
           "        if (self.added or self.removed) and _layout(head) != _layout(self.base):",
           "        if False:",
           "a write staged in the old columns commits after a schema change",
           (f"{COLS}::test_a_write_staged_in_the_old_columns_is_refused_not_misread",)),
    Mutant("change-overwrite-outside-slice", "change", "hfq/change/mutate.py",
           "        if not inside.all():",
           "        if False:",
           "overwrite stores rows outside the slice it replaces",
           (f"{MUT}::test_overwrite_refuses_rows_outside_the_slice",)),
    Mutant("change-empty-symbols-allowed", "change", "hfq/change/mutate.py",
           "            if len(list(symbols)) == 0:",
           "            if False:",
           "symbols=[] is an empty range that must be refused, not read as 'no filter'",
           (f"{MUT}::test_empty_reversed_and_missing_ranges_are_errors",)),
    Mutant("change-head-trusts-the-claim", "change", "hfq/catalog/catalog.py",
           "        while self.store.exists(self._record_path(name, claimed + 1)):",
           "        while False:",
           "the highest claim taken for the head without probing the records above it: a "
           "commit that died between its publish and its claim is invisible, and the next "
           "commit loses every race for its number",
           (f"{HEAD}::test_a_commit_killed_between_its_publish_and_its_claim_is_the_head",
            f"{HEAD}::test_a_stale_claim_is_probed_past_and_a_claim_without_its_record_is_named")),
    Mutant("change-head-trusts-a-missing-record", "change", "hfq/catalog/catalog.py",
           "        if not self.store.exists(self._record_path(name, claimed)):",
           "        if False:",
           "a claim whose record is gone (deleted head, lost number) taken for the head: the "
           "missing record is not named, a table repaired by check does not open",
           (f"{HEAD}::test_a_stale_claim_is_probed_past_and_a_claim_without_its_record_is_named",)),
    Mutant("change-head-lists-the-versions", "change", "hfq/catalog/catalog.py",
           "        if claimed is None:\n            return self._head(name)",
           "        if True:\n            return self._head(name)",
           "every snapshot lists _versions again: a read on a long history costs its length",
           (f"{HEAD}::test_lookups_cost_the_same_store_calls_on_10_and_on_400_versions",)),
    Mutant("change-asof-lists-the-versions", "change", "hfq/catalog/timeline.py",
           "        probe = _present(catalog, name, mid, ub - 1, head)",
           "        probe = None",
           "as_of by time searches a listing of every version: O(versions), not O(log)",
           (f"{HEAD}::test_lookups_cost_the_same_store_calls_on_10_and_on_400_versions",
            f"{HIST}::test_as_of_reads_log_versions_records_not_the_chain")),
    Mutant("change-asof-assumes-every-number", "change", "hfq/catalog/timeline.py",
           "        if catalog.on_record(name, number, head=head):",
           "        if True:",
           "the search by time takes every number up to the head for a version on record: "
           "numbers vacuum forgot or check gave up break it",
           (f"{HEAD}::test_versions_by_number_and_time_with_gaps_from_vacuum_and_lost_numbers",)),
    Mutant("change-pieces-removed-after-publish", "change", "hfq/catalog/catalog.py",
           "            if txn.published is False:   # (a failure after the publish",
           "            if True:   # (a failure after the publish",
           "a commit failing after its publish (before its claim, reading the head back) "
           "removes the pieces of the version it published",
           (f"{HEAD}::test_a_commit_killed_between_its_publish_and_its_claim_is_the_head",)),
    Mutant("change-write-abort-removes-published", "change", "hfq/write.py",
           "        if self.txn.published is not False:",
           "        if False:",
           "a write whose commit raised after publishing its version (writing the claim, "
           "reading the head back) removes its data files: the committed version names "
           "files that are gone (the old unconditional removal)",
           (f"{PUB}::test_a_write_failing_after_its_publish_keeps_the_files_the_version_names",
            f"{PUB}::test_an_io_error_after_the_publish_is_a_write_error_and_the_files_stay")),
    Mutant("change-publish-outcome-unknown-trusted", "change", "hfq/catalog/catalog.py",
           "            txn.published = None\n",
           "            pass\n",
           "a publish that fails once its record may be visible counts as not published: the "
           "writer removes the files of a version that is on record",
           (f"{PUB}::test_a_publish_failing_half_way_keeps_the_files",)),
    Mutant("change-lost-publish-kept-unknown", "change", "hfq/catalog/catalog.py",
           "            txn.published = won\n",
           "            pass\n",
           "a publish that lost the race for its number stays 'maybe published': a write "
           "failing on its next attempt leaves every file it wrote behind",
           (f"{PUB}::test_a_write_failing_before_its_publish_removes_its_files",)),
    Mutant("change-superseded-against-the-table", "change", "hfq/change/rewrite.py",
           "        kept = {f.file for p in staged for f in _entry_fragments(committed, p)}",
           "        kept = committed.files()",
           "a change looks its staged files up among every file of the table: it reads every "
           "day's manifest piece, its cost grows with the table",
           (f"{MUT}::test_a_change_reads_the_catalog_pieces_of_the_day_it_touches_only",)),
]
