"""Who is calling: passwords checked (and brute force slowed down), bearer tokens issued and
verified against the current security state.

A login names a user and a password (a service account's key is its password).  Unknown
user and wrong password get the same answer, after the same work.  After ``max_failures``
failed logins of one user within ``failure_window_s``, that user's logins are refused --
right password included -- for ``lockout_s``, doubling with each lockout in a row; a
successful login clears the count.  Every attempt, refused or not, is audited.

A token is checked on every call: its signature (the state's secret), its expiry, that its
user still exists and changed no password since it was issued.  The user's grants are read
from the state at each call, so a revoke applies to the next call of a token issued before.

Examples
--------
>>> import hfq, tempfile
>>> from hfq.service.identity import Admin
>>> from hfq.service.passwords import Passwords
>>> from hfq.service.state import SecurityStore
>>> db = hfq.connect(tempfile.mkdtemp())
>>> store, pw = SecurityStore(db.session), Passwords(time_cost=1, memory_kib=1024)
>>> _ = Admin(store, by="root", passwords=pw).add_user("ann", "a long password")
>>> clock = [1000.0]
>>> auth = Authenticator(store, pw, clock=lambda: clock[0])
>>> token = auth.login("ann", "a long password")
>>> auth.principal(token).user
'ann'
>>> for _ in range(5):
...     try:
...         auth.login("ann", "not the password")
...     except hfq.errors.AuthenticationError as exc:
...         pass
>>> auth.login("ann", "a long password")              # doctest: +ELLIPSIS
Traceback (most recent call last):
hfq.errors.AuthenticationError: too many failed logins for this user; try again in 60 s
>>> clock[0] += 61
>>> auth.principal(auth.login("ann", "a long password")).user
'ann'
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from hfq.errors import AuthenticationError
from hfq.service import tokens
from hfq.service.passwords import Passwords
from hfq.service.state import SecurityState, SecurityStore

__all__ = ["Authenticator", "Principal"]

AuditHook = Callable[..., None]


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: the user and the security state its call is judged by."""

    user: str
    state: SecurityState
    expires: float


@dataclass
class _Failures:
    count: int = 0
    first: float = 0.0
    locked_until: float = 0.0
    lockouts: int = 0


class Authenticator:
    """Logins and tokens for the users of ``store``'s security state."""

    def __init__(self, store: SecurityStore, passwords: Passwords, *,
                 token_ttl_s: float = 8 * 3600, max_failures: int = 5,
                 failure_window_s: float = 300.0, lockout_s: float = 60.0,
                 clock: Callable[[], float] = time.time, audit: AuditHook | None = None) -> None:
        self.store = store
        self.passwords = passwords
        self.token_ttl_s = token_ttl_s
        self.max_failures = max_failures
        self.failure_window_s = failure_window_s
        self.lockout_s = lockout_s
        self.clock = clock
        self.audit = audit or (lambda **event: None)
        self._failures: dict[str, _Failures] = {}
        self._lock = threading.Lock()

    def login(self, user: str, password: str, *, peer: str = "") -> str:
        """A bearer token for ``user``, or an :class:`~hfq.errors.AuthenticationError`."""
        now = self.clock()
        with self._lock:
            f = self._failures.get(user)
            if f is not None and now < f.locked_until:
                wait = math.ceil(f.locked_until - now)
                self.audit(kind="login", user=user, outcome="locked", peer=peer,
                           detail=f"locked for {wait} s more")
                raise AuthenticationError(f"too many failed logins for this user; try again "
                                          f"in {wait} s")
        state = self.store.head()
        u = state.users.get(user)
        if not self.passwords.verify(u.password_hash if u else None, password):
            self._failed(user, now)
            self.audit(kind="login", user=user, outcome="failed", peer=peer,
                       detail="unknown user" if u is None else "wrong password")
            raise AuthenticationError("unknown user or wrong password")
        with self._lock:
            self._failures.pop(user, None)
        self.audit(kind="login", user=user, outcome="ok", peer=peer, detail=u.kind if u else "")
        assert u is not None   # verified
        return tokens.issue(state.secret, user, u.epoch, now=now, ttl_s=self.token_ttl_s)

    def _failed(self, user: str, now: float) -> None:
        with self._lock:
            f = self._failures.setdefault(user, _Failures(first=now))
            if now - f.first > self.failure_window_s:
                f.count, f.first = 0, now
            f.count += 1
            if f.count >= self.max_failures:
                f.locked_until = now + self.lockout_s * 2 ** f.lockouts
                f.lockouts += 1
                f.count, f.first = 0, now

    def principal(self, token: str, *, peer: str = "") -> Principal:
        """Who ``token`` speaks for, judged by the current security state."""
        state = self.store.head()
        now = self.clock()
        try:
            claims = tokens.verify(state.secret, token, now=now)
            u = state.users.get(claims.user)
            if u is None:
                raise AuthenticationError("not a token this service issued")
            if claims.epoch != u.epoch:
                raise AuthenticationError("the token was issued before the user's password "
                                          "changed; log in again")
        except AuthenticationError as exc:
            self.audit(kind="token", user="", outcome="refused", peer=peer, detail=str(exc))
            raise
        return Principal(claims.user, state, claims.expires)
