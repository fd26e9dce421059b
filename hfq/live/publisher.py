"""Publishing: a batch of ticks durable on every replica node before ``publish`` returns.

``pub = t.publisher(name="feed-a")``; ``pub.publish(frame)`` conforms the rows to the table's
schema with ``append``'s rules (a batch that does not conform is refused whole: nothing of it
is sent), splits them by partition and day (*slices*), and sends each node the slices of the
partitions it holds -- the nodes :meth:`~hfq.runtime.Nodes.targets` places them on, next to
the partition's files.  Each node logs its part (:mod:`hfq.live.log`: fsync, or one fsync
for the batches of a group-commit window) before it answers; ``publish`` returns when every
node answered: the batch is acknowledged, and every query, subscriber and write-down from
then on sees it.

Each batch is named (publisher name, sequence number 1, 2, ...).  A node that has a batch
already answers "duplicate" without logging it again, so a retry after an error or a timeout
-- ``publish`` again, same rows, the same or no ``seq=`` -- never duplicates a row, and a
publisher that restarts under the same name continues its numbering from what the nodes
hold (``pub.seq``: the last batch acknowledged); a batch it had sent to some of its nodes
when it died is completed on the others first.  One publisher publishes one batch at a time
(a lock): its numbers are its order.

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
...                     sort_by=("symbol", "time"))
>>> pub = t.publisher(name="feed")
>>> pub.publish(hfq.synth.taq_table(rows_per_day=100, symbols=5))
1
>>> t.scan().count()            # acknowledged: seen at once
100
>>> pub.publish(hfq.synth.taq_table(rows_per_day=100, symbols=5), seq=1)  # a retry: no-op
1
>>> t.scan().count()
100
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hfq import faults
from hfq.errors import ArgumentError, HfqError, NodeUnavailableError, SchemaMismatchError
from hfq.ingest.frames import iter_arrow_batches
from hfq.live.cut import cut_of, enable, live_spec
from hfq.live.log import Entry, Slice
from hfq.live.node import PublishConflictError, entry_rows, log_batch, publisher_state
from hfq.live.route import Router
from hfq.live.rows import same_rows
from hfq.query.plan import filter_columns
from hfq.session import TableLike

__all__ = ["Publisher"]

log = logging.getLogger(__name__)

_RECENT = 8
"""The last batches acknowledged, kept to check that a retry of one sends the same rows."""

_HELD = pa.system_memory_pool()
"""Where the rows a node holds are allocated (see :meth:`Publisher._send`)."""


@dataclass(frozen=True)
class _Plan:
    """A batch conformed and split: what a retry sends again unchanged."""

    seq: int
    digest: str
    rows: pa.Table
    slices: tuple[tuple[Slice, np.ndarray], ...]
    """Each slice with the indices of its rows in ``rows``."""
    at: float


class Publisher:
    """Publishes batches of rows into one table's live side (see the module).

    ``name``: who publishes -- a publisher that restarts under the same name continues its
    sequence (default: unique to this process and object).

    Examples
    --------
    >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
    ...                                   partition_by=hfq.Value("date"))
    >>> t.publisher(name="feed").publish(quotes.to_arrow(symbols="IBM"))
    1
    >>> t.publisher(name="feed").seq        # the same name, later: it continues
    1
    """

    def __init__(self, table: TableLike, *, name: str | None = None) -> None:
        self.session = table.session
        self.table = table.name
        self.manifest = enable(self.session, table.snapshot())
        self.spec = live_spec(self.session, self.manifest)
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        if not isinstance(self.name, str) or not self.name or "," in self.name:
            raise ArgumentError(f"name=: a publisher's name is a non-empty string without "
                                f"commas, not {self.name!r}", argument="name")
        self._lock = threading.Lock()
        self._targets: dict[str, list[str]] = {}
        self._keys: dict[str, tuple[str, list[Any]]] = {}
        self._pseq: dict[str, int] = {}
        self._inflight: _Plan | None = None
        self._recent: OrderedDict[int, pa.Table] = OrderedDict()
        self._at = 0.0
        self.date_column, _ = filter_columns(self.manifest)
        self.router = Router(self.manifest.partition_by)
        self.seq = 0
        """The last batch acknowledged (0: none yet)."""
        self.on_new_day: Callable[[], Any] | None = None
        """Called after a batch with rows of a day newer than any before is acknowledged
        (the automatic write-down, :meth:`hfq.Table.publisher`)."""
        self._newest: str | None = None
        self._recover()

    def __repr__(self) -> str:
        return f"<hfq.live.Publisher {self.name!r} on {self.table!r}: {self.seq} batches>"

    # -- resuming -----------------------------------------------------------------------------
    def _recover(self) -> None:
        """Continue from what the nodes hold of this publisher: its last sequence number and
        slice numbers; a last batch some of its nodes lack is completed on them first."""
        nodes = self.session.nodes
        states = nodes.call_each(publisher_state, self.spec, self.name)
        written = [seqs.get(self.name, 0) for seqs in cut_of(self.manifest).values()]
        self.seq = max([s["seq"] for s in states.values()] + written + [0])
        for state in states.values():
            for path, pseq in state["pseq"].items():
                self._pseq[path] = max(self._pseq.get(path, 0), int(pseq))
        holders = [n for n, s in states.items() if s["last"] and s["last"]["seq"] == self.seq]
        if not holders:
            return
        wanted = set(states[holders[0]]["last"]["nodes"])
        lacking = [n for n in sorted(wanted) if n in states and n not in holders]
        if lacking:
            got = nodes.call(holders[0], entry_rows, self.spec, self.name, self.seq)
            if got is not None:
                entry, rows = got
                log.info("publisher %s: completing batch %d on %s", self.name, self.seq,
                         ", ".join(lacking))
                nodes.call_each(log_batch, self.spec, entry, rows, names=lacking, strict=True)

    # -- publishing ---------------------------------------------------------------------------
    def publish(self, data: Any, *, seq: int | None = None) -> int:
        """Publish ``data`` (a pandas / polars / Arrow table or batch of rows, 1 to
        100,000 rows) as the next batch; returns its sequence number once every node it
        went to has it on disk.

        ``seq``: the batch's number, for a retry (``<= pub.seq``: acknowledged already,
        nothing is sent again; the next number: the batch a failed call sent).  A batch that
        does not conform to the schema raises :class:`~hfq.errors.SchemaMismatchError` and
        nothing of it is published; an empty one publishes nothing (returns ``pub.seq``).

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                   partition_by=hfq.Value("date"))
        >>> pub = t.publisher(name="feed")
        >>> pub.publish(quotes.to_arrow(symbols="IBM")), pub.publish(quotes.to_polars(
        ...     symbols="MSFT"))
        (1, 2)
        >>> pub.publish(quotes.to_arrow(symbols="IBM"), seq=1)   # a retry: nothing again
        1
        >>> t.scan().count()
        237
        """
        rows = self._conform(data)
        with self._lock:
            if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)
                                    or seq < 1):
                raise ArgumentError(f"seq=: a positive batch number, not {seq!r}",
                                    argument="seq")
            if rows.num_rows == 0:
                return self.seq
            digest = f"{rows.num_rows:x}"
            if seq is not None and seq <= self.seq:
                known = self._recent.get(seq)
                if known is not None and not same_rows(known, rows):
                    raise PublishConflictError(
                        f"table {self.table!r}: batch {seq} of publisher {self.name!r} was "
                        "published with other rows; a retry must send the same rows")
                return seq
            number = self.seq + 1
            if seq is not None and seq != number:
                raise ArgumentError(f"seq=: publisher {self.name!r} acknowledged batch "
                                    f"{self.seq}; the next is {number}, not {seq}",
                                    argument="seq")
            plan = self._inflight
            if plan is None or plan.seq != number or not same_rows(plan.rows, rows):
                plan = self._plan(number, digest, rows)
            self._inflight = plan
            for attempt in range(3):
                try:
                    self._send(plan)
                    break
                except NodeUnavailableError as exc:   # a node died: to the live ones
                    alive = set(self.session.nodes.alive())
                    if attempt == 2 or not exc.nodes or any(n in alive for n in exc.nodes):
                        raise
                    log.warning("publish to %s: node(s) %s gone, batch %d goes to the live "
                                "nodes", self.table, ", ".join(exc.nodes), number)
            self.seq = number
            self._inflight = None
            for s, _ in plan.slices:
                self._pseq[s.partition] = max(self._pseq.get(s.partition, 0), s.pseq)
            self._recent[number] = rows
            if len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
            newest = max((s.day for s, _ in plan.slices if s.day is not None), default=None)
        if newest is not None and (self._newest is None or newest > self._newest):
            self._newest = newest
            if self.on_new_day is not None:
                self.on_new_day()
        return number

    def _conform(self, data: Any) -> pa.Table:
        schema = self.manifest.schema
        where = f"publish to {self.table!r}"
        try:
            parts = [schema.conform(b, where=where) for b in iter_arrow_batches(data)]
        except SchemaMismatchError:
            raise
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise SchemaMismatchError(f"{where}: the batch cannot be read: {exc}") from exc
        if not parts:
            return schema.arrow.empty_table()
        rows = parts[0] if len(parts) == 1 else \
            pa.concat_tables(parts).unify_dictionaries().combine_chunks()
        if self.date_column is not None and rows.column(self.date_column).null_count:
            raise SchemaMismatchError(
                f"{where}: column {self.date_column!r} has "
                f"{rows.column(self.date_column).null_count} null(s); a live row needs its "
                "date (the write-down goes day by day); nothing of the batch was published")
        return rows

    def _plan(self, seq: int, digest: str, rows: pa.Table) -> _Plan:
        """Route ``rows`` to (partition, day) slices and number the slices."""
        codes, keys = self.router.route(rows)
        if self.date_column is not None:
            known = self.router.days(self.date_column)
            if known is None:
                days = pc.cast(rows.column(self.date_column), pa.date32()).combine_chunks()
                known = days.view(pa.int32()).to_numpy(zero_copy_only=False)
            day_num = known.astype(np.int64)
        else:
            day_num = np.zeros(rows.num_rows, np.int64)
        offset = day_num - day_num.min() if len(day_num) else day_num
        group = codes.astype(np.int64) * (1 << 32) + offset
        order = np.argsort(group, kind="stable")   # rows slice after slice, each in order
        ordered = group[order]
        bounds = np.flatnonzero(np.diff(ordered)) + 1
        slices = []
        pseq = dict(self._pseq)
        names: dict[int, str] = {}
        for start, end in zip([0, *bounds.tolist()], [*bounds.tolist(), len(ordered)]):
            g = int(ordered[start])
            idx = order[start:end]
            path, key = self._key(keys[g >> 32])
            day = None
            if self.date_column is not None:
                number = int(day_num[idx[0]])
                day = names.get(number)
                if day is None:
                    day = names[number] = str(np.datetime64(number, "D"))
            pseq[path] = pseq.get(path, 0) + 1
            slices.append((Slice(path, key, day, pseq[path], end - start, ()), idx))
        return _Plan(seq, digest, rows, tuple(slices), self._now())

    def _key(self, key: tuple[Any, ...]) -> tuple[str, list[Any]]:
        """A partition key's path and its JSON-safe values (remembered: a feed's batches
        go to the same partitions all day)."""
        text = repr(key)   # 0, 0.0, -0.0 and False apart
        got = self._keys.get(text)
        if got is None:
            if len(self._keys) >= 1 << 16:
                self._keys.clear()
            got = self._keys[text] = (self.router.path(key), [_plain(k) for k in key])
        return got

    def _now(self) -> float:
        self._at = max(self._at, time.time())
        return self._at

    def _send(self, plan: _Plan) -> None:
        nodes = self.session.nodes
        alive = nodes.alive()
        if not alive:
            raise HfqError(f"publish to {self.table!r}: no hfq node is alive")
        by_node: dict[str, list[tuple[Slice, np.ndarray]]] = {}
        placed = []
        for s, idx in plan.slices:
            targets = self._targets.get(s.partition)
            if targets is None or any(n not in alive for n in targets):
                existing = self.manifest.partitions.get(s.partition)
                near = nodes.holders(existing.fragments[0]) if existing else []
                targets = self._targets[s.partition] = nodes.targets(
                    s.partition, near, self.manifest.options.get("replicas"), self.table)
            s = Slice(s.partition, s.key, s.day, s.pseq, s.rows, tuple(targets))
            placed.append((s, idx))
            for n in targets:
                by_node.setdefault(n, []).append((s, idx))
        everyone = tuple(sorted(by_node))
        parts: dict[str, tuple[Entry, pa.Table]] = {}
        for n, mine in by_node.items():
            idx = np.concatenate([i for _, i in mine])
            # the rows a node holds are freed by its handover thread: not from mimalloc
            # (Arrow's default), which makes the allocating thread -- this one, the ack
            # path -- collect other threads' frees (a p99 of 10 ms CPU a batch, 3 without)
            body = plan.rows if len(idx) == plan.rows.num_rows and \
                np.array_equal(idx, np.arange(len(idx))) else \
                pc.take(plan.rows, pa.array(idx), memory_pool=_HELD)
            here = {s.partition for s, _ in mine}
            parts[n] = (Entry(self.name, plan.seq, everyone, plan.digest,
                              tuple(s for s, _ in mine), plan.at,
                              tuple(s for s, _ in placed if s.partition not in here)), body)
        faults.point("live.publish.before_send")
        nodes.call_each(log_batch, names=list(parts), strict=True,
                        args_for=lambda n: (self.spec, *parts[n]))
        faults.point("live.publish.before_ack")

    def close(self) -> None:
        """Nothing to release: a publisher holds no resources between batches (each batch
        is acknowledged when ``publish`` returns).

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                   partition_by=hfq.Value("date"))
        >>> pub = t.publisher()
        >>> pub.close()
        """


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def publish_all(publisher: Publisher, batches: Sequence[Any]) -> int:
    """Publish ``batches`` one after another; the last sequence number."""
    seq = publisher.seq
    for batch in batches:
        seq = publisher.publish(batch)
    return seq
