"""A table's live side in its versions: whether it takes live rows, and the *cut* -- what of
the live rows its files hold.

A table takes live rows once a publisher opened on it: a version (op ``live``) whose options
say so (``options["live"]``).  Each write-down commits its files together with the cut it
made: per day, per publisher, the last sequence number whose rows of that day are in the
files.  A reader pinned to a version reads the live rows that version's cut does not hold --
so a query sees each row exactly once whether it runs before, during or after a write-down:
the files and the cut change in one commit.

Examples
--------
>>> merge_cuts({"2024-01-02": {"a": 5}}, {"2024-01-02": {"a": 7, "b": 1}})
{'2024-01-02': {'a': 7, 'b': 1}}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from hfq.catalog.catalog import Catalog, Transaction
from hfq.catalog.records import Manifest
from hfq.errors import CommitConflictError
from hfq.live.node import Cut, LiveSpec
from hfq.session import Session
from hfq.write import Write

__all__ = ["CutTransaction", "cut_of", "enable", "is_live", "live_spec", "merge_cuts"]

LIVE = "live"


def is_live(manifest: Manifest) -> bool:
    """Has a publisher ever opened on this table (at this version)?"""
    return LIVE in manifest.options


def cut_of(manifest: Manifest) -> dict[str, dict[str, int]]:
    """The live rows ``manifest``'s files hold: day -> publisher -> last sequence number."""
    live = manifest.options.get(LIVE) or {}
    return {str(d): {str(p): int(s) for p, s in pubs.items()}
            for d, pubs in (live.get("cut") or {}).items()}


def merge_cuts(a: Cut, b: Cut) -> dict[str, dict[str, int]]:
    """Both cuts: the larger sequence number per day and publisher."""
    out = {d: dict(p) for d, p in a.items()}
    for day, pubs in b.items():
        mine = out.setdefault(day, {})
        for pub, seq in pubs.items():
            mine[pub] = max(int(seq), mine.get(pub, -1))
    return out


def live_spec(session: Session, manifest: Manifest) -> LiveSpec:
    """What the nodes need to know of ``manifest``'s table to keep its live rows."""
    s = session.settings
    return LiveSpec(manifest.table, manifest.table_id, manifest.schema.arrow,
                    manifest.partition_by, s.live_segment_bytes, s.live_group_commit_s,
                    s.live_grace_s)


class CutTransaction(Transaction):
    """A change that also records live rows its files now hold (``cut``); ``expect``: the
    cut of those days it read the live rows against -- another write-down of them committed
    meanwhile is a :class:`~hfq.errors.CommitConflictError`, nothing published."""

    def __init__(self, catalog: Catalog, base: Manifest, *, cut: Cut,
                 expect: Cut | None = None) -> None:
        super().__init__(catalog, base)
        self.cut = {d: dict(p) for d, p in cut.items()}
        self.expect = expect

    def apply(self, head: Manifest, op: str, *, version: int | None = None) -> Manifest:
        current = cut_of(head)
        if self.expect is not None:
            for day in self.cut:
                if current.get(day, {}) != dict(self.expect.get(day, {})):
                    raise CommitConflictError(
                        f"table {head.table!r}: another write-down of {day} committed while "
                        f"this {op} ran; nothing was committed, run it again")
        manifest = super().apply(head, op, version=version)
        options: dict[str, Any] = dict(manifest.options)
        live = dict(options.get(LIVE) or {})
        live["cut"] = merge_cuts(current, self.cut)
        options[LIVE] = live
        return dataclasses.replace(manifest, options=options)


def enable(session: Session, manifest: Manifest) -> Manifest:
    """The newest version of ``manifest``'s table, made to take live rows if it did not."""
    head = session.snapshot(manifest.table)
    if is_live(head):
        return head
    with Write(session, head, transaction=lambda c, b: CutTransaction(c, b, cut={})) as w:
        return w.commit("live")


def cut_for(manifest: Manifest, days: Mapping[str, Any] | None = None
            ) -> dict[str, dict[str, int]]:
    """:func:`cut_of`, restricted to ``days`` when given."""
    cut = cut_of(manifest)
    return cut if days is None else {d: p for d, p in cut.items() if d in days}
