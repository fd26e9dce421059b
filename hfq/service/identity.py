"""Changing who may do what: users, service accounts, roles, grants, row policies, column
masks, quotas -- each change one commit of the security state
(:class:`~hfq.service.state.SecurityStore`).  ``hfq user``, ``hfq grant`` and ``hfq
revoke`` call these; so can a Python process on the cluster (a cluster member is trusted:
see docs/service.md).

Examples
--------
>>> import hfq, tempfile
>>> from hfq.service.passwords import Passwords
>>> from hfq.service.state import SecurityStore
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
>>> admin = Admin(SecurityStore(db.session), by="root",
...               passwords=Passwords(time_cost=1, memory_kib=1024))
>>> admin.add_user("ann", "a long password", roles=["analyst"])
>>> key = admin.add_user("loader", service=True)            # a service account: its key
>>> len(key) > 30
True
>>> admin.grant(["SELECT"], "quotes", "analyst", rows="ex IN ('N', 'P')", hide=["mmid"])
>>> admin.grant(["INSERT"], "quotes", "loader")
>>> [(g["grantee"], g["privileges"], g["rows"], g["hidden"]) for g in admin.grants()]
[('analyst', 'SELECT', "ex IN ('N', 'P')", 'mmid'), ('loader', 'INSERT', None, '')]
>>> admin.grant(["SELECT"], "quotes", "analyst", rows="no_such_column = 1")  # doctest: +ELLIPSIS
Traceback (most recent call last):
hfq.errors.ArgumentError: row condition 'no_such_column = 1' on table 'quotes': ...
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterable, Sequence
from typing import Any

from hfq.errors import ArgumentError, TableNotFoundError
from hfq.service.passwords import Passwords, new_key
from hfq.service.policies import compile_rows
from hfq.service.state import (
    SYSTEM_TABLES,
    Grant,
    Quota,
    SecurityState,
    SecurityStore,
    User,
    check_grantee,
    check_privileges,
    check_table,
)

__all__ = ["Admin"]


class Admin:
    """Changes to the security state of ``store``, recorded as made ``by`` someone."""

    def __init__(self, store: SecurityStore, *, by: str,
                 passwords: Passwords | None = None) -> None:
        self.store = store
        self.by = by
        self.passwords = passwords or Passwords()

    # -- users ---------------------------------------------------------------------------------
    def add_user(self, name: str, password: str | None = None, *, service: bool = False,
                 admin: bool = False, roles: Iterable[str] = ()) -> str | None:
        """Add a user (``password``: at least 10 characters) or a service account
        (``service=True``: its key is generated and returned -- shown once, kept only as a
        hash).  ``admin``: may see and do everything through the service (not for service
        accounts).  ``roles``: roles whose grants the user gets."""
        check_grantee(name)
        roles = tuple(dict.fromkeys(check_grantee(r, "role") for r in roles))
        if service and admin:
            raise ArgumentError("a service account cannot be an admin", argument="admin")
        if service and password is not None:
            raise ArgumentError("a service account's key is generated, not chosen",
                                argument="password")
        if not service and password is None:
            raise ArgumentError(f"user {name!r} needs a password", argument="password")
        key = new_key() if service else None
        hashed = self.passwords.hash(key if key is not None else str(password))

        def change(state: SecurityState) -> SecurityState:
            if name in state.users:
                raise ArgumentError(f"user {name!r} exists already", argument="user")
            if name in state.roles():
                raise ArgumentError(f"{name!r} is a role", argument="user")
            return state.with_user(User(name, hashed, "service" if service else "user", roles,
                                        admin, secrets.token_hex(8)))

        self.store.commit(change, by=self.by, what=f"user add {name}" +
                          (" (service account)" if service else "") + (" (admin)" if admin
                                                                       else ""))
        return key

    def set_password(self, name: str, password: str | None = None) -> str | None:
        """A new password for a user (a new key, returned, for a service account); every
        token issued before stops working."""
        user = self._user(name)
        key = new_key() if user.kind == "service" else None
        if key is None and password is None:
            raise ArgumentError(f"user {name!r} needs a password", argument="password")
        hashed = self.passwords.hash(key if key is not None else str(password))
        epoch = secrets.token_hex(8)
        self.store.commit(lambda s: s.with_user(dataclasses.replace(
            s.users[name], password_hash=hashed, epoch=epoch)), by=self.by,
            what=f"user passwd {name}")
        return key

    def remove_user(self, name: str) -> None:
        """Remove a user, its own grants and quota; its tokens stop working."""
        self._user(name)
        self.store.commit(lambda s: s.without_user(name), by=self.by, what=f"user rm {name}")

    def _user(self, name: str) -> User:
        user = self.store.head().users.get(name)
        if user is None:
            raise ArgumentError(f"no user {name!r}", argument="user")
        return user

    def grant_role(self, role: str, user: str) -> None:
        check_grantee(role, "role")
        self._user(user)
        self.store.commit(lambda s: s.with_user(dataclasses.replace(
            s.users[user], roles=tuple(dict.fromkeys((*s.users[user].roles, role))))),
            by=self.by, what=f"grant {role} TO {user}")

    def revoke_role(self, role: str, user: str) -> None:
        if role not in self._user(user).roles:
            raise ArgumentError(f"user {user!r} does not have role {role!r}", argument="role")
        self.store.commit(lambda s: s.with_user(dataclasses.replace(
            s.users[user], roles=tuple(r for r in s.users[user].roles if r != role))),
            by=self.by, what=f"revoke {role} FROM {user}")

    # -- grants --------------------------------------------------------------------------------
    def grant(self, privileges: Iterable[str], table: str, grantee: str, *,
              rows: str | None = None, hide: Sequence[str] | None = None) -> None:
        """Grant ``privileges`` on ``table`` (``*``: every table) to a user or role;
        ``rows``: the grantee's row policy on it (an SQL condition), ``hide``: columns
        masked from it.  Granting again adds privileges; ``rows``/``hide`` given replace
        the previous ones."""
        privs = check_privileges(privileges)
        check_table(table)
        check_grantee(grantee, "grantee")
        if (rows is not None or hide) and table == "*":
            raise ArgumentError("row policies and masks name one table, not *",
                                argument="table")
        hidden = tuple(dict.fromkeys(hide)) if hide is not None else None
        if table != "*" and table not in SYSTEM_TABLES:
            try:
                manifest = self.store.session.snapshot(table)
            except TableNotFoundError:
                raise ArgumentError(f"no table {table!r} to grant on", argument="table") \
                    from None
            for column in hidden or ():
                if column not in manifest.schema:
                    raise ArgumentError(f"table {table!r} has no column {column!r} to hide",
                                        argument="hide")
            if rows is not None:
                compile_rows(rows, manifest, self.store.session)

        def change(state: SecurityState) -> SecurityState:
            old = state.grants.get((grantee, table))
            return state.with_grant(Grant(
                grantee, table, privs | (old.privileges if old else frozenset()),
                rows if rows is not None else (old.rows if old else None),
                hidden if hidden is not None else (old.hidden if old else ())))

        what = f"grant {','.join(sorted(privs))} ON {table} TO {grantee}" + \
            (f" WHERE {rows}" if rows is not None else "") + \
            (f" HIDE {','.join(hidden)}" if hidden else "")
        self.store.commit(change, by=self.by, what=what)

    def revoke(self, privileges: Iterable[str], table: str, grantee: str) -> None:
        """Revoke ``privileges`` on ``table`` from a grantee (none left: the grant, with its
        row policy and masks, goes)."""
        privs = check_privileges(privileges)
        if (grantee, table) not in self.store.head().grants:
            raise ArgumentError(f"{grantee!r} has no grant on {table!r}", argument="grantee")

        def change(state: SecurityState) -> SecurityState:
            old = state.grants[(grantee, table)]
            left = old.privileges - privs
            if not left:
                return state.without_grant(grantee, table)
            return state.with_grant(dataclasses.replace(old, privileges=left))

        self.store.commit(change, by=self.by,
                          what=f"revoke {','.join(sorted(privs))} ON {table} FROM {grantee}")

    def set_quota(self, grantee: str, *, max_concurrent: int | None = None,
                  max_rows: int | None = None, max_bytes: int | None = None,
                  timeout_s: float | None = None) -> None:
        """Limits of a user's or role's queries (None: the server's default)."""
        check_grantee(grantee, "grantee")
        for name, value in (("max_concurrent", max_concurrent), ("max_rows", max_rows),
                            ("max_bytes", max_bytes), ("timeout_s", timeout_s)):
            if value is not None and not value > 0:
                raise ArgumentError(f"{name} must be positive, not {value!r}", argument=name)
        quota = Quota(grantee, max_concurrent, max_rows, max_bytes, timeout_s)
        self.store.commit(lambda s: s.with_quota(quota), by=self.by,
                          what=f"quota {grantee}: " + ", ".join(
                              f"{k}={v}" for k, v in dataclasses.asdict(quota).items()
                              if k != "grantee" and v is not None))

    # -- reading -------------------------------------------------------------------------------
    def users(self) -> list[dict[str, Any]]:
        state = self.store.head()
        return [{"user": u.name, "kind": u.kind, "admin": u.admin, "roles": ",".join(u.roles)}
                for u in sorted(state.users.values(), key=lambda u: u.name)]

    def grants(self) -> list[dict[str, Any]]:
        state = self.store.head()
        return [{"grantee": g.grantee, "table": g.table,
                 "privileges": ",".join(sorted(g.privileges)), "rows": g.rows,
                 "hidden": ",".join(g.hidden)} for _, g in sorted(state.grants.items())]
