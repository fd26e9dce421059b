"""Quotas and fairness: how much one user's queries may take, and stopping a query.

Each user's limits (:class:`Limits`) come from its own quota, else the most generous of its
roles', else the server's defaults: queries running at once, rows and bytes one query may
return, seconds one query may run.  :class:`Admission` counts running queries per user and
keeps *heavy* queries -- those planned to read more than a point read does -- to a few slots
across all users, so that one user's runaway scan waits for a slot while everyone's point
reads (a symbol-day, read inline) never wait behind it.

:class:`Control` is one running query's brake: cancelled on request (the client's
``CancelFlightInfo``, or its call cancelled), or out of time; :meth:`Control.check` raises
then, and is what the session's checkpoint calls at every partition result
(:data:`hfq.session.CHECKPOINT`), so node work not yet started never starts.

Examples
--------
>>> from hfq.service.state import Quota, SecurityState, User
>>> state = SecurityState(users={"ann": User("ann", "", roles=("analyst",))},
...                       quotas={"analyst": Quota("analyst", max_rows=1000)})
>>> limits("ann", state, Limits(max_concurrent=4, timeout_s=60.0))
Limits(max_concurrent=4, max_rows=1000, max_bytes=None, timeout_s=60.0)
>>> now = [0.0]
>>> c = Control("q1", timeout_s=5.0, clock=lambda: now[0])
>>> c.check()
>>> now[0] = 6.0
>>> c.check()                                            # doctest: +ELLIPSIS
Traceback (most recent call last):
hfq.errors.QuotaExceededError: the query ran longer than its 5 s timeout ...
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from hfq.errors import QuotaExceededError
from hfq.service.state import SecurityState

__all__ = ["Admission", "Control", "Limits", "limits"]


@dataclass(frozen=True)
class Limits:
    """One user's limits (None: no limit)."""

    max_concurrent: int | None = None
    max_rows: int | None = None
    max_bytes: int | None = None
    timeout_s: float | None = None


def limits(user: str, state: SecurityState, default: Limits) -> Limits:
    """``user``'s limits: its quota's values, else the largest of its roles' (none set by
    any: ``default``'s)."""
    own = state.quotas.get(user)
    roles = [state.quotas[r] for r in state.grantees(user)[1:] if r in state.quotas]
    out = {}
    for f in dataclasses.fields(Limits):
        value = getattr(own, f.name) if own is not None else None
        if value is None:
            values = [getattr(q, f.name) for q in roles if getattr(q, f.name) is not None]
            value = max(values) if values else getattr(default, f.name)
        out[f.name] = value
    return Limits(**out)


class Control:
    """The brake of one running query (``handle``): cancel it, or let its timeout stop it."""

    def __init__(self, handle: str, *, timeout_s: float | None,
                 clock: Callable[[], float] = time.time,
                 cancelled: Callable[[], bool] | None = None) -> None:
        self.handle = handle
        self.clock = clock
        self.started = clock()
        self.timeout_s = timeout_s
        self.deadline = None if timeout_s is None else self.started + timeout_s
        self._cancelled = threading.Event()
        self._client_gone = cancelled   # the client's call was cancelled (gRPC)
        self.outcome = ""

    def cancel(self) -> None:
        self._cancelled.set()

    def check(self) -> None:
        """Raise :class:`~hfq.errors.QuotaExceededError` if the query is cancelled or out of
        time (its ``outcome`` then says which)."""
        if self._cancelled.is_set() or (self._client_gone is not None and self._client_gone()):
            self.outcome = "cancelled"
            raise QuotaExceededError("the query was cancelled")
        if self.deadline is not None and self.clock() > self.deadline:
            self.outcome = "timeout"
            raise QuotaExceededError(f"the query ran longer than its {self.timeout_s:g} s "
                                     "timeout (the user's quota)")

    def remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - self.clock())


class Admission:
    """Running queries per user, and the slots of heavy queries across all users."""

    def __init__(self, heavy_slots: int) -> None:
        self.heavy_slots = max(1, heavy_slots)
        self._running: dict[str, int] = {}
        self._heavy = 0
        self._cond = threading.Condition()

    def enter(self, user: str, limit: Limits) -> None:
        """Count one more running query of ``user``, or refuse it over its limit."""
        with self._cond:
            n = self._running.get(user, 0)
            if limit.max_concurrent is not None and n >= limit.max_concurrent:
                raise QuotaExceededError(f"user {user!r} has {n} queries running, its limit "
                                         f"(quota max_concurrent={limit.max_concurrent}); "
                                         "wait for one to finish")
            self._running[user] = n + 1

    def leave(self, user: str) -> None:
        with self._cond:
            self._running[user] -= 1
            if not self._running[user]:
                del self._running[user]

    def running(self, user: str) -> int:
        with self._cond:
            return self._running.get(user, 0)

    def heavy(self, control: Control) -> None:
        """Wait for a heavy slot (re-checking ``control`` -- cancelled or out of time -- each
        tenth of a second while waiting)."""
        with self._cond:
            while self._heavy >= self.heavy_slots:
                control.check()
                self._cond.wait(0.1)
            self._heavy += 1

    def heavy_done(self) -> None:
        with self._cond:
            self._heavy -= 1
            self._cond.notify_all()
