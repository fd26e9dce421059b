"""The nodes that hold a database's files, and the one way every module reaches them.

Placement, writes to every replica, reads with failover, calls on one or every node and
per-partition tasks all go through :class:`Nodes`.  Whatever the calling process can do on its
own disk it does directly (the memory-mapped file, no copy through Ray's object store);
everything else goes to the server of a node that holds the file.  Without a runtime (an
embedded database before its first distributed call) the only node is the local one -- the
same code, one node.  A node whose server is gone is a dead node in every call: it is logged,
marked dead once, and its work goes elsewhere or is reported -- never a raw Ray error.

Ray is imported only when a call needs another node, so ``import hfq`` stays cheap.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from hfq.catalog.files import remove_files, remove_prefixed
from hfq.catalog.records import Fragment
from hfq.errors import HfqError, NodeUnavailableError, PartitionUnavailableError
from hfq.runtime.executor import execute
from hfq.runtime.placement import place, replica_count
from hfq.runtime.task import NodeContext, StoreCall, WorkUnit, dead_actor_errors, unship
from hfq.storage.fragment import check_bytes, put_file, read_fragment, verify_file
from hfq.storage.store import Store

if TYPE_CHECKING:
    from hfq.runtime.cluster import Runtime

__all__ = ["Nodes"]

log = logging.getLogger("hfq")

T = TypeVar("T")


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
                    self._lost(name)
                    missing.append(name)
        if self.local in targets and self.local in live:
            out[self.local] = fn(self.context(), *(args_for(self.local) if args_for else args))
        if refs:
            import ray
            for ref, name in refs.items():
                try:
                    out[name] = ray.get(ref)
                except dead_actor_errors():
                    self._lost(name)
                    missing.append(name)
                except ray.exceptions.RayTaskError as exc:
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

    def _lost(self, name: str) -> None:
        if self.runtime is not None:
            self.runtime.mark_dead(name)

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
            put_file(self.store, rel, data, sync=sync)
        for name, ref in refs:
            try:
                ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - name the node whatever went wrong
                if isinstance(exc, dead_actor_errors()):
                    self._lost(name)
                raise HfqError(f"writing {rel} to hfq node {name} failed: {exc}") from exc

    def read_file(self, fragment: Fragment, logical: pa.Schema,
                  columns: Sequence[str] | None = None) -> pa.Table:
        """One file as Arrow: from the local disk when held here, else fetched from a holder
        (the next replica when one fails)."""
        holders = self.holders(fragment)
        if self.local in holders and self.store is not None:
            return read_fragment(self.store, fragment.file, logical, columns=columns)
        for name in holders:
            if name not in self.alive():
                continue
            try:
                data = self.call(name, _get_file, fragment.file)
            except (NodeUnavailableError, OSError) as exc:
                log.warning("reading %s from hfq node %s failed (%s); trying the next replica",
                            fragment.file, name, exc)
                continue
            return read_fragment(None, fragment.file, logical, columns=columns, data=data)
        raise PartitionUnavailableError(f"no live node holds {fragment.file} (held by "
                                        f"{', '.join(holders)})", [fragment.file])

    def copy(self, copies: dict[str, list[tuple[Fragment, str]]], *, sync: bool = False) -> None:
        """Make sure each destination node holds an intact copy of its fragments, each taken
        from the source node named with it (``{dest: [(fragment, source), ...]}``); the
        destinations work in parallel.  Raises when a destination is gone."""
        self.call_each(_pull_all, names=list(copies), strict=True,
                       args_for=lambda n: ([(f.file, src, f.bytes, f.crc32) for f, src
                                            in copies[n]], sync))

    def verify(self, fragments_by_node: dict[str, list[Fragment]]) -> list[str]:
        """Check each node's copies against the catalog; the problems found (node: what)."""
        found = self.call_each(_verify, names=list(fragments_by_node),
                               args_for=lambda n: (fragments_by_node[n],))
        return [p for problems in found.values() for p in problems]

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
                     threads: int, window: int) -> Iterator[T]:
        """Each unit's ``task`` result, in unit order, ``window`` units ahead at a time; units
        held here run in this process's threads."""
        for start in range(0, len(units), window):
            chunk = units[start:start + window]
            out: list[Any] = [None] * len(chunk)

            def keep(i: int, value: Any, out: list[Any] = out) -> None:
                out[i] = value

            self.run_units(task, chunk, keep, here=True, threads=threads)
            yield from out

    def run_units(self, task: Callable[[NodeContext, Any], Any], units: Sequence[WorkUnit],
                  on_result: Callable[[int, Any], None], *, here: bool = False,
                  threads: int = 1, progress: bool = False, label: str = "") -> None:
        """``task(node, unit)`` on every unit, on a node holding it, with failover;
        ``on_result(index, value)`` as results arrive.  ``here``: units this process's node
        holds run in this process (no cache, no copy) instead of on its server."""
        if not units:
            return
        submit: Callable[[Any, list[Any]], Any] | None = None
        if self.runtime is not None:
            job: list[Any] = []   # (key, [ObjectRef]) once the first batch goes to a server

            def to_server(server: Any, batch: list[Any]) -> Any:
                if not job:   # the task is put once; each server fetches and unpickles it once
                    import ray
                    from ray import cloudpickle
                    data = cloudpickle.dumps(task)
                    # in a list: Ray passes the reference, not the value
                    job.extend([hashlib.blake2b(data, digest_size=16).hexdigest(),
                                [ray.put(data)]])
                return server.run.remote(job[0], job[1], batch)

            submit = to_server
        elif not here:
            raise HfqError("map functions need the Ray runtime (Database.runtime starts it)")
        local = (lambda unit: task(self.context(), unit)) if here and self.local else None
        execute(self, units, submit, lambda i, value: on_result(i, unship(value)),
                local=local, threads=threads, progress=progress, label=label)


# -- what runs on a node (module-level: pickled by reference) ---------------------------------
def _get_file(node: NodeContext, rel: str) -> pa.Buffer:
    return pa.py_buffer(node.store.read_bytes(rel))


def _pull(node: NodeContext, rel: str, source: str, size: int, crc32: int, sync: bool) -> str:
    """Copy ``rel`` from node ``source`` unless this node already has it intact."""
    try:
        verify_file(node.store, rel, size, crc32)
        return node.name or ""
    except OSError:   # missing or damaged here: copy it
        pass
    data = node.nodes().call(source, _get_file, rel)
    check_bytes(data, f"{rel} (copy from {source})", size, crc32)
    put_file(node.store, rel, data, sync=sync)
    return node.name or ""


def _pull_all(node: NodeContext, items: list[tuple[str, str, int, int]], sync: bool) -> int:
    for rel, source, size, crc32 in items:
        _pull(node, rel, source, size, crc32, sync)
    return len(items)


def _verify(node: NodeContext, fragments: list[Fragment]) -> list[str]:
    problems = []
    for f in fragments:
        try:
            verify_file(node.store, f.file, f.bytes, f.crc32)
        except OSError as exc:
            problems.append(f"{node.name}: {exc}")
    return problems


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
