"""The nodes that hold a database's files, and the one way every module reaches them.

Placement, writes to every replica, reads with failover and map functions all go through
:class:`Nodes`.  Whatever the calling process can do on its own disk it does directly (the
memory-mapped file, no copy through Ray's object store); everything else goes to the server of a
node that holds the file.  Without a runtime (an embedded database before its first
distributed call) the only node is the local one -- the same code, one node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hfq.errors import HfqError, PartitionUnavailableError
from hfq.runtime.placement import place, replica_count
from hfq.storage.fragment import put_file, read_fragment
from hfq.storage.store import Store

if TYPE_CHECKING:
    from hfq.query.plan import Unit
    from hfq.runtime.cluster import Runtime

__all__ = ["Nodes"]


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

    # -- where files are ----------------------------------------------------------------------
    def holders(self, fragment: dict) -> list[str]:
        return list(fragment.get("nodes") or ([self.default] if self.default else []))

    def common_holders(self, fragments: Sequence[dict]) -> list[str]:
        """Nodes holding every one of ``fragments``, in the first one's order."""
        common = self.holders(fragments[0]) if fragments else []
        for fragment in fragments[1:]:
            held = set(self.holders(fragment))
            common = [n for n in common if n in held]
        return common

    def unit_holders(self, unit: Unit) -> list[str]:
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

    # -- files ----------------------------------------------------------------------------------
    def put(self, rel: str, data: pa.Buffer, nodes: Sequence[str], *, sync: bool = False) -> None:
        """Write ``data`` to ``rel`` on every node of ``nodes``; all of them or an error."""
        remote = [n for n in nodes if n != self.local]
        refs = []
        if remote:
            import ray
            ref = ray.put(data)
            refs = [(n, self.runtime.server(n).put_file.remote(rel, ref, sync)) for n in remote]
        if self.local in nodes:
            put_file(self.store, rel, data, sync=sync)
        for name, ref in refs:
            try:
                ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - name the node whatever went wrong
                raise HfqError(f"writing {rel} to hfq node {name} failed: {exc}") from exc

    def remove(self, fragments: Sequence[dict]) -> None:
        """Best effort: files not referenced by a commit are garbage vacuum also finds."""
        by_node: dict[str, list[str]] = {}
        for fragment in fragments:
            for name in self.holders(fragment):
                by_node.setdefault(name, []).append(fragment["file"])
        refs = []
        for name, rels in by_node.items():
            if name == self.local:
                for rel in rels:
                    self.store.remove(rel)
            elif self.runtime is not None and name in self.runtime.alive():
                refs.append(self.runtime.server(name).remove_files.remote(rels))
        if refs:
            import ray
            try:
                ray.get(refs)
            except Exception:  # noqa: BLE001,S110 - a dead node's orphans go with vacuum
                pass

    def remove_prefix(self, table: str, prefix: str) -> int:
        """Remove, on every live node, the files of ``table`` whose name starts with
        ``prefix`` (what a failed job of one transaction wrote); returns the files removed."""
        from hfq.catalog import list_table_files
        removed = 0
        for name in self.alive():
            if name == self.local:
                files = [rel for rel, _ in list_table_files(self.store, table)]
            else:
                import ray
                files = [rel for rel, _ in ray.get(
                    self.runtime.server(name).list_files.remote(table))]
            doomed = [rel for rel in files if rel.rsplit("/", 1)[-1].startswith(prefix)]
            if not doomed:
                continue
            if name == self.local:
                for rel in doomed:
                    self.store.remove(rel)
            else:
                ray.get(self.runtime.server(name).remove_files.remote(doomed))
            removed += len(doomed)
        return removed

    def read_fragment(self, fragment: dict, logical: pa.Schema,
                      columns: Sequence[str] | None = None) -> pa.Table:
        """One file as Arrow: from the local disk when held here, else fetched from a holder."""
        holders = self.holders(fragment)
        if self.local in holders:
            return read_fragment(self.store, fragment, logical, columns=columns)
        for name in holders:
            if self.runtime is None or name not in self.runtime.alive():
                continue
            import ray
            try:
                data = ray.get(self.runtime.server(name).get_file.remote(fragment["file"]))
            except Exception:  # noqa: BLE001 - try the next replica
                continue
            return read_fragment(self.store, fragment, logical, columns=columns, data=data)
        raise PartitionUnavailableError(f"no live node holds {fragment['file']} (held by "
                                        f"{', '.join(holders)})", [fragment["file"]])

    # -- work on partitions ---------------------------------------------------------------------
    def read_units(self, spec, units: Sequence[Unit], *, threads: int,
                   window: int) -> Iterator[pa.Table]:
        """Each unit's rows (``read_unit``), in order, ``window`` units read ahead at a time."""
        from hfq.query.scan import read_unit
        from hfq.runtime.executor import execute
        for start in range(0, len(units), window):
            chunk = units[start:start + window]
            out: list[Any] = [None] * len(chunk)

            def keep(i, value, out=out):
                out[i] = value

            execute(self, chunk,
                    lambda server, batch: server.read.remote(spec, [slim(u) for u in batch]), keep,
                    local=lambda unit: read_unit(self.store, spec, unit), threads=threads)
            yield from out

    def map_units(self, spec, units: Sequence[Unit], fn: Callable,
                  on_result: Callable[[int, Any], None], *, progress: bool, label: str) -> None:
        """``fn`` (a polars DataFrame -> small value) on every unit, on the nodes."""
        import hashlib

        import ray
        from ray import cloudpickle

        from hfq.runtime.executor import execute
        from hfq.runtime.server import unwrap_result
        if self.runtime is None:
            raise HfqError("map functions need the Ray runtime (Database.runtime starts it)")
        # the job (read spec + function) is put once; servers fetch and unpickle it once
        job = cloudpickle.dumps((spec, fn))
        key = hashlib.blake2b(job, digest_size=16).hexdigest()
        job_ref = [ray.put(job)]   # in a list: Ray passes the reference, not the value
        execute(self, units,
                lambda server, batch: server.map.remote(key, job_ref, [slim(u) for u in batch]),
                lambda i, value: on_result(i, unwrap_result(value)),
                progress=progress, label=label)


def slim(unit: Unit) -> Unit:
    """The unit without the per-batch statistics (planning is done): less to pickle per call."""
    from dataclasses import replace
    return replace(unit, fragments=[{k: v for k, v in f.items() if k != "batches"}
                                    for f in unit.fragments])
