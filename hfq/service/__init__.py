"""``hfq serve``: a shared service for a team -- Arrow Flight SQL in front of a Database,
with users, roles, per-table grants, row policies, column masks, quotas and an audit log.

:func:`serve` starts it (the ``hfq serve`` command too); clients are anything that speaks
Flight SQL -- ADBC's driver (``adbc_driver_flightsql``), and through it pandas ``read_sql``
and polars ``read_database`` -- and hfq's own thin client, ``hfq.connect("grpc+tls://...",
user=..., password=...)`` (:mod:`hfq.service.client`).  Users and grants are managed with
``hfq user`` / ``hfq grant`` / ``hfq revoke`` (:class:`hfq.service.identity.Admin`).  The
design, the trust boundary and deployment: ``docs/service.md``.

Modules, one concept each: :mod:`~.state` (the security state and its commits),
:mod:`~.identity` (changing it), :mod:`~.passwords`, :mod:`~.tokens`, :mod:`~.auth`
(logins, tokens, brute force), :mod:`~.policies` (grants as the engine enforces them),
:mod:`~.quotas`, :mod:`~.audit`, :mod:`~.metadata`, :mod:`~.protocol` (the Flight SQL
messages), :mod:`~.results` (results on the wire), :mod:`~.server`, :mod:`~.client`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hfq.service.serving import Service, ServiceConfig, serve

__all__ = ["Service", "ServiceConfig", "serve"]


def __getattr__(name: str) -> Any:
    """:func:`serve` and its classes load on first use: a client (``hfq.connect`` of a
    ``grpc+tls://`` location) loads only :mod:`~.client` and the messages."""
    if name in __all__:
        return getattr(importlib.import_module("hfq.service.serving"), name)
    raise AttributeError(f"module 'hfq.service' has no attribute {name!r}")
