"""Ways into a Ray cluster: an embedded one this process owns, or a running one.

Both return a :class:`~hfq.runtime.cluster.Runtime` that starts the missing node servers
(:func:`~hfq.runtime.server.start_server`).
"""

from __future__ import annotations

import atexit
import logging
import time

import ray

from hfq.config import machine_memory
from hfq.runtime.cluster import NAMESPACE, Runtime
from hfq.runtime.server import start_server

__all__ = ["attach", "embedded"]

log = logging.getLogger("hfq")


def embedded(root: str, *, cpus: int, cache_bytes: int = 0) -> Runtime:
    """A one-node Ray cluster owned by this process (reuses Ray if already initialised)."""
    owned = not ray.is_initialized()
    if owned:
        started = time.perf_counter()
        ray.init(address="local", num_cpus=cpus, namespace=NAMESPACE,
                 include_dashboard=False, log_to_driver=True,
                 object_store_memory=_object_store_bytes())
        atexit.register(_shutdown_quietly)
        log.info("started an embedded Ray for %s in %.1f s", root, time.perf_counter() - started)
    return Runtime(owned=owned, embedded_root=root, starter=start_server,
                   cache_bytes=cache_bytes)


def attach(address: str, *, cache_bytes: int = 0) -> Runtime:
    """Every node of the running cluster at ``address`` ("auto", "host:port", "ray://...")."""
    if not ray.is_initialized():
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=True)
    return Runtime(owned=False, embedded_root=None, starter=start_server,
                   cache_bytes=cache_bytes)


def _object_store_bytes() -> int:
    return int(min(4 << 30, max(256 << 20, machine_memory() // 8)))


def _shutdown_quietly() -> None:
    try:
        if ray.is_initialized():
            ray.shutdown()
    except Exception:  # noqa: BLE001,S110 - interpreter exit: nothing left to report to
        pass
