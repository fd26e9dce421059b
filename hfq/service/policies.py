"""Grants as the engine enforces them: a user's :class:`~hfq.session.Access`.

:class:`GrantAccess` answers, from one version of the security state, the two questions a
session asks where it reads a table (:meth:`hfq.session.Session.plan_read`, through which
every read of partition files goes, whatever the query -- SQL with subqueries, CTEs, joins,
set operations, time travel; a scan; a count): may this user know the table exists, and
what of it may they see (:class:`~hfq.session.TablePolicy`).  Nothing here looks at SQL
text the user sent; the policy is part of the plan.

A user's grants are its own and its roles'.  On one table, the rows visible are those of
*any* granting grantee (their row conditions OR'ed; a grant without one shows every row),
and a column is hidden only when *every* granting grantee has it masked.  ``ADMIN`` on a
table implies the other privileges on it; a user with ``admin`` sees and may do everything.

Row conditions are SQL (what follows ``WHERE``), compiled by the SQL compiler against the
table's schema into one row-wise polars predicate; subqueries, aggregates and windows are
refused.

Examples
--------
>>> import hfq, tempfile
>>> from hfq.service.state import Grant, SecurityState, User
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
>>> _ = t.append(hfq.synth.taq_table(rows_per_day=200, symbols=5))
>>> state = SecurityState(users={"ann": User("ann", "", roles=("analyst",))}).with_grant(
...     Grant("analyst", "quotes", frozenset({"SELECT"}), rows="ex IN ('N', 'P')",
...           hidden=("mmid",)))
>>> access = GrantAccess(state, "ann", db.session)
>>> ann = hfq.Database.over(db.session.derive(user="ann", access=access))
>>> "mmid" in ann.sql("SELECT * FROM quotes").columns
False
>>> ann.sql("SELECT DISTINCT ex FROM quotes ORDER BY ex").collect()["ex"].to_list()
['N', 'P']
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from typing import Any

import polars as pl
import sqlglot
from sqlglot import exp

from hfq.catalog.records import Manifest
from hfq.engine.ops import Filter, Select
from hfq.engine.query import make_query
from hfq.engine.sql import compile_sql
from hfq.errors import AccessDeniedError, ArgumentError, QueryError
from hfq.service.state import SYSTEM_TABLES, SecurityState
from hfq.session import OPEN, Session, TablePolicy

__all__ = ["DENIED", "GrantAccess", "compile_rows"]

DENIED: contextvars.ContextVar[list[str] | None] = \
    contextvars.ContextVar("hfq_denied", default=None)
"""What a request was refused, noted for its audit record (the service sets a list)."""


def _deny(reason: str) -> None:
    noted = DENIED.get()
    if noted is not None:
        noted.append(reason)


_COMPILED: OrderedDict[tuple[Any, ...], pl.Expr] = OrderedDict()
_COMPILED_LOCK = threading.Lock()


def compile_rows(text: str, manifest: Manifest, session: Session) -> pl.Expr:
    """The row condition ``text`` (SQL, as after ``WHERE``) over ``manifest``'s columns as
    one row-wise polars predicate, or an :class:`~hfq.errors.ArgumentError` saying why not.
    ``session``: a trusted one (no access of its own); nothing is read."""
    key = (text, manifest.table, tuple(manifest.schema.names),
           str(manifest.schema.arrow))
    with _COMPILED_LOCK:
        hit = _COMPILED.get(key)
    if hit is not None:
        return hit
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as exc:
        raise ArgumentError(f"row condition {text!r}: {exc}", argument="rows") from None
    for node in tree.walk():
        if isinstance(node, (exp.Select, exp.Subquery, exp.Window, exp.AggFunc, exp.Query)):
            raise ArgumentError(f"row condition {text!r}: a condition on each row's own "
                                f"columns (no {node.key.upper()})", argument="rows")
    name = manifest.table

    def only(table: str, version: int | None = None) -> Any:
        return make_query(session, name, manifest)

    try:
        query = compile_sql(f'SELECT * FROM "{name}" WHERE {text}', only)
    except QueryError as exc:
        raise ArgumentError(f"row condition {text!r} on table {name!r}: {exc}",
                            argument="rows") from None
    predicates = []
    ops = query.ops
    for i, op in enumerate(ops):
        if isinstance(op, Filter) and op.local(frozenset()):
            predicates.append(op.predicate)
        elif isinstance(op, Select) and i == len(ops) - 1:
            continue   # the projection of SELECT *: not part of the condition
        else:
            raise ArgumentError(f"row condition {text!r}: not a condition on each row "
                                f"({op.describe()})", argument="rows")
    if not predicates:
        raise ArgumentError(f"row condition {text!r} filters nothing", argument="rows")
    predicate = predicates[0]
    for p in predicates[1:]:
        predicate = predicate & p
    with _COMPILED_LOCK:
        _COMPILED[key] = predicate
        while len(_COMPILED) > 512:
            _COMPILED.popitem(last=False)
    return predicate


class GrantAccess:
    """User ``user``'s access under one version of the security state (an
    :class:`hfq.session.Access`).  ``session``: the service's own, trusted session (to
    compile row conditions)."""

    def __init__(self, state: SecurityState, user: str, session: Session) -> None:
        self.state = state
        self.user = user
        self.session = session
        u = state.users.get(user)
        self.admin = bool(u is not None and u.admin)
        self.grantees = state.grantees(user)

    def __repr__(self) -> str:
        return f"<GrantAccess {self.user!r} @ security version {self.state.version}>"

    def privileges(self, table: str) -> frozenset[str]:
        """The privileges the user holds on ``table``."""
        if self.admin:
            return frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "ADMIN"})
        out: set[str] = set()
        for g in self.state.grants_of(self.grantees, table):
            out |= g.privileges
        if "ADMIN" in out:
            out |= {"SELECT", "INSERT", "UPDATE", "DELETE"}
        return frozenset(out)

    def visible(self, name: str) -> bool:
        ok = bool(self.privileges(name))
        if not ok:
            _deny(f"table {name}: no grant")
        return ok

    def table(self, name: str, manifest: Manifest) -> TablePolicy:
        return self.policy(name, manifest, "SELECT")

    def policy(self, name: str, manifest: Manifest | None, privilege: str) -> TablePolicy:
        """The user's policy on ``name`` for ``privilege`` (its rows and hidden columns),
        or an :class:`~hfq.errors.AccessDeniedError`."""
        if self.admin:
            return OPEN
        grants = [g for g in self.state.grants_of(self.grantees, name)
                  if privilege in g.privileges or "ADMIN" in g.privileges]
        if not grants:
            _deny(f"{privilege} on table {name}")
            raise AccessDeniedError(f"user {self.user!r} has no {privilege} grant on table "
                                    f"{name!r}")
        if name in SYSTEM_TABLES or manifest is None:
            return OPEN
        if any(g.rows is None for g in grants):
            rows = None
        else:
            parts = [compile_rows(g.rows, manifest, self.session) for g in grants
                     if g.rows is not None]
            rows = parts[0]
            for p in parts[1:]:
                rows = rows | p
        hidden = frozenset(grants[0].hidden)
        for g in grants[1:]:
            hidden &= frozenset(g.hidden)
        hidden &= frozenset(manifest.schema.names)
        if hidden and hidden == frozenset(manifest.schema.names):
            _deny(f"{privilege} on table {name}: every column masked")
            raise AccessDeniedError(f"user {self.user!r} may see no column of table {name!r}")
        return TablePolicy(rows, hidden)
