"""Named services a process keeps for a node: state that lives between calls.

The runtime runs stateless tasks and calls; a few things must outlive one call -- the live
rows of a table that a node serves and the log it appends them to (:mod:`hfq.live`).  A call
asks its :class:`~hfq.runtime.task.NodeContext` for ``node.service(name, make)``: the object
``make()`` built on the first request, kept for that node in this process -- in a node
server for the server's lifetime, in a driver for its own node's.  The runtime knows nothing
of what a service is; one with a ``close()`` method is closed by :func:`close_services`.

Examples
--------
>>> s = node_services("node-a", "/tmp/a")
>>> s.get("counter", lambda: [0]) is s.get("counter", lambda: [1])
True
>>> close_services("node-a", "/tmp/a")
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Services", "close_services", "node_services"]

T = TypeVar("T")

_lock = threading.Lock()
_registry: dict[tuple[str | None, str], Services] = {}


class Services:
    """The services one process keeps for one node."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Any] = {}

    def get(self, name: str, make: Callable[[], T]) -> T:
        """The service ``name``, made by ``make()`` when this process has none yet."""
        with self._lock:
            item = self._items.get(name)
            if item is None:
                item = self._items[name] = make()
            return item

    def find(self, name: str) -> Any:
        """The service ``name`` if this process made it, else None."""
        with self._lock:
            return self._items.get(name)

    def close(self) -> None:
        """Close every service that can be closed, and forget them all."""
        with self._lock:
            items, self._items = list(self._items.values()), {}
        for item in items:
            close = getattr(item, "close", None)
            if close is not None:
                close()


def node_services(node: str | None, root: str) -> Services:
    """The services this process keeps for node ``node`` (whose root is ``root``)."""
    with _lock:
        found = _registry.get((node, root))
        if found is None:
            found = _registry[(node, root)] = Services()
        return found


def close_services(node: str | None, root: str) -> None:
    """Close and forget the services this process keeps for ``node`` (a database closed)."""
    with _lock:
        found = _registry.pop((node, root), None)
    if found is not None:
        found.close()
