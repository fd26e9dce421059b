"""Mutants of issue 26's guarantees (area "live"): acknowledged only once durable, the log
truncated only after the write-down's commit, exact subscriber offsets, bars windows closed
at their end -- each killed by a fast, Ray-free test of ``tests/live``."""

from __future__ import annotations

from mutants import Mutant

LOG = "tests/live/test_log.py"
WRITEDOWN = "tests/live/test_writedown.py"
SUBSCRIBE = "tests/live/test_subscribe.py"
ENGINES = "tests/live/test_engines.py"

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
           "            keep &= self._uncut(cut)\n",
           "            pass\n",
           "a read of live rows ignoring its version's written-down cut: rows written down "
           "and still held are counted twice (files and live)",
           (f"{WRITEDOWN}::test_a_query_planned_before_the_write_down_sees_each_row_once",)),
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
]
