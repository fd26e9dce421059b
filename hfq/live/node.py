"""What one node does with a table's live rows: log them, hold them, serve them.

A :class:`LiveTable` is one process's view of one table's live rows on one node, kept as a
service of the node (:meth:`hfq.runtime.task.NodeContext.service`): in a node server for the
server's life, in a driver publishing or reading on its own node for the driver's.  It appends
what it is sent to its own stream of the node's log (:mod:`hfq.live.log`) and holds the rows
in memory by partition (:class:`~hfq.live.rows.PartRows`); before answering anything it reads
what other processes appended to their streams of the same log since it last looked (a second
process publishing into an embedded database, a crashed server's stream after a restart): the
log on the node's disk is the truth, memory a copy of it.

The module-level functions are the calls the other modules make on a node
(``nodes.call_each(log_batch, ...)``): they find the node's :class:`LiveTable` and run there.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from hfq import faults
from hfq.errors import HfqError
from hfq.live.log import Entry, Slice, StreamWriter, encode, read_frames, segments, stream_alive
from hfq.live.rows import PartRows, Pending, prepare, same_rows
from hfq.partition import Compo, Scheme, matcher
from hfq.runtime.task import NodeContext

__all__ = ["LiveSnapshotExpiredError", "LiveSpec", "LiveTable", "PublishConflictError",
           "SubscriberLagError", "apply_cut", "entry_rows", "fetch", "frame_of", "live_table",
           "log_batch", "publisher_state", "report", "rows_of"]

log = logging.getLogger(__name__)

_OWN = 1 << 62
"""The segment number of this process's own stream (it never reads it back)."""

Cut = Mapping[str, Mapping[str, int]]
"""What the table's files hold of the live rows: day -> publisher -> last sequence number."""


class PublishConflictError(HfqError, ValueError):
    """A batch was published again under a (publisher, sequence) that names other rows."""


class LiveSnapshotExpiredError(HfqError, RuntimeError):
    """A query or subscriber needs live rows the nodes dropped after their write-down."""


class SubscriberLagError(LiveSnapshotExpiredError):
    """A subscriber resumed from an offset older than the rows the nodes still hold."""


@dataclass(frozen=True)
class LiveSpec:
    """What a node needs to know of a live table (picklable, sent with every call)."""

    table: str
    table_id: str
    schema: pa.Schema
    scheme: Scheme | Compo
    segment_bytes: int = 64 << 20
    group_commit_s: float = 0.0
    grace_s: float = 60.0

    @property
    def service(self) -> str:
        return f"hfq.live:{self.table}:{self.table_id}"


def live_table(node: NodeContext, spec: LiveSpec) -> LiveTable:
    """This node's :class:`LiveTable` of ``spec``'s table in this process."""
    return node.service(spec.service, lambda: LiveTable(node.store.root, spec))


@dataclass
class _Held:
    """An entry this node holds."""

    entry: Entry
    rows: pa.Table
    stream: str
    segment: int
    left: int
    """Its slices not dropped yet."""


@dataclass
class _Stream:
    segment: int = 0
    offset: int = 0
    entries: dict[int, int] = field(default_factory=dict)
    """segment -> entries in it not dropped yet."""


class LiveTable:
    """One table's live rows on one node, as this process knows them."""

    def __init__(self, root: str, spec: LiveSpec) -> None:
        self.spec = spec
        self.dir = os.path.join(root, spec.table, "_live", spec.table_id)
        os.makedirs(self.dir, exist_ok=True)
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.writer: StreamWriter | None = None
        self.parts: dict[str, PartRows] = {}
        self.pending = Pending(threading.Condition(self.lock))
        self.handover: threading.Thread | None = None
        self._wake = threading.Event()
        self.held: dict[tuple[str, int], _Held] = {}
        self.pubs: dict[str, list[Any]] = {}       # pub -> [max seq, nodes of that batch]
        self.feed: list[tuple[str, int]] = []      # entries in arrival order
        self.feed_of: dict[str, tuple[list[int], list[int]]] = {}
        """pub -> (its positions in feed, their sequence numbers), in sequence order."""
        self.slice_entry: dict[tuple[str, str, int], tuple[str, int]] = {}
        self.elsewhere: dict[str, tuple[list[Any], dict[str, list[int]]]] = {}
        """Partitions this node holds no rows of, as other nodes' slices were numbered:
        path -> (key, pub -> [seq, pseq, pseq before])."""
        self.streams: dict[str, _Stream] = {}
        self.cuts: list[tuple[float, int, dict[str, dict[str, int]]]] = []   # (t, version, cut)
        self.known_version = -1
        self.floors: dict[str, Any] = self._load_floors()
        for pub, seq in self.floors.get("pubs", {}).items():
            self.pubs[pub] = [int(seq), []]
        self.closed = False

    # -- the log ------------------------------------------------------------------------------
    def _writer(self) -> StreamWriter:
        if self.writer is None:
            self.writer = StreamWriter(self.dir, segment_bytes=self.spec.segment_bytes,
                                       group_commit_s=self.spec.group_commit_s)
            self.streams[self.writer.dir] = _Stream(segment=_OWN)   # never tailed
        return self.writer

    def log(self, entry: Entry, rows: pa.Table) -> str:
        """Append ``entry`` to this process's stream (durable when this returns) and hold
        its rows; ``"duplicate"`` when this node has the batch already (nothing written)."""
        key = (entry.pub, entry.seq)
        with self.lock:
            self.catch_up()
            held = self.held.get(key)
            if held is not None:
                if not _same_slices(held, entry, rows):
                    raise PublishConflictError(
                        f"table {self.spec.table!r}: publisher {entry.pub!r} sent batch "
                        f"{entry.seq} again with other rows than node {self.spec.table!r} "
                        "logged; a retry must send the same rows")
                self._note_nodes(entry)
                return "duplicate"
            writer = self._writer()
        writer.append([encode(entry, rows)])   # durable: outside the lock (group commit)
        faults.point("live.node.after_log")
        with self.lock:
            if key not in self.held:
                self._hold(entry, rows, writer.dir, writer.segment)
            return "logged"

    def _note_nodes(self, entry: Entry) -> None:
        top = self.pubs.get(entry.pub)
        if top is not None and top[0] == entry.seq:
            top[1] = sorted(set(entry.nodes))

    def _hold(self, entry: Entry, rows: pa.Table, stream: str, segment: int) -> None:
        slices = []
        for s in entry.slices:
            part = self.parts.get(s.partition)
            if part is None:
                part = self.parts[s.partition] = PartRows(s.key)
            part.add(entry.pub, entry.seq, s.pseq, s.day, s.rows)
            slices.append((part, s.rows))
        self.pending.add(slices, rows)
        if self.pending.due():
            self._wake_handover()
        self.held[(entry.pub, entry.seq)] = _Held(entry, rows, stream, segment,
                                                  len(entry.slices))
        st = self.streams.setdefault(stream, _Stream())
        st.entries[segment] = st.entries.get(segment, 0) + 1
        top = self.pubs.get(entry.pub)
        if top is None or entry.seq > top[0]:
            self.pubs[entry.pub] = [entry.seq, sorted(set(entry.nodes))]
        elif entry.seq == top[0]:
            top[1] = sorted(set(entry.nodes))
        for s in entry.slices:
            self.slice_entry[(s.partition, entry.pub, s.pseq)] = (entry.pub, entry.seq)
        for s in entry.others:
            key, pubs = self.elsewhere.setdefault(s.partition, (s.key, {}))
            last = pubs.get(entry.pub)
            if last is None or entry.seq > last[0]:
                pubs[entry.pub] = [entry.seq, s.pseq, last[1] if last else s.pseq - 1]
            elif entry.seq == last[0]:
                last[1] = max(last[1], s.pseq)
        positions, seqs = self.feed_of.setdefault(entry.pub, ([], []))
        self.feed.append((entry.pub, entry.seq))
        k = bisect.bisect_right(seqs, entry.seq)   # the end, unless replayed out of order
        positions.insert(k, len(self.feed) - 1)
        seqs.insert(k, entry.seq)
        self.changed.notify_all()

    # -- the handover of held batches to their partitions, off the acknowledgement path -------
    def _wake_handover(self) -> None:
        if self.handover is None or not self.handover.is_alive():
            self.handover = threading.Thread(target=self._handovers, daemon=True,
                                              name=f"hfq-live-handover-{self.spec.table}")
            self.handover.start()
        self._wake.set()

    def _handovers(self) -> None:
        while not self.closed:
            self._wake.wait()
            self._wake.clear()
            if self.closed:
                return
            self.hand_over()

    def hand_over(self) -> None:
        """Give the batches held to their partitions when :data:`~hfq.live.rows.TAIL` are
        due: the rows are put together without the lock (a publish's :meth:`log` does
        not wait for it; a read waits only for the batches it needs, see
        :class:`~hfq.live.rows.Pending`)."""
        with self.lock:
            if not self.pending.due():
                return        # a read handed them over already
            batches = self.pending.take()
        try:
            ready = prepare(batches)
        except Exception:
            log.exception("table %s: handing %d live batch(es) over to their partitions "
                          "failed; the next read does it", self.spec.table, len(batches))
            with self.lock:
                self.pending.give_back(batches)
            return
        with self.lock:
            self.pending.install(ready)

    def catch_up(self) -> int:
        """Read what other processes appended to their streams since the last look; returns
        the entries new to this process."""
        new = 0
        with self.lock:
            try:
                names = os.listdir(self.dir)
            except FileNotFoundError:
                return 0
            for name in sorted(names):
                path = os.path.join(self.dir, name)
                if not os.path.isdir(path):
                    continue
                st = self.streams.setdefault(path, _Stream(segment=0))
                if st.segment == _OWN:
                    continue
                for seg_name in segments(path):
                    seg = int(seg_name[:-4])
                    if seg < st.segment:
                        continue
                    if seg > st.segment:
                        st.segment, st.offset = seg, 0
                    for entry, rows, end in read_frames(os.path.join(path, seg_name),
                                                        st.offset):
                        st.offset = end
                        if (entry.pub, entry.seq) in self.held:
                            continue
                        if self._all_dropped(entry):
                            continue
                        self._hold(entry, self._conform(rows), path, seg)
                        new += 1
        return new

    def _all_dropped(self, entry: Entry) -> bool:
        """Every slice of ``entry`` was written down and dropped before (known by the floors
        a truncation left)."""
        floors = self.floors.get("parts", {})
        return all(s.pseq <= floors.get(s.partition, {}).get(entry.pub, [0])[0]
                   for s in entry.slices)

    def _conform(self, rows: pa.Table) -> pa.Table:
        schema = self.spec.schema
        return rows if rows.schema.equals(schema) else rows.cast(schema)

    # -- what a snapshot needs ------------------------------------------------------------------
    def report(self, bounds: Mapping[str, tuple] | None, cut: Cut, version: int
               ) -> dict[str, Any]:
        """Publishers (last sequence number, and the nodes that batch went to) and, per
        partition matching ``bounds``, per publisher: the runs of slice numbers this node
        can serve at ``version`` (whose written-down cut is ``cut``), its last slice's
        (sequence number, slice number, slice number before it) and its rows."""
        with self.lock:
            self.catch_up()
            self.learn(cut, version)
            match = matcher(self.spec.scheme, dict(bounds)) if bounds else None
            parts: dict[str, Any] = {}
            for path, part in self.parts.items():
                if match is not None and not match(tuple(part.key)):
                    continue
                pubs = {}
                for pub, runs in part.runs.items():
                    spans = runs.to_list()
                    dropped = part.dropped.get(pub)
                    gone = None
                    if dropped is not None and dropped[0]:
                        if dropped[1] <= version:   # in the files at this version
                            spans = _join([[1, dropped[0]]], spans)
                        else:                       # needed, and gone
                            gone = list(dropped)
                    pubs[pub] = {"runs": spans, "last": list(part.last[pub]), "gone": gone}
                floor = self.floors.get("parts", {}).get(path, {})
                for pub, (upto, v) in floor.items():
                    if pub not in pubs and upto:
                        pubs[pub] = {"runs": [[1, upto]] if v <= version else [],
                                     "last": [0, upto, upto],
                                     "gone": None if v <= version else [upto, v]}
                parts[path] = {"key": part.key, "rows": part.rows, "pubs": pubs,
                               "days": part.live_days(cut)}
            for path, (key, known) in self.elsewhere.items():
                if path in self.parts or (match is not None and not match(tuple(key))):
                    continue
                parts[path] = {"key": key, "rows": 0, "days": [], "pubs": {
                    pub: {"runs": [], "last": list(last), "gone": None}
                    for pub, last in known.items()}}
            return {"pubs": {p: list(v) for p, v in self.pubs.items()}, "parts": parts}

    def rows(self, partition: str, seqs: Mapping[str, int],
             picks: Mapping[str, tuple[int, int]], cut: Cut, version: int,
             columns: Sequence[str], *, frame: bool = False) -> pa.Table | pl.DataFrame:
        """The rows of ``partition`` a snapshot reads here: slices of the publishers in
        ``picks`` within their slice numbers, up to ``seqs``, not held by ``cut``; as a
        polars frame when ``frame`` (the partition's merged runs are converted once)."""
        with self.lock:
            part = self.parts.get(partition)
            if part is None or not all(
                    hi < lo or (pub in part.runs and part.runs[pub].covers(lo, hi))
                    for pub, (lo, hi) in picks.items()):
                self.catch_up()   # (only what is held already is read: no need to look)
            self.learn(cut, version)
            self.pending.flush()
            part = self.parts.get(partition)
            schema = self.spec.schema
            if part is None:
                if any(hi >= lo for lo, hi in picks.values()):
                    raise LiveSnapshotExpiredError(
                        f"table {self.spec.table!r}, partition {partition}: this node holds "
                        f"no live rows of it any more (written down after the query's "
                        f"version {version}); run the query again")
                return schema.empty_table().select(list(columns))
            for pub, (lo, _) in picks.items():
                dropped = part.dropped.get(pub)
                if dropped is not None and lo <= dropped[0] and dropped[1] > version:
                    raise LiveSnapshotExpiredError(
                        f"table {self.spec.table!r}, partition {partition}: live rows the "
                        f"query's version {version} needs were written down at version "
                        f"{dropped[1]} and dropped (after live_grace_s); run the query again")
            if frame:
                got = part.take_frame(seqs, picks, cut, columns)
                return got if got is not None else _empty_frame(schema, columns)
            out = part.take(seqs, picks, cut, columns)
            return out if out.num_columns else schema.empty_table().select(list(columns))

    # -- subscribers --------------------------------------------------------------------------
    def fetch(self, since: Mapping[str, int], bounds: Mapping[str, tuple] | None,
              symbols: Sequence[str] | None, symbol_column: str | None,
              columns: Sequence[str], alive: Sequence[str], me: str | None, max_rows: int,
              wait_s: float, cut: Cut) -> dict[str, Any]:
        """Entries with a sequence number above ``since[pub]`` (every one for a publisher
        not in it), in this node's order, each with the rows of the partitions this node
        serves (the first of their nodes alive) and of ``symbols``, not held by ``cut``;
        at most about ``max_rows`` rows; waits up to ``wait_s`` for one when there is none.
        Entries after ``since`` that were dropped already and that ``cut`` does not hold
        are a :class:`SubscriberLagError`."""
        deadline = time.monotonic() + wait_s
        with self.lock:
            while True:
                self.catch_up()
                start = self._first_after(since)
                if start < len(self.feed) or wait_s <= 0:
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not self.changed.wait(min(left, 0.05)):
                    if time.monotonic() >= deadline:
                        break
            for day, pubs in self.floors.get("dropped", {}).items():
                for pub, floor in pubs.items():
                    if since.get(pub, 0) < floor and cut.get(day, {}).get(pub, 0) < floor:
                        raise SubscriberLagError(
                            f"table {self.spec.table!r}: the subscriber's offset {pub}:"
                            f"{since.get(pub, 0)} is older than the live rows node {me} "
                            f"still holds ({pub}'s batches of {day} up to {floor} were "
                            "written down and dropped); read those from the table and "
                            "subscribe from 'now'")
            match = matcher(self.spec.scheme, dict(bounds)) if bounds else None
            alive_set = set(alive)
            out: list[tuple[str, int, float, pa.Table | None]] = []
            rows = 0
            covered: dict[str, int | None] = {}
            i = start
            while i < len(self.feed):
                pub, seq = self.feed[i]
                i += 1
                if seq <= since.get(pub, 0) or pub in covered:
                    continue
                if rows >= max_rows:
                    covered[pub] = seq - 1   # this publisher's entries from seq on: not sent
                    continue
                held = self.held[(pub, seq)]
                got = _served(held, match, alive_set, me, symbols, symbol_column, columns, cut)
                rows += got.num_rows if got is not None else 0
                out.append((pub, seq, held.entry.at, got))
            return {"entries": out, "covered": covered,
                    "pubs": {p: list(v) for p, v in self.pubs.items()}}

    def _first_after(self, since: Mapping[str, int]) -> int:
        first = len(self.feed)
        for pub, (positions, seqs) in self.feed_of.items():
            k = bisect.bisect_right(seqs, since.get(pub, 0))
            if k < len(positions):
                first = min(first, positions[k])
        return first

    # -- write-down -----------------------------------------------------------------------------
    def learn(self, cut: Cut, version: int) -> None:
        """Remember the written-down ``cut`` of ``version`` (newer than any known): its rows
        are dropped ``grace_s`` after this node learnt of it."""
        if version > self.known_version and cut:
            self.known_version = version
            self.cuts.append((time.monotonic(), version, {d: dict(p) for d, p in cut.items()}))
        self._drop_due()

    def _drop_due(self, *, now: float | None = None) -> int:
        """Drop the rows of every cut learnt ``grace_s`` ago or more, then truncate the log
        segments whose every entry is dropped."""
        now = time.monotonic() if now is None else now
        due = [c for c in self.cuts if now - c[0] >= self.spec.grace_s]
        if not due:
            return 0
        self.cuts = [c for c in self.cuts if now - c[0] < self.spec.grace_s]
        _, version, cut = max(due, key=lambda c: c[1])
        self.pending.flush()
        dropped = 0
        for path, part in self.parts.items():
            before = {pub: d[0] for pub, d in part.dropped.items()}
            dropped += part.drop(cut, version)
            for pub, (upto, _) in part.dropped.items():
                for pseq in range(before.get(pub, 0) + 1, upto + 1):
                    self._slice_gone(path, pub, pseq)
        self._truncate(version)
        return dropped

    def _slice_gone(self, partition: str, pub: str, pseq: int) -> None:
        key = self.slice_entry.pop((partition, pub, pseq), None)
        held = self.held.get(key) if key is not None else None
        if held is None:
            return
        for s in held.entry.slices:
            if s.partition == partition and s.pseq == pseq and s.day is not None:
                days = self.floors.setdefault("dropped", {}).setdefault(s.day, {})
                days[pub] = max(days.get(pub, 0), held.entry.seq)
        held.left -= 1
        if held.left <= 0:
            del self.held[held.entry.pub, held.entry.seq]
            st = self.streams.get(held.stream)
            if st is not None:
                st.entries[held.segment] -= 1

    def _truncate(self, version: int) -> None:
        """Remove the segments of this process's stream (and of dead writers' streams) whose
        entries are all written down; the floors they held are saved first."""
        self._save_floors(version)
        if self.writer is not None and self.streams.get(self.writer.dir) is not None:
            mine = self.streams[self.writer.dir]
            if mine.entries.get(self.writer.segment):
                self.writer.roll()   # the active segment can go once every entry is dropped
        for path, st in self.streams.items():
            own = self.writer is not None and path == self.writer.dir
            if not own and stream_alive(path):
                continue
            for seg, left in list(st.entries.items()):
                if left > 0 or (own and self.writer is not None and seg == self.writer.segment):
                    continue
                faults.point("live.log.before_truncate")
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(path, f"{seg:08d}.seg"))
                del st.entries[seg]
        keep = [(p, s) for p, s in self.feed if (p, s) in self.held]
        if len(keep) != len(self.feed):
            self.feed = keep
            self.feed_of = {}
            for i, (p, s) in enumerate(keep):
                positions, seqs = self.feed_of.setdefault(p, ([], []))
                positions.append(i)
                seqs.append(s)

    # -- floors: what truncation removed, kept across restarts ---------------------------------
    def _load_floors(self) -> dict[str, Any]:
        try:
            with open(os.path.join(self.dir, "floors.json"), "rb") as f:
                return dict(json.loads(f.read()))
        except (FileNotFoundError, ValueError):
            return {}

    def _save_floors(self, version: int) -> None:
        with _dir_lock(self.dir):
            floors = self._load_floors()
            parts = floors.setdefault("parts", {})
            for path, part in self.parts.items():
                mine = parts.setdefault(path, {})
                for pub, (upto, v) in part.dropped.items():
                    if upto > mine.get(pub, [0, 0])[0]:
                        mine[pub] = [upto, v]
            pubs = floors.setdefault("pubs", {})
            for pub, (seq, _) in self.pubs.items():
                pubs[pub] = max(int(seq), int(pubs.get(pub, 0)))
            gone = floors.setdefault("dropped", {})
            for day, pubs in self.floors.get("dropped", {}).items():
                mine = gone.setdefault(day, {})
                for pub, seq in pubs.items():
                    mine[pub] = max(int(seq), int(mine.get(pub, 0)))
            tmp = os.path.join(self.dir, f".floors-{os.getpid()}-{threading.get_ident()}")
            with open(tmp, "w") as f:
                json.dump(floors, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, os.path.join(self.dir, "floors.json"))
            self.floors = floors

    # -- publishers -----------------------------------------------------------------------------
    def publisher_state(self, pub: str) -> dict[str, Any]:
        """What a publisher resuming under ``pub`` needs: its last batch here (sequence
        number, nodes, digest) and its last slice number per partition."""
        with self.lock:
            self.catch_up()
            top = self.pubs.get(pub)
            last = None
            if top is not None and (pub, top[0]) in self.held:
                e = self.held[(pub, top[0])].entry
                last = {"seq": e.seq, "nodes": list(e.nodes), "digest": e.digest}
            pseq = {path: part.last[pub][1] for path, part in self.parts.items()
                    if pub in part.last}
            for path, floor in self.floors.get("parts", {}).items():
                if pub in floor:
                    pseq[path] = max(pseq.get(path, 0), int(floor[pub][0]))
            return {"seq": top[0] if top is not None else 0, "last": last, "pseq": pseq}

    def entry(self, pub: str, seq: int) -> tuple[Entry, pa.Table] | None:
        with self.lock:
            self.catch_up()
            held = self.held.get((pub, seq))
            return None if held is None else (held.entry, held.rows)

    def close(self) -> None:
        with self.lock:
            if self.writer is not None:
                self.writer.close()
                self.writer = None
            self.closed = True
        self._wake.set()


def _same_slices(held: _Held, entry: Entry, rows: pa.Table) -> bool:
    """Do the slices ``entry`` shares with ``held`` (a partition and slice number in both)
    hold the same rows?"""
    mine: dict[tuple[str, int], pa.Table] = {}
    offset = 0
    for s in held.entry.slices:
        mine[(s.partition, s.pseq)] = held.rows.slice(offset, s.rows)
        offset += s.rows
    offset = 0
    for s in entry.slices:
        got = mine.get((s.partition, s.pseq))
        if got is not None and not same_rows(got, rows.slice(offset, s.rows)):
            return False
        offset += s.rows
    return True


def _join(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    runs = sorted(a + b)
    out: list[list[int]] = []
    for lo, hi in runs:
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def _served(held: _Held, match: Any, alive: set[str], me: str | None,
            symbols: Sequence[str] | None, symbol_column: str | None,
            columns: Sequence[str], cut: Cut) -> pa.Table | None:
    """The rows of ``held`` a subscriber gets from this node: slices of matching partitions
    whose first live node is this one, not held by ``cut``, rows of ``symbols``."""
    parts, offset = [], 0
    seq, pub = held.entry.seq, held.entry.pub
    for s in held.entry.slices:
        first = next((n for n in s.nodes if n in alive), None)
        written = s.day is not None and cut.get(s.day, {}).get(pub, 0) >= seq
        if not written and (match is None or match(tuple(s.key))) and \
                (first is None or first == me or me is None):
            parts.append(held.rows.slice(offset, s.rows))
        offset += s.rows
    if not parts:
        return None
    rows = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    if symbols is not None and symbol_column is not None:
        rows = rows.filter(pc.is_in(rows.column(symbol_column).cast(pa.string()),
                                    value_set=pa.array(list(symbols), pa.string())))
    return rows.select(list(columns))


def _empty_frame(schema: pa.Schema, columns: Sequence[str]) -> pl.DataFrame:
    frame = pl.from_arrow(schema.empty_table().select(list(columns)))
    assert isinstance(frame, pl.DataFrame)
    return frame


@contextlib.contextmanager
def _dir_lock(path: str) -> Iterator[None]:
    fd = os.open(os.path.join(path, ".floors.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# -- the calls made on a node ------------------------------------------------------------------
def log_batch(node: NodeContext, spec: LiveSpec, entry: Entry, rows: pa.Table) -> str:
    return live_table(node, spec).log(entry, rows)


def report(node: NodeContext, spec: LiveSpec, bounds: Mapping[str, tuple] | None, cut: Cut,
           version: int) -> dict[str, Any]:
    return live_table(node, spec).report(bounds, cut, version)


def rows_of(node: NodeContext, spec: LiveSpec, partition: str, seqs: Mapping[str, int],
            picks: Mapping[str, tuple[int, int]], cut: Cut, version: int,
            columns: Sequence[str]) -> pa.Table:
    got = live_table(node, spec).rows(partition, seqs, picks, cut, version, columns)
    assert isinstance(got, pa.Table)
    return got


def frame_of(node: NodeContext, spec: LiveSpec, partition: str, seqs: Mapping[str, int],
             picks: Mapping[str, tuple[int, int]], cut: Cut, version: int,
             columns: Sequence[str]) -> pl.DataFrame:
    """:func:`rows_of` as a polars frame."""
    got = live_table(node, spec).rows(partition, seqs, picks, cut, version, columns,
                                      frame=True)
    assert isinstance(got, pl.DataFrame)
    return got


def fetch(node: NodeContext, spec: LiveSpec, since: Mapping[str, int],
          bounds: Mapping[str, tuple] | None, symbols: Sequence[str] | None,
          symbol_column: str | None, columns: Sequence[str], alive: Sequence[str],
          max_rows: int, wait_s: float, cut: Cut) -> dict[str, Any]:
    return live_table(node, spec).fetch(since, bounds, symbols, symbol_column, columns, alive,
                                        node.name, max_rows, wait_s, cut)


def apply_cut(node: NodeContext, spec: LiveSpec, cut: Cut, version: int) -> int:
    """Learn the cut a write-down committed; drops (and truncates) what is due now."""
    table = live_table(node, spec)
    with table.lock:
        table.catch_up()
        table.learn(cut, version)
        return len(table.held)


def publisher_state(node: NodeContext, spec: LiveSpec, pub: str) -> dict[str, Any]:
    return live_table(node, spec).publisher_state(pub)


def entry_rows(node: NodeContext, spec: LiveSpec, pub: str, seq: int
               ) -> tuple[Entry, pa.Table] | None:
    return live_table(node, spec).entry(pub, seq)


def slice_of(entry: Entry, partition: str) -> Slice | None:
    return next((s for s in entry.slices if s.partition == partition), None)
