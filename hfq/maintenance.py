"""Maintenance of the copies on the nodes: rebalance, repair, verify, vacuum, and the catalog's
check -- each deciding on the nodes that answer *now*, not on a stale list.

A node that crashed stays on Ray's list of live nodes for 10-30 s (until Ray's health checks
give up on it), and calls to its server hang meanwhile.  Trusting that list, a rebalance right
after a crash would see every copy "alive" and move nothing, leaving partitions at one copy,
silently.  So every call here takes the database's :class:`~hfq.session.Session`, first pings
every node's server (:meth:`~hfq.runtime.nodes.Nodes.reachable`, ``settings.ping_timeout_s``)
and counts a node that does not answer as down; its result says which nodes it counted so
(``unreachable``: nodes holding copies the call concerns that are not alive, and any node that
did not answer), while reading as the plain dict, list or number it always was.

:class:`hfq.Database` (``rebalance``, ``repair``, ``check``) and :class:`hfq.Table` (``verify``,
``vacuum``) delegate here; the command line prints what they return.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from hfq import faults
from hfq.catalog.files import list_changed_files, live_writer, sweep_changed
from hfq.catalog.records import Fragment, Manifest
from hfq.catalog.replica import catalog_files, read_catalog_files, write_catalog_files
from hfq.catalog.vacuum import vacuum_scope
from hfq.errors import CorruptPartitionError
from hfq.runtime.nodes import Nodes
from hfq.runtime.placement import rebalanced, replica_count
from hfq.runtime.task import StoreCall
from hfq.session import Session
from hfq.write import Write

__all__ = ["Checked", "Counts", "Rows", "check", "rebalance", "repair", "vacuum", "verify"]

log = logging.getLogger(__name__)


# -- results -----------------------------------------------------------------------------------
class _Unreachable:
    """The ``unreachable`` nodes of a result; its repr is the plain value's while there are
    none."""

    unreachable: tuple[str, ...]

    def __repr__(self) -> str:
        plain = super().__repr__()
        if not self.unreachable:
            return plain
        return f"{type(self).__name__}({plain}, unreachable={self.unreachable!r})"


class Counts(_Unreachable, dict[str, int]):
    """A dict of counts (files moved per table, files removed...) and the nodes the call
    counted as down, ``unreachable``.

    Examples
    --------
    >>> moved = Counts({"quotes": 3}, unreachable=["node-b"])
    >>> moved["quotes"], moved.unreachable, moved == {"quotes": 3}
    (3, ('node-b',), True)
    >>> moved
    Counts({'quotes': 3}, unreachable=('node-b',))
    >>> Counts({"quotes": 0})                           # every node answered: a plain dict
    {'quotes': 0}
    """

    def __init__(self, counts: Any = (), *, unreachable: Iterable[str] = ()) -> None:
        super().__init__(counts)
        self.unreachable = tuple(unreachable)


class Rows(_Unreachable, list[dict[str, str]]):
    """A list of rows (one per problem found) and the nodes the call counted as down,
    ``unreachable``.

    Examples
    --------
    >>> rows = Rows([], unreachable=["node-b"])
    >>> rows == [], not rows, rows.unreachable
    (True, True, ('node-b',))
    """

    def __init__(self, rows: Iterable[dict[str, str]] = (), *,
                 unreachable: Iterable[str] = ()) -> None:
        super().__init__(rows)
        self.unreachable = tuple(unreachable)


class Checked(_Unreachable, int):
    """A number of copies checked, and the nodes whose copies were not, ``unreachable``.

    Examples
    --------
    >>> n = Checked(8, unreachable=["node-b"])
    >>> n + 0, n == 8, n.unreachable
    (8, True, ('node-b',))
    """

    unreachable: tuple[str, ...]

    def __new__(cls, checked: int, *, unreachable: Iterable[str] = ()) -> Checked:
        self = super().__new__(cls, checked)
        self.unreachable = tuple(unreachable)
        return self


# -- the calls ---------------------------------------------------------------------------------
def rebalance(session: Session, tables: Iterable[str] | None = None) -> Counts:
    """Give every partition of ``tables`` (default: all) its ``replicas`` copies on the nodes
    that answer now, moving partitions to nodes that joined; files moved per table.

    See :meth:`hfq.Database.rebalance`.  A node that holds copies but does not answer a ping
    counts as down: its copies are re-created on the others, and it is named in the
    result's ``unreachable``.

    Examples
    --------
    >>> from hfq import maintenance
    >>> maintenance.rebalance(db.session)          # no node joined or left: nothing to move
    {'quotes': 0}
    """
    nodes = session.nodes_for(start=True)   # the node servers: the runtime starts if need be
    reach = nodes.reachable(session.settings.ping_timeout_s)
    catalog = session.catalog
    snapshots = {name: catalog.snapshot(name) for name in catalog.tables()}
    # a node holding no file of any table joined: one holding nothing of a table alone
    # may just be off that table's placement (bars next to their source partitions)
    used = {n for m in snapshots.values() for f in m.fragments() for n in nodes.holders(f)}
    names = list(tables or snapshots)
    moved = {name: _rebalance(session, nodes, snapshots.get(name) or catalog.snapshot(name),
                              reach.alive, used) for name in names}
    down = _down(nodes, reach.alive, reach.unreachable,
                 (f for name in names for f in (snapshots.get(name) or
                                                catalog.snapshot(name)).fragments()))
    return Counts(moved, unreachable=down)


def _rebalance(session: Session, nodes: Nodes, m: Manifest, alive: Sequence[str],
               used: set[str]) -> int:
    """Copy each partition of ``m``'s table to where
    :func:`~hfq.runtime.placement.rebalanced` puts it over the ``alive`` nodes (``used``: the
    nodes holding files of some table; the others joined), then commit the move."""
    name = m.table
    k = replica_count(m.options.get("replicas"), alive, name)
    new = [n for n in alive if n not in used]
    copies: dict[str, list[tuple[Fragment, Sequence[str]]]] = {}
    with Write(session, m) as write:
        for path, part in m.partitions.items():
            target = rebalanced(path, nodes.common_holders(part.fragments), alive, new, k)
            for fragment in part.fragments:
                held = nodes.holders(fragment)
                if set(held) == set(target):
                    continue
                sources = [n for n in held if n in alive]
                if not sources:   # nothing to copy from until a holder returns
                    log.warning("table %s: no live copy of %s (held by %s); rebalance leaves "
                                "it", name, fragment.file, ", ".join(held))
                    continue
                for dest in target:
                    if dest not in held:
                        copies.setdefault(dest, []).append((fragment, sources))
                write.move(fragment.file, target)
        nodes.copy(copies)
        faults.point("rebalance.copy.before_commit")
        if write.txn.moved:
            write.commit("rebalance")
        return len(write.txn.moved)


def repair(session: Session, tables: Iterable[str] | None = None) -> Rows:
    """Check every copy of every file of ``tables`` (default: all) on the nodes that answer
    now, replacing each damaged or missing one from an intact copy; one row per copy that
    was not intact (see :meth:`hfq.Database.repair`), a row per holder that is down.

    Examples
    --------
    >>> from hfq import maintenance
    >>> rows = maintenance.repair(db.session, ["quotes"])
    >>> rows, rows.unreachable                       # every copy intact, every node answered
    ([], ())
    """
    nodes, catalog = session.nodes, session.catalog
    reach = nodes.reachable(session.settings.ping_timeout_s)
    rows: list[dict[str, str]] = []
    fragments: list[Fragment] = []
    for name in (tables or catalog.tables()):
        by_node: dict[str, list[Fragment]] = {}
        for fragment in catalog.snapshot(name).fragments():
            fragments.append(fragment)
            for node in nodes.holders(fragment):
                by_node.setdefault(node, []).append(fragment)
        found = nodes.repair(by_node)
        rows += [{**r, "table": r["table"] or name} for r in found]
    return Rows(rows, unreachable=_down(nodes, reach.alive, reach.unreachable, fragments))


def verify(session: Session, m: Manifest) -> Checked:
    """Check every copy of every file of version ``m`` on the nodes that answer now; the
    copies checked (see :meth:`hfq.Table.verify`).  Raises
    :class:`~hfq.errors.CorruptPartitionError` listing every bad copy.

    Examples
    --------
    >>> from hfq import maintenance
    >>> maintenance.verify(db.session, quotes.snapshot())
    4
    """
    nodes = session.nodes
    reach = nodes.reachable(session.settings.ping_timeout_s)
    by_node: dict[str, list[Fragment]] = {}
    for fragment in m.fragments():
        for name in nodes.holders(fragment):
            if name in reach.alive:
                by_node.setdefault(name, []).append(fragment)
    checked, problems = nodes.verify(by_node)   # copies on nodes that die meanwhile: left out
    if problems:
        raise CorruptPartitionError(f"table {m.table!r}: {len(problems)} bad file "
                                    "copies (db.repair() replaces them from good "
                                    "ones):\n" + "\n".join(problems))
    return Checked(checked, unreachable=_down(nodes, reach.alive, reach.unreachable,
                                              m.fragments()))


def vacuum(session: Session, table: str, *, keep_versions: int | None = None,
           grace_s: float | None = None) -> Counts:
    """Remove ``table``'s files no kept version places on their node, on the nodes that
    answer now (see :meth:`hfq.Table.vacuum`): ``files_removed``, ``versions_forgotten``.

    Examples
    --------
    >>> from hfq import maintenance
    >>> maintenance.vacuum(db.session, "quotes")
    {'files_removed': 0, 'versions_forgotten': 0}
    """
    nodes, catalog, settings = session.nodes, session.catalog, session.settings
    grace = settings.orphan_grace_s if grace_s is None else grace_s
    reach = nodes.reachable(settings.ping_timeout_s)
    forgotten = 0
    if keep_versions is not None:
        forgotten = catalog.forget_versions(table, keep_versions, grace)
    # only what changed since the last vacuum (hfq.catalog.vacuum): nodes list first
    scope = vacuum_scope(catalog, table)
    listings = nodes.call_each(StoreCall(list_changed_files), names=reach.alive,
                               args_for=lambda n: (table, *scope.listing_args(n)))
    writer = live_writer()   # after the listing: files of this process's failed writes go
    referenced, committed = scope.referenced(listings, nodes.holders)
    faults.point("vacuum.before_remove")
    swept = nodes.call_each(StoreCall(sweep_changed), names=list(listings),
                            args_for=lambda n: (table, listings[n], referenced[n],
                                                grace, committed, writer))
    pieces = scope.finish(grace, listings, {n: s[1] for n, s in swept.items()})
    return Counts({"files_removed": sum(s[0] for s in swept.values()) + pieces,
                   "versions_forgotten": forgotten},
                  unreachable=_down(nodes, reach.alive, reach.unreachable,
                                    catalog.snapshot(table).fragments()))


def check(session: Session, *, repair: bool = False) -> Rows:
    """Read every catalog file back and report every damaged, missing or inconsistent one
    (see :meth:`hfq.Database.check`); with a runtime running, the copies of the catalog on
    the other nodes that answer now serve to restore it.

    Examples
    --------
    >>> from hfq import maintenance
    >>> maintenance.check(db.session)
    []
    """
    catalog = session.catalog
    fetch = None
    unreachable: list[str] = []
    if session.running:
        nodes = session.nodes_for(start=True)
        reach = nodes.reachable(session.settings.ping_timeout_s)
        unreachable = reach.unreachable
        others = [n for n in reach.alive if n != session.catalog_node]

        def fetch(rels: list[str]) -> dict[str, list[bytes]]:
            out: dict[str, list[bytes]] = {}
            found = nodes.call_each(StoreCall(read_catalog_files), rels, names=others)
            for files in found.values():
                for rel, data in files.items():
                    out.setdefault(rel, []).append(data)
            return out

        if repair:
            listed = nodes.call_each(StoreCall(catalog_files), names=others)
            lacking = sorted({r for names in listed.values() for r in names} -
                             set(catalog_files(catalog.store)))
            adopted = catalog.adopt(fetch(lacking)) if lacking else []
            if adopted:
                log.warning("catalog: %d files gathered from the nodes' copies into %s",
                            len(adopted), catalog.store.url)
    rows = catalog.check(repair=repair, fetch=fetch)
    if repair and session.running:
        mine = set(catalog_files(catalog.store))
        for node, names in nodes.call_each(StoreCall(catalog_files), names=others).items():
            missing = sorted(mine - set(names))
            if missing:
                nodes.call(node, StoreCall(write_catalog_files),
                           read_catalog_files(catalog.store, missing))
    return Rows(rows, unreachable=unreachable)


def _down(nodes: Nodes, alive: Sequence[str], silent: Iterable[str],
          fragments: Iterable[Fragment]) -> list[str]:
    """The nodes a call counted as down: those that did not answer its ping, and the
    holders of ``fragments`` that are not alive."""
    live = set(alive)
    return sorted({*silent, *(n for f in fragments for n in nodes.holders(f) if n not in live)})
