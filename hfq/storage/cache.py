"""A bounded cache of decoded partitions, kept by the node servers for map functions.

Partition files never change once written (every write makes new file names), so what was read
from a set of files is valid for as long as anyone wants it: keys name the files, record
batches, columns and filters, and nothing ever needs invalidating.  The least recently used
entries go when the cache passes its byte budget.  Repeated jobs over the same partitions then
skip reading, decompressing, decoding and converting: the in-memory engines we compare with
work the same way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import pyarrow as pa

from hfq.storage.fragment import FileRecord, read_fragment
from hfq.storage.store import Store

__all__ = ["PartitionCache", "clear_process_caches", "process_cache", "read_fragment_cached"]


class PartitionCache:
    """Thread-safe LRU of values with a size (``nbytes`` or polars' ``estimated_size()``),
    bounded by ``capacity`` bytes (0 disables it)."""


    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, int(capacity))
        self.used = 0
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, value: Any) -> None:
        size = value.estimated_size() if hasattr(value, "estimated_size") else value.nbytes
        if size > self.capacity // 4:   # one huge entry must not flush everything else
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.used -= old[1]
            self._items[key] = (value, size)
            self.used += size
            while self.used > self.capacity and self._items:
                _, (_, evicted) = self._items.popitem(last=False)
                self.used -= evicted

    def clear(self) -> None:
        """Forget every entry (e.g. to measure reads from disk)."""
        with self._lock:
            self._items.clear()
            self.used = 0

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"bytes": self.used, "capacity": self.capacity, "columns": len(self._items),
                    "hits": self.hits, "misses": self.misses}


def read_fragment_cached(cache: PartitionCache | None, store: Store | None, record: FileRecord,
                         logical: pa.Schema, *, columns: Sequence[str],
                         batches: Iterable[int] | None = None,
                         node: str | None = None) -> pa.Table:
    """:func:`~hfq.storage.fragment.read_fragment` through ``cache``: each record batch of
    ``columns`` is read, verified and decoded once, then served from memory.

    Small reads (a symbol-day touches one batch) spend most of their time decompressing and
    decoding the batch; the files never change once written, so a decoded batch stays valid.
    Without a cache (or with capacity 0) this is ``read_fragment``."""
    if cache is None or not cache.capacity or not record.batches:
        return read_fragment(store, record, logical, columns=columns, batches=batches,
                             node=node)
    wanted = list(range(len(record.batches)) if batches is None else batches)
    # the store and the recorded checksum too: another database may have a file of the
    # same name, and a file is only ever replaced by different bytes
    base = (None if store is None else store.url, record.file, record.crc32,
            tuple(columns))
    parts = {i: cache.get((base, i)) for i in wanted}
    for i in wanted:
        if parts[i] is None:   # one batch at a time: a small read touches one or two
            parts[i] = read_fragment(store, record, logical, columns=columns, batches=[i],
                                     node=node)
            cache.put((base, i), parts[i])
    tables = [parts[i] for i in wanted]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


_CACHES: dict[str, PartitionCache] = {}
_CACHES_LOCK = threading.Lock()


def process_cache(store: Store, capacity: int) -> PartitionCache | None:
    """This process's one cache of decoded record batches of the node root ``store`` (what a
    node server keeps for its own node), ``capacity`` bytes; None when ``capacity`` is 0.
    Small scans and small queries that run in the calling thread share it, so the driver
    holds at most ``cache_bytes`` per root.  Files never change once written (a repaired
    copy has the same bytes, and the key carries the file's checksum), so nothing in it goes
    stale."""
    if not capacity:
        return None
    with _CACHES_LOCK:
        cache = _CACHES.get(store.url)
        if cache is None or cache.capacity != capacity:
            cache = _CACHES[store.url] = PartitionCache(capacity)
        return cache


def clear_process_caches() -> None:
    """Forget every decoded batch this process holds (e.g. to measure reads from disk)."""
    with _CACHES_LOCK:
        _CACHES.clear()
