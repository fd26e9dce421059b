"""Which batches a query sees when a publisher's last batch is on some of its nodes only (a
publisher or node killed between two nodes' logs): :func:`hfq.live.snapshot.visible` over the
nodes' reports.  The oracle is the rule itself, written out per case: a batch is visible once
every node it went to that answered has it; a node that did not answer is gone (its copies are
read elsewhere)."""

from __future__ import annotations

from hfq.live.snapshot import visible


def report(**pubs: tuple[int, list[str]]) -> dict:
    """A node's report: per publisher, its last batch and the nodes that batch went to."""
    return {"pubs": {p: list(v) for p, v in pubs.items()}, "parts": {}}


def test_a_batch_logged_on_one_of_its_two_nodes_is_not_visible_yet():
    both = ["a", "b"]
    reports = {"a": report(p=(5, both)), "b": report(p=(4, both))}
    assert visible(reports) == {"p": 4}            # batch 5 is half-logged: left out
    reports["b"] = report(p=(5, both))
    assert visible(reports) == {"p": 5}            # on both: visible


def test_a_node_that_did_not_answer_does_not_hold_a_batch_back():
    reports = {"a": report(p=(5, ["a", "b"]))}     # b is gone: its copies are read from a
    assert visible(reports) == {"p": 5}


def test_each_publisher_is_judged_on_its_own_nodes():
    reports = {"a": report(p=(3, ["a", "b"]), q=(7, ["a", "c"])),
               "b": report(p=(3, ["a", "b"])),
               "c": report(q=(6, ["a", "c"]))}
    assert visible(reports) == {"p": 3, "q": 6}
    # a node the batch did not go to may lag without holding it back
    reports = {"a": report(p=(9, ["a", "c"])), "b": report(p=(2, ["a", "b"])),
               "c": report(p=(9, ["a", "c"]))}
    assert visible(reports) == {"p": 9}
