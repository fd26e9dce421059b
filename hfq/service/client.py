"""hfq's own client of the service: ``hfq.connect("grpc+tls://host:port", user=...,
password=...)`` returns a :class:`RemoteDatabase` whose ``sql``, ``scan``, ``tables`` and
``append`` go through the service (Flight SQL over pyarrow's Flight client) as that user --
a thin facade: the service compiles, enforces and audits; nothing runs here but the
transfer.

Examples
--------
>>> import hfq, tempfile
>>> from hfq.service.identity import Admin
>>> from hfq.service.passwords import Passwords
>>> from hfq.service.state import SecurityStore
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
>>> _ = t.append(hfq.synth.taq_table(rows_per_day=500, symbols=5))
>>> pw = Passwords(time_cost=1, memory_kib=1024)
>>> admin = Admin(SecurityStore(db.session), by="root", passwords=pw)
>>> admin.add_user("ann", "a long password")
>>> admin.grant(["SELECT"], "quotes", "ann", hide=["mmid"])
>>> service = hfq.serve(db, passwords=pw)
>>> remote = hfq.connect(service.location, user="ann", password="a long password")
>>> remote.tables()
['quotes']
>>> n = remote.sql("SELECT count(*) AS n FROM quotes WHERE symbol = ?", params=["IBM"])
>>> n.to_arrow()["n"][0].as_py() == len(db["quotes"].scan(symbols="IBM").to_arrow())
True
>>> "mmid" in remote["quotes"].scan(dates="2007-08-01").to_polars().columns
False
>>> service.shutdown()
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa
import pyarrow.flight as flight

from hfq.errors import (
    AccessDeniedError,
    ArgumentError,
    AuthenticationError,
    HfqError,
    QueryError,
    QuotaExceededError,
)
from hfq.service.protocol import MESSAGES, TABLE_EXISTS_APPEND, TABLE_NOT_EXIST_FAIL, pack, unpack

if TYPE_CHECKING:
    import pandas

__all__ = ["RemoteDatabase", "RemoteResult", "RemoteTable", "connect"]


def _error(exc: BaseException) -> HfqError:
    """A Flight error as the hfq error it stands for (the server's message, its detail cut)."""
    text = str(exc).split(". Detail:")[0].split(". gRPC client debug context")[0]
    if isinstance(exc, flight.FlightUnauthenticatedError):
        return AuthenticationError(text)
    if isinstance(exc, flight.FlightUnauthorizedError):
        return AccessDeniedError(text)
    if isinstance(exc, (flight.FlightCancelledError, flight.FlightTimedOutError,
                        flight.FlightUnavailableError)):
        return QuotaExceededError(text)
    return QueryError(text)


class RemoteResult:
    """A statement's answer, fetched when asked for (``to_arrow``, ``to_polars``,
    ``to_pandas``, ``iter_batches``)."""

    def __init__(self, db: RemoteDatabase, sql: str, params: Sequence[Any] | None) -> None:
        self.db = db
        self.sql = sql
        self.params = list(params) if params is not None else None

    def __repr__(self) -> str:
        return f"<hfq.RemoteResult {self.sql[:60]!r}>"

    def iter_batches(self) -> Iterator[pa.RecordBatch]:
        """The answer's record batches, as they arrive."""
        yield from self.db._stream(self.sql, self.params)

    def to_arrow(self) -> pa.Table:
        batches = list(self.iter_batches())
        schema = self.db._last_schema
        return pa.Table.from_batches(batches, schema=schema)

    def to_polars(self) -> pl.DataFrame:
        frame = pl.from_arrow(self.to_arrow())
        assert isinstance(frame, pl.DataFrame)
        return frame

    collect = to_polars

    def to_pandas(self) -> pandas.DataFrame:
        return self.to_arrow().to_pandas()

    def explain(self) -> str:
        """The plan, as the service shows it to this user."""
        plan = self.db.sql(f"EXPLAIN {self.sql}", params=self.params).to_arrow()
        return "\n".join(plan.column(0).to_pylist())

    def count(self) -> int:
        n = self.db.sql(f"SELECT count(*) AS n FROM ({self.sql})", params=self.params)
        return int(n.to_arrow().column(0)[0].as_py())


class RemoteTable:
    """A table of the service, by name: ``scan``, ``append``, its ``schema``."""

    def __init__(self, db: RemoteDatabase, name: str) -> None:
        self.db = db
        self.name = name

    def __repr__(self) -> str:
        return f"<hfq.RemoteTable {self.name!r} at {self.db.location}>"

    @property
    def schema(self) -> pa.Schema:
        """The columns this user may see."""
        return self.db._schema(f"SELECT * FROM {_ident(self.name)}")

    def scan(self, *, columns: Sequence[str] | None = None, where: str | None = None,
             dates: Any = None, symbols: Iterable[str] | str | None = None) -> RemoteResult:
        """The rows passing ``dates=`` (a day or a ``(first, last)`` pair, on column
        ``date``), ``symbols=`` (on column ``symbol``) and ``where`` (an SQL condition),
        ``columns`` of them -- one ``SELECT`` with bound parameters."""
        cols = "*" if columns is None else ", ".join(_ident(c) for c in columns)
        conds, params = [], []
        if dates is not None:
            lo, hi = (dates, dates) if isinstance(dates, (str, dt.date)) else dates
            for op, value in ((">=", lo), ("<=", hi)):
                if value is not None:
                    conds.append(f"date {op} ?")
                    params.append(dt.date.fromisoformat(value) if isinstance(value, str)
                                  else value)
        if symbols is not None:
            symbols = [symbols] if isinstance(symbols, str) else list(symbols)
            if not symbols:
                raise ArgumentError("symbols=: an empty list", argument="symbols")
            conds.append(f"symbol IN ({', '.join('?' * len(symbols))})")
            params += symbols
        if where is not None:
            conds.append(f"({where})")
        sql = f"SELECT {cols} FROM {_ident(self.name)}" + \
            (f" WHERE {' AND '.join(conds)}" if conds else "")
        return RemoteResult(self.db, sql, params or None)

    def to_arrow(self, **scan: Any) -> pa.Table:
        return self.scan(**scan).to_arrow()

    def to_polars(self, **scan: Any) -> pl.DataFrame:
        return self.scan(**scan).to_polars()

    def to_pandas(self, **scan: Any) -> pandas.DataFrame:
        return self.scan(**scan).to_pandas()

    def append(self, data: Any) -> int:
        """Append rows (pyarrow, polars or pandas) through the service's bulk ingest (the
        user needs INSERT); returns the rows appended."""
        return self.db.append(self.name, data)


def _ident(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


class RemoteDatabase:
    """A database reached through an hfq service, as one user (what :func:`connect`
    returns)."""

    def __init__(self, location: str, *, user: str, password: str,
                 tls_root_certs: bytes | str | None = None) -> None:
        self.location = location
        self.user = user
        kwargs: dict[str, Any] = {}
        if tls_root_certs is not None:
            kwargs["tls_root_certs"] = tls_root_certs.encode() if isinstance(
                tls_root_certs, str) else tls_root_certs
        self._client = flight.FlightClient(location, **kwargs)
        try:
            header = self._client.authenticate_basic_token(user, password)
        except flight.FlightError as exc:
            raise _error(exc) from None
        self._options = flight.FlightCallOptions(headers=[header])
        self._last_schema: pa.Schema | None = None

    def __repr__(self) -> str:
        return f"<hfq.RemoteDatabase {self.location} as {self.user!r}>"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RemoteDatabase:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the facade ------------------------------------------------------------------------
    def sql(self, text: str, *, params: Sequence[Any] | None = None) -> RemoteResult:
        """A statement to run on the service (``?`` placeholders bound to ``params``)."""
        return RemoteResult(self, text, params)

    def tables(self) -> list[str]:
        """The tables this user may read."""
        cmd = MESSAGES["CommandGetTables"]()
        return sorted(self._metadata(cmd).column("table_name").to_pylist())

    def __getitem__(self, name: str) -> RemoteTable:
        return RemoteTable(self, name)

    def __contains__(self, name: str) -> bool:
        return name in self.tables()

    def append(self, table: str, data: Any) -> int:
        """Append ``data`` to ``table`` through bulk ingest; returns the rows appended."""
        arrow = _arrow(data)
        cmd = MESSAGES["CommandStatementIngest"](table=table)
        cmd.table_definition_options.if_not_exist = TABLE_NOT_EXIST_FAIL
        cmd.table_definition_options.if_exists = TABLE_EXISTS_APPEND
        descriptor = flight.FlightDescriptor.for_command(pack(cmd))
        try:
            writer, reader = self._client.do_put(descriptor, arrow.schema, options=self._options)
            writer.write_table(arrow)
            writer.done_writing()
            answer = reader.read()
            writer.close()
        except flight.FlightError as exc:
            raise _error(exc) from None
        except pa.ArrowException as exc:
            raise _error(exc) from None
        result = MESSAGES["DoPutUpdateResult"]()
        result.ParseFromString(answer.to_pybytes() if answer is not None else b"")
        return int(result.record_count)

    # -- the calls ---------------------------------------------------------------------------
    def _prepared(self, text: str, params: list[Any]) -> bytes:
        req = MESSAGES["ActionCreatePreparedStatementRequest"](query=text)
        [result] = list(self._client.do_action(flight.Action("CreatePreparedStatement",
                                                             pack(req)), options=self._options))
        _, created = unpack(result.body.to_pybytes())
        handle = created.prepared_statement_handle
        cmd = MESSAGES["CommandPreparedStatementQuery"](prepared_statement_handle=handle)
        values = pa.table({str(i): pa.array([v]) for i, v in enumerate(params)})
        writer, reader = self._client.do_put(flight.FlightDescriptor.for_command(pack(cmd)),
                                             values.schema, options=self._options)
        writer.write_table(values)
        writer.done_writing()
        reader.read()
        writer.close()
        return bytes(handle)

    def _info(self, text: str, params: list[Any] | None) -> flight.FlightInfo:
        if params:
            handle = self._prepared(text, params)
            cmd: Any = MESSAGES["CommandPreparedStatementQuery"](prepared_statement_handle=handle)
        else:
            cmd = MESSAGES["CommandStatementQuery"](query=text)
        return self._client.get_flight_info(flight.FlightDescriptor.for_command(pack(cmd)),
                                            options=self._options)

    def _stream(self, text: str, params: list[Any] | None) -> Iterator[pa.RecordBatch]:
        try:
            info = self._info(text, params)
            self._last_schema = info.schema
            for endpoint in info.endpoints:
                reader = self._client.do_get(endpoint.ticket, options=self._options)
                for chunk in reader:
                    yield chunk.data
        except flight.FlightError as exc:
            raise _error(exc) from None
        except pa.ArrowException as exc:
            raise _error(exc) from None

    def _schema(self, text: str) -> pa.Schema:
        cmd = MESSAGES["CommandStatementQuery"](query=text)
        try:
            return self._client.get_schema(flight.FlightDescriptor.for_command(pack(cmd)),
                                           options=self._options).schema
        except (flight.FlightError, pa.ArrowException) as exc:
            raise _error(exc) from None

    def _metadata(self, cmd: Any) -> pa.Table:
        try:
            info = self._client.get_flight_info(flight.FlightDescriptor.for_command(pack(cmd)),
                                                options=self._options)
            return self._client.do_get(info.endpoints[0].ticket,
                                       options=self._options).read_all()
        except (flight.FlightError, pa.ArrowException) as exc:
            raise _error(exc) from None


def _arrow(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pl.DataFrame):
        return data.to_arrow()
    try:
        import pandas
    except ImportError:   # pragma: no cover - pandas is a dependency
        pandas = None
    if pandas is not None and isinstance(data, pandas.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise ArgumentError(f"append takes a pyarrow, polars or pandas table, not "
                        f"{type(data).__name__}", argument="data")


def connect(location: str, *, user: str, password: str,
            tls_root_certs: bytes | str | None = None) -> RemoteDatabase:
    """A :class:`RemoteDatabase` at ``location`` (``grpc+tls://host:port``; ``grpc://`` for
    a service on loopback), logged in as ``user``.  ``tls_root_certs``: the PEM of the
    certificate authority that signed the service's certificate, when it is not one the
    system trusts."""
    if not location.startswith(("grpc://", "grpc+tls://", "grpc+tcp://")):
        raise ArgumentError(f"a service location is grpc+tls://host:port, not {location!r}",
                            argument="location")
    return RemoteDatabase(location, user=user, password=password,
                          tls_root_certs=tls_root_certs)
