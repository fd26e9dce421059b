"""Ways into a Ray cluster: an embedded one this process owns, or a running one.

Both return a :class:`~hfq.runtime.cluster.Runtime` that starts the missing node servers
(:func:`~hfq.runtime.server.start_server`).

An embedded Ray keeps to the database root: its temp directory (sockets, logs, spilled objects)
is ``<root>/.ray`` and its auth token ``<root>/.ray/auth_token`` -- nothing is written to the
user's home (Ray's own default would put the token in ``~/.ray/auth_token``).  ``RAY_TMPDIR``,
``RAY_AUTH_MODE=disabled``, ``RAY_AUTH_TOKEN`` and ``RAY_AUTH_TOKEN_PATH`` are honoured when
set.  Starting takes seconds, so it says so: one line on standard error (or to the ``hfq``
logger at INFO when logging is configured).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import secrets
import sys
import tempfile
import time

import ray

from hfq.config import machine_memory
from hfq.errors import HfqError
from hfq.runtime.cluster import NAMESPACE, Runtime
from hfq.runtime.server import start_server

__all__ = ["attach", "embedded", "ray_dir"]

log = logging.getLogger(__name__)

#: Unix socket paths are limited to 107 bytes (103 on macOS); Ray puts its sockets at
#: ``<temp>/session_<date>_<time>_<usec>_<pid>/sockets/plasma_store`` (up to ~64 bytes more).
_MAX_TEMP_DIR_BYTES = 38


def ray_dir(root: str) -> str:
    """Where an embedded Ray for database ``root`` keeps its temp files and token:
    ``<root>/.ray``.

    Examples
    --------
    >>> ray_dir("/data/hfq")
    '/data/hfq/.ray'
    """
    return os.path.join(os.path.abspath(root), ".ray")


def embedded(root: str, *, cpus: int, cache_bytes: int = 0) -> Runtime:
    """A one-node Ray cluster owned by this process (reuses Ray if already initialised).

    Its temp files and auth token live under ``<root>/.ray`` (see :func:`ray_dir`); one line
    says when it started and how long that took.
    """
    owned = not ray.is_initialized()
    if owned:
        started = time.perf_counter()
        temp_dir = _private_ray_files(root)
        ray.init(address="local", num_cpus=cpus, namespace=NAMESPACE,
                 include_dashboard=False, log_to_driver=True, logging_level=logging.WARNING,
                 object_store_memory=_object_store_bytes(), _temp_dir=temp_dir)
        atexit.register(_shutdown_quietly)
        where = temp_dir or os.environ.get("RAY_TMPDIR", "")
        _announce(f"started an embedded Ray (1 node, {cpus} CPUs) in "
                  f"{time.perf_counter() - started:.1f} s; its files: {where}")
    return Runtime(owned=owned, embedded_root=root, starter=start_server,
                   cache_bytes=cache_bytes)


def attach(address: str, *, cache_bytes: int = 0) -> Runtime:
    """Every node of the running cluster at ``address`` ("auto", "host:port", "ray://...")."""
    if not ray.is_initialized():
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=True)
    return Runtime(owned=False, embedded_root=None, starter=start_server,
                   cache_bytes=cache_bytes)


def _private_ray_files(root: str) -> str | None:
    """Point Ray's token and temp files at ``<root>/.ray``; the temp dir to pass to
    ``ray.init`` (None: ``RAY_TMPDIR`` is set and used as it is)."""
    home = ray_dir(root)
    try:
        os.makedirs(home, exist_ok=True)
        if os.environ.get("RAY_AUTH_MODE", "").lower() != "disabled" and not (
                os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")):
            _use_token(os.path.join(home, "auth_token"))
    except OSError as e:
        raise HfqError(f"cannot prepare the embedded Ray's files under {home}: {e}") from e
    if os.environ.get("RAY_TMPDIR"):
        return None
    if len(home.encode()) <= _MAX_TEMP_DIR_BYTES:
        return home
    # too long for Ray's Unix sockets: a short private directory, one per database root
    digest = hashlib.sha1(home.encode()).hexdigest()[:12]
    short = os.path.join(tempfile.gettempdir(), f"hfq-ray-{digest}")
    os.makedirs(short, mode=0o700, exist_ok=True)
    return short


def _use_token(path: str) -> None:
    """Token authentication on, with the token in ``path`` (created, mode 600, if missing)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))   # what `ray get-auth-token --generate` writes
    os.environ["RAY_AUTH_TOKEN_PATH"] = path
    os.environ["RAY_AUTH_MODE"] = "token"
    # Ray reads its settings once, when it is imported; make it see the two variables above
    from ray._raylet import Config  # type: ignore[attr-defined]
    Config.initialize("")


def _announce(message: str) -> None:
    """To the ``hfq`` logger; also to standard error when no logging is configured (Python
    would drop an INFO record then)."""
    log.info(message)
    if not log.hasHandlers():
        print(f"hfq: {message}", file=sys.stderr, flush=True)


def _object_store_bytes() -> int:
    return int(min(4 << 30, max(256 << 20, machine_memory() // 8)))


def _shutdown_quietly() -> None:
    try:
        if ray.is_initialized():
            ray.shutdown()
    except Exception:  # noqa: BLE001,S110 - interpreter exit: nothing left to report to
        pass
