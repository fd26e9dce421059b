"""The curated mutants: plausible bugs in the code integrity rests on, one at a time.

Each :class:`Mutant` replaces one exact piece of source text (``old``, which must occur exactly
once in ``file``: otherwise the mutant is *stale* and the check fails until the list is
updated) by ``new``, says why the bug is plausible, and names the tests that must kill it
(pytest arguments: files, node ids, ``-k`` expressions) -- fast ones, without Ray.

Areas (issue 14 item 6): the commit, pruning, reads, checksums, merges, partition hashing and
failover.  ``python tests/mutation/run.py`` applies them (see there).

Later areas keep their mutants in ``mutants_<area>.py`` beside this file (a list named
``MUTANTS`` each), so that work on one area never edits another's list; they are appended here.
"""

from __future__ import annotations

import importlib
import pathlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    id: str
    area: str
    file: str
    old: str
    new: str
    why: str
    tests: tuple[str, ...]


CRASH = "tests/faults/test_crash.py"
RACE = f"{CRASH}::test_a_writer_held_before_its_publish_while_another_commits_loses_nothing"
RACE_PROCESSES = (f"{CRASH}::test_a_writer_process_paused_between_reading_the_head_and_"
                  "publishing")
COMPACTIONS = f"{CRASH}::test_two_compactions_of_one_partition_the_second_is_a_conflict"
KILLED_APPEND = (f"{CRASH}::test_killed_at_a_fault_point_the_table_is_at_the_old_or_the_new_"
                 "version[append-write.before_commit=crash]")
FAILOVER = (f"{CRASH}::test_the_units_of_a_node_that_dies_run_again_on_another_holder",
            f"{CRASH}::test_a_unit_whose_only_holder_dies_is_a_named_error")
PRUNING = "tests/mutation/test_pruning.py"
REDUCERS = "tests/property/test_reducers.py"
MERGES = "tests/mutation/test_merges.py"
READS_ZSTD = "tests/faults/test_reads.py::{}[zstd]"

MUTANTS: list[Mutant] = [
    # -- the commit --
    Mutant("commit-exclusive-overwrites", "commit", "hfq/storage/store.py",
           "            os.link(source, target)\n",
           "            os.replace(source, target)\n            os.link(target, source)\n",
           "create-if-absent done as a rename: two racing commits both 'win', the second "
           "silently replacing the first's version (the bug the issue found survived)",
           (RACE, RACE_PROCESSES, "tests/unit/test_store_backends.py")),
    Mutant("commit-publish-by-rename", "commit", "hfq/catalog/catalog.py",
           "won = self.store.create_exclusive(tmp, final)",
           "self.store.rename(tmp, final)\n        won = True",
           "the catalog publishing with a plain rename instead of the store's "
           "create-if-absent", (RACE, RACE_PROCESSES)),
    Mutant("commit-head-before-claims", "commit", "hfq/catalog/catalog.py",
           "                claimed = self._claimed(name)[0]\n"
           "                faults.point(\"catalog.commit.between_claims_and_head\")\n"
           "                head = self.snapshot(name)\n",
           "                head = self.snapshot(name)\n"
           "                faults.point(\"catalog.commit.between_claims_and_head\")\n"
           "                claimed = self._claimed(name)[0]\n",
           "the head read before the version claims: a commit made in between numbers this one "
           "above it on the older base, and its rows are lost (seen once under load)",
           (f"{CRASH}::test_a_writer_held_between_reading_the_claims_and_the_head_loses_"
            "nothing",)),
    Mutant("commit-retry-on-top-of-itself", "commit", "hfq/catalog/catalog.py",
           "if top != manifest.version and not self._descends(name, top, manifest.version):",
           "if top != manifest.version:",
           "a published version found below the head always withdrawn and retried, even when "
           "the head was made on top of it: the change is applied twice (duplicated rows, "
           "seen under load)",
           (f"{CRASH}::test_a_writer_held_right_after_its_publish_does_not_commit_twice",)),
    Mutant("commit-head-by-count", "commit", "hfq/catalog/catalog.py",
           "return versions[-1] if versions else None",
           "return len(versions) - 1 if versions else None",
           "the head taken as the number of versions: wrong once vacuum forgot versions",
           ("tests/unit/test_catalog.py::test_commit_after_vacuum_forgot_versions_is_the_new_"
            "head", "tests/unit/test_catalog_head.py::test_no_claims_at_all_falls_back_to_the_"
            "listing")),
    Mutant("commit-replace-without-conflict", "commit", "hfq/catalog/catalog.py",
           "if entry is None or not files <= present:",
           "if entry is None:",
           "a compaction that lost a race commits anyway: the partition's rows twice",
           (COMPACTIONS,)),
    Mutant("commit-append-drops-old-files", "commit", "hfq/catalog/catalog.py",
           "entry.with_fragments([*entry.fragments, *fragments])",
           "entry.with_fragments([*fragments])",
           "an append to an existing partition replacing its files instead of adding",
           (KILLED_APPEND,)),
    Mutant("abort-removes-nothing", "commit", "hfq/write.py",
           "return self.nodes.remove_prefix(self.base.table, self.txn.id)",
           "return 0",
           "a failed write leaving its fragments behind",
           ("tests/faults/test_write.py::test_failing_at_each_fault_point_of_a_load_leaves_"
            "nothing",)),
    Mutant("sweep-spares-dead-writers", "commit", "hfq/catalog/files.py",
           "doomed = alive is False or (alive is None and now - mtime >= grace_s) or \\",
           "doomed = (alive is None and now - mtime >= grace_s) or \\",
           "vacuum keeping the files of a writer killed on this host",
           (KILLED_APPEND,)),
    Mutant("sweep-removes-referenced", "commit", "hfq/catalog/files.py",
           'elif rel.startswith(f"{table}/data/") and rel not in referenced:',
           'elif rel.startswith(f"{table}/data/"):',
           "vacuum forgetting to spare the files the kept versions reference",
           (KILLED_APPEND,)),

    # -- pruning --
    Mutant("prune-batch-date-lo-inverted", "pruning", "hfq/query/plan.py",
           "(f.date_lo and hi < f.date_lo)", "(f.date_lo and hi > f.date_lo)",
           "the record-batch date comparison inverted (survived the whole suite)",
           (PRUNING,)),
    Mutant("prune-batch-date-hi-off-by-one", "pruning", "hfq/query/plan.py",
           "(f.date_hi and lo > f.date_hi)", "(f.date_hi and lo >= f.date_hi)",
           "an inclusive upper bound pruned as exclusive", (PRUNING,)),
    Mutant("prune-batch-exact-lo", "pruning", "hfq/query/plan.py",
           "inside &= (not f.date_lo or lo >= f.date_lo)",
           "inside &= (not f.date_lo or hi >= f.date_lo)",
           "a batch straddling the lower bound marked exact: its early rows not filtered",
           (PRUNING,)),
    Mutant("prune-batch-exact-nulls", "pruning", "hfq/query/plan.py",
           "(not f.date_hi or hi <= f.date_hi) and not mm.nulls",
           "(not f.date_hi or hi <= f.date_hi)",
           "a batch with null dates marked exact: null rows returned for dates=",
           (PRUNING,)),
    Mutant("prune-batch-symbol-range", "pruning", "hfq/query/plan.py",
           "str(mm.min) <= s <= str(mm.max)", "str(mm.min) < s <= str(mm.max)",
           "a batch starting with the symbol pruned", (PRUNING,)),
    Mutant("prune-batch-symbol-exact", "pruning", "hfq/query/plan.py",
           "inside &= mm.min == mm.max and not mm.nulls", "inside &= not mm.nulls",
           "a batch of several symbols marked exact: other symbols returned", (PRUNING,)),
    Mutant("prune-value-partition-lo", "pruning", "hfq/partition.py",
           "if lo is not None and day < lo:", "if lo is not None and day <= lo:",
           "the first day's partition pruned by an inclusive lower bound", (PRUNING,)),
    Mutant("prune-range-partition-lo", "pruning", "hfq/partition.py",
           "if lo is not None and value < self.bucket(lo):",
           "if lo is not None and value <= self.bucket(lo):",
           "the Range bucket holding the lower bound pruned", (PRUNING,)),
    Mutant("prune-range-partition-hi", "pruning", "hfq/partition.py",
           'return hi is None or value <= self.bucket(f"{hi}\\uffff")',
           'return hi is None or value < self.bucket(f"{hi}\\uffff")',
           "the Range bucket holding the upper bound pruned", (PRUNING,)),
    Mutant("prune-hash-first-symbol-only", "pruning", "hfq/partition.py",
           "return frozenset(self.bucket(m) for m in members).__contains__",
           "return frozenset(self.bucket(m) for m in list(members)[:1]).__contains__",
           "Hash pruning keeping only the first symbol's bucket", (PRUNING,)),
    Mutant("plan-hash-lookup-first-symbol-only", "pruning", "hfq/query/plan.py",
           "scheme.second.bucket(m))) for m in members})",
           "scheme.second.bucket(m))) for m in list(members)[:1]})",
           "a point read's partitions looked up for the first symbol's bucket only",
           (PRUNING, "tests/unit/test_plan.py")),

    # -- partition hashing --
    Mutant("hash-byte-order", "hashing", "hfq/partition.py",
           'int.from_bytes(digest, "little") % buckets',
           'int.from_bytes(digest, "big") % buckets',
           "bucket numbers changing between versions: tables written before read wrongly",
           ("--doctest-modules", "hfq/partition.py")),
    Mutant("hash-compo-codes", "hashing", "hfq/partition.py",
           "codes = c1 * len(v2) + c2", "codes = c1 * len(v1) + c2",
           "the two levels' codes combined with the wrong stride: rows under wrong keys",
           (f"{PRUNING}::test_every_date_and_symbol_scan_equals_the_polars_filter[date-x-hash]",
            )),

    # -- reads --
    Mutant("read-batches-by-position", "read", "hfq/storage/fragment.py",
           "batches = [reader.get_batch(i) for i in wanted]",
           "batches = [reader.get_batch(k) for k in range(len(wanted))]",
           "the kept batches read as the first n batches", (PRUNING,)),
    Mutant("read-columns-unselected", "read", "hfq/query/read.py",
           "return table.select(spec.columns) if table.column_names != spec.columns else table",
           "return table",
           "filter columns read for pruning returned, columns in file order", (PRUNING,)),
    Mutant("read-filter-hi-exclusive", "read", "hfq/query/read.py",
           "            keep &= days <= last", "            keep &= days < last",
           "the row filter's upper date bound exclusive", (PRUNING,)),
    Mutant("read-filter-skipped", "read", "hfq/query/read.py",
           "    if not unit.exact:\n        table = _filter_rows(table, f, ",
           "    if unit.exact:\n        table = _filter_rows(table, f, ",
           "rows of inexact units not filtered", (PRUNING,)),
    Mutant("read-multi-file-unsorted", "read", "hfq/query/read.py",
           "    if len(parts) > 1:\n        table = sort_rows(table, spec.sort_by)",
           "    if len(parts) > 2:\n        table = sort_rows(table, spec.sort_by)",
           "a partition of two files returned unsorted",
           ("tests/unit/test_store.py::test_multi_file_partitions_read_sorted_and_compact",)),

    # -- checksums --
    Mutant("crc-point-read-unchecked", "checksum", "hfq/storage/fragment.py",
           "if crc != recorded[i].crc32:", "if crc != recorded[i].crc32 and batches is None:",
           "only full reads verified: point reads decode damaged batches",
           (READS_ZSTD.format("test_a_point_read_checks_what_it_touches_and_answers_right_"
                              "otherwise"),)),
    Mutant("crc-full-read-unchecked", "checksum", "hfq/storage/fragment.py",
           "for i in range(len(recorded)) if batches is None else batches:",
           "for i in [] if batches is None else batches:",
           "a full read checking no batch", (READS_ZSTD.format(
               "test_a_flipped_bit_anywhere_is_a_named_error_on_a_full_read"),)),
    Mutant("crc-verify-size-only", "checksum", "hfq/storage/fragment.py",
           "if n != size or crc != checksum:", "if n != size:",
           "verify() and copies comparing sizes only",
           ("tests/unit/test_store.py::test_verify_detects_corruption",)),

    # -- merges --
    Mutant("merge-var-no-chan-term", "merge", "hfq/reduce/basic.py",
           "qa + qb + delta * delta * na * nb / n", "qa + qb",
           "Chan's update without the between-groups term", (MERGES, f"{REDUCERS}::test_mean_and_"
                                                              "variance_merge_like_one_pass",)),
    Mutant("merge-var-mean-weight", "merge", "hfq/reduce/basic.py",
           "VarState(n, ma + delta * nb / n,", "VarState(n, ma + delta * na / n,",
           "the merged mean weighted by the wrong count",
           (MERGES, f"{REDUCERS}::test_mean_and_variance_merge_like_one_pass",)),
    Mutant("merge-last-as-first", "merge", "hfq/reduce/ordered.py",
           "return a if (ka >= kb if self._latest else ka <= kb) else b",
           "return a if ka <= kb else b",
           "Last merging like First", (MERGES, f"{REDUCERS}::test_first_last_and_weighted_mean",)),
    Mutant("merge-first-edge-swapped", "merge", "hfq/reduce/ordered.py",
           "edge = times.max() if self._latest else times.min()",
           "edge = times.min() if self._latest else times.max()",
           "First/Last taking the wrong end of a partition",
           (MERGES, f"{REDUCERS}::test_first_last_and_weighted_mean",)),
    Mutant("merge-weighted-mean-weight", "merge", "hfq/reduce/basic.py",
           "ma + (mb - ma) * (wb / w)", "ma + (mb - ma) * (wa / w)",
           "weighted means merged with the other side's weight",
           (MERGES, f"{REDUCERS}::test_first_last_and_weighted_mean",)),
    Mutant("merge-min-drops-nan", "merge", "hfq/reduce/basic.py",
           "        if a is None or _nan(b):\n            return b",
           "        if a is None:\n            return b",
           "a NaN in a later partition lost by Min/Max (Python's min ignores it)",
           (MERGES, f"{REDUCERS}::test_count_min_max_are_exact",)),
    Mutant("merge-grouped-overwrites", "merge", "hfq/reduce/grouped.py",
           "out[key] = self.reducer.merge(out[key], state) if key in out else state",
           "out[key] = state",
           "a key present in two partitions keeping only the last",
           (MERGES, f"{REDUCERS}::test_grouped_by_minute_equals_one_pass",)),
    Mutant("merge-ols-no-cross-term", "merge", "hfq/reduce/ols.py",
           "ca + cb + np.outer(delta, delta) * (na * nb / n)", "ca + cb",
           "OLS cross-products merged without the between-groups term",
           (f"{REDUCERS}::test_ols_moments_merge_exactly_enough_for_ill_conditioned_designs",)),

    # -- failover --
    Mutant("failover-drops-inflight-units", "failover", "hfq/runtime/executor.py",
           "                except dead_actor_errors():\n"
           "                    node_gone(name, chunk)\n                    continue",
           "                except dead_actor_errors():\n                    continue",
           "the units a dying node was running never run again: a partial answer",
           FAILOVER),
    Mutant("failover-forgets-unfinished", "failover", "hfq/runtime/executor.py",
           "lost = [i for i in [*unfinished, *queued] if not self._enqueue(i)]",
           "lost = [i for i in queued if not self._enqueue(i)]",
           "only the dead node's queued units re-run, not those it was running", FAILOVER),
    Mutant("failover-requeues-on-dead-node", "failover", "hfq/runtime/executor.py",
           "if n in self.alive and n not in bad]", "if n not in bad]",
           "a dead node chosen again for the units it lost", FAILOVER),
]


def _more() -> list[Mutant]:
    """The mutants of the areas kept in ``mutants_*.py``, in file-name order."""
    found: list[Mutant] = []
    for path in sorted(pathlib.Path(__file__).resolve().parent.glob("mutants_*.py")):
        found.extend(importlib.import_module(path.stem).MUTANTS)
    return found


MUTANTS += _more()
