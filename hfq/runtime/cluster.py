"""The driver's (or a server's) view of the Ray cluster: which hfq nodes are alive, and their
servers.

One :class:`~hfq.runtime.server.NodeServer` actor runs per Ray node, hard-pinned to it, named
after the Ray node so every process finds the same one.  :class:`Runtime` starts the missing
ones, keeps their :class:`~hfq.runtime.node.NodeInfo`, and forgets a node as soon as a call to it
fails with a dead actor.  A node that crashed stays on Ray's list of live nodes for 10-30 s
(until Ray's health checks give up on it) while calls to its server hang: :meth:`Runtime.ping`
finds such a node *silent* and leaves it out of :meth:`Runtime.alive` until it answers.  Two
ways in:

* :func:`hfq.runtime.connect.embedded`: ``hfq.connect()`` -- a one-node Ray cluster owned by
  this process (``address="local"``), its one server given the database root explicitly.
* :func:`hfq.runtime.connect.attach`: ``hfq.connect(address=...)`` -- a running cluster; each
  node's server takes its root from the node's ``HFQ_NODE_ROOT``.

This module only finds servers; starting them is :func:`hfq.runtime.server.start_server`,
handed in as ``starter`` (a server looking up its peers starts none).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import ray

from hfq.errors import HfqError
from hfq.runtime.node import NodeInfo, code_fingerprint
from hfq.runtime.task import dead_actor_errors

__all__ = ["NAMESPACE", "Runtime", "Starter"]

log = logging.getLogger(__name__)

Starter = Callable[..., Any]
"""``starter(ray_node_id, actor_name, cpus, detached, embedded_root, cache_bytes)`` -> handle."""

NAMESPACE = "hfq"
_START_TIMEOUT_S = 60.0


class Runtime:
    """Live hfq nodes of one Ray cluster and a handle on each one's server."""

    def __init__(self, *, owned: bool, embedded_root: str | None,
                 starter: Starter | None = None, cache_bytes: int = 0) -> None:
        self.owned = owned
        self.cache_bytes = cache_bytes
        self.embedded_root = embedded_root
        self._starter = starter
        self.create = starter is not None
        self._lock = threading.RLock()
        self._servers: dict[str, Any] = {}        # node name -> actor handle
        self._infos: dict[str, NodeInfo] = {}     # node name -> info
        self._by_ray_id: dict[str, str] = {}     # ray node id -> node name
        self._dead: set[str] = set()              # ray node ids seen dead
        self._silent: dict[str, Any] = {}         # node name -> its ping, not answered yet
        self.refresh()

    @classmethod
    def inside(cls, embedded_root: str | None = None) -> Runtime:
        """From within a server: look up the other servers, start none (``embedded_root``: the
        server's root when it serves an embedded database)."""
        return cls(owned=False, embedded_root=embedded_root)

    def shutdown(self) -> None:
        if self.owned and ray.is_initialized():
            ray.shutdown()

    # -- nodes --------------------------------------------------------------------------------
    def refresh(self) -> list[str]:
        """Find servers for nodes that joined, forget nodes that left; the live node names."""
        with self._lock:
            if self._silent:   # answered since (back in alive()) or found dead: no waiting
                self._settle(dict(self._silent), 0)
            nodes = [n for n in ray.nodes() if n["Alive"]]
            alive_ids = {n["NodeID"] for n in nodes}
            for ray_id in list(self._by_ray_id):
                if ray_id not in alive_ids:
                    self._forget(ray_id)
            if self.embedded_root is not None:
                here = ray.get_runtime_context().get_node_id()
                nodes = [n for n in nodes if n["NodeID"] == here]
            new = [n for n in nodes if n["NodeID"] not in self._by_ray_id
                   and n["NodeID"] not in self._dead]
            handles = [(n, self._server_for(n)) for n in new]
            asked = [(n, h, h.info.remote()) for n, h in handles if h is not None]
            found = []
            deadline = time.monotonic() + _START_TIMEOUT_S   # the servers start in parallel
            for n, handle, ref in asked:
                try:
                    info = ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
                    if self.create and info.code != code_fingerprint():
                        handle = self._replace(n, handle)   # a server left by older code
                        info = ray.get(handle.info.remote(), timeout=_START_TIMEOUT_S)
                    found.append((n, handle, info))
                except dead_actor_errors():     # the node died just now
                    log.warning("hfq server on Ray node %s did not answer: node gone",
                                n["NodeID"][:12])
                    self._dead.add(n["NodeID"])
                except ray.exceptions.GetTimeoutError:   # not answering: ask again next time
                    continue
                except ray.exceptions.RayTaskError as exc:   # e.g. no HFQ_NODE_ROOT there
                    raise HfqError(f"the hfq server on Ray node {n['NodeID'][:12]} "
                                   f"({n['NodeManagerAddress']}) could not start: "
                                   f"{exc.cause if exc.cause else exc}") from None
            for n, handle, info in found:
                if info.name in self._servers and self._infos[info.name].ray_node_id != n["NodeID"]:
                    raise HfqError(
                        f"two Ray nodes ({str(self._infos[info.name].ray_node_id)[:12]} and "
                        f"{n['NodeID'][:12]}) use the same hfq node root {info.root}; give each "
                        "node its own HFQ_NODE_ROOT")
                self._servers[info.name] = handle
                self._infos[info.name] = info
                self._by_ray_id[n["NodeID"]] = info.name
            return self.alive()

    def alive(self) -> list[str]:
        """The nodes whose servers are believed alive (silent ones left out), sorted."""
        with self._lock:
            return sorted(n for n in self._servers if n not in self._silent)

    def info(self, name: str) -> NodeInfo:
        return self._infos[name]

    def infos(self) -> list[NodeInfo]:
        with self._lock:
            return [self._infos[n] for n in self.alive()]

    def ping(self, timeout: float, *, skip: Iterable[str] = ()) -> list[str]:
        """Ask every known node's server (silent ones too, except ``skip``) to answer within
        ``timeout`` seconds, all at once; returns, sorted, the nodes that did not.

        Those are *silent*: left out of :meth:`alive` until they answer -- a later ping, or
        a :meth:`refresh` finding the pending ping answered.  A server found dead is
        forgotten (:meth:`mark_dead`).  A silent node's pending ping is waited on again, not
        sent twice.
        """
        skipped = set(skip)
        with self._lock:
            probes = {}
            for name in sorted(self._servers):
                if name not in skipped:
                    probes[name] = self._silent.get(name) or self._servers[name].ping.remote()
        return self._settle(probes, timeout)

    def _settle(self, probes: dict[str, Any], timeout: float) -> list[str]:
        """Wait up to ``timeout`` for the pings ``probes`` (node name -> ObjectRef); update
        which nodes are silent; return those that did not answer."""
        if not probes:
            return []
        ready, _ = ray.wait(list(probes.values()), num_returns=len(probes), timeout=timeout)
        answered = set(ready)
        silent = []
        for name, ref in probes.items():
            if ref not in answered:
                with self._lock:
                    if name in self._servers:
                        if name not in self._silent:
                            log.warning("hfq node %s did not answer a ping within %.1f s; "
                                        "counted as down until it does", name, timeout)
                        self._silent[name] = ref
                silent.append(name)
                continue
            try:
                ray.get(ref)
            except dead_actor_errors():
                self.mark_dead(name)
                silent.append(name)
                continue
            except ray.exceptions.RayTaskError:   # it ran and failed: the server is there
                pass
            with self._lock:
                if self._silent.pop(name, None) is not None:
                    log.warning("hfq node %s answers again", name)
        return sorted(silent)

    def server(self, name: str) -> Any:
        with self._lock:
            try:
                return self._servers[name]
            except KeyError:
                raise HfqError(f"hfq node {name} is not alive") from None

    def mark_dead(self, name: str) -> None:
        """A call to ``name`` failed with a dead actor: stop sending it work."""
        with self._lock:
            info = self._infos.get(name)
            if info is not None:
                log.warning("hfq node %s is gone (its server's actor died); its work goes to "
                            "replicas", name)
            if info is not None and info.ray_node_id:
                self._dead.add(info.ray_node_id)
                self._forget(info.ray_node_id)

    def local_name(self) -> str | None:
        """The hfq node this process runs on, if it has one."""
        here = ray.get_runtime_context().get_node_id()
        with self._lock:
            return self._by_ray_id.get(here)

    def head_name(self) -> str | None:
        with self._lock:
            for n in ray.nodes():
                if n["Alive"] and "node:__internal_head__" in n.get("Resources", {}):
                    return self._by_ray_id.get(n["NodeID"])
        return None

    # -- internals ----------------------------------------------------------------------------
    def _forget(self, ray_id: str) -> None:
        name = self._by_ray_id.pop(ray_id, None)
        if name is not None:
            self._servers.pop(name, None)
            self._infos.pop(name, None)
            self._silent.pop(name, None)

    def _replace(self, node: dict[str, Any], handle: Any) -> Any:
        ray.kill(handle, no_restart=True)
        for _ in range(100):   # the name is freed once the actor is gone
            try:
                ray.get_actor(self._actor_name(node["NodeID"]), namespace=NAMESPACE)
            except ValueError:
                break
            time.sleep(0.05)
        return self._server_for(node)

    def _actor_name(self, ray_id: str) -> str:
        name = f"hfq-server-{ray_id}"
        if self.embedded_root is not None:
            digest = hashlib.blake2b(self.embedded_root.encode(), digest_size=6).hexdigest()
            name += f"-{digest}"
        return name

    def _server_for(self, node: dict[str, Any]) -> Any:
        ray_id = node["NodeID"]
        name = self._actor_name(ray_id)
        if self._starter is None:
            try:
                return ray.get_actor(name, namespace=NAMESPACE)
            except ValueError:
                return None
        cpus = max(1, int(node.get("Resources", {}).get("CPU", 1)))
        return self._starter(ray_id, name, cpus=cpus,
                             detached=not (self.owned or self.embedded_root),
                             embedded_root=self.embedded_root, cache_bytes=self.cache_bytes)
