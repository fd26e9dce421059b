"""One database's working context: its catalog, its nodes and its settings -- and the one answer
to "where does this work run".

Everything below the facade that needs more than one of those takes a :class:`Session`: the
write operator (:class:`hfq.write.Write`), the query engine's table source, quality reports,
the analytics, CSV loads.  :class:`hfq.Database` is a thin facade that owns one; nothing below
the facade imports or calls ``Database``.

Where work runs (:meth:`Session.run_units`, the one place that decides): each unit of work runs
on a node that holds its files.  Reads, queries and quality reports (``start=False``) run the
units this process's node holds in this process's threads -- on the memory-mapped files, no
copy -- and the others on their nodes' servers; an embedded database whose runtime is not
running runs everything here, without Ray.  Work that asks for the node servers
(``start=True``: ``map_reduce`` and the analytics built on it -- user functions, numba kernels,
the servers' caches) starts the embedded runtime when it is not running and runs every unit on
a server.

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> s = db.session
>>> s.embedded, s.running
(True, False)
>>> s.nodes_for(start=False).alive() == [s.nodes.local]      # here, no Ray
True
"""

from __future__ import annotations

import contextvars
import dataclasses
import getpass
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl

from hfq import config
from hfq.catalog import Catalog, remove_table_files
from hfq.catalog.records import Manifest
from hfq.catalog.replica import write_catalog_files
from hfq.config import Settings, check_compression
from hfq.errors import (
    AccessDeniedError,
    ArgumentError,
    HfqError,
    SchemaMismatchError,
    TableNotFoundError,
)
from hfq.partition import Compo, Scheme, check_scheme
from hfq.query.plan import Filters, Plan, filter_columns, make_plan, normalize_dates
from hfq.query.read import MapTask, PartitionFunction, ReadSpec
from hfq.reduce import as_reducer
from hfq.runtime.node import node_identity
from hfq.runtime.nodes import Nodes
from hfq.runtime.task import StoreCall
from hfq.schema import Schema
from hfq.storage.store import Store

if TYPE_CHECKING:
    from hfq.runtime.cluster import Runtime

__all__ = ["CHECKPOINT", "OPEN", "Access", "ReadPlan", "Session", "TableLike", "TablePolicy",
           "map_reduce", "read_filters"]

log = logging.getLogger(__name__)


class TableLike(Protocol):
    """What the layers below the facade need of a table handle (an :class:`hfq.Table`)."""

    @property
    def name(self) -> str: ...

    @property
    def session(self) -> Session: ...

    def snapshot(self, version: int | None = None) -> Manifest: ...


@dataclasses.dataclass(frozen=True)
class TablePolicy:
    """What one reader may see of one table: the rows for which ``rows`` (a polars predicate
    over the stored columns) holds -- None: every row -- and the columns not in ``hidden``.

    A session with an :class:`Access` applies it where the table is read
    (:meth:`Session.plan_read`, which every read of partition files goes through): the
    predicate runs on each partition before any other filter or expression of the query, so
    nothing the query computes -- a join, a subquery, an aggregate, a count, an error message
    -- ever sees a row outside it or a hidden column."""

    rows: pl.Expr | None = None
    hidden: frozenset[str] = frozenset()

    @property
    def restricted(self) -> bool:
        return self.rows is not None or bool(self.hidden)


OPEN = TablePolicy()
"""The policy of a session without an :class:`Access`: every row and column."""


class Access(Protocol):
    """Who reads through a session, as the layers below the service need it: which tables
    exist for them and what they may see of each (``hfq.service`` implements it from the
    users' grants)."""

    def visible(self, name: str) -> bool:
        """May the reader know table ``name`` exists (it has some grant on it)?"""
        ...

    def table(self, name: str, manifest: Manifest) -> TablePolicy:
        """The reader's policy on table ``name`` (read at ``manifest``), or an
        :class:`~hfq.errors.AccessDeniedError` when the reader may not read it."""
        ...


CHECKPOINT: contextvars.ContextVar[Callable[[], None] | None] = \
    contextvars.ContextVar("hfq_checkpoint", default=None)
"""A callable that each unit of work's result passes on its way back (``Session.run_units``):
raising there stops the job -- units not started never start -- which is how a request
that is cancelled or out of time frees the node work it started (``hfq.service`` sets it
around a request)."""


@dataclasses.dataclass(frozen=True)
class ReadPlan:
    """A read planned against one version: what each partition's reader needs (``spec``,
    small and picklable) and the partitions to read (``plan``)."""

    manifest: Manifest
    spec: ReadSpec
    plan: Plan


def read_filters(manifest: Manifest, *, dates: Any = None,
                 symbols: Iterable[str] | str | None = None) -> Filters:
    """The ``dates=`` / ``symbols=`` of a read over ``manifest`` as :class:`Filters`, or an
    :class:`~hfq.errors.ArgumentError` naming the argument.

    Examples
    --------
    >>> f = read_filters(quotes.snapshot(), dates=("2007-08-01", "2007-08-02"), symbols="IBM")
    >>> f.date_column, f.date_lo, f.date_hi, f.symbol_column, f.symbols
    ('date', '2007-08-01', '2007-08-02', 'symbol', ('IBM',))
    >>> read_filters(quotes.snapshot(), dates="tomorrow")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    hfq.errors.ArgumentError: dates=: 'tomorrow' is not a date (use YYYY-MM-DD or YYYYMMDD)
    """
    date_col, symbol_col = filter_columns(manifest)
    try:
        lo, hi = normalize_dates(dates)
    except ValueError as exc:
        raise ArgumentError(f"dates=: {exc}", argument="dates") from None
    if (lo or hi) and date_col is None:
        raise ArgumentError(f"dates=: table {manifest.table!r} has no DATE column to filter on",
                            argument="dates")
    if isinstance(symbols, str):
        symbols = [symbols]
    syms = None
    if symbols is not None:
        try:
            syms = tuple(dict.fromkeys(symbols))
        except TypeError:
            raise ArgumentError(f"symbols=: a symbol or a list of symbols, not {symbols!r}",
                                argument="symbols") from None
        if not all(isinstance(s, str) for s in syms):
            raise ArgumentError(f"symbols=: symbols are strings, not "
                                f"{next(s for s in syms if not isinstance(s, str))!r}",
                                argument="symbols")
        if symbol_col is None:
            raise ArgumentError(f"symbols=: table {manifest.table!r} has no SYMBOL column to "
                                "filter on", argument="symbols")
    return Filters(date_col, lo, hi, symbol_col, syms)


def check_columns(manifest: Manifest, columns: Sequence[str] | None, what: str = "columns",
                  *, hidden: frozenset[str] = frozenset()) -> list[str]:
    """``columns`` (default: all but ``hidden``), each a column of ``manifest``'s table the
    reader may see, or an :class:`~hfq.errors.ArgumentError` listing those."""
    names = [n for n in manifest.schema.names if n not in hidden]
    if columns is None:
        return names
    if isinstance(columns, str):
        columns = [columns]
    out = list(columns)
    for name in out:
        if name not in names:
            raise ArgumentError(f"{what}=: table {manifest.table!r} has no column {name!r}; "
                                f"the columns are {', '.join(names)}", argument=what)
    return out


def check_where(manifest: Manifest, where: Any, *, hidden: frozenset[str] = frozenset()
                ) -> list[str]:
    """The columns a ``where=`` polars expression reads, each a column of the table the
    reader may see."""
    if where is None:
        return []
    if not isinstance(where, pl.Expr):
        raise ArgumentError(f"where=: a polars expression such as pl.col('bid') > 0, not "
                            f"{type(where).__name__}", argument="where")
    names = list(dict.fromkeys(where.meta.root_names()))
    seen = [n for n in manifest.schema.names if n not in hidden]
    for name in names:
        if name not in seen:
            raise ArgumentError(f"where= uses column {name!r}, which table "
                                f"{manifest.table!r} does not have; the columns are "
                                f"{', '.join(seen)}", argument="where")
    return names


def _default_user() -> str:
    for var in ("HFQ_USER", "USER", "LOGNAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


class Session:
    """The catalog, nodes and settings of one database, and where its work runs.

    ``runtime``: the Ray runtime attached to (None: embedded, started by :meth:`runtime`
    when work needs the node servers); ``local``: this process's node name and root when
    attached; ``default_node``: the node of files recorded before nodes were (the head);
    ``user``: who commits (default: ``HFQ_USER``, else the login name).

    ``access`` (None: trusted, everything): the reader's grants -- which tables exist for
    it and the :class:`TablePolicy` of each, applied where tables are read.  A session for
    one service user is :meth:`derive` d from the service's.
    """

    access: Access | None = None
    _parent: Session | None = None

    def __init__(self, store: Store, *, settings: Settings | None = None,
                 runtime: Runtime | None = None, local: tuple[str, Store | None] | None = None,
                 default_node: str | None = None, user: str | None = None) -> None:
        self.settings = settings or config.get()
        self.store = store
        self.store.makedirs("")
        self.catalog = Catalog(self.store)
        self.user = user or _default_user()
        self._runtime = runtime
        self._embedded = runtime is None
        if runtime is None:   # embedded: the root is this process's node
            self.nodes = Nodes(node_identity(self.store), self.store, None)
        else:
            name, local_store = local if local else (None, None)
            self.nodes = Nodes(name, local_store, runtime, default=default_node)
        self.catalog.on_files(self._replicate_catalog)

    def __repr__(self) -> str:
        return (f"<hfq.Session {self.store.url!r} ({'embedded' if self.embedded else 'cluster'}"
                f", {'running' if self.running else 'not running'})>")

    def derive(self, *, user: str, access: Access | None) -> Session:
        """This session for another reader: the same catalog, nodes, settings and runtime,
        commits made by ``user``, reads through ``access`` (see :class:`Access`)."""
        root = self._parent or self
        out = object.__new__(Session)
        out.__dict__.update(root.__dict__)
        out.user, out.access, out._parent = user, access, root
        return out

    def table_policy(self, name: str, manifest: Manifest) -> TablePolicy:
        """What this session's reader may see of table ``name``: :data:`OPEN` without an
        access, else its policy (an :class:`~hfq.errors.AccessDeniedError` when none)."""
        if self.access is None:
            return OPEN
        policy = self.access.table(name, manifest)
        if not isinstance(policy, TablePolicy):
            raise AccessDeniedError(f"no policy for table {name!r}")
        return policy

    # -- where work runs ------------------------------------------------------------------------
    @property
    def embedded(self) -> bool:
        """True for ``hfq.connect(root)`` (a one-node cluster this process owns)."""
        return self._embedded

    @property
    def running(self) -> bool:
        """True when a Ray runtime is running (attached, or embedded and started)."""
        return self._runtime is not None

    def runtime(self) -> Runtime:
        """The Ray runtime; for an embedded database started now if it is not running."""
        if self._parent is not None:   # one runtime for every reader's session
            return self._parent.runtime()
        if self._runtime is None:
            if not self.store.local:
                raise HfqError(f"compute on the nodes needs a local root; {self.store.url} is "
                               "not one")
            from hfq.runtime import connect  # lazily: it imports Ray
            runtime = connect.embedded(self.store.root, cpus=self.settings.threads,
                                       cache_bytes=self.settings.cache_bytes)
            if runtime.alive() != [self.nodes.local]:
                raise HfqError(f"the embedded node server did not find node "
                               f"{self.nodes.local} at {self.store.root}")
            self._runtime = runtime
            self.nodes.runtime = runtime
        return self._runtime

    def nodes_for(self, *, start: bool) -> Nodes:
        """The nodes work runs on -- the one answer to "here, or on the node servers?".

        With a runtime running: its node servers.  Embedded without one: this process, as
        the one node -- unless ``start``, for work that needs the node servers
        (``map_reduce``, maintenance), which starts the runtime if it is not running and
        refreshes the list of live nodes."""
        if start:
            self.runtime().refresh()
        return self.nodes

    def run_units(self, task: Callable[..., Any], units: Sequence[Any],
                  on_result: Callable[[int, Any], None], *, start: bool = False,
                  progress: bool | None = None, label: str = "", small_results: bool = False,
                  local_task: Callable[..., Any] | None = None,
                  finish: Callable[[Any, Any, str], Any] | None = None) -> None:
        """``task(node, unit)`` on every unit where :meth:`nodes_for` says; ``on_result(i,
        value)`` as results arrive (see :meth:`hfq.runtime.Nodes.run_units`).  Without
        ``start``, units this process's node holds run in its threads; with it, every unit
        runs on a node server (its cache, its CPUs, its numba cache)."""
        nodes = self.nodes_for(start=start)
        check = CHECKPOINT.get()
        if check is not None:   # a request that can be stopped: at every result, and first
            check()
            arrive = on_result

            def on_result(i: int, value: Any) -> None:
                check()
                arrive(i, value)

        nodes.run_units(task, units, on_result, here=not start, threads=self.settings.threads,
                        progress=self.settings.show_progress(progress), label=label,
                        small_results=small_results, local_task=local_task, finish=finish)

    def close(self) -> None:
        """Stop the embedded runtime if this session started it (it starts again on need)."""
        if self._runtime is not None and self._runtime.owned:
            self._runtime.shutdown()
            self._runtime = None
            self.nodes.runtime = None

    # -- tables ---------------------------------------------------------------------------------
    def tables(self) -> list[str]:
        """The tables this session's reader may know of (every one without an access)."""
        names = self.catalog.tables()
        return names if self.access is None else [n for n in names if self.access.visible(n)]

    def exists(self, name: str) -> bool:
        try:
            self.snapshot(name)
        except TableNotFoundError:
            return False
        return True

    def snapshot(self, name: str, version: int | None = None) -> Manifest:
        """The manifest of table ``name`` at ``version`` (default: the newest); a table the
        reader may not know of is not found, with the message of a table that does not
        exist."""
        if self.access is not None and not self.access.visible(name):
            raise TableNotFoundError(f"no table {name!r} (tables: "
                                     f"{', '.join(self.tables()) or 'none'})")
        return self.catalog.snapshot(name, version)

    def create_table(self, name: str, schema: Schema, *, partition_by: Scheme | Compo,
                     sort_by: Sequence[str] = (), date_column: str | None = None,
                     symbol_column: str | None = None, replicas: int | None = None,
                     compact_after: int | None = None, compression: str | None = None
                     ) -> Manifest:
        """Create an empty table (see :meth:`hfq.Database.create_table`); its version 0."""
        if not isinstance(schema, Schema):
            raise TypeError(f"schema must be an hfq Schema (e.g. hfq.schemas.TAQ), "
                            f"not {type(schema).__name__}")
        check_scheme(partition_by, schema.names)
        sort_by = tuple(sort_by)
        for column in (*sort_by, date_column, symbol_column):
            if column is not None and column not in schema:
                raise SchemaMismatchError(f"column {column!r} is not in the schema; columns: "
                                          f"{', '.join(schema.names)}")
        if replicas is not None and (not isinstance(replicas, int) or replicas < 1):
            raise ValueError(f"replicas must be a positive int, not {replicas!r}")
        if compact_after is not None and (not isinstance(compact_after, int) or
                                          compact_after < 2):
            raise ValueError(f"compact_after must be an int >= 2, not {compact_after!r}")
        if compression is not None:
            check_compression(compression, f"table {name!r}: compression")
        options = {k: v for k, v in (("date_column", date_column),
                                     ("symbol_column", symbol_column),
                                     ("replicas", replicas),
                                     ("compact_after", compact_after),
                                     ("compression", compression)) if v}
        return self.catalog.create(name, schema, partition_by, sort_by, options)

    def drop_table(self, name: str) -> None:
        """Remove a table and its files on every live node."""
        self.catalog.drop(name)
        if self.exists(name):   # re-created meanwhile: the old files are vacuum's job
            return
        self.nodes.call_each(StoreCall(remove_table_files), name)

    # -- reads and map-reduce -------------------------------------------------------------------
    def plan_read(self, manifest: Manifest, *, columns: Sequence[str] | None = None,
                  where: pl.Expr | None = None, dates: Any = None,
                  symbols: Iterable[str] | str | None = None,
                  filters: Filters | None = None) -> ReadPlan:
        """Plan a read of ``manifest``: the columns, the rows passing ``where``/``dates``/
        ``symbols`` (or ready ``filters``); bad arguments are an
        :class:`~hfq.errors.ArgumentError` naming the argument.

        The reader's :class:`TablePolicy` applies here, to every read of the table's files:
        hidden columns are not there to read, and the row predicate is the read's filter (a
        ``where`` of the caller's beside it is refused: it would be evaluated on rows the
        reader may not see -- a query over the table applies it after the read)."""
        policy = self.table_policy(manifest.table, manifest)
        cols = check_columns(manifest, columns, hidden=policy.hidden)
        where_cols = check_where(manifest, where, hidden=policy.hidden)
        if policy.rows is not None:
            if where is not None:
                raise AccessDeniedError(f"a read of table {manifest.table!r} with where= "
                                        "under a row policy: filter in a query instead")
            where = policy.rows
            where_cols = list(dict.fromkeys(where.meta.root_names()))
        if filters is None:
            filters = read_filters(manifest, dates=dates, symbols=symbols)
        plan = make_plan(manifest, cols, filters, where)
        spec = ReadSpec(manifest.schema, manifest.sort_by, cols, where, where_cols, filters)
        return ReadPlan(manifest, spec, plan)

    def map_reduce(self, manifest: Manifest,
                   map_fn: Callable[[pl.DataFrame], Any] | PartitionFunction | None,
                   reduce: Any, *, columns: Sequence[str] | None = None,
                   where: pl.Expr | None = None, dates: Any = None,
                   symbols: Iterable[str] | str | None = None,
                   progress: bool | None = None) -> Any:
        """``map_fn`` on every matching partition of ``manifest``, on the node servers; the
        results merged in partition order (see :meth:`hfq.Table.map_reduce`)."""
        reducer = as_reducer(reduce)
        if map_fn is None:
            map_fn = reducer.accumulate
            if columns is None:
                columns = reducer.columns() or None
        read = self.plan_read(manifest, columns=columns, where=where, dates=dates,
                              symbols=symbols)
        units = read.plan.units
        state = reducer.identity()
        if not units:
            return reducer.finalize(state)
        results: dict[int, Any] = {}
        nxt = 0

        def arrive(i: int, value: Any) -> None:
            nonlocal state, nxt
            results[i] = value
            while nxt in results:   # merge in partition order: deterministic answers
                state = reducer.merge(state, results.pop(nxt))
                nxt += 1

        self.run_units(MapTask(read.spec, map_fn), units, arrive, start=True,
                       small_results=True, progress=progress, label=f"map {manifest.table}")
        return reducer.finalize(state)

    # -- the catalog's copies ---------------------------------------------------------------------
    def replicate_files(self, written: dict[str, bytes], removed: list[str]) -> None:
        """Copy files written under the catalog root beside the catalog's own (the security
        state of ``hfq.service``) to every other live node, as the catalog's are."""
        self._replicate_catalog(written, removed)

    def _replicate_catalog(self, written: dict[str, bytes], removed: list[str]) -> None:
        """Copy what the catalog wrote (and remove what it removed) on every other live node:
        a lost head disk loses no committed version (``Database.check`` gathers them back)."""
        if self._runtime is None:
            return
        others = [n for n in self.nodes.alive() if n != self.catalog_node]
        if not others:
            return
        try:
            self.nodes.call_each(StoreCall(write_catalog_files), written, removed, names=others)
        except Exception as exc:  # noqa: BLE001 - the commit stands; check(repair=True) copies
            log.warning("catalog: copying %d files to the nodes failed (%s); "
                        "db.check(repair=True) copies them", len(written), exc)

    @property
    def catalog_node(self) -> str | None:
        """The node whose root holds the catalog (it needs no copy), if any."""
        if not self.store.local or not self.store.exists(".hfq-node"):
            return None
        return node_identity(self.store)


def map_reduce(table: TableLike, map_fn: Callable[[pl.DataFrame], Any] | PartitionFunction | None,
               reduce: Any, *, version: int | None = None, **options: Any) -> Any:
    """:meth:`Session.map_reduce` over ``table`` at ``version`` (default: the handle's):
    what :meth:`hfq.Table.map_reduce` and the analytics run."""
    return table.session.map_reduce(table.snapshot(version), map_fn, reduce, **options)
