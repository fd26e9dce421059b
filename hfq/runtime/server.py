"""The server actor: one per node, pinned to it, owning the partition files under its root.

It runs what must happen where the files are -- per-partition tasks (reads, map functions) and
calls (CSV loads, copies, checks, sweeps, deletes) -- and returns small results (or Arrow
tables, never pickled frames).  It knows no query, ingest or analytics code: tasks and calls
arrive as picklable callables (:mod:`hfq.runtime.task`).  It is a threaded actor: control calls
are never stuck behind long map calls, and compute shares a semaphore sized to the node's CPUs,
which is also what polars and numba are told to use (``POLARS_MAX_THREADS``,
``NUMBA_NUM_THREADS`` in its environment).

A server keeps the node's services (:mod:`hfq.runtime.services`: state that outlives one call,
such as the live rows of a table) for its lifetime, whatever they are.

A server reserves no Ray CPUs: it lives as long as the cluster, and holding the node's CPUs
would starve every other Ray task forever.  It uses them only while it computes.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import ray
from ray import cloudpickle
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from hfq.errors import CorruptPartitionError
from hfq.runtime.cluster import NAMESPACE, Runtime
from hfq.runtime.node import NodeInfo, code_fingerprint, node_identity, root_from_env
from hfq.runtime.nodes import Nodes
from hfq.runtime.services import node_services
from hfq.runtime.task import BadCopy, NodeContext, ship
from hfq.storage.cache import PartitionCache
from hfq.storage.fragment import put_file
from hfq.storage.store import open_store

__all__ = ["NodeServer", "start_server"]

_JOBS_KEPT = 64


@ray.remote
class NodeServer:
    """Serves one node's root (``root`` when given -- the embedded case -- else HFQ_NODE_ROOT)."""

    def __init__(self, root: str | None = None, cpus: int = 1, cache_bytes: int = 0) -> None:
        self._embedded_root = root
        root = os.path.abspath(os.path.expanduser(root or root_from_env()))
        self.store = open_store(root)
        self.name = node_identity(self.store)
        self.cpus = cpus
        # numba caches compiled kernels on this node's disk, the same directory for every job
        os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(root, ".cache", "numba"))
        self._compute = threading.Semaphore(cpus)
        self.cache = PartitionCache(cache_bytes)
        self._jobs: dict[str, Any] = {}
        self._peers: Nodes | None = None
        self._lock = threading.Lock()
        self.context = NodeContext(self.name, self.store, self.cache, self._nodes)
        self.services = node_services(self.name, self.store.root)   # what calls keep here

    def info(self) -> NodeInfo:
        return NodeInfo(name=self.name, root=self.store.root,
                        ray_node_id=ray.get_runtime_context().get_node_id(), cpus=self.cpus,
                        host=socket.gethostname(), code=code_fingerprint())

    def ping(self) -> str:
        """This node's name, at once: the liveness check of maintenance calls (a control
        call: it never waits for a compute slot)."""
        return self.name

    # -- files --------------------------------------------------------------------------------
    def put_file(self, rel: str, data: pa.Buffer | bytes, sync: bool = False) -> str:
        put_file(self.store, rel, data, sync=sync)
        return self.name

    # -- work ---------------------------------------------------------------------------------
    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], compute: bool = False) -> Any:
        """``fn(node context, *args)`` here; ``compute``: it holds the node's CPUs while it
        runs (a CSV load), otherwise it is a quick control call."""
        if not compute:
            return fn(self.context, *args)
        with self._compute:
            return fn(self.context, *args)

    def run(self, job_key: str, job_ref: list[Any], units: list[Any]) -> list[Any]:
        """The job's task on each unit, in order.  ``job_ref``: ``[ObjectRef]`` of the
        cloudpickled task, fetched and unpickled once per server (``job_key`` names it)."""
        task = self._job(job_key, job_ref)
        out = []
        with self._compute:
            for unit in units:
                try:
                    out.append(ship(task(self.context, unit)))
                except CorruptPartitionError as exc:   # this copy is bad: another may do
                    out.append(BadCopy(exc))
                except Exception as exc:
                    exc.add_note(f"while running partition {unit.partition} on hfq node "
                                 f"{self.name}")
                    raise
        return out

    def cache_stats(self) -> dict[str, int]:
        return self.cache.stats()

    # -- internals ----------------------------------------------------------------------------
    def _job(self, key: str, ref: list[Any]) -> Any:
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = self._jobs[key] = cloudpickle.loads(ray.get(ref[0]))
                if len(self._jobs) > _JOBS_KEPT:
                    self._jobs.pop(next(iter(self._jobs)))
            return job

    def _nodes(self) -> Nodes:
        with self._lock:
            if self._peers is None:
                self._peers = Nodes(self.name, self.store, Runtime.inside(self._embedded_root))
            return self._peers


def start_server(ray_node_id: str, actor_name: str, *, cpus: int, detached: bool,
                 embedded_root: str | None, cache_bytes: int) -> Any:
    """Start (or find) the server actor of one Ray node, hard-pinned to it."""
    env = {"POLARS_MAX_THREADS": str(cpus), "NUMBA_NUM_THREADS": str(cpus),
           "OMP_NUM_THREADS": str(cpus), "RAYON_NUM_THREADS": str(cpus)}
    return NodeServer.options(  # type: ignore[attr-defined]
        name=actor_name, namespace=NAMESPACE, get_if_exists=True,
        lifetime="detached" if detached else None,
        num_cpus=0, max_concurrency=4 * cpus + 8, max_restarts=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(ray_node_id, soft=False),
        runtime_env={"env_vars": env},
    ).remote(root=embedded_root, cpus=cpus, cache_bytes=cache_bytes)
