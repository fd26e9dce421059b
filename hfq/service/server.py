"""The Flight SQL endpoint: one process in front of a Database, for many users.

Every call is authenticated first (:class:`_AuthFactory`: a Basic login answered with a
bearer token, or that token), then runs as its user: through a :class:`ServiceDatabase` over
a session derived for that user, whose access (:class:`~hfq.service.policies.GrantAccess`)
the engine applies where tables are read.  Statements (``CommandStatementQuery``, prepared
statements with bound parameters) are compiled by ``GetFlightInfo`` -- errors, denials and
the result's schema known then -- and run by ``DoGet``, streamed as they are read, under
the user's quotas (:mod:`hfq.service.quotas`); ``EXPLAIN <query>`` answers the plan as the
user may see it.  Bulk ingest (``CommandStatementIngest``, DoPut) appends for users with
INSERT.  Metadata calls list what the user may read.  Everything is audited
(:mod:`hfq.service.audit`).
"""

from __future__ import annotations

import base64
import logging
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.flight as flight

from hfq.db import Database
from hfq.engine.query import FrameSource, Query
from hfq.errors import (
    AccessDeniedError,
    AuthenticationError,
    HfqError,
    QueryError,
    QuotaExceededError,
    TableNotFoundError,
)
from hfq.query.read import INLINE_ROWS
from hfq.service import metadata, protocol
from hfq.service.audit import AuditLog
from hfq.service.auth import Authenticator, Principal
from hfq.service.policies import DENIED, GrantAccess
from hfq.service.protocol import MESSAGES, pack, unpack
from hfq.service.quotas import Admission, Control, Limits, limits
from hfq.service.results import (
    batches,
    payloads,
    to_wire,
    wire_schema,
)
from hfq.service.state import SYSTEM_TABLES, SecurityStore
from hfq.session import CHECKPOINT
from hfq.table import Table

__all__ = ["FlightSqlServer", "ServiceConfig", "ServiceDatabase"]

log = logging.getLogger(__name__)

_METADATA = {"CommandGetCatalogs", "CommandGetDbSchemas", "CommandGetTables",
             "CommandGetTableTypes", "CommandGetSqlInfo", "CommandGetPrimaryKeys",
             "CommandGetExportedKeys", "CommandGetImportedKeys", "CommandGetCrossReference"}
_EXPLAIN = re.compile(r"\s*explain\s+(?!analy[sz]e\b)", re.I)
_POLICY_TEXT = re.compile(r" \(in the filter .*?\)(?=$|[;\n])", re.S)


@dataclass(frozen=True)
class ServiceConfig:
    """How the service treats its users (every field has a default that suits a team).

    ``limits``: the quota of a user neither it nor its roles set; ``heavy_slots``: queries
    planned to read more than a point read that may run at once, across all users;
    ``refresh_s``: how long the security state read from the catalog is trusted before it
    is read again (a grant or revoke made elsewhere applies within it); ``clock``: the time
    (tests move it)."""

    token_ttl_s: float = 8 * 3600.0
    max_failures: int = 5
    failure_window_s: float = 300.0
    lockout_s: float = 60.0
    limits: Limits = Limits(max_concurrent=8)
    heavy_slots: int = 2
    refresh_s: float = 1.0
    statement_ttl_s: float = 600.0
    batch_bytes: int = 4 << 20
    clock: Callable[[], float] = time.time


class ServiceDatabase(Database):
    """A database as one service user sees it: its session carries the user's access; the
    system table ``hfq_audit`` is there for those who may read it."""

    access: GrantAccess
    audit: AuditLog

    def _sql_table(self, name: str, version: int | None = None, as_of: str | None = None,
                   rowid: bool = False) -> Query:
        if name not in SYSTEM_TABLES:
            return super()._sql_table(name, version, as_of, rowid)
        if not self.access.visible(name):
            raise QueryError(f"unknown table {name!r}; tables: "
                             f"{', '.join(self.tables()) or '(none)'}")
        self.access.policy(name, None, "SELECT")
        if version is not None or as_of is not None:
            raise QueryError(f"{name} is a system table: it has no versions")
        return Query(FrameSource(self.audit.frame(), name=name))

    def _sql_change(self, name: str) -> Table:
        """SQL that changes data (issue 27) is not served: no grant governs it yet."""
        raise QueryError("DELETE, UPDATE, INSERT and ALTER TABLE are not served (no grant "
                         "covers them yet); the service's writes are its INSERT grant's "
                         "appends")

    def tables(self) -> list[str]:
        return sorted([*super().tables(), *(n for n in SYSTEM_TABLES if self.access.visible(n))])


@dataclass
class _Statement:
    handle: str
    user: str
    text: str
    params: list[Any] | None
    query: Query | None
    plan: str | None          # EXPLAIN's answer
    schema: pa.Schema
    created: float
    peer: str


@dataclass
class _Prepared:
    handle: str
    user: str
    text: str
    params: list[Any] | None = None


class _AuthMiddleware(flight.ServerMiddleware):
    def __init__(self, principal: Principal, token: str | None) -> None:
        self.principal = principal
        self.token = token

    def sending_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} if self.token else {}


class _AuthFactory(flight.ServerMiddlewareFactory):
    """Every call's credentials: ``authorization: Basic`` (a login: the answer carries a
    bearer token) or ``authorization: Bearer <token>``."""

    def __init__(self, auth: Authenticator) -> None:
        self.auth = auth

    def start_call(self, info: flight.CallInfo, headers: dict[str, list[Any]]
                   ) -> _AuthMiddleware:
        values = headers.get("authorization") or headers.get("Authorization") or []
        value = values[0] if values else ""
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        scheme, _, credentials = value.partition(" ")
        try:
            if scheme.lower() == "basic":
                try:
                    raw = credentials.strip()   # padded or not (Go's clients leave it out)
                    user, _, password = base64.b64decode(raw + "=" * (-len(raw) % 4)) \
                        .decode().partition(":")
                except (ValueError, UnicodeDecodeError):
                    raise AuthenticationError("malformed Basic credentials") from None
                token = self.auth.login(user, password)
                return _AuthMiddleware(self.auth.principal(token), token)
            if scheme.lower() == "bearer":
                return _AuthMiddleware(self.auth.principal(credentials.strip()), None)
            raise AuthenticationError("authentication required (Basic user:password, or a "
                                      "Bearer token)")
        except AuthenticationError as exc:
            raise flight.FlightUnauthenticatedError(str(exc)) from None


class _Handshake(flight.ServerAuthHandler):
    """Flight's Handshake call, accepted as it comes: a login is the Basic credentials on it
    (checked by :class:`_AuthFactory`, like every call's), its token the answer's header."""

    def authenticate(self, outgoing: Any, incoming: Any) -> None:
        return None

    def is_valid(self, token: bytes) -> str:
        return ""


def _message(exc: BaseException) -> str:
    """An error's text as a client may see it (a row policy's own predicate never)."""
    return _POLICY_TEXT.sub("", str(exc))


def _flight_error(exc: BaseException) -> BaseException:
    if isinstance(exc, flight.FlightError):
        return exc
    text = _message(exc)
    if isinstance(exc, AuthenticationError):
        return flight.FlightUnauthenticatedError(text)
    if isinstance(exc, AccessDeniedError):
        return flight.FlightUnauthorizedError(text)
    if isinstance(exc, QuotaExceededError):
        if "cancelled" in text:
            return flight.FlightCancelledError(text)
        if "timeout" in text:
            return flight.FlightTimedOutError(text)
        return flight.FlightUnavailableError(text)
    if isinstance(exc, HfqError):
        return pa.ArrowInvalid(text)
    ref = secrets.token_hex(4)
    log.error("internal error %s", ref, exc_info=exc)
    return flight.FlightInternalError(f"internal error {ref} (see the server's log)")


def _outcome(exc: BaseException, denied: list[str], control: Control | None = None) -> str:
    if control is not None and control.outcome:
        return control.outcome
    if isinstance(exc, AccessDeniedError) or denied:
        return "denied"
    if isinstance(exc, QuotaExceededError):
        return "quota"
    return "error"


class FlightSqlServer(flight.FlightServerBase):
    """Flight SQL over ``db`` at ``location`` (``grpc+tls://host:port`` with
    ``tls_certificates``, or ``grpc://`` on loopback)."""

    def __init__(self, db: Database, location: str, *, store: SecurityStore,
                 auth: Authenticator, audit: AuditLog, config: ServiceConfig,
                 tls_certificates: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(location, auth_handler=_Handshake(),
                         tls_certificates=tls_certificates or [],
                         middleware={"auth": _AuthFactory(auth)})
        self.db = db
        self.store = store
        self.auth = auth
        self.audit = audit
        self.config = config
        self.admission = Admission(config.heavy_slots)
        self._lock = threading.Lock()
        self._databases: OrderedDict[tuple[str, int], ServiceDatabase] = OrderedDict()
        self._statements: dict[str, _Statement] = {}
        self._prepared: dict[str, _Prepared] = {}
        self._running: dict[str, Control] = {}

    # -- who ----------------------------------------------------------------------------------
    @staticmethod
    def _principal(context: flight.ServerCallContext) -> Principal:
        middleware = context.get_middleware("auth")
        if middleware is None:   # the factory refuses a call without credentials
            raise flight.FlightUnauthenticatedError("authentication required")
        principal: Principal = middleware.principal
        return principal

    def database(self, principal: Principal) -> ServiceDatabase:
        """The database as ``principal`` sees it (one per user and security version)."""
        key = (principal.user, principal.state.version)
        with self._lock:
            hit = self._databases.get(key)
            if hit is not None:
                self._databases.move_to_end(key)
                return hit
        access = GrantAccess(principal.state, principal.user, self.db.session)
        sdb = ServiceDatabase.over(self.db.session.derive(user=principal.user, access=access))
        assert isinstance(sdb, ServiceDatabase)
        sdb.access, sdb.audit = access, self.audit
        with self._lock:
            self._databases[key] = sdb
            while len(self._databases) > 256:
                self._databases.popitem(last=False)
        return sdb

    # -- statements ----------------------------------------------------------------------------
    def _compile(self, principal: Principal, text: str, params: list[Any] | None,
                 peer: str) -> _Statement:
        """Compile a statement as its user (audited when refused)."""
        started = self.config.clock()
        denied: list[str] = []
        token = DENIED.set(denied)
        try:
            sdb = self.database(principal)
            m = _EXPLAIN.match(text)
            if m:
                query = sdb.sql(text[m.end():], params=params)
                plan = query.explain()
                return _Statement(secrets.token_hex(16), principal.user, text, params, None,
                                  plan, pa.schema([("plan", pa.string())]), started, peer)
            query = sdb.sql(text, params=params)
            return _Statement(secrets.token_hex(16), principal.user, text, params, query, None,
                              wire_schema(query.schema), started, peer)
        except Exception as exc:  # noqa: BLE001 - the boundary: audited, then mapped
            masked = _masked(principal, exc)
            if masked:
                denied.append(masked)
            detail = "; ".join(denied) or _message(exc)
            self.audit.record(kind="query", user=principal.user, text=text, params=params,
                              outcome=_outcome(exc, denied), detail=detail, peer=peer,
                              seconds=self.config.clock() - started)
            raise _flight_error(exc) from None
        finally:
            DENIED.reset(token)

    def _keep(self, st: _Statement) -> flight.Ticket:
        now = self.config.clock()
        with self._lock:
            for handle in [h for h, s in self._statements.items()
                           if now - s.created > self.config.statement_ttl_s]:
                del self._statements[handle]
            self._statements[st.handle] = st
        return flight.Ticket(pack(MESSAGES["TicketStatementQuery"](
            statement_handle=st.handle.encode())))

    def _info(self, descriptor: flight.FlightDescriptor, schema: pa.Schema,
              ticket: flight.Ticket) -> flight.FlightInfo:
        return flight.FlightInfo(schema, descriptor, [flight.FlightEndpoint(ticket, [])], -1, -1)

    def get_flight_info(self, context: flight.ServerCallContext,
                        descriptor: flight.FlightDescriptor) -> flight.FlightInfo:
        principal = self._principal(context)
        name, cmd = self._command(descriptor)
        if name in _METADATA:
            table = self._metadata(principal, name, cmd)
            return self._info(descriptor, table.schema, flight.Ticket(descriptor.command))
        st = self._statement(principal, name, cmd, context.peer())
        return self._info(descriptor, st.schema, self._keep(st))

    def get_schema(self, context: flight.ServerCallContext,
                   descriptor: flight.FlightDescriptor) -> flight.SchemaResult:
        principal = self._principal(context)
        name, cmd = self._command(descriptor)
        if name in _METADATA:
            return flight.SchemaResult(self._metadata(principal, name, cmd).schema)
        return flight.SchemaResult(self._statement(principal, name, cmd, context.peer()).schema)

    @staticmethod
    def _command(descriptor: flight.FlightDescriptor) -> tuple[str, Any]:
        if descriptor.descriptor_type != flight.DescriptorType.CMD:
            raise pa.ArrowInvalid("this server takes Flight SQL commands, not paths")
        try:
            return unpack(descriptor.command)
        except QueryError as exc:
            raise pa.ArrowInvalid(str(exc)) from None

    def _statement(self, principal: Principal, name: str, cmd: Any, peer: str) -> _Statement:
        if name == "CommandStatementQuery":
            if cmd.HasField("transaction_id"):
                raise pa.ArrowNotImplementedError("hfq has no transactions")
            return self._compile(principal, cmd.query, None, peer)
        if name == "CommandPreparedStatementQuery":
            p = self._prepared_of(principal, cmd.prepared_statement_handle)
            return self._compile(principal, p.text, p.params, peer)
        raise pa.ArrowNotImplementedError(f"{name} is not a query this server runs")

    def do_get(self, context: flight.ServerCallContext,
               ticket: flight.Ticket) -> flight.FlightDataStream:
        principal = self._principal(context)
        try:
            name, cmd = unpack(ticket.ticket)
        except QueryError as exc:
            raise pa.ArrowInvalid(str(exc)) from None
        if name in _METADATA:
            return flight.RecordBatchStream(self._metadata(principal, name, cmd))
        if name != "TicketStatementQuery":
            raise pa.ArrowInvalid(f"not a ticket of this server: {name}")
        handle = cmd.statement_handle.decode(errors="replace")
        with self._lock:
            st = self._statements.get(handle)
            if st is not None and st.user == principal.user:
                del self._statements[handle]
            else:
                st = None
        if st is None:
            raise pa.ArrowInvalid("unknown or expired statement (run it again)")
        return flight.GeneratorStream(st.schema, self._run(st, context))

    def _run(self, st: _Statement, context: flight.ServerCallContext
             ) -> Iterator[pa.RecordBatch]:
        """The statement's answer, batch by batch, under its user's quotas; audited."""
        principal_state = self.store.head()
        lim = limits(st.user, principal_state, self.config.limits)
        control = Control(st.handle, timeout_s=lim.timeout_s, clock=self.config.clock,
                          cancelled=context.is_cancelled)
        rows = nbytes = 0
        outcome, detail = "ok", None
        entered = heavy = False
        try:
            self.admission.enter(st.user, lim)
            entered = True
            with self._lock:
                self._running[st.handle] = control
            if st.plan is not None:
                yield pa.record_batch([pa.array(st.plan.splitlines(), pa.string())],
                                      schema=st.schema)
                rows = len(st.plan.splitlines())
                return
            assert st.query is not None
            if _heavy(st.query):
                self.admission.heavy(control)
                heavy = True
            for part in _parts(st.query, control):
                for batch in batches(to_wire(part, st.schema),
                                     batch_bytes=self.config.batch_bytes):
                    rows += batch.num_rows
                    nbytes += batch.nbytes
                    if lim.max_rows is not None and rows > lim.max_rows:
                        control.outcome = "quota"
                        raise QuotaExceededError(
                            f"the answer has more than {lim.max_rows:,} rows, the most user "
                            f"{st.user!r} may fetch at once (quota max_rows): narrow the query")
                    if lim.max_bytes is not None and nbytes > lim.max_bytes:
                        control.outcome = "quota"
                        raise QuotaExceededError(
                            f"the answer has more than {lim.max_bytes:,} bytes, the most user "
                            f"{st.user!r} may fetch at once (quota max_bytes)")
                    yield payloads(batch)
                    control.check()
        except GeneratorExit:   # the client stopped reading (a cancelled call)
            outcome, detail = "cancelled", "the client went away"
            raise
        except Exception as exc:  # noqa: BLE001 - the boundary: audited, then mapped
            outcome, detail = _outcome(exc, [], control), _message(exc)
            raise _flight_error(exc) from None
        finally:
            if heavy:
                self.admission.heavy_done()
            if entered:
                self.admission.leave(st.user)
            with self._lock:
                self._running.pop(st.handle, None)
            self.audit.record(kind="query", user=st.user, text=st.text, params=st.params,
                              rows=rows, nbytes=nbytes, outcome=outcome, detail=detail,
                              seconds=self.config.clock() - st.created, peer=st.peer)

    # -- metadata ------------------------------------------------------------------------------
    def _metadata(self, principal: Principal, name: str, cmd: Any) -> pa.Table:
        """A metadata call's answer for ``principal`` (audited: what was asked, how many
        rows it got)."""
        table = self._metadata_table(principal, name, cmd)
        pattern = _opt(cmd, "table_name_filter_pattern") if name == "CommandGetTables" else None
        self.audit.record(kind="metadata", user=principal.user, outcome="ok",
                          text=f"{name[len('Command'):]} {pattern or ''}".strip(),
                          rows=table.num_rows)
        return table

    def _metadata_table(self, principal: Principal, name: str, cmd: Any) -> pa.Table:
        sdb = self.database(principal)
        if name == "CommandGetCatalogs":
            return metadata.catalogs()
        if name == "CommandGetDbSchemas":
            return metadata.db_schemas(_opt(cmd, "catalog"), _opt(cmd, "db_schema_filter_pattern"))
        if name == "CommandGetTableTypes":
            return metadata.table_types()
        if name == "CommandGetSqlInfo":
            return metadata.sql_info(list(cmd.info))
        if name == "CommandGetTables":
            def schema_of(table: str) -> pa.Schema:
                return wire_schema(sdb.sql(f'SELECT * FROM "{table}"').schema)

            return metadata.tables(sdb.tables(), schema_of, catalog=_opt(cmd, "catalog"),
                                   schema_pattern=_opt(cmd, "db_schema_filter_pattern"),
                                   table_pattern=_opt(cmd, "table_name_filter_pattern"),
                                   types=list(cmd.table_types),
                                   include_schema=cmd.include_schema)
        return metadata.empty_keys(foreign=name != "CommandGetPrimaryKeys")

    # -- DoPut: parameters, bulk ingest ----------------------------------------------------------
    def do_put(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor,
               reader: flight.MetadataRecordBatchReader,
               writer: flight.FlightMetadataWriter) -> None:
        principal = self._principal(context)
        name, cmd = self._command(descriptor)
        if name == "CommandPreparedStatementQuery":
            p = self._prepared_of(principal, cmd.prepared_statement_handle)
            params = reader.read_all()
            if params.num_rows > 1:
                raise pa.ArrowInvalid("one set of parameters per execution (got "
                                      f"{params.num_rows})")
            p.params = [params.column(i)[0].as_py() for i in range(params.num_columns)] \
                if params.num_rows else None
            writer.write(pa.py_buffer(MESSAGES["DoPutPreparedStatementResult"](
                prepared_statement_handle=p.handle.encode()).SerializeToString()))
            return
        if name == "CommandStatementIngest":
            rows = self._ingest(principal, cmd, reader, context.peer())
            writer.write(pa.py_buffer(MESSAGES["DoPutUpdateResult"](
                record_count=rows).SerializeToString()))
            return
        self.audit.record(kind="commit", user=principal.user, outcome="error",
                          text=getattr(cmd, "query", None), detail=f"{name} refused",
                          peer=context.peer())
        raise pa.ArrowNotImplementedError(
            "hfq's SQL reads (SELECT); data is appended with bulk ingest "
            "(adbc_ingest, mode='append')")

    def _ingest(self, principal: Principal, cmd: Any, reader: flight.MetadataRecordBatchReader,
                peer: str) -> int:
        table = cmd.table
        started = self.config.clock()
        opts = cmd.table_definition_options
        denied: list[str] = []
        token = DENIED.set(denied)
        rows = 0
        try:
            if cmd.temporary or cmd.HasField("transaction_id"):
                raise QueryError("bulk ingest into temporary tables or transactions: hfq has "
                                 "neither")
            if opts.if_not_exist not in (0, protocol.TABLE_NOT_EXIST_FAIL) or \
                    opts.if_exists not in (0, protocol.TABLE_EXISTS_APPEND):
                raise QueryError("bulk ingest appends to an existing table (mode='append'); "
                                 "tables are created by an admin (hfq create)")
            if table in SYSTEM_TABLES:
                raise AccessDeniedError(f"{table} is written by the service alone")
            sdb = self.database(principal)
            try:
                manifest = sdb.session.snapshot(table)
            except TableNotFoundError:
                raise QueryError(f"unknown table {table!r}; tables: "
                                 f"{', '.join(sdb.tables()) or '(none)'}") from None
            policy = sdb.access.policy(table, manifest, "INSERT")
            schema = manifest.schema

            def checked() -> Iterator[pa.RecordBatch]:
                nonlocal rows
                for chunk in reader:
                    batch = chunk.data
                    masked = sorted(set(batch.schema.names) & policy.hidden)
                    if masked:
                        raise AccessDeniedError(f"user {principal.user!r} may not write "
                                                f"column(s) {', '.join(masked)} of {table!r}")
                    part = pa.Table.from_batches([batch])
                    for column in sorted(policy.hidden):   # what the writer cannot see: NULL
                        part = part.append_column(schema.arrow.field(column), pa.nulls(
                            part.num_rows, schema.arrow.field(column).type))
                    part = schema.conform(part, where=f"bulk ingest into {table!r}")
                    if policy.rows is not None and part.num_rows:
                        frame = pl.from_arrow(part)
                        assert isinstance(frame, pl.DataFrame)
                        if not frame.select(policy.rows.fill_null(False).all()).item():
                            raise AccessDeniedError(
                                f"user {principal.user!r} may insert into {table!r} only rows "
                                "its row policy lets it see; this batch has others")
                    rows += part.num_rows
                    yield from part.to_batches()

            version = sdb[table].append(pa.RecordBatchReader.from_batches(
                schema.arrow, checked()))
        except Exception as exc:  # noqa: BLE001 - the boundary: audited, then mapped
            self.audit.record(kind="commit", user=principal.user, text=table, rows=rows,
                              outcome=_outcome(exc, denied), detail="; ".join(denied) or
                              _message(exc), seconds=self.config.clock() - started, peer=peer)
            raise _flight_error(exc) from None
        finally:
            DENIED.reset(token)
        self.audit.record(kind="commit", user=principal.user, text=table, rows=rows,
                          outcome="ok", detail=f"version {version}", peer=peer,
                          seconds=self.config.clock() - started)
        return rows

    # -- actions --------------------------------------------------------------------------------
    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:
        return [("CreatePreparedStatement", "prepare a query"),
                ("ClosePreparedStatement", "forget a prepared query"),
                ("CancelFlightInfo", "cancel a running query"),
                ("CancelQuery", "cancel a running query (Flight SQL before 13)")]

    def do_action(self, context: flight.ServerCallContext,
                  action: flight.Action) -> Iterator[bytes]:
        principal = self._principal(context)
        kind = action.type
        body = action.body.to_pybytes() if action.body is not None else b""
        try:
            if kind == "CreatePreparedStatement":
                _, req = unpack(body)
                handle = secrets.token_hex(16)
                with self._lock:
                    self._prepared[handle] = _Prepared(handle, principal.user, req.query)
                result = MESSAGES["ActionCreatePreparedStatementResult"](
                    prepared_statement_handle=handle.encode())
                return iter([pack(result)])
            if kind == "ClosePreparedStatement":
                _, req = unpack(body)
                self._prepared_of(principal, req.prepared_statement_handle)
                with self._lock:
                    self._prepared.pop(req.prepared_statement_handle.decode(), None)
                return iter([])
            if kind == "CancelFlightInfo":
                req = protocol.decode("CancelFlightInfoRequest", body)
                status = self._cancel(principal, req.info)
                return iter([MESSAGES["CancelFlightInfoResult"](status=status)
                             .SerializeToString()])
            if kind == "CancelQuery":
                _, req = unpack(body)
                status = self._cancel(principal, req.info)
                return iter([pack(MESSAGES["ActionCancelQueryResult"](result=status))])
        except QueryError as exc:
            raise pa.ArrowInvalid(str(exc)) from None
        raise pa.ArrowNotImplementedError(f"action {kind!r}: hfq has no transactions or "
                                          "other actions")

    def _prepared_of(self, principal: Principal, handle: bytes) -> _Prepared:
        with self._lock:
            p = self._prepared.get(handle.decode(errors="replace"))
        if p is None or p.user != principal.user:
            raise pa.ArrowInvalid("unknown prepared statement")
        return p

    def _cancel(self, principal: Principal, info: bytes) -> int:
        """Cancel the query of a FlightInfo this server gave (the caller's own)."""
        try:
            endpoints = flight.FlightInfo.deserialize(info).endpoints
            _, cmd = unpack(endpoints[0].ticket.ticket)
            handle = cmd.statement_handle.decode(errors="replace")
        except (pa.ArrowException, QueryError, IndexError, AttributeError):
            return protocol.CANCEL_NOT_CANCELLABLE
        with self._lock:
            control = self._running.get(handle)
            st = self._statements.get(handle)
            if st is not None and st.user == principal.user:
                del self._statements[handle]   # never started: it never will
                return protocol.CANCEL_CANCELLED
        if control is None:
            return protocol.CANCEL_NOT_CANCELLABLE
        control.cancel()
        self.audit.record(kind="action", user=principal.user, outcome="ok",
                          detail=f"cancel {handle[:8]}")
        return protocol.CANCEL_CANCELLED


_UNKNOWN_COLUMN = re.compile(r"unknown column '([^']+)'|has no column '([^']+)'")


def _masked(principal: Principal, exc: BaseException) -> str | None:
    """``masked column X`` when ``exc`` is an unknown column that one of the user's grants
    masks (for the audit: an attempt at a masked column is a denial, though the user is
    told only that there is no such column)."""
    m = _UNKNOWN_COLUMN.search(str(exc)) if isinstance(exc, QueryError) else None
    if m is None:
        return None
    column = (m.group(1) or m.group(2)).rsplit(".", 1)[-1]
    state = principal.state
    for g in state.grants.values():
        if g.grantee in state.grantees(principal.user) and column in g.hidden:
            return f"masked column {column} of {g.table}"
    return None


def _opt(message: Any, name: str) -> Any:
    return getattr(message, name) if message.HasField(name) else None


def _heavy(query: Query) -> bool:
    """Does the query read more than a point read does (it then takes a heavy slot)?"""
    if isinstance(query.source, FrameSource):
        return False
    return query.plan.rows > INLINE_ROWS


def _parts(query: Query, control: Control) -> Iterator[pa.Table]:
    """The query's answer piece by piece (a plain read: by partition), each piece computed
    with ``control`` as the session's checkpoint (it stops the node work of a cancelled or
    timed-out query); ``control`` checked between pieces."""
    it = query.iter_arrow()
    while True:
        control.check()
        token = CHECKPOINT.set(control.check)
        try:
            part = next(it, None)
        finally:
            CHECKPOINT.reset(token)
        if part is None:
            return
        yield part

