"""A query's live rows: pinned with its version, read by the node stage where they are.

A query over a table that takes live rows pins, when it is planned, *its version and the live
rows visible then* (:class:`Snapshot`):

* which batches: every publisher's batches up to a sequence number.  A batch is visible once
  it is on every node it was sent to that is alive (the nodes report their last batch of each
  publisher and where that batch went; a publisher sends one batch at a time, so only its
  last one can be half-logged -- and it is then left out: nothing unacknowledged is
  half-visible).  A publisher's acknowledged batches are on all their nodes, so it reads its
  own writes.  Every node knows every slice number of the batches it logged, its own and the
  other nodes' (:attr:`~hfq.live.log.Entry.others`), so a slice whose nodes are all gone is
  an error naming its partition, not a row silently missing.
* which rows of them: those the version's files do not hold (its written-down cut,
  :mod:`hfq.live.cut`) -- a write-down moves rows from live to files in one commit, so a
  query at any version sees each row exactly once.
* where: for each partition and publisher the slices are numbered 1, 2, ... on every node;
  each node reports the runs of numbers it holds, and a partition is read from a node holding
  all of them (any such node: the runtime's failover), or piece by piece from several when
  no single node has them all (a replica that missed batches while it was down).  A slice
  nobody holds is an error naming the partition -- never a partial answer.

Each partition's live rows become a :class:`LiveFragment` in the query's unit of that
partition (beside its files), so the node stage reads both where they are and runs once over
them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import polars as pl
import pyarrow as pa

from hfq.catalog.records import Manifest
from hfq.errors import NodeUnavailableError, PartitionUnavailableError
from hfq.live.cut import cut_of, live_spec
from hfq.live.node import Cut, LiveSnapshotExpiredError, LiveSpec, frame_of, report, rows_of
from hfq.live.rows import columns_of
from hfq.query.plan import Filters, Unit
from hfq.runtime.nodes import Nodes
from hfq.runtime.task import NodeContext
from hfq.session import Session

__all__ = ["LiveFragment", "LiveRowsUnavailableError", "LiveView", "Snapshot", "take"]

log = logging.getLogger(__name__)


class LiveRowsUnavailableError(PartitionUnavailableError):
    """Live rows of a partition that no live node holds."""


Picks = dict[str, tuple[int, int]]


@dataclass(frozen=True)
class LiveFragment:
    """The live rows of one partition a snapshot reads (a fragment that reads itself: the
    engine's node stage calls :meth:`read_rows` on the node the unit runs on)."""

    spec: LiveSpec
    partition: str
    nodes: tuple[str, ...]
    """Where the unit may run (the partition's file holders when it has files)."""
    pieces: tuple[tuple[tuple[str, ...], Picks], ...]
    """(nodes that hold every slice of the picks, the picks): each read from one of them."""
    seqs: Mapping[str, int]
    cut: Cut
    version: int
    rows: int
    days: tuple[str, ...] = ()
    """The days of its rows (of every slice held, visible or not)."""
    bytes: int = 0
    crc32: int = 0

    @property
    def file(self) -> str:
        return f"{self.spec.table}/_live/{self.partition}"

    def without_stats(self) -> LiveFragment:
        return self

    def _pieces(self, node: NodeContext, spec: Any, call: Any) -> list[Any]:
        """Each piece's rows (``spec.columns`` and the columns ``spec.where`` needs) by
        ``call`` (:func:`~hfq.live.node.rows_of` or :func:`~hfq.live.node.frame_of`): here
        when this node holds it, else on a node that does."""
        columns = list(dict.fromkeys([*spec.columns, *getattr(spec, "where_columns", [])]))
        parts = []
        for holders, picks in self.pieces:
            args = (self.spec, self.partition, self.seqs, picks, self.cut, self.version,
                    columns)
            if node.name in holders or node.name is None and not holders:
                parts.append(call(node, *args))
                continue
            parts.append(_from_holders(node.nodes(), holders, args, self.partition,
                                       call=call))
        return parts

    def read_rows(self, node: NodeContext, spec: Any) -> pa.Table:
        """The rows, ``spec.columns`` of them, rows passing ``spec.where`` -- each piece
        read here when this node holds it, else from a node that does."""
        parts = self._pieces(node, spec, rows_of)
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts,
                                                                   promote_options="permissive")
        where = getattr(spec, "where", None)
        if where is not None and table.num_rows:
            frame = pl.from_arrow(table)
            assert isinstance(frame, pl.DataFrame)
            table = frame.filter(where).to_arrow()
        return table.select(list(spec.columns))

    def read_frame(self, node: NodeContext, spec: Any) -> pl.DataFrame:
        """:meth:`read_rows` as a polars frame (what the engine's node stage reads): the
        partition's live rows are converted once on their node and kept, so a query after
        a batch converts only the batch's rows."""
        parts = self._pieces(node, spec, frame_of)
        frame = parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical_relaxed",
                                                           rechunk=False)
        where = getattr(spec, "where", None)
        if where is not None and frame.height:
            frame = frame.filter(where)
        return columns_of(frame, spec.columns)


def _from_holders(nodes: Nodes, holders: Sequence[str], args: tuple[Any, ...],
                  partition: str, *, call: Any = rows_of) -> Any:
    errors = []
    for name in [n for n in holders if n in nodes.alive()]:
        try:
            return nodes.call(name, call, *args)
        except NodeUnavailableError as exc:
            errors.append(str(exc))
    raise LiveRowsUnavailableError(
        f"live rows of partition {partition} are held by {', '.join(holders)}, none of them "
        f"alive{': ' + '; '.join(errors) if errors else ''}", [partition])


@dataclass
class Snapshot:
    """The live rows visible at one moment, for one version (see the module)."""

    version: int
    cut: Cut
    seqs: dict[str, int]
    """Per publisher: batches up to this number are visible."""
    fragments: dict[str, tuple[list[Any], LiveFragment]]
    """Per partition with visible live rows: its key and what reads them."""

    @property
    def rows(self) -> int:
        return sum(f.rows for _, f in self.fragments.values())


def take(session: Session, spec: LiveSpec, cut: Cut, version: int,
         bounds: Mapping[str, tuple] | None = None) -> Snapshot:
    """The live rows of ``spec``'s table visible now, for a reader at ``version`` (whose
    files hold ``cut``), of the partitions that may match ``bounds``."""
    nodes = session.nodes
    reports = nodes.call_each(report, spec, dict(bounds) if bounds else None, cut, version)
    seqs = visible(reports)
    fragments: dict[str, tuple[list[Any], LiveFragment]] = {}
    per_part: dict[str, dict[str, dict[str, Any]]] = {}
    keys: dict[str, list[Any]] = {}
    sizes: dict[str, dict[str, int]] = {}
    days: dict[str, set[str]] = {}
    for name, rep in reports.items():
        for path, part in rep["parts"].items():
            keys[path] = part["key"]
            days.setdefault(path, set()).update(part.get("days", ()))
            sizes.setdefault(path, {})[name] = int(part["rows"])
            for pub, got in part["pubs"].items():
                per_part.setdefault(path, {}).setdefault(pub, {})[name] = got
    local = nodes.local
    for path in sorted(per_part):
        pieces = _cover(path, per_part[path], seqs, local)
        if not pieces:
            continue
        rows = max(sizes[path].values())
        holders = pieces[0][0] if len(pieces) == 1 else \
            tuple(sorted(set().union(*(set(h) for h, _ in pieces))))
        fragments[path] = (keys[path], LiveFragment(spec, path, holders, tuple(pieces),
                                                    seqs, cut, version, rows,
                                                    tuple(sorted(days[path]))))
    return Snapshot(version, cut, seqs, fragments)


def visible(reports: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Per publisher, the last batch every node it went to has (see the module)."""
    tops: dict[str, int] = {}
    went: dict[str, set[str]] = {}
    for rep in reports.values():
        for pub, (seq, where) in rep["pubs"].items():
            if seq > tops.get(pub, 0):
                tops[pub] = seq
                went[pub] = set(where)
            elif seq == tops.get(pub):
                went[pub] |= set(where)
    out = {}
    for pub, seq in tops.items():
        # every node it went to that answered has it (one that did not answer is gone:
        # the batch's rows there are read from the other copies, or missed loudly)
        complete = all(reports[n]["pubs"].get(pub, [0])[0] >= seq
                       for n in went.get(pub, ()) if n in reports)
        out[pub] = seq if complete else seq - 1
    return out


def _cover(path: str, pubs: Mapping[str, Mapping[str, Any]], seqs: Mapping[str, int],
           local: str | None) -> list[tuple[tuple[str, ...], Picks]]:
    """How to read ``path``'s visible slices: [(nodes holding them all, picks)], one piece
    when some nodes hold every slice of every publisher."""
    need: dict[str, int] = {}
    for pub, by_node in pubs.items():
        top = seqs.get(pub, 0)
        k = 0
        for got in by_node.values():
            seq, last, before = got["last"]
            k = max(k, last if seq <= top else before)
        if k > 0:
            need[pub] = k
    if not need:
        return []

    def holds(node: str, pub: str, lo: int, hi: int) -> bool:
        got = pubs[pub].get(node)
        return got is not None and any(a <= lo and hi <= b for a, b in got["runs"])

    every = set().union(*(set(pubs[p]) for p in need))
    whole = sorted((n for n in every if all(holds(n, p, 1, k) for p, k in need.items())),
                   key=lambda n: (n != local, n))
    if whole:
        return [(tuple(whole), {p: (1, k) for p, k in need.items()})]
    pieces: list[tuple[tuple[str, ...], Picks]] = []
    for pub, k in need.items():
        at = 1
        while at <= k:
            best: tuple[int, str] | None = None
            for node, got in pubs[pub].items():
                for a, b in got["runs"]:
                    if a <= at <= b and (best is None or min(b, k) > best[0]):
                        best = (min(b, k), node)
            if best is None:
                gone = [g["gone"] for g in pubs[pub].values()
                        if g.get("gone") and g["gone"][0] >= at]
                if gone:
                    raise LiveSnapshotExpiredError(
                        f"live rows of partition {path} (publisher {pub!r}, slices {at}.."
                        f"{k}) were written down at version {gone[0][1]} and dropped after "
                        "live_grace_s; this read is of an older version: run the query again")
                raise LiveRowsUnavailableError(
                    f"live rows of partition {path}: slices {at}..{k} of publisher {pub!r} "
                    f"are on no live node (nodes reporting: {', '.join(sorted(pubs[pub]))});"
                    " no partial answer was returned -- restart the nodes that held them",
                    [path])
            pieces.append(((best[1],), {pub: (at, best[0])}))
            at = best[0] + 1
    return pieces


class LiveView:
    """A table's live side as a query source sees it: ``bind`` adds a snapshot's live rows
    to the units of a plan (what :class:`hfq.engine.query.TableSource` calls)."""

    def __init__(self, session: Session, manifest: Manifest) -> None:
        self.session = session
        self.manifest = manifest
        self.spec = live_spec(session, manifest)
        self.cut = cut_of(manifest)
        self.last: Snapshot | None = None

    def snapshot(self, filters: Filters | None = None) -> Snapshot:
        bounds = filters.bounds() if filters is not None else None
        self.last = take(self.session, self.spec, self.cut, self.manifest.version, bounds)
        return self.last

    def bind(self, units: list[Any], filters: Filters | None = None) -> list[Any]:
        """``units`` with the live rows of each partition added (new units for partitions
        with live rows only), in partition order."""
        snap = self.snapshot(filters)
        if not snap.fragments:
            return units
        nodes = self.session.nodes
        out = list(units)
        where = {u.partition: i for i, u in enumerate(out)}
        added = False
        for path, (key, frag) in snap.fragments.items():
            i = where.get(path)
            if i is None:
                out.append(Unit(path, tuple(key), cast(Any, (frag,)), (None,), frag.rows, 0,
                                False, 0))
                added = True
                continue
            unit = out[i]
            files = nodes.unit_holders(unit)
            both = [n for n in files if n in frag.nodes]
            frag = dataclasses.replace(frag, nodes=tuple(both or files))
            out[i] = dataclasses.replace(unit, fragments=(*unit.fragments, frag),
                                         batches=(*unit.batches, None),
                                         rows=unit.rows + frag.rows, exact=False)
        if added:   # partition order, as a plan's units are
            out.sort(key=lambda u: u.partition)
        return out

    def describe(self) -> str:
        snap = self.last
        if snap is None:
            return "live rows: pinned when the query is planned"
        pubs = ", ".join(f"{p} up to {s}" for p, s in sorted(snap.seqs.items())) or "none"
        return (f"live rows: {snap.rows:,} in {len(snap.fragments)} partition(s), batches "
                f"{pubs}, minus what version {snap.version} holds")
