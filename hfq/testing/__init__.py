"""Helpers for testing code that uses hfq: hypothesis strategies for tick data, and a
multi-node Ray cluster on one machine (:func:`local_cluster`, imported lazily: it needs Ray)."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:   # what the API reference (and a type checker) sees; imported on first use
    from hfq.testing.cluster import local_cluster

__all__ = ["local_cluster", "strategies"]


def __getattr__(name: str) -> Any:
    if name == "local_cluster":
        from hfq.testing.cluster import local_cluster
        return local_cluster
    raise AttributeError(name)
