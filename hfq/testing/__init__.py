"""Helpers for testing code that uses hfq: hypothesis strategies for tick data, and a
multi-node Ray cluster on one machine (:func:`local_cluster`, imported lazily: it needs Ray)."""

__all__ = ["local_cluster", "strategies"]


def __getattr__(name):
    if name == "local_cluster":
        from hfq.testing.cluster import local_cluster
        return local_cluster
    raise AttributeError(name)
