"""Maintenance decides on the nodes that answer now, not on the runtime's list (no Ray here).

A node that crashed stays on Ray's list of live nodes for 10-30 s.  These tests give
:class:`hfq.runtime.nodes.Nodes` a stand-in runtime whose list still names such a node, ``c``,
whose server would not answer a ping; maintenance must count it as down.  What Ray itself does
is tested on a real cluster in ``tests/faults/test_nodes.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow as pa
import pytest

import hfq
from hfq import maintenance
from hfq.catalog.records import Fragment
from hfq.runtime.nodes import Nodes, Reachability
from hfq.session import Session
from hfq.write import Write

PLACED = [("a", "c"), ("c", "b"), ("a", "b"), ("b", "c")]


class StaleRuntime:
    """The runtime's view: ``listed`` nodes believed alive, of which ``silent`` would not
    answer a ping (as a crashed node Ray has not noticed yet)."""

    def __init__(self, listed: Iterable[str], silent: Iterable[str] = ()) -> None:
        self.listed = sorted(listed)
        self.silent = set(silent)
        self.pinged: list[tuple[float, tuple[str, ...]]] = []
        self.quiet: set[str] = set()

    def refresh(self) -> list[str]:
        return self.alive()

    def alive(self) -> list[str]:
        return [n for n in self.listed if n not in self.quiet]

    def ping(self, timeout: float, *, skip: Iterable[str] = ()) -> list[str]:
        self.pinged.append((timeout, tuple(skip)))
        found = sorted(n for n in self.listed if n in self.silent and n not in skip)
        self.quiet |= set(found)
        return found


class CopyingNodes(Nodes):
    """Nodes that record the copies asked of them instead of making them (and make no other
    call: the catalog's copies to the nodes are not the point here)."""

    def __init__(self, runtime: StaleRuntime) -> None:
        super().__init__("a", None, runtime)   # type: ignore[arg-type]
        self.copies: dict[str, list[tuple[Fragment, Sequence[str]]]] = {}

    def copy(self, copies: dict[str, list[tuple[Fragment, Sequence[str]]]], *,
             sync: bool = False) -> None:
        self.copies = copies

    def call_each(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> dict[str, Any]:
        return {}


def on(t: hfq.Table, runtime: StaleRuntime, **settings: Any) -> tuple[Session, CopyingNodes]:
    """A session on ``t``'s database whose runtime is ``runtime`` (as a driver attached to a
    cluster has), with :class:`CopyingNodes`."""
    base = t.session
    session = Session(base.store, settings=base.settings.replace(**settings), runtime=runtime,
                      local=("a", None))   # type: ignore[arg-type]
    session.nodes = CopyingNodes(runtime)
    return session, session.nodes


@pytest.fixture
def placed(tmp_path) -> hfq.Table:
    """Table ``t``: four partitions, each recorded on two of nodes a, b, c (``PLACED``)."""
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("t", hfq.schema.Schema({"x": hfq.schema.LONG}),
                        partition_by=hfq.Hash("x", 4))
    t.append(pa.table({"x": list(range(40))}))
    m = t.snapshot()
    assert len(m.partitions) == 4
    with Write(db.session, m) as write:
        for fragment, holders in zip(m.fragments(), PLACED):
            write.move(fragment.file, holders)
        write.commit("placed on a, b, c")
    return t.refresh()


def test_rebalance_counts_a_silent_node_as_down_and_copies_its_partitions(placed):
    runtime = StaleRuntime("abc", silent="c")
    session, nodes = on(placed, runtime, ping_timeout_s=1.5)
    before = {f.file: f.nodes for f in placed.snapshot().fragments()}
    moved = maintenance.rebalance(session)
    assert runtime.pinged == [(1.5, ("a",))]   # every server but this process's own node
    assert moved.unreachable == ("c",) and moved == {"t": 3}
    assert repr(moved) == "Counts({'t': 3}, unreachable=('c',))"
    # each partition that had a copy on c gets one on the live node it lacked, from the other
    want = {"b": [(f, ("a",)) for f, h in before.items() if h == ("a", "c")],
            "a": [(f, (h[1],) if h[0] == "c" else (h[0],)) for f, h in before.items()
                  if "c" in h and "a" not in h]}
    assert {dest: sorted((f.file, tuple(src)) for f, src in items)
            for dest, items in nodes.copies.items()} == {k: sorted(v) for k, v in want.items()}
    after = placed.refresh().snapshot()
    assert after.version == 3   # created, appended, placed, rebalanced
    assert all(sorted(f.nodes) == ["a", "b"] for f in after.fragments())


def test_rebalance_with_every_node_answering_moves_nothing(placed):
    session, nodes = on(placed, StaleRuntime("abc"))
    moved = maintenance.rebalance(session)
    assert moved == {"t": 0} and moved.unreachable == () and repr(moved) == "{'t': 0}"
    assert nodes.copies == {} and placed.refresh().version == 2


def test_a_node_gone_from_the_list_is_named_too(placed):
    """Ray noticed the death already: the node is off the list, but still holds copies."""
    session, _ = on(placed, StaleRuntime("ab"))
    moved = maintenance.rebalance(session)
    assert moved.unreachable == ("c",) and moved == {"t": 3}


def test_reachable_without_a_runtime_is_the_local_node(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    nodes = db.session.nodes
    assert nodes.reachable(0.5) == Reachability([nodes.local], [])


def test_results_read_as_the_plain_values():
    counts = maintenance.Counts({"files_removed": 2}, unreachable=["x"])
    assert counts == {"files_removed": 2} and dict(counts) == {"files_removed": 2}
    assert maintenance.Rows([{"a": "b"}]) == [{"a": "b"}]
    checked = maintenance.Checked(4)
    assert checked == 4 and repr(checked) == "4" and isinstance(checked + 1, int)
    assert repr(maintenance.Checked(4, unreachable=["x"])) == "Checked(4, unreachable=('x',))"


def test_ping_timeout_is_a_positive_setting():
    with pytest.raises(ValueError, match="ping_timeout_s must be positive"):
        hfq.config.Settings(ping_timeout_s=0)
