"""Mutants of the ops area (issue 25): maintenance that trusts no stale node list, settings
overrides scoped to their context, the command line's one filter language."""

from __future__ import annotations

from mutants import Mutant

MAINTENANCE = "tests/unit/test_maintenance.py"
NODES = "tests/faults/test_nodes.py"

MUTANTS: list[Mutant] = [
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
]
