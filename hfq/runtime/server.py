"""The server actor: one per node, pinned to it, owning the partition files under its root.

It does the work that must happen where the files are -- reads, map functions, CSV loads,
copies, deletes -- and returns small results (or Arrow tables, never pickled frames).  It is a
threaded actor: control calls (info, copies) are never stuck behind long map calls, and compute
calls share a semaphore sized to the node's CPUs, which is also what polars and numba are told
to use (``POLARS_MAX_THREADS``, ``NUMBA_NUM_THREADS`` in its environment).

A server reserves no Ray CPUs: it lives as long as the cluster, and holding the node's CPUs
would starve every other Ray task forever.  It uses them only while it computes.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

import ray

from hfq.runtime.node import NodeInfo, code_fingerprint, node_identity, root_from_env
from hfq.storage.store import Store

__all__ = ["NodeServer", "PartitionTask", "apply_map"]


class PartitionTask:
    """A map function that also needs to know its partition and to reach the node's files --
    e.g. to write a result next to the data it came from: called as ``task(frame, unit,
    nodes)`` (a polars DataFrame, the :class:`~hfq.query.plan.Unit`, the node's
    :class:`~hfq.runtime.nodes.Nodes`)."""

    def __call__(self, frame, unit, nodes) -> Any:
        raise NotImplementedError


def apply_map(fn, frame, unit=None, nodes=None) -> Any:
    """Run a map function on one partition (a polars DataFrame) and make its result cheap
    to ship: a polars DataFrame travels as Arrow and is rebuilt by :func:`unwrap_result`.
    ``nodes``: a callable giving the node's Nodes, for a :class:`PartitionTask`."""
    import polars as pl
    result = fn(frame, unit, nodes()) if isinstance(fn, PartitionTask) else fn(frame)
    if isinstance(result, pl.DataFrame):
        return _Frame(result.to_arrow())
    return result


class _Frame:
    """A polars DataFrame in transit, as Arrow (pickling a DataFrame is ~70x slower)."""

    __slots__ = ("table",)

    def __init__(self, table) -> None:
        self.table = table


def unwrap_result(value: Any) -> Any:
    if isinstance(value, _Frame):
        import polars as pl
        return pl.from_arrow(value.table)
    return value


@ray.remote
class NodeServer:
    """Serves one node's root (``root`` when given -- the embedded case -- else HFQ_NODE_ROOT)."""

    def __init__(self, root: str | None = None, cpus: int = 1, cache_bytes: int = 0) -> None:
        from hfq.storage.cache import PartitionCache
        self._embedded_root = root
        root = os.path.abspath(os.path.expanduser(root or root_from_env()))
        self.store = Store(root)
        self.name = node_identity(self.store)
        self.cpus = cpus
        # numba caches compiled kernels on this node's disk, the same directory for every job
        os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(root, ".cache", "numba"))
        self._compute = threading.Semaphore(cpus)
        self.cache = PartitionCache(cache_bytes)
        self._jobs: dict[str, Any] = {}
        self._runtime = None
        self._lock = threading.Lock()

    # -- identity -----------------------------------------------------------------------------
    def info(self) -> NodeInfo:
        return NodeInfo(name=self.name, root=self.store.root,
                        ray_node_id=ray.get_runtime_context().get_node_id(), cpus=self.cpus,
                        host=socket.gethostname(), code=code_fingerprint())

    # -- files --------------------------------------------------------------------------------
    def put_file(self, rel: str, data, sync: bool = False) -> str:
        from hfq.storage.fragment import put_file
        put_file(self.store, rel, data, sync=sync)
        return self.name

    def get_file(self, rel: str):
        import pyarrow as pa
        return pa.py_buffer(self.store.read_bytes(rel))

    def pull(self, rel: str, source: str, expect: dict, sync: bool = False) -> str:
        """Copy ``rel`` from node ``source`` unless this node already has it intact."""
        import zlib

        from hfq.errors import CorruptPartitionError
        from hfq.storage.fragment import put_file, verify_fragment
        try:
            verify_fragment(self.store, {"file": rel, **expect})
            return self.name
        except CorruptPartitionError:   # missing or damaged here: copy it
            pass
        data = ray.get(self._nodes().runtime.server(source).get_file.remote(rel))
        if data.size != expect["bytes"] or zlib.crc32(data) != expect["crc32"]:
            raise CorruptPartitionError(f"copy of {rel} from {source} does not match the "
                                        "catalog's size and checksum")
        put_file(self.store, rel, data, sync=sync)
        return self.name

    def remove_files(self, rels: list[str]) -> int:
        for rel in rels:
            self.store.remove(rel)
        return len(rels)

    def verify(self, fragments: list[dict]) -> list[str]:
        """Problems found (empty when every file matches the catalog)."""
        from hfq.errors import CorruptPartitionError
        from hfq.storage.fragment import verify_fragment
        problems = []
        for fragment in fragments:
            try:
                verify_fragment(self.store, fragment)
            except CorruptPartitionError as exc:
                problems.append(f"{self.name}: {exc}")
        return problems

    def list_files(self, table: str) -> list[tuple[str, float]]:
        from hfq.catalog import list_table_files
        return list_table_files(self.store, table)

    def sweep(self, table: str, referenced: set[str], grace_s: float,
              files: list[tuple[str, float]], committed: set[str]) -> int:
        """Remove this node's files of ``table`` that no kept version places here."""
        from hfq.catalog import sweep
        return sweep(self.store, table, referenced, grace_s, files, committed)

    def drop(self, table: str) -> None:
        from hfq.catalog import remove_table_files
        remove_table_files(self.store, table)

    # -- compute ------------------------------------------------------------------------------
    def read(self, spec, units: list) -> list:
        """Each unit's matching rows as an Arrow table (shipped through the object store)."""
        from hfq.query.scan import read_unit
        with self._compute:
            return [read_unit(self.store, spec, unit) for unit in units]

    def map(self, job_key: str, job_ref: list, units: list) -> list:
        """The job's function on each unit (one partition as a polars DataFrame); the results
        in order.  ``job_ref``: ``[ObjectRef]`` of the pickled (read spec, function)."""
        spec, fn = self._job(job_key, job_ref)
        out = []
        with self._compute:
            for unit in units:
                try:
                    out.append(apply_map(fn, self._frame(spec, unit), unit, self._nodes))
                except Exception as exc:
                    exc.add_note(f"while running partition {unit.partition} on hfq node "
                                 f"{self.name}")
                    raise
        return out

    def _frame(self, spec, unit):
        """A unit's rows as one polars DataFrame.  The rows before ``where`` are kept in the
        cache as single chunks (numpy views are zero-copy) -- the same files, batches, columns
        and date/symbol filters give the same rows -- and ``where`` is applied on every call,
        so a repeated job does its filtering again, like any other engine would."""
        import dataclasses

        import polars as pl

        from hfq.query.scan import read_unit, where_mask
        columns = list(dict.fromkeys([*spec.columns, *spec.where_columns]))
        key = (tuple((f["file"], None if b is None else tuple(b))
                     for f, b in zip(unit.fragments, unit.batches)),
               tuple(columns), spec.filters)
        frame = self.cache.get(key)
        if frame is None:
            base = dataclasses.replace(spec, columns=columns, where=None, where_columns=[])
            frame = pl.from_arrow(read_unit(self.store, base, unit)).rechunk()
            self.cache.put(key, frame)
        if spec.where is not None and frame.height:
            mask = where_mask(frame.select(spec.where_columns), spec.where, frame.height)
            frame = frame.filter(mask) if isinstance(mask, pl.Series) else (
                frame if mask else frame.clear())
        return frame.select(spec.columns) if frame.columns != spec.columns else frame

    def cache_stats(self) -> dict:
        return self.cache.stats()

    def load_csv(self, base, files: list[str], settings, options: dict) -> dict:
        """Parse ``files`` and write their partitions to the nodes placement picks; commit
        nothing (the driver commits every node's fragments as one version)."""
        from hfq.ingest.csv import load_files
        with self._compute:
            return load_files(self._nodes(), base, files, settings, **options)

    # -- internals ----------------------------------------------------------------------------
    def _job(self, key: str, ref: list):
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                from ray import cloudpickle
                job = self._jobs[key] = cloudpickle.loads(ray.get(ref[0]))
                if len(self._jobs) > 64:
                    self._jobs.pop(next(iter(self._jobs)))
            return job

    def _nodes(self):
        from hfq.runtime.cluster import Runtime
        from hfq.runtime.nodes import Nodes
        with self._lock:
            if self._runtime is None:
                self._runtime = Runtime.inside(self._embedded_root)
            return Nodes(self.name, self.store, self._runtime)
