"""The catalog's side of a vacuum that follows the change, not the table.

A vacuum removes the data files no kept version references (files of writers that died,
files of forgotten versions, stale copies after a rebalance) and the manifest pieces no kept
version uses.  Looking at every file and every version each time costs O(table x versions);
this looks only at what may have changed since the last vacuum that finished:

* The catalog keeps a small state, ``<table>/.vacuum.json`` (empty from the table's
  creation until its first vacuum): the versions kept at the last vacuum, the pieces they
  referenced and, per node that finished its sweep, when its listing started (its clock)
  and the partitions where it spared a file.  A kept version is immutable, so the pieces
  kept now are those, less the forgotten versions' (recomputed when any was forgotten),
  plus those of the versions committed since.
* *Dirty* partitions, named to every node: those of the pieces new since the last vacuum
  (commits may have written, replaced or moved files there) and those of the pieces no kept
  version uses any more (forgotten versions, commits that failed): their files may have lost
  their last reference.
* Each node (:func:`hfq.catalog.files.list_changed_files`) lists the dirty partitions, the
  partition directories changed since its own last sweep (one ``stat`` each) and those where
  its last sweep spared a file -- provided the state records that sweep; otherwise (a new
  node, one that was down last time, any doubt) it lists everything.
* The referenced files are then read from the kept pieces of the groups listed only, and
  each node sweeps exactly as a full vacuum would (:func:`hfq.catalog.files.sweep`).

Whenever the state is missing, unreadable, made by format-1 versions, or a piece it
remembers vanished without a vacuum's knowledge, the vacuum is a full one.  The state is
saved last, after the sweeps, in one atomic rename: a vacuum that dies midway leaves the
previous state (the next one looks at more, never less), and a node that did not finish
is left out of it (it sweeps fully next time).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hfq.catalog.catalog import PIECES, VACUUM_STATE, Catalog
from hfq.catalog.files import Listing
from hfq.catalog.records import Fragment, PartitionEntry, Partitions, PieceRef, group_of
from hfq.errors import ManifestError, TableNotFoundError
from hfq.storage.store import temp_name

__all__ = ["VacuumScope", "vacuum_scope"]


@dataclass
class VacuumScope:
    """What one vacuum of ``table`` looks at; made by :func:`vacuum_scope` *before* the nodes
    list their files."""

    catalog: Catalog
    table: str
    depth: int
    """Partition levels: directories under ``<table>/data``."""
    dirty: list[str]
    """Partitions every node must look at whatever their directories' times."""
    nodes: dict[str, dict[str, Any]]
    """Per node of the last vacuum: ``since`` (its listing's start), ``recheck``."""
    versions: list[int]
    pieces: dict[str, PieceRef]
    """Name -> reference of every piece the kept versions use."""
    ledgers: set[str]
    legacy: bool
    """A kept version is in format 1 (no pieces): referenced files come from every kept
    manifest, and no state is saved."""
    listed_pieces: list[tuple[str, float]] = field(default_factory=list)
    kept_pieces: set[str] | None = None
    """After :meth:`referenced`: names of every piece and ledger a kept version uses."""

    def listing_args(self, node: str) -> tuple[float | None, int, list[str]]:
        """``(since, depth, look)`` of :func:`~hfq.catalog.files.list_changed_files` on
        ``node``: since None (list everything) unless the last vacuum recorded it."""
        last = self.nodes.get(node)
        if last is None:
            return None, self.depth, []
        return float(last["since"]), self.depth, sorted({*self.dirty, *last["recheck"]})

    def referenced(self, listings: Mapping[str, Listing],
                   holders: Callable[[Fragment], Iterable[str]]
                   ) -> tuple[dict[str, set[str]], set[str]]:
        """After every node listed: per node, the listed files a kept version places on it;
        and the listed files any kept version references (on any node).  Reads the kept
        pieces of the groups listed only (every piece after a full listing)."""
        prefix = f"{self.table}/data/"
        listed = {rel for listing in listings.values() for rel, _ in listing.files}
        pieces, ledgers = dict(self.pieces), set(self.ledgers)
        fragments: Iterable[Fragment]
        if self.legacy:
            fragments = (f for m in self.catalog.kept_manifests(self.table)
                         for f in m.fragments())
        else:
            for v in self.catalog.versions(self.table):   # committed since the scope was made
                if v not in self.versions:
                    _add_version(self.catalog, self.table, v, pieces, ledgers)
            groups = None if any(listing.full for listing in listings.values()) else \
                {group_of(rel[len(prefix):]) for rel in listed if rel.startswith(prefix)}
            fragments = (f for ref in pieces.values()
                         if groups is None or ref.group in groups
                         for entry in self._entries(ref).values()
                         for f in entry.fragments)
        per_node: dict[str, set[str]] = {n: set() for n in listings}
        committed: set[str] = set()
        for f in fragments:
            if f.file in listed:
                committed.add(f.file)
                for node in holders(f):
                    if node in per_node:
                        per_node[node].add(f.file)
        self.kept_pieces = set(pieces) | ledgers
        return per_node, committed

    def _entries(self, ref: PieceRef) -> Mapping[str, PartitionEntry]:
        """The partitions of a kept piece; none when it went because every version using it
        was forgotten meanwhile (a concurrent vacuum), a :class:`ManifestError` otherwise."""
        try:
            return self.catalog.piece(self.table, ref)
        except ManifestError:
            still: dict[str, PieceRef] = {}
            for v in self.catalog.versions(self.table):
                _add_version(self.catalog, self.table, v, still, set())
            if ref.name in still:
                raise
            return {}

    def finish(self, grace_s: float, listings: Mapping[str, Listing],
               spared: Mapping[str, list[str]]) -> int:
        """After the nodes swept (``spared``: per node that finished, the partitions where
        it spared a file): remove the pieces no kept version uses, save the state; returns
        the pieces removed."""
        if self.legacy:
            return self.catalog.sweep_pieces(self.table, grace_s)
        removed = self.catalog.sweep_pieces(
            self.table, grace_s, listed=None if self.kept_pieces is None else self.listed_pieces,
            referenced=self.kept_pieces)
        state = {"versions": self.versions,
                 "pieces": [r.to_json() for r in self.pieces.values()],
                 "ledgers": sorted(self.ledgers),
                 "nodes": {n: {"since": listings[n].started, "recheck": spared[n]}
                           for n in spared}}
        _write_state(self.catalog, self.table, state)
        return removed


def _write_state(catalog: Catalog, table: str, state: Mapping[str, Any]) -> None:
    """Replace ``table``'s vacuum state (atomically: a temporary, then a rename)."""
    store, rel = catalog.store, f"{table}/{VACUUM_STATE}"
    tmp = temp_name(rel)
    try:
        store.write_bytes(tmp, json.dumps(state, separators=(",", ":")).encode())
        store.rename(tmp, rel)
    except BaseException:
        store.remove(tmp)
        raise


def vacuum_scope(catalog: Catalog, table: str) -> VacuumScope:
    """The scope of a vacuum of ``table`` starting now (see the module's docstring)."""
    listed = catalog.list_pieces(table)   # before the versions are read (sweep_pieces' rule)
    versions = catalog.versions(table)
    head = catalog.snapshot(table)
    depth = len(head.partition_by.levels())
    state = _load(catalog, table)
    pieces: dict[str, PieceRef] = {}
    ledgers: set[str] = set()
    seen: dict[str, PieceRef] = {}
    todo = versions
    if state is not None:
        seen = {r.name: r for r in state["pieces"]}
        if set(state["versions"]) <= set(versions):   # none forgotten: the kept pieces grow
            pieces, ledgers = dict(seen), set(state["ledgers"])
            known = set(state["versions"])
            todo = [v for v in versions if v not in known]
    legacy = False
    for v in todo:
        legacy |= not _add_version(catalog, table, v, pieces, ledgers)
    scope = VacuumScope(catalog, table, depth, [], {}, versions, pieces, ledgers, legacy,
                        listed)
    if state is None or legacy or not state["nodes"]:
        return scope
    on_disk = {rel.rsplit("/", 1)[-1] for rel, _ in listed}
    if any(n not in pieces and n not in on_disk for n in seen):
        return scope   # a piece went without a vacuum knowing what it held: sweep everything
    dirty: set[str] = set()
    for name, ref in pieces.items():
        if name not in seen:
            dirty |= set(catalog.piece(table, ref))
    for name in on_disk - set(pieces) - ledgers:
        if "-_loads." in name or "-_history." in name:
            continue
        paths = _piece_paths(catalog, table, name)
        if paths is None:
            return scope   # unreadable: what it held is unknown
        dirty |= paths
    scope.nodes, scope.dirty = state["nodes"], sorted(dirty)
    return scope


def _add_version(catalog: Catalog, table: str, version: int, pieces: dict[str, PieceRef],
                 ledgers: set[str]) -> bool:
    """Add the pieces of ``version`` (when still on record); False when it is format 1."""
    try:
        m = catalog.version(table, version)
    except TableNotFoundError:   # forgotten meanwhile
        return True
    if m.loads:
        ledgers.add(m.loads)
    if m.history:   # (kept with the ledgers: neither names partitions)
        ledgers.add(m.history)
    if not isinstance(m.partitions, Partitions):
        return False
    pieces.update((r.name, r) for r in m.partitions.refs.values())
    return True


def _piece_paths(catalog: Catalog, table: str, name: str) -> set[str] | None:
    """The partitions of a piece no kept version uses, or None if it cannot be read whole."""
    try:
        data = catalog.store.read_bytes(f"{table}/{PIECES}/{name}")
        if not name.endswith(f".{hashlib.sha256(data).hexdigest()[:32]}.json"):
            return None
        return set(json.loads(data)["partitions"])
    except (OSError, ValueError, KeyError, TypeError):   # gone meanwhile, or damaged
        return None


def _load(catalog: Catalog, table: str) -> dict[str, Any] | None:
    """The vacuum state of ``table`` (pieces as references), or None: none, or unusable."""
    try:
        state = json.loads(catalog.store.read_bytes(f"{table}/{VACUUM_STATE}"))
        nodes = state["nodes"]
        return {"versions": [int(v) for v in state["versions"]],
                "pieces": [PieceRef.from_json(r) for r in state["pieces"]],
                "ledgers": [str(n) for n in state["ledgers"]],
                "nodes": {str(n): {"since": float(v["since"]),
                                   "recheck": [str(p) for p in v["recheck"]]}
                          for n, v in nodes.items()}}
    except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
        return None
