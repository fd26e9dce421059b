"""Bearer tokens: who, when issued, until when -- signed with the security state's secret.

A token is ``<payload>.<signature>``, both URL-safe base64: the payload is JSON (user, the
user's epoch, issued, expires, a nonce), the signature its HMAC-SHA256 under the state's
secret.  Any server over the same catalog verifies it without a token table; a password
change or a removal refuses every token issued before it (the user's epoch changes:
:attr:`hfq.service.state.User.epoch`).

Examples
--------
>>> token = issue("k" * 64, "ann", "e1", now=1000.0, ttl_s=60)
>>> verify("k" * 64, token, now=1030.0).user
'ann'
>>> verify("k" * 64, token, now=1061.0)
Traceback (most recent call last):
hfq.errors.AuthenticationError: the token expired; log in again
>>> verify("x" * 64, token, now=1030.0)                      # doctest: +ELLIPSIS
Traceback (most recent call last):
hfq.errors.AuthenticationError: not a token this service issued
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

from hfq.errors import AuthenticationError

__all__ = ["Claims", "issue", "verify"]


@dataclass(frozen=True)
class Claims:
    user: str
    epoch: str
    issued: float
    expires: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(secret: str, payload: str) -> str:
    return _b64(hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest())


def issue(secret: str, user: str, epoch: str, *, now: float, ttl_s: float) -> str:
    """A token for ``user`` (at its ``epoch``), valid from ``now`` for ``ttl_s`` seconds."""
    body = json.dumps({"u": user, "p": epoch, "i": now, "e": now + ttl_s,
                       "n": secrets.token_hex(8)},
                      separators=(",", ":"))
    payload = _b64(body.encode())
    return f"{payload}.{_sign(secret, payload)}"


def verify(secret: str, token: str, *, now: float) -> Claims:
    """The claims of a token signed with ``secret`` and not expired at ``now``, else an
    :class:`~hfq.errors.AuthenticationError` (which never says more than that)."""
    payload, _, signature = token.partition(".")
    if not secret or not payload or not signature or \
            not hmac.compare_digest(_sign(secret, payload), signature):
        raise AuthenticationError("not a token this service issued")
    try:
        doc = json.loads(_unb64(payload))
        claims = Claims(str(doc["u"]), str(doc["p"]), float(doc["i"]), float(doc["e"]))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise AuthenticationError("not a token this service issued") from None
    if now >= claims.expires:
        raise AuthenticationError("the token expired; log in again")
    return claims
