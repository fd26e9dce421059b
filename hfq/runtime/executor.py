"""Run one piece of work per partition on a node that holds it, with failover.

Each unit goes to the least-loaded live node that holds all its files; a node that runs out of
its own work steals queued units it also holds.  When a node dies mid-job, its queued and
unfinished units are sent to another holder, so every partition is counted exactly once; when no
live node holds some partition, :class:`~hfq.errors.PartitionUnavailableError` names them all --
never a silently partial answer.  A unit whose copy on a node turns out damaged
(:class:`~hfq.errors.CorruptPartitionError`) runs again on another holder, and the bad copy is
reported (``on_bad``) so the caller repairs it; with no other intact copy, the error is
raised.  Units the calling process can do itself (``local``) run in its
threads, reading the memory-mapped files directly.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import TYPE_CHECKING, Any

from hfq.errors import CorruptPartitionError, HfqError, PartitionUnavailableError
from hfq.runtime.task import BadCopy, WorkUnit, dead_actor_errors
from hfq.storage.owned import arrow_owned

if TYPE_CHECKING:
    from hfq.runtime.nodes import Nodes

log = logging.getLogger(__name__)

__all__ = ["execute"]

_DRAIN_S = 120.0
"""How long a failed job waits for its calls still running on the nodes."""


def execute(nodes: Nodes, units: Sequence[WorkUnit],
            submit: Callable[[Any, list[Any]], Any] | None,
            on_result: Callable[[int, Any], None], *,
            local: Callable[[Any], Any] | None = None, threads: int = 1,
            finish: Callable[[Any, Any, str], Any] | None = None,
            small_results: bool = False, progress: bool = False, label: str = "",
            on_bad: Callable[[int, str, CorruptPartitionError], None] | None = None) -> None:
    """Call ``submit(server, units)`` (an ObjectRef of one value per unit) or ``local(unit)``
    until every unit has succeeded once; ``on_result(index, value)`` as results arrive, in
    any order; ``on_bad(index, node, error)`` for each damaged copy met on the way (a server
    reports one as a :class:`~hfq.runtime.task.BadCopy` in place of the unit's value).
    A node's queue goes out in chunks (fewer calls when there are many small partitions),
    shrinking to single units as it empties so the tail stays balanced; with
    ``small_results`` (a map function's values, not rows) each call takes a larger share of
    the queue -- a round trip costs more than such a result's bytes -- and about a third of
    it stays queued for whichever holder is free first.
    ``finish(unit, value, node)``: what a server's value still needs here (e.g. decoding the
    file bytes it sent), run in this process's threads; a
    :class:`~hfq.errors.CorruptPartitionError` it raises counts against that node's copy.
    ``submit`` is None when there is no Ray runtime (every unit must then run ``local``)."""
    if submit is not None:
        import ray
    bar = _bar(progress, len(units), label)
    state = _State(nodes, units, small_results)
    shared = _shared_pool(threads) if local is not None or finish is not None else None
    pool = shared if shared is not None else (
        ThreadPoolExecutor(max_workers=threads) if local is not None or finish is not None
        else None)
    futures: dict[Future, tuple[int, str | None]] = {}   # -> (unit, node whose copy it read)
    refs: dict[Any, tuple[list[int], str]] = {}

    def node_gone(name: str, chunk: list[int]) -> None:
        log.warning("hfq node %s died during %s; %d unit(s) go to replicas", name,
                    label or "a job", len(chunk))
        nodes.lost(name)
        state.node_died(name, chunk)

    def bad_copy(i: int, name: str, error: CorruptPartitionError) -> None:
        if on_bad is not None:
            on_bad(i, name, error)
        state.copy_failed(i, name, error)   # raises when no other copy is left
        log.warning("%s; reading another copy", error)

    try:
        if local is not None and nodes.local is not None:
            assert pool is not None   # made whenever local is given
            for i in state.take_local(nodes.local):
                futures[pool.submit(local, units[i])] = (i, nodes.local)
        while state.pending or refs or futures:
            for name, chunk in state.dispatch(
                    lambda n: sum(1 for _, m in refs.values() if m == n)):
                # dispatch gives work only with a runtime, and submit comes with the runtime
                assert submit is not None and nodes.runtime is not None
                try:
                    refs[submit(nodes.runtime.server(name), [units[i] for i in chunk])] = \
                        (chunk, name)
                except (HfqError,) + dead_actor_errors():   # gone, or forgotten meanwhile
                    node_gone(name, chunk)
            done_futures = [f for f in futures if f.done()]
            if not done_futures and refs:
                ready, _ = ray.wait(list(refs), num_returns=1,
                                    timeout=0.005 if futures else None)
            elif not done_futures and futures:
                wait_futures(list(futures), return_when=FIRST_COMPLETED)
                continue
            else:
                ready = []
            for f in done_futures:
                i, held_by = futures.pop(f)
                try:
                    value = f.result()
                except CorruptPartitionError as exc:
                    assert held_by is not None   # local units run only with a local node
                    bad_copy(i, held_by, exc)
                    continue
                on_result(i, value)
                if bar is not None:
                    bar.update(1)
            for ref in ready:
                chunk, name = refs.pop(ref)
                try:
                    values = ray.get(ref)
                except dead_actor_errors():
                    node_gone(name, chunk)
                    continue
                except ray.exceptions.RayTaskError as exc:
                    # the server noted which partition failed; raise what the user's code
                    # raised, not Ray's wrapper
                    raise (exc.cause if isinstance(exc.cause, BaseException) else exc) from None
                for i, value in zip(chunk, values, strict=True):
                    if isinstance(value, BadCopy):
                        bad_copy(i, name, value.error)
                        continue
                    value = _owned(value)
                    if finish is not None:
                        assert pool is not None   # made whenever finish is given
                        futures[pool.submit(finish, units[i], value, name)] = (i, name)
                        continue
                    on_result(i, value)
                    if bar is not None:
                        bar.update(1)
    finally:
        for ref in refs:
            ray.cancel(ref)
        if refs:   # a job that failed: calls already running finish first, so that whoever
            # cleans up after it (a write's abort) finds every file they wrote
            ray.wait(list(refs), num_returns=len(refs), timeout=_DRAIN_S)
        if pool is not None and pool is not shared:
            pool.shutdown(wait=True, cancel_futures=True)
        elif futures:   # the shared pool runs on: this job's queued calls are cancelled and
            for f in futures:   # its running ones finished, as shutdown would
                f.cancel()
            wait_futures(list(futures))
        if bar is not None:
            bar.close()


_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}   # (process id, threads) ->
_POOLS_LOCK = threading.Lock()
_IN_POOL = threading.local()


def _mark_pool_thread() -> None:
    _IN_POOL.inside = True


def _shared_pool(threads: int) -> ThreadPoolExecutor | None:
    """This process's long-lived pool of ``threads`` threads for the units run here (a
    query's per-partition work), so that a job does not start threads of its own; None in a
    thread of such a pool (a unit that runs a job of its own, e.g. a join's right side,
    gets a private pool: a shared one could be full of the very calls waiting for it)."""
    if getattr(_IN_POOL, "inside", False):
        return None
    with _POOLS_LOCK:
        key = (os.getpid(), threads)   # a forked child starts pools of its own
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix="hfq-units",
                initializer=_mark_pool_thread)
        return pool


class _State:
    """Queues of unit indices per node, with load counted in rows."""

    def __init__(self, nodes: Nodes, units: Sequence[WorkUnit],
                 small_results: bool = False) -> None:
        self.nodes = nodes
        self.small_results = small_results
        self.units = units
        self.alive = set(nodes.alive())
        self.queues: dict[str, deque[int]] = {n: deque() for n in self.alive}
        self.load: dict[str, int] = dict.fromkeys(self.alive, 0)
        self.pending = 0
        self.bad: dict[int, set[str]] = {}   # unit -> nodes whose copy of it is damaged
        lost = []
        for i in range(len(units)):
            if not self._enqueue(i):
                lost.append(i)
        self._raise_lost(lost)

    def _holders(self, i: int) -> list[str]:
        bad = self.bad.get(i, ())
        return [n for n in self.nodes.unit_holders(self.units[i])
                if n in self.alive and n not in bad]

    def _enqueue(self, i: int) -> bool:
        holders = self._holders(i)
        if not holders:
            return False
        name = min(holders, key=lambda n: (self.load[n], n))
        self.queues[name].append(i)
        self.load[name] += max(1, self.units[i].rows)
        self.pending += 1
        return True

    def take_local(self, name: str) -> list[int]:
        """Every unit the local node holds (they run in this process, not through Ray)."""
        taken: list[int] = []
        for queue in self.queues.values():
            keep: deque[int] = deque()
            for i in queue:
                (taken if name in self._holders(i) else keep).append(i)
            queue.clear()
            queue.extend(keep)
        self.pending -= len(taken)
        return taken

    def dispatch(self, inflight: Callable[[str], int]) -> list[tuple[str, list[int]]]:
        """(node, unit indexes) to submit now: up to two calls in flight per CPU of a node,
        each with up to a quarter of what the node has queued per call slot (at most 32); for
        small results, a whole slot's share of it (4 slots free: a quarter of the queue, then
        a quarter of the rest, ...: about a third stays queued)."""
        out: list[tuple[str, list[int]]] = []
        if self.nodes.runtime is None:   # no Ray: everything ran locally
            return out
        for name in sorted(self.alive):
            slots = 2 * self.nodes.runtime.info(name).cpus
            room = slots - inflight(name)
            while room > 0:
                queued = len(self.queues[name])
                size = (-(-queued // slots) if self.small_results
                        else max(1, min(32, queued // (4 * slots))))
                chunk = self._next_for(name, size)
                if not chunk:
                    break
                out.append((name, chunk))
                room -= 1
        return out

    def _next_for(self, name: str, size: int) -> list[int]:
        queue = self.queues[name]
        if queue:
            chunk = [queue.popleft() for _ in range(min(size, len(queue)))]
            self.pending -= len(chunk)
            return chunk
        # steal from the back of the fullest queue a unit this node also holds
        for other in sorted(self.queues, key=lambda n: -len(self.queues[n])):
            queue = self.queues[other]
            for k in range(len(queue) - 1, -1, -1):
                if name in self._holders(queue[k]):
                    i = queue[k]
                    del queue[k]
                    self.pending -= 1
                    return [i]
        return []

    def node_died(self, name: str, unfinished: list[int]) -> None:
        """Send ``name``'s queued and ``unfinished`` units to other holders."""
        if name in self.alive:
            self.alive.discard(name)
            queued = list(self.queues.pop(name, ()))
            self.pending -= len(queued)
            self.load.pop(name, None)
        else:
            queued = []
        lost = [i for i in [*unfinished, *queued] if not self._enqueue(i)]
        if lost:   # name every partition that cannot finish now, not only this node's
            lost += [i for queue in self.queues.values() for i in queue
                     if not self._holders(i)]
        self._raise_lost(lost)

    def copy_failed(self, i: int, name: str, error: CorruptPartitionError) -> None:
        """Unit ``i`` met a damaged copy on ``name``: run it on another holder, or raise
        ``error`` when no other live holder is left."""
        self.bad.setdefault(i, set()).add(name)
        if not self._enqueue(i):
            others = [n for n in self.nodes.unit_holders(self.units[i])
                      if n not in self.bad[i]]
            error.add_note(f"no other intact live copy of partition {self.units[i].partition}"
                           f" (other holders: {', '.join(others) or 'none'}; damaged on: "
                           f"{', '.join(sorted(self.bad[i]))})")
            raise error

    def _raise_lost(self, lost: list[int]) -> None:
        if not lost:
            return
        parts = sorted({self.units[i].partition for i in lost})
        where = sorted({n for i in lost for n in self.nodes.unit_holders(self.units[i])})
        raise PartitionUnavailableError(
            f"{len(parts)} partition(s) have no live copy (held by {', '.join(where) or 'no node'}"
            f", none alive): {', '.join(parts[:20])}{' ...' if len(parts) > 20 else ''}; "
            "no partial result was returned -- restart those nodes (their data is on their "
            "disks) and run again", parts)


def _bar(progress: bool, total: int, label: str) -> Any:
    if not progress or total <= 1:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="partition", desc=label, file=sys.stderr, leave=False)


def _owned(value: Any) -> Any:
    """A server's value as this process keeps it: an Arrow table Ray deserialized is over
    Python-owned memory (the object store's, freed under the GIL), copied once into memory
    Arrow owns (:func:`~hfq.storage.owned.arrow_owned`: a polars frame over it could hang a
    pickling); anything else as it came (frames: :func:`~hfq.runtime.task.unship`)."""
    import pyarrow as pa
    return arrow_owned(value) if isinstance(value, pa.Table) else value
