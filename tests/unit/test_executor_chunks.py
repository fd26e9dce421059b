"""How the executor cuts a node's queue into calls (hfq.runtime.executor._State.dispatch):
small results (map functions) go out in a few large calls -- each round trip costs more than
such a result's bytes -- with part of the queue kept back for whichever holder is free first;
rows go out in small calls.  Every unit is sent exactly once either way."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hfq.runtime.executor import _State
from hfq.runtime.nodes import Nodes


class _Runtime:
    def __init__(self, names: list[str], cpus: int) -> None:
        self.names, self.cpus = names, cpus

    def alive(self) -> list[str]:
        return self.names

    def info(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(cpus=self.cpus)


def _state(n: int, small_results: bool, names=("n1",), cpus: int = 2) -> _State:
    nodes = Nodes(None, None, _Runtime(list(names), cpus))   # type: ignore[arg-type]
    units = [SimpleNamespace(index=i, partition=f"p{i}", rows=1,
                             fragments=[SimpleNamespace(file=f"t/data/p{i}/f",
                                                        nodes=tuple(names))])
             for i in range(n)]
    return _State(nodes, units, small_results)


def _drain(state: _State) -> list[list[int]]:
    calls: list[list[int]] = []
    while state.pending:
        calls += [chunk for _, chunk in state.dispatch(lambda name: 0)]
    return calls


@pytest.mark.parametrize("small_results", [False, True])
def test_every_unit_goes_out_exactly_once(small_results):
    calls = _drain(_state(100, small_results))
    assert sorted(i for chunk in calls for i in chunk) == list(range(100))


def test_small_results_go_in_a_few_large_calls_with_some_kept_back():
    state = _state(100, True)
    first = [len(chunk) for _, chunk in state.dispatch(lambda name: 0)]
    assert first == [25, 19, 14, 11]           # 4 slots (2 CPUs): a slot's share each time
    assert state.pending == 31                 # kept back for the first free holder
    assert len(_drain(state)) + len(first) <= 16


def test_rows_go_in_small_calls():
    state = _state(100, False)
    first = [len(chunk) for _, chunk in state.dispatch(lambda name: 0)]
    assert first == [6, 5, 5, 5]               # a quarter of a slot's share, at most 32
    assert len(_drain(state)) + len(first) >= 30
