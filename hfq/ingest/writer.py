"""Route rows to partitions, buffer within a memory budget, write sorted fragments, commit once.

:class:`PartitionWriter` is what every ingest path (DataFrame append, CSV load) feeds: Arrow
tables already conformed to the schema.  Rows are routed by the partition scheme and buffered per
partition (as row indices into the parsed blocks, not copies); when the blocks held pass the
memory budget, every partition is written out as a sorted *spill* fragment and the blocks freed.
:meth:`finish` writes what is left, merges each partition's spills into one sorted fragment when
it fits in the budget, and commits everything as one version -- or nothing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from hfq.catalog import Catalog, Manifest, Transaction
from hfq.config import Settings
from hfq.partition import key_path
from hfq.runtime.nodes import Nodes
from hfq.storage.fragment import encode_fragment
from hfq.storage.sort import sort_rows

__all__ = ["PartitionWriter"]


class PartitionWriter:
    """Collects rows for one transaction on one table; use as a context manager."""

    def __init__(self, catalog: Catalog | None, nodes: Nodes, base: Manifest,
                 settings: Settings, *, sync: bool = False, budget: int | None = None) -> None:
        self.catalog = catalog
        self.nodes = nodes
        self.base = base
        self.settings = settings
        self.sync = sync
        self.budget = budget if budget is not None else settings.memory_budget // 2
        self.txn = Transaction(catalog, base, remove=nodes.remove)
        self._replicas = base.options.get("replicas")
        self.rows = 0
        self._buffers: dict[str, tuple[list, list[tuple[pa.Table, np.ndarray | None]]]] = {}
        self._buffered = 0
        self._stats_columns = list(dict.fromkeys(
            [*base.sort_by, *(lvl.column for lvl in base.partition_by.levels())]))
        self._pool = ThreadPoolExecutor(max_workers=settings.threads)

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
        self._pool.shutdown(wait=True)

    def write(self, table: pa.Table) -> None:
        """Add conformed rows (the table's exact Arrow schema) to the transaction.

        Rows are not copied here: each partition keeps (block, row indices) and the gather
        happens when the partition is written, in the writer's threads.
        """
        if table.num_rows == 0:
            return
        codes, keys = self.base.partition_by.route(table)
        self.rows += table.num_rows
        if len(keys) == 1:
            self._buffer(keys[0], table, None)
        else:
            order = codes.argsort(kind="stable")
            start = 0
            for key, count in zip(keys, np.bincount(codes, minlength=len(keys)).tolist()):
                if count:
                    self._buffer(key, table, order[start:start + count])
                start += count
        self._buffered += table.nbytes
        if self._buffered > self.budget:
            self._spill()

    def finish(self, op: str) -> Manifest:
        """Write every buffer, merge spills, and commit; returns the new version."""
        self.flush()
        return self.txn.commit(op, sync=self.sync)

    def flush(self) -> dict[str, tuple[list, list[dict]]]:
        """Write every buffer and merge spills; the fragments written, by partition (for a
        driver that commits the work of several nodes as one version)."""
        self._spill()
        self._merge_spills()
        return self.txn.added

    def abort(self) -> None:
        self._buffers.clear()
        self.txn.abort()

    # -- internals ----------------------------------------------------------------------------
    def _buffer(self, key: tuple, table: pa.Table, rows: np.ndarray | None) -> None:
        path = key_path(self.base.partition_by, key)
        self._buffers.setdefault(path, (list(key), []))[1].append((table, rows))

    def _spill(self) -> None:
        """Write every partition's buffer as a sorted fragment; frees every block held."""
        jobs = [(path, key, parts) for path, (key, parts) in self._buffers.items()]
        self._buffers.clear()
        self._buffered = 0
        for path, key, fragment in self._pool.map(self._gather_and_write, jobs):
            self.txn.add(path, key, fragment)

    def _gather_and_write(self, job) -> tuple[str, list, dict]:
        path, key, parts = job
        tables = [t if rows is None else t.take(pa.array(rows)) for t, rows in parts]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        return path, key, self._write(path, key, table)

    def _write(self, path: str, key: list, table: pa.Table) -> dict:
        """Sort, encode once, and put the same bytes on every node the partition goes to."""
        rows = sort_rows(table, self.base.sort_by)
        data, entry = encode_fragment(rows, settings=self.settings,
                                      stats_columns=self._stats_columns)
        existing = self.base.partitions.get(path, {}).get("fragments", [])
        nodes = self.nodes.targets(path, self.nodes.holders(existing[0]) if existing else [],
                                   self._replicas, self.base.table)
        rel = self.txn.new_file(path)
        self.nodes.put(rel, data, nodes, sync=self.sync)
        return {"file": rel, **entry, "nodes": nodes}

    def _merge_spills(self) -> None:
        """One fragment per partition per transaction where it fits in the budget."""
        logical = self.base.schema.arrow
        merges = [(path, key, fragments) for path, (key, fragments) in self.txn.added.items()
                  if len(fragments) > 1 and self._decoded_size(fragments) <= self.budget]

        def merge(item):
            path, key, fragments = item
            table = pa.concat_tables(self.nodes.read_fragment(f, logical) for f in fragments)
            return path, fragments, self._write(path, key, table)

        for path, old, new in self._pool.map(merge, merges):
            self.txn.added[path] = (self.txn.added[path][0], [new])
            self.nodes.remove(old)

    def _decoded_size(self, fragments: list[dict]) -> int:
        """A generous estimate of the fragments' size in memory (8 bytes a value)."""
        return sum(f["rows"] for f in fragments) * 8 * len(self.base.schema)

