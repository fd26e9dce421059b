"""Starting and stopping the service: :func:`serve` and the running :class:`Service`."""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

from hfq.db import Database
from hfq.errors import ArgumentError
from hfq.service.audit import AuditLog
from hfq.service.auth import Authenticator
from hfq.service.passwords import Passwords
from hfq.service.server import FlightSqlServer, ServiceConfig
from hfq.service.state import SecurityStore

__all__ = ["Service", "ServiceConfig", "serve"]

log = logging.getLogger(__name__)


class Service:
    """A running service (what :func:`serve` returns): its ``location``, the ``server``,
    the ``audit`` log; :meth:`shutdown` stops it (or use it as a context manager)."""

    def __init__(self, server: FlightSqlServer, location: str, audit: AuditLog) -> None:
        self.server = server
        self.location = location
        self.audit = audit
        self.port = server.port

    def __repr__(self) -> str:
        return f"<hfq.Service {self.location}>"

    def shutdown(self) -> None:
        self.server.shutdown()
        self.audit.close()

    def wait(self) -> None:
        """Block until the service is shut down."""
        self.server.wait()

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def serve(db: Database, *, host: str = "127.0.0.1", port: int = 0,
          tls: tuple[bytes, bytes] | None = None, insecure: bool = False,
          config: ServiceConfig | None = None, passwords: Passwords | None = None) -> Service:
    """Serve ``db`` over Arrow Flight SQL at ``host:port`` (0: a free port); returns the
    running :class:`Service` (its ``location`` is what clients connect to).

    ``tls``: ``(certificate chain PEM, private key PEM)``; without it the service listens
    only on a loopback address (passwords would cross the network in clear) unless
    ``insecure=True``.  ``config``: tokens, lockouts, default quotas
    (:class:`ServiceConfig`).  ``passwords``: the hashing parameters for passwords checked
    (hashes name their own; the default is argon2's).

    Examples
    --------
    >>> import hfq, tempfile
    >>> service = hfq.serve(hfq.connect(tempfile.mkdtemp()))
    >>> service.location.startswith("grpc://127.0.0.1:")
    True
    >>> service.shutdown()
    """
    if tls is None and not insecure and not _loopback(host):
        raise ArgumentError(f"serving {host} without TLS would send passwords in clear: pass "
                            "tls=(certificate, key) (or insecure=True)", argument="tls")
    config = config or ServiceConfig()
    store = SecurityStore(db.session, refresh_s=config.refresh_s)
    audit = AuditLog(db.session.store, clock=config.clock)
    auth = Authenticator(store, passwords or Passwords(), token_ttl_s=config.token_ttl_s,
                         max_failures=config.max_failures,
                         failure_window_s=config.failure_window_s,
                         lockout_s=config.lockout_s, clock=config.clock, audit=audit.record)
    scheme = "grpc+tls" if tls else "grpc"
    server = FlightSqlServer(db, f"{scheme}://{host}:{port}", store=store, auth=auth,
                             audit=audit, config=config,
                             tls_certificates=[tls] if tls else None)
    audit.start()
    location = f"{scheme}://{host}:{server.port}"
    log.info("hfq service at %s over %s", location, db.session.store.url)
    return Service(server, location, audit)
