"""Password hashes: Argon2id (``argon2-cffi``), the hash string carrying its own parameters.

Examples
--------
>>> pw = Passwords(time_cost=1, memory_kib=1024)           # cheap: for examples and tests
>>> h = pw.hash("correct horse battery")
>>> h.startswith("$argon2id$"), pw.verify(h, "correct horse battery"), pw.verify(h, "wrong")
(True, True, False)
"""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from hfq.errors import ArgumentError

__all__ = ["MIN_LENGTH", "Passwords", "new_key"]

MIN_LENGTH = 10
"""The shortest password a user may set."""


class Passwords:
    """Hashes and checks passwords.  The defaults are argon2-cffi's (RFC 9106's second
    recommendation: 3 passes over 64 MiB); a hash made with other parameters still verifies,
    since it names its own."""

    def __init__(self, *, time_cost: int = 3, memory_kib: int = 64 * 1024,
                 parallelism: int = 4) -> None:
        self._hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_kib,
                                      parallelism=parallelism)
        # checked against when the user does not exist, so that both cost the same time
        self._decoy = self._hasher.hash(secrets.token_hex(16))

    def hash(self, password: str) -> str:
        if not isinstance(password, str) or len(password) < MIN_LENGTH:
            raise ArgumentError(f"a password has at least {MIN_LENGTH} characters",
                                argument="password")
        return str(self._hasher.hash(password))

    def verify(self, hashed: str | None, password: str) -> bool:
        """Does ``password`` match ``hashed``?  (None: no such user -- checked against a
        decoy all the same, and False.)"""
        try:
            ok = bool(self._hasher.verify(hashed or self._decoy, password))
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        return ok and hashed is not None


def new_key() -> str:
    """A service account's secret: 32 random bytes, URL-safe text."""
    return secrets.token_urlsafe(32)
