"""A multi-node Ray cluster on one machine, each node with its own data directory.

Use it as a context manager::

    from hfq.testing import local_cluster
    with local_cluster(nodes=3) as cluster:
        db = cluster.connect()
        ...

Used by the tests, the demo and the benchmarks.  Each fake node gets ``HFQ_NODE_ROOT`` =
``<root>/node<i>``; stopping the cluster stops exactly the processes it started.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hfq.runtime.node import node_identity
from hfq.storage.store import open_store

if TYPE_CHECKING:
    from hfq.db import Database

__all__ = ["LocalCluster", "local_cluster"]

_MB = 1 << 20


@dataclass
class LocalCluster:
    """A running local cluster: its address, node roots, and node handles (add / kill)."""

    root: str
    cpus_per_node: int
    object_store_mb: int
    cluster: Any = None   # a ray.cluster_utils.Cluster while running (None before and after)
    nodes: list[Any] = field(default_factory=list)   # ray Node handles, index = node number
    roots: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_node(self, *, cpus: int | None = None) -> int:
        """Start one more node (its root ``node<i>``); returns its index."""
        i = len(self.nodes)
        root = _node_root(self.root, i)
        node = self.cluster.add_node(num_cpus=cpus or self.cpus_per_node,
                                     env_vars={"HFQ_NODE_ROOT": root},
                                     object_store_memory=self.object_store_mb * _MB)
        self.nodes.append(node)
        self.roots.append(root)
        self.cluster.wait_for_nodes()
        return i

    def kill_node(self, i: int) -> None:
        """Stop node ``i`` at once, as a crash would (its disk stays): its Ray processes and
        its workers (the hfq server among them), which would otherwise answer calls for a
        moment after their raylet is gone."""
        if i == 0:
            raise ValueError("node 0 is the head; kill a worker node")
        node = self.nodes[i]
        if node is None:
            raise ValueError(f"node {i} is not running")
        import psutil  # Ray's own dependency
        workers = _workers(node)
        self.cluster.remove_node(node, allow_graceful=False)
        for worker in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                worker.kill()
        psutil.wait_procs(workers, timeout=30)
        self.nodes[i] = None

    def freeze_node(self, i: int) -> None:
        """Stop (SIGSTOP) every process of node ``i``, its workers included, as a machine
        that hangs: Ray lists it as alive until its health checks give up, and nothing on it
        answers.  :meth:`kill_node` ends it."""
        if i == 0:
            raise ValueError("node 0 is the head; freeze a worker node")
        node = self.nodes[i]
        if node is None:
            raise ValueError(f"node {i} is not running")
        import psutil
        own = [psutil.Process(p.process.pid) for infos in node.all_processes.values()
               for p in infos if psutil.pid_exists(p.process.pid)]
        for process in [*_workers(node), *own]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.suspend()

    def connect(self, **settings: Any) -> Database:
        """An hfq database on this cluster (initialises Ray in this process if needed)."""
        import hfq
        return hfq.connect(address=self.address, **settings)

    def shutdown(self) -> None:
        import ray
        if ray.is_initialized():
            ray.shutdown()
        if self.cluster is not None:
            self.cluster.shutdown()
            self.cluster = None


def _workers(node: Any) -> list[Any]:
    """The worker processes of a Ray node (children of its raylet), as psutil processes."""
    import psutil
    raylets = [p.process.pid for p in node.all_processes.get("raylet", [])]
    return [c for pid in raylets if psutil.pid_exists(pid)
            for c in psutil.Process(pid).children(recursive=True)]


def _node_root(root: str, i: int) -> str:
    """Node ``i``'s root, named ``node-local<i>`` on first use: the same names in every run,
    so partitions land on the same nodes every run (placement hashes the names) and a test
    that needs a partition on some node gets it always or never, not 1 run in 30."""
    path = os.path.join(root, f"node{i}")
    node_identity(open_store(path), name=f"node-local{i}")
    return path


@contextlib.contextmanager
def local_cluster(nodes: int = 3, *, cpus_per_node: int = 1, root: str | None = None,
                  object_store_mb: int = 200) -> Iterator[LocalCluster]:
    """Start ``nodes`` Ray nodes on this machine (the first is the head); stop them after.

    ``root`` keeps the node directories (default: a temporary directory, removed after);
    starting again with the same ``root`` brings back the same nodes and their partitions.
    Start it in a process where Ray is not running: :meth:`LocalCluster.connect` connects
    this process to the cluster, and stopping the cluster disconnects it.

    Examples
    --------
    A table on two nodes, one of which crashes (not run by the doctests: a doctest run keeps
    an embedded Ray running in its process):

    >>> import hfq
    >>> from hfq.testing import local_cluster
    >>> with local_cluster(nodes=2) as cluster:                   # doctest: +SKIP
    ...     db = cluster.connect()
    ...     quotes = db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    ...     quotes.append(hfq.synth.taq_table(dates=["2007-08-01", "2007-08-02"],
    ...                                       rows_per_day=1000))
    ...     db.node_info()["files"].to_list()     # each day's partition on both nodes
    ...     cluster.kill_node(1)                  # a crash: node 1 and its copies are gone
    ...     len(quotes.to_polars())               # read from the copies on node 0
    1
    [2, 2]
    2000
    """
    from ray.cluster_utils import Cluster
    if nodes < 1:
        raise ValueError("a cluster needs at least one node")
    tmp = None
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="hfq-cluster-")
        root = tmp.name
    head_root = _node_root(root, 0)
    lc = LocalCluster(root=root, cpus_per_node=cpus_per_node, object_store_mb=object_store_mb)
    lc.cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": cpus_per_node, "env_vars": {"HFQ_NODE_ROOT": head_root},
        "object_store_memory": object_store_mb * _MB, "include_dashboard": False})
    lc.nodes.append(lc.cluster.head_node)
    lc.roots.append(head_root)
    try:
        for _ in range(nodes - 1):
            lc.add_node()
        yield lc
    finally:
        lc.shutdown()
        if tmp is not None:
            tmp.cleanup()
