"""The security state -- users, roles, grants, row policies, column masks, quotas -- kept
under the catalog root and changed by atomic commits, as the catalog's tables are.

Layout under the root (a dot directory: the catalog lists no table there)::

    .hfq-security/_versions/00000000000000000007.json    the whole state at version 7

Each version is one small JSON document holding the entire state and the SHA-256 of its
body.  A change reads the newest version, applies itself, and publishes the next number
with the store's create-if-absent (:meth:`hfq.storage.store.Store.create_exclusive`, the
primitive the catalog's commits rest on): of two writers racing, one wins, the other reads
the new head and applies its change again.  A version is never rewritten, so the history of
who was granted what, and by whom, stays readable (:meth:`SecurityStore.history`).  Each
published version is also handed to the database's replication (its copies on the nodes).

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> store = SecurityStore(db.session)
>>> store.head().version, store.head().users
(0, {})
>>> def add_role_grant(state):
...     return state.with_grant(Grant("analyst", "quotes", frozenset({"SELECT"})))
>>> store.commit(add_role_grant, by="admin", what="grant SELECT ON quotes TO analyst").version
1
>>> [(v.version, v.what) for v in store.history()]
[(1, 'grant SELECT ON quotes TO analyst')]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hfq.errors import ArgumentError, CommitConflictError, ManifestError
from hfq.schema import check_name
from hfq.session import Session
from hfq.storage.store import temp_name

__all__ = ["PRIVILEGES", "Grant", "Quota", "SecurityState", "SecurityStore", "User",
           "check_grantee", "check_privileges", "check_table"]

log = logging.getLogger(__name__)

ROOT = ".hfq-security"
VERSIONS = f"{ROOT}/_versions"

PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "ADMIN")
"""Per-table privileges; ADMIN on a table implies the other four on it."""

SYSTEM_TABLES = ("hfq_audit",)
"""Tables the service provides itself (a grant on ``*`` does not cover them)."""

_GRANTEE = re.compile(r"[A-Za-z_][A-Za-z0-9_.@-]{0,63}")


def check_grantee(name: str, what: str = "user") -> str:
    """``name`` if it can name a user or role (letters, digits, ``_.@-``, 1-64, not starting
    with a digit), else an :class:`~hfq.errors.ArgumentError`."""
    if not isinstance(name, str) or not _GRANTEE.fullmatch(name):
        raise ArgumentError(f"invalid {what} name {name!r}: use 1-64 letters, digits or "
                            "'_.@-', not starting with a digit or punctuation", argument=what)
    return name


def check_table(name: str) -> str:
    """A table name (or ``*``: every table) a grant can name."""
    return name if name == "*" else check_name(name, "table")


def check_privileges(privileges: Iterable[str]) -> frozenset[str]:
    """Privilege words, upper-cased (``ALL``: every one), or an ArgumentError naming the
    valid ones."""
    out: set[str] = set()
    for p in privileges:
        word = str(p).strip().upper()
        if word == "ALL":
            out.update(PRIVILEGES)
        elif word in PRIVILEGES:
            out.add(word)
        else:
            raise ArgumentError(f"unknown privilege {p!r}: use {', '.join(PRIVILEGES)} or ALL",
                                argument="privileges")
    if not out:
        raise ArgumentError("no privilege named", argument="privileges")
    return frozenset(out)


@dataclass(frozen=True)
class User:
    """A login: a person (``kind="user"``) or a job (``"service"``, whose secret is a key
    the service generated).  ``epoch``: random, new with each password (and each user of
    that name): a token carries the epoch it was issued under, so a password change or a
    removal refuses every token issued before."""

    name: str
    password_hash: str
    kind: str = "user"
    roles: tuple[str, ...] = ()
    admin: bool = False
    epoch: str = ""


@dataclass(frozen=True)
class Grant:
    """Privileges of a grantee (a user or a role) on a table (or ``*``); ``rows``: the row
    policy, an SQL condition over the table's columns (None: every row); ``hidden``: the
    columns masked from the grantee."""

    grantee: str
    table: str
    privileges: frozenset[str]
    rows: str | None = None
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True)
class Quota:
    """Limits of a grantee's queries (None: the server's default)."""

    grantee: str
    max_concurrent: int | None = None
    max_rows: int | None = None
    max_bytes: int | None = None
    timeout_s: float | None = None


@dataclass(frozen=True)
class SecurityState:
    """One version of the security state (immutable; ``with_*`` give the next one)."""

    version: int = 0
    users: Mapping[str, User] = field(default_factory=dict)
    grants: Mapping[tuple[str, str], Grant] = field(default_factory=dict)
    quotas: Mapping[str, Quota] = field(default_factory=dict)
    secret: str = ""
    """The key bearer tokens are signed with (a cluster member can read it: see the trust
    boundary in docs/service.md)."""
    by: str = ""
    at: float = 0.0
    what: str = ""

    # -- reading -------------------------------------------------------------------------------
    def roles(self) -> list[str]:
        """Every role named by a user or a grant (a grantee that is not a user)."""
        named = {r for u in self.users.values() for r in u.roles} | \
            {g.grantee for g in self.grants.values()}
        return sorted(named - set(self.users))

    def grantees(self, user: str) -> tuple[str, ...]:
        """The user and its roles: whose grants apply to it."""
        u = self.users.get(user)
        return () if u is None else (user, *u.roles)

    def grants_of(self, grantees: Iterable[str], table: str) -> list[Grant]:
        """The grants to ``grantees`` on ``table`` (a grant on ``*`` covers every table but
        the system tables)."""
        out = []
        for g in grantees:
            for t in ((table,) if table in SYSTEM_TABLES else (table, "*")):
                found = self.grants.get((g, t))
                if found is not None:
                    out.append(found)
        return out

    # -- changing ------------------------------------------------------------------------------
    def with_user(self, user: User) -> SecurityState:
        return dataclasses.replace(self, users={**self.users, user.name: user})

    def without_user(self, name: str) -> SecurityState:
        users = {k: v for k, v in self.users.items() if k != name}
        grants = {k: v for k, v in self.grants.items() if k[0] != name}
        quotas = {k: v for k, v in self.quotas.items() if k != name}
        return dataclasses.replace(self, users=users, grants=grants, quotas=quotas)

    def with_grant(self, grant: Grant) -> SecurityState:
        return dataclasses.replace(self, grants={**self.grants,
                                                 (grant.grantee, grant.table): grant})

    def without_grant(self, grantee: str, table: str) -> SecurityState:
        return dataclasses.replace(self, grants={k: v for k, v in self.grants.items()
                                                 if k != (grantee, table)})

    def with_quota(self, quota: Quota) -> SecurityState:
        return dataclasses.replace(self, quotas={**self.quotas, quota.grantee: quota})

    # -- JSON ----------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version, "by": self.by, "at": self.at, "what": self.what,
            "secret": self.secret,
            "users": [dataclasses.asdict(u) for u in sorted(self.users.values(),
                                                            key=lambda u: u.name)],
            "grants": [{**dataclasses.asdict(g), "privileges": sorted(g.privileges)}
                       for _, g in sorted(self.grants.items())],
            "quotas": [dataclasses.asdict(q) for _, q in sorted(self.quotas.items())],
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> SecurityState:
        users = {u["name"]: User(**{**u, "roles": tuple(u["roles"])}) for u in doc["users"]}
        grants = {}
        for g in doc["grants"]:
            grant = Grant(**{**g, "privileges": frozenset(g["privileges"]),
                             "hidden": tuple(g["hidden"])})
            grants[(grant.grantee, grant.table)] = grant
        quotas = {q["grantee"]: Quota(**q) for q in doc["quotas"]}
        return SecurityState(int(doc["version"]), users, grants, quotas, doc["secret"],
                             doc["by"], float(doc["at"]), doc["what"])


def _encode(state: SecurityState) -> bytes:
    body = json.dumps(state.to_json(), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(body.encode()).hexdigest()
    return json.dumps({"sha256": digest, "state": json.loads(body)}, sort_keys=True,
                      indent=1).encode()


def _decode(data: bytes, path: str) -> SecurityState:
    try:
        doc = json.loads(data)
        body = json.dumps(doc["state"], sort_keys=True, separators=(",", ":"))
        if hashlib.sha256(body.encode()).hexdigest() != doc["sha256"]:
            raise ValueError("its checksum does not match")
        return SecurityState.from_json(doc["state"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ManifestError(f"security state {path} is damaged ({exc})", path=path) from None


class SecurityStore:
    """The versions of the security state under ``session``'s catalog root.

    ``refresh_s``: how long a read head is trusted before the directory is listed again (0:
    every :meth:`head` lists it; a change made by another process shows within that time).
    """

    def __init__(self, session: Session, *, refresh_s: float = 0.0) -> None:
        self.session = session
        self.store = session.store
        self.refresh_s = refresh_s
        self._lock = threading.Lock()
        self._head: tuple[float, SecurityState] | None = None

    def _versions(self) -> list[int]:
        return sorted(int(n[:-5]) for n in self.store.listdir(VERSIONS)
                      if n.endswith(".json") and n[:-5].isdigit())

    def _read(self, version: int) -> SecurityState:
        path = f"{VERSIONS}/{version:020d}.json"
        state = _decode(self.store.read_bytes(path), self.store.path(path))
        if state.version != version:
            raise ManifestError(f"security state {self.store.path(path)} says it is version "
                                f"{state.version}", path=self.store.path(path))
        return state

    def head(self) -> SecurityState:
        """The newest version (version 0, empty, before the first change)."""
        now = time.monotonic()
        with self._lock:
            if self._head is not None and now - self._head[0] < self.refresh_s:
                return self._head[1]
        versions = self._versions()
        state = self._read(versions[-1]) if versions else SecurityState()
        with self._lock:
            self._head = (now, state)
        return state

    def history(self) -> list[SecurityState]:
        """Every version after 0, oldest first."""
        return [self._read(v) for v in self._versions()]

    def commit(self, change: Callable[[SecurityState], SecurityState], *, by: str,
               what: str) -> SecurityState:
        """Apply ``change`` to the newest version and publish the result as the next one;
        re-applied on the new head when another writer published first.  Returns the
        version published."""
        for _ in range(1000):
            base = self._fresh_head()
            nxt = change(base)
            nxt = dataclasses.replace(nxt, version=base.version + 1, by=by, at=time.time(),
                                      what=what, secret=base.secret or secrets.token_hex(32))
            data = _encode(nxt)
            rel = f"{VERSIONS}/{nxt.version:020d}.json"
            self.store.makedirs(VERSIONS)
            tmp = temp_name(rel)
            self.store.write_bytes(tmp, data, sync=True)
            if self.store.create_exclusive(tmp, rel):
                with self._lock:
                    self._head = (time.monotonic(), nxt)
                self.session.replicate_files({rel: data}, [])
                log.info("security state version %d by %s: %s", nxt.version, by, what)
                return nxt
        raise CommitConflictError("security state: 1000 writers in a row published first")

    def _fresh_head(self) -> SecurityState:
        with self._lock:
            self._head = None
        return self.head()
