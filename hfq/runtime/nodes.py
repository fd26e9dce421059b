"""The nodes that hold a database's files, and the one way every module reaches them.

Placement, writes to every replica, reads with failover, calls on one or every node and
per-partition tasks all go through :class:`Nodes`.  Whatever the calling process can do on its
own disk it does directly (the memory-mapped file, no copy through Ray's object store);
everything else goes to the server of a node that holds the file.  Without a runtime (an
embedded database before its first distributed call) the only node is the local one -- the
same code, one node.  A node whose server is gone is a dead node in every call: it is logged,
marked dead once (:meth:`Nodes.lost`), and its work goes elsewhere or is reported -- never a
raw Ray error.  A node that crashed a moment ago is still on Ray's list of live nodes (for
10-30 s) while calls to it hang: :meth:`Nodes.reachable` pings every server first and counts the
silent ones as down -- what maintenance calls do before they decide anything.

Every read is checksummed (:mod:`hfq.storage.fragment`).  A damaged or missing copy met by a
read is read from another holder instead and then repaired from a good copy
(:meth:`Nodes.repair`, which :meth:`hfq.Database.repair` runs over whole tables).

Ray is imported only when a call needs another node, so ``import hfq`` stays cheap.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import pyarrow as pa

from hfq import faults
from hfq.catalog.files import remove_files, remove_prefixed
from hfq.catalog.records import Fragment
from hfq.errors import (
    CorruptPartitionError,
    HfqError,
    NodeUnavailableError,
    PartitionUnavailableError,
    WriteError,
)
from hfq.runtime.executor import execute
from hfq.runtime.placement import place, replica_count
from hfq.runtime.task import NodeContext, StoreCall, WorkUnit, dead_actor_errors, dumps_task, unship
from hfq.storage.fragment import check_bytes, load_file, put_file, read_fragment, verify_file
from hfq.storage.store import Store

if TYPE_CHECKING:
    from hfq.runtime.cluster import Runtime

__all__ = ["Nodes", "Reachability"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class Reachability(NamedTuple):
    """What :meth:`Nodes.reachable` found: the nodes that answered (this process's own node
    always does: its work runs here), and those that did not (sorted)."""

    alive: list[str]
    unreachable: list[str]


class Nodes:
    """``local``: this process's node name (None: it has no hfq node); ``store``: its root."""

    def __init__(self, local: str | None, store: Store | None, runtime: Runtime | None,
                 default: str | None = None) -> None:
        self.local = local
        self.store = store
        self.runtime = runtime
        self.default = default or local
        """Node of fragments written before nodes were recorded (the embedded root)."""

    def alive(self) -> list[str]:
        if self.runtime is None:
            return [self.local] if self.local else []
        return self.runtime.alive()

    def reachable(self, timeout: float) -> Reachability:
        """The nodes whose servers answer a ping within ``timeout`` seconds, now.

        The list of live nodes is first brought up to date (nodes that joined found, nodes
        Ray saw leave forgotten); then every server but this process's own node's is pinged
        at once.  A node that does not answer -- most likely crashed, and Ray has not noticed
        yet -- is left out of :meth:`alive` until it answers a later ping (see
        :meth:`hfq.runtime.cluster.Runtime.ping`); one whose server is found dead is
        forgotten.  Without a runtime, the local node is the only one.
        """
        if self.runtime is None:
            return Reachability(self.alive(), [])
        self.runtime.refresh()
        silent = self.runtime.ping(timeout, skip=[self.local] if self.local else [])
        return Reachability(self.alive(), silent)

    def lost(self, name: str) -> None:
        """A call to node ``name`` failed with a dead actor: it is gone, send it no more work."""
        if self.runtime is not None:
            self.runtime.mark_dead(name)

    def context(self) -> NodeContext:
        """This process's node, as tasks and calls see it."""
        if self.store is None or self.local is None:
            raise HfqError("this process has no hfq node of its own")
        return NodeContext(self.local, self.store, None, lambda: self)

    # -- where files are ----------------------------------------------------------------------
    def holders(self, fragment: Fragment) -> list[str]:
        return list(fragment.nodes or ([self.default] if self.default else []))

    def common_holders(self, fragments: Sequence[Fragment]) -> list[str]:
        """Nodes holding every one of ``fragments``, in the first one's order."""
        common = self.holders(fragments[0]) if fragments else []
        for fragment in fragments[1:]:
            held = set(self.holders(fragment))
            common = [n for n in common if n in held]
        return common

    def unit_holders(self, unit: WorkUnit) -> list[str]:
        """Nodes holding every file of the unit (where it can run)."""
        return self.common_holders(unit.fragments)

    def targets(self, partition: str, existing: Sequence[str], requested: int | None,
                table: str) -> list[str]:
        """Nodes a new file of ``partition`` goes to: the partition's current live nodes first
        (a partition's files stay together), then the placement order."""
        alive = self.alive()
        k = replica_count(requested, alive, table)
        chosen = [n for n in existing if n in alive][:k]
        for name in place(partition, alive, len(alive)):
            if len(chosen) == k:
                break
            if name not in chosen:
                chosen.append(name)
        return chosen

    # -- calls on nodes ---------------------------------------------------------------------------
    def call(self, name: str, fn: Callable[..., T], *args: Any, compute: bool = False) -> T:
        """``fn(node context, *args)`` on node ``name`` (in this process when it is ours).

        Raises :class:`~hfq.errors.NodeUnavailableError` when the node is gone.
        """
        return self.call_each(fn, *args, names=[name], compute=compute, strict=True)[name]

    def call_each(self, fn: Callable[..., T], *args: Any, names: Sequence[str] | None = None,
                  args_for: Callable[[str], tuple[Any, ...]] | None = None,
                  compute: bool = False, strict: bool = False) -> dict[str, T]:
        """``fn(node context, *args)`` on every live node (or on ``names``), in parallel; the
        results by node.

        ``args_for(name)``: per-node arguments instead of ``args``.  A node that is gone (or
        dies during the call) is logged, marked dead and left out of the result -- or, with
        ``strict``, raised as :class:`~hfq.errors.NodeUnavailableError` naming it.  An error
        raised by ``fn`` itself is raised as it is.
        """
        live = self.alive()
        targets = list(live if names is None else names)
        out: dict[str, T] = {}
        missing = [n for n in targets if n not in live]
        refs: dict[Any, str] = {}
        for name in targets:
            if name in live and name != self.local:
                try:
                    call_args = args_for(name) if args_for else args
                    refs[self._server(name).call.remote(fn, call_args, compute)] = name
                except (NodeUnavailableError,) + dead_actor_errors():
                    self.lost(name)
                    missing.append(name)
        try:
            if self.local in targets and self.local in live:
                out[self.local] = fn(self.context(), *(args_for(self.local) if args_for else args))
        except BaseException:
            _settle(refs)   # no node still working when the caller cleans up after the error
            raise
        if refs:
            import ray
            for ref, name in refs.items():
                try:
                    out[name] = ray.get(ref)
                except dead_actor_errors():
                    self.lost(name)
                    missing.append(name)
                except ray.exceptions.RayTaskError as exc:
                    _settle(refs)
                    raise (exc.cause if isinstance(exc.cause, BaseException) else exc) from None
        if missing:
            log.warning("%s: hfq node(s) %s not reachable, left out", _name(fn),
                        ", ".join(sorted(missing)))
            if strict:
                raise NodeUnavailableError(f"hfq node(s) {', '.join(sorted(missing))} are not "
                                           f"alive (live nodes: {', '.join(live)})",
                                           sorted(missing))
        return out

    def _server(self, name: str) -> Any:
        if self.runtime is None:
            raise NodeUnavailableError(f"hfq node {name} cannot be reached without the Ray "
                                       "runtime", [name])
        try:
            return self.runtime.server(name)
        except HfqError:
            raise NodeUnavailableError(f"hfq node {name} is not alive", [name]) from None

    # -- files ----------------------------------------------------------------------------------
    def put(self, rel: str, data: pa.Buffer, nodes: Sequence[str], *, sync: bool = False) -> None:
        """Write ``data`` to ``rel`` on every node of ``nodes``; all of them or an error."""
        remote = [n for n in nodes if n != self.local]
        refs = []
        if remote:
            import ray
            ref = ray.put(data)
            refs = [(n, self._server(n).put_file.remote(rel, ref, sync)) for n in remote]
        if self.local in nodes:
            assert self.store is not None
            try:
                put_file(self.store, rel, data, sync=sync)
            except BaseException:
                _settle(r for _, r in refs)   # every copy settled before the caller cleans up
                raise
        for name, ref in refs:
            try:
                ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - name the node whatever went wrong
                _settle(r for _, r in refs)
                if isinstance(exc, dead_actor_errors()):
                    self.lost(name)
                    raise NodeUnavailableError(f"writing {rel} to hfq node {name} failed: the "
                                               "node is gone", [name]) from exc
                cause = getattr(exc, "cause", None) or exc
                if isinstance(cause, OSError):   # e.g. that node's disk is full: keep errno
                    raise WriteError(f"writing {rel} to hfq node {name} failed: {cause}",
                                     errno=cause.errno) from exc
                raise HfqError(f"writing {rel} to hfq node {name} failed: {cause}") from exc

    def read_file(self, fragment: Fragment, logical: pa.Schema,
                  columns: Sequence[str] | None = None) -> pa.Table:
        """One file as Arrow, verified: from the local disk when held here, else fetched
        from a holder; a damaged or unreachable copy sends the read to the next holder, and
        damaged copies are repaired once a good one was read."""
        holders = self.holders(fragment)
        alive = self.alive()
        order = [n for n in holders if n == self.local and self.store is not None] + \
            [n for n in holders if n != self.local and n in alive]
        bad: list[str] = []
        errors: list[HfqError] = []
        for name in order:
            try:
                if name == self.local:
                    table = read_fragment(self.store, fragment, logical, columns=columns,
                                          node=name)
                else:
                    data = self.call(name, _get_file, fragment.file)
                    table = read_fragment(None, fragment, logical, columns=columns, data=data,
                                          node=name)
            except CorruptPartitionError as exc:
                log.warning("%s; trying the next replica", exc)
                bad.append(name)
                errors.append(exc)
                continue
            except NodeUnavailableError as exc:
                log.warning("reading %s from hfq node %s failed (%s); trying the next "
                            "replica", fragment.file, name, exc)
                errors.append(exc)
                continue
            if bad:
                self.repair_quietly({n: [fragment] for n in bad})
            return table
        corrupt = [e for e in errors if isinstance(e, CorruptPartitionError)]
        if corrupt:
            if len(errors) > 1:
                corrupt[0].add_note("every other copy failed too: " +
                                    "; ".join(str(e) for e in errors if e is not corrupt[0]))
            raise corrupt[0]
        raise PartitionUnavailableError(f"no live node holds {fragment.file} (held by "
                                        f"{', '.join(holders)})", [fragment.file])

    def copy(self, copies: dict[str, list[tuple[Fragment, Sequence[str]]]], *,
             sync: bool = False) -> None:
        """Make sure each destination node holds an intact copy of its fragments, each taken
        from the first intact copy among the source nodes named with it
        (``{dest: [(fragment, sources), ...]}``); the destinations work in parallel.  Raises
        :class:`~hfq.errors.NodeUnavailableError` when a destination is gone and
        :class:`~hfq.errors.CorruptPartitionError` when no source has an intact copy."""
        self.call_each(_pull_all, names=list(copies), strict=True,
                       args_for=lambda n: ([(f.without_stats(), list(src))
                                            for f, src in copies[n]], sync))

    def verify(self, fragments_by_node: dict[str, list[Fragment]]) -> tuple[int, list[str]]:
        """Check each node's copies against the catalog: (copies checked, problems found);
        copies on nodes that are gone are not counted (the call logs them)."""
        found = self.call_each(_verify, names=list(fragments_by_node),
                               args_for=lambda n: (fragments_by_node[n],))
        checked = sum(len(fragments_by_node[n]) for n in found)
        return checked, [p for problems in found.values() for p in problems]

    def repair(self, fragments_by_node: dict[str, list[Fragment]]) -> list[dict[str, str]]:
        """Check each node's copies of its fragments; replace every damaged or missing one
        by an intact copy from another live holder.  One row per copy that was not intact:
        table, partition, file, node, problem, and what was done (``repaired from N``, or why
        not); a node that is gone gets one row saying so."""
        live = self.alive()
        names = list(fragments_by_node)
        found = self.call_each(
            _repair_all, names=names,
            args_for=lambda n: ([(f.without_stats(), [h for h in self.holders(f)
                                                       if h != n and h in live])
                                 for f in fragments_by_node[n]],))
        rows = [row for n in names if n in found for row in found[n]]
        rows += [{"table": "", "partition": "", "file": "", "node": n,
                  "problem": "node is not alive", "action": "not checked"}
                 for n in names if n not in found]
        return rows

    def repair_quietly(self, fragments_by_node: dict[str, list[Fragment]]) -> None:
        """:meth:`repair` after a read met damaged copies: best effort, logged, never
        raises (the read itself succeeded from another copy)."""
        try:
            for row in self.repair(fragments_by_node):
                log.warning("repair of %s on hfq node %s: %s", row["file"] or "its copies",
                            row["node"], row["action"])
        except Exception as exc:  # noqa: BLE001 - the answer is right; the copy stays bad
            log.warning("repairing damaged copies on %s failed (%s); db.repair() retries",
                        ", ".join(fragments_by_node), exc)

    def remove(self, fragments: Sequence[Fragment]) -> None:
        """Best effort: files not referenced by a commit are garbage vacuum also finds."""
        by_node: dict[str, list[str]] = {}
        for fragment in fragments:
            for name in self.holders(fragment):
                by_node.setdefault(name, []).append(fragment.file)
        live = [n for n in by_node if n in self.alive()]
        self.call_each(StoreCall(remove_files), names=live, args_for=lambda n: (by_node[n],))

    def remove_prefix(self, table: str, prefix: str) -> int:
        """Remove, on every live node, the files of ``table`` whose name starts with
        ``prefix`` (what a failed job of one transaction wrote); returns the files removed."""
        return sum(self.call_each(StoreCall(remove_prefixed), table, prefix).values())

    # -- work on partitions ---------------------------------------------------------------------
    def run_in_order(self, task: Callable[[NodeContext, Any], T], units: Sequence[WorkUnit], *,
                     threads: int, window: int,
                     local_task: Callable[[NodeContext, Any], Any] | None = None,
                     finish: Callable[[Any, Any, str], Any] | None = None) -> Iterator[T]:
        """Each unit's ``task`` result, in unit order, ``window`` units ahead at a time; units
        held here run in this process's threads (``local_task``, ``finish``: see
        :meth:`run_units`)."""
        for start in range(0, len(units), window):
            chunk = units[start:start + window]
            out: list[Any] = [None] * len(chunk)

            def keep(i: int, value: Any, out: list[Any] = out) -> None:
                out[i] = value

            self.run_units(task, chunk, keep, here=True, threads=threads,
                           local_task=local_task, finish=finish)
            yield from out

    def run_units(self, task: Callable[[NodeContext, Any], Any], units: Sequence[WorkUnit],
                  on_result: Callable[[int, Any], None], *, here: bool = False,
                  threads: int = 1, progress: bool = False, label: str = "",
                  local_task: Callable[[NodeContext, Any], Any] | None = None,
                  finish: Callable[[Any, Any, str], Any] | None = None,
                  small_results: bool = False) -> None:
        """``task(node, unit)`` on every unit, on a node holding it, with failover;
        ``on_result(index, value)`` as results arrive.  ``here``: units this process's node
        holds run in this process (no cache, no copy) instead of on its server;
        ``local_task``: what those run instead of ``task`` (e.g. reading a unit and using its
        rows in the thread that read them; it need not be picklable); ``finish(unit, value,
        node)``: what a server's result still needs in this process, run in its threads
        (e.g. decoding the file bytes a server sent; see :func:`~hfq.runtime.executor.execute`);
        ``small_results``: each unit's value is small (a map function's), so units go to the
        servers in fewer, larger calls."""
        if not units:
            return
        submit: Callable[[Any, list[Any]], Any] | None = None
        if self.runtime is not None:
            job: list[Any] = []   # (key, [ObjectRef]) once the first batch goes to a server

            def put_task() -> None:
                if not job:   # the task is put once; each server fetches and unpickles it once
                    import ray
                    data = dumps_task(task)   # its frames as Arrow, not DataFrame.serialize
                    # in a list: Ray passes the reference, not the value
                    job.extend([hashlib.blake2b(data, digest_size=16).hexdigest(),
                                [ray.put(data)]])

            def to_server(server: Any, batch: list[Any]) -> Any:
                put_task()
                return server.run.remote(job[0], job[1], batch)

            submit = to_server
            if not here or self.local is None or \
                    any(set(self.unit_holders(u)) - {self.local} for u in units):
                # pickled before this process's threads start: a task holding a polars frame
                # pickles through DataFrame.serialize, which waits on polars' thread pool with
                # the GIL held -- a pool thread dropping Arrow memory of another thread's query
                # needs the GIL, and both waited forever (a hang of the 2-node fuzz run)
                put_task()
        elif not here:
            raise HfqError("map functions need the Ray runtime (Database.runtime starts it)")
        run_here = task if local_task is None else local_task
        local = (lambda unit: run_here(self.context(), unit)) if here and self.local else None
        bad: dict[str, list[Fragment]] = {}

        def on_bad(i: int, name: str, error: CorruptPartitionError) -> None:
            files = units[i].fragments
            hit = [f for f in files if f.file == error.file] or list(files)
            bad.setdefault(name, []).extend(hit)

        execute(self, units, submit, lambda i, value: on_result(i, unship(value)),
                local=local, threads=threads, finish=finish, small_results=small_results,
                progress=progress, label=label, on_bad=on_bad)
        if bad:
            self.repair_quietly(bad)


# -- what runs on a node (module-level: pickled by reference) ---------------------------------
def _get_file(node: NodeContext, rel: str) -> pa.Buffer:
    return load_file(node.store, rel, node.name)


def _ensure(node: NodeContext, fragment: Fragment, sources: Sequence[str], sync: bool,
            point: str | None) -> tuple[str, str] | None:
    """Make sure this node holds an intact copy of ``fragment``, taken from the first source
    with an intact one; None when it had one, else (what was wrong, the source used).

    ``point``: the fault point reached between fetching the good copy and replacing a
    damaged one."""
    try:
        verify_file(node.store, fragment.file, fragment.bytes, fragment.crc32, node=node.name)
        return None
    except CorruptPartitionError as exc:
        problem = "missing" if not node.store.exists(fragment.file) else str(exc)
    failed: list[str] = []
    for source in sources:
        if source == node.name:
            continue
        try:
            data = node.nodes().call(source, _get_file, fragment.file)
            check_bytes(data, fragment.file, fragment.bytes, fragment.crc32, node=source)
        except (CorruptPartitionError, NodeUnavailableError) as exc:
            failed.append(str(exc))
            continue
        if point is not None and problem != "missing":
            faults.point(point)
        put_file(node.store, fragment.file, data, sync=sync)
        return problem, source
    raise CorruptPartitionError(
        f"no intact copy of {fragment.file} to put on hfq node {node.name} ({problem}); "
        f"tried {', '.join(s for s in sources if s != node.name) or 'no other node'}"
        + (": " + "; ".join(failed) if failed else ""), file=fragment.file, node=node.name)


def _pull_all(node: NodeContext, items: list[tuple[Fragment, list[str]]], sync: bool) -> int:
    for fragment, sources in items:
        _ensure(node, fragment, sources, sync, None)
    return len(items)


def _repair_all(node: NodeContext, items: list[tuple[Fragment, list[str]]]
                ) -> list[dict[str, str]]:
    rows = []
    for fragment, sources in items:
        table, _, rest = fragment.file.partition("/data/")
        row = {"table": table, "partition": rest.rpartition("/")[0], "file": fragment.file,
               "node": node.name or ""}
        try:
            done = _ensure(node, fragment, sources, True, "repair.copy.before_swap")
        except CorruptPartitionError as exc:
            rows.append({**row, "problem": "damaged or missing",
                         "action": f"not repaired: {exc}"})
            continue
        if done is not None:
            rows.append({**row, "problem": done[0], "action": f"repaired from {done[1]}"})
    return rows


def _verify(node: NodeContext, fragments: list[Fragment]) -> list[str]:
    problems = []
    for f in fragments:
        try:
            verify_file(node.store, f.file, f.bytes, f.crc32, node=node.name)
        except CorruptPartitionError as exc:
            problems.append(str(exc))
    return problems


def _settle(refs: Iterable[Any]) -> None:
    """Wait until every one of ``refs`` (Ray calls) has finished, whatever its outcome: after
    an error, nothing may still be writing when the caller removes what was written."""
    pending = list(refs)
    if pending:
        import ray
        ray.wait(pending, num_returns=len(pending))


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
