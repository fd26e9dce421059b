"""A bounded cache of decoded columns, kept by the node servers for map functions.

Partition files never change once written (every write makes new file names), so a decoded
column of a file is valid for as long as anyone wants it: the key is (root, file, record
batches, column) and nothing ever needs invalidating.  The least recently used columns go when
the cache passes its byte budget.  Repeated jobs over the same partitions then skip reading,
decompressing and decoding: the published in-memory engines we compare with work the same way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

import pyarrow as pa

__all__ = ["ColumnCache"]


class ColumnCache:
    """Thread-safe LRU of Arrow arrays, bounded by ``capacity`` bytes (0 disables it)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, int(capacity))
        self.used = 0
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[Hashable, pa.ChunkedArray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> pa.ChunkedArray | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: pa.ChunkedArray) -> None:
        size = value.nbytes
        if size > self.capacity // 4:   # one huge column must not flush everything else
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.used -= old.nbytes
            self._items[key] = value
            self.used += size
            while self.used > self.capacity and self._items:
                _, evicted = self._items.popitem(last=False)
                self.used -= evicted.nbytes

    def stats(self) -> dict:
        with self._lock:
            return {"bytes": self.used, "capacity": self.capacity, "columns": len(self._items),
                    "hits": self.hits, "misses": self.misses}
