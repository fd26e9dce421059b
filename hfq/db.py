"""The database handle that :func:`hfq.connect` returns."""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from hfq import config, maintenance
from hfq.catalog import timeline
from hfq.catalog.records import Manifest
from hfq.catalog.replica import catalog_files
from hfq.config import Settings
from hfq.errors import HfqError, QueryError, TableNotFoundError
from hfq.ingest.csv import LoadReport
from hfq.ingest.csv import load_csv as _load_csv
from hfq.live.cut import is_live
from hfq.live.snapshot import LiveView
from hfq.partition import Compo, Scheme
from hfq.runtime.node import NodeInfo, node_identity
from hfq.runtime.task import StoreCall
from hfq.schema import Schema
from hfq.session import Session
from hfq.storage.store import open_store
from hfq.table import Table

if TYPE_CHECKING:
    from hfq.engine.query import Query
    from hfq.runtime.cluster import Runtime

__all__ = ["Database", "connect"]

log = logging.getLogger(__name__)


class Database:
    """Tables under one catalog root, their files on the nodes of a Ray cluster.

    Table handles (``db["name"]``) are pinned to one version; a commit made through this
    database (any table's append, load, compaction, bars, rebalance) moves this database's
    handles on that table to it, while commits of other processes appear at
    :meth:`Table.refresh`.

    Embedded (``hfq.connect(root)``): the root is both the catalog and the one node's data
    directory, and the one-node Ray cluster this process owns starts on first use of compute
    (:meth:`Table.map_reduce`, :meth:`rebalance`).  Reads and writes of the local node's files
    never need Ray.  Attached (``hfq.connect(address=...)``): the catalog is on the head node
    (or ``catalog=``), partitions on every node's ``HFQ_NODE_ROOT``.

    Examples
    --------
    The examples of this reference run on ``quotes = hfq.demo.example_quotes()``, a small
    synthetic TAQ table (2 days, 50 symbols, 10,000 rows, 4 partitions), on ``db =
    quotes.db``, its database, and on ``tmp``, an empty directory.

    >>> db                                              # doctest: +ELLIPSIS
    <hfq.Database '.../db' (embedded, 1 node): 1 table>
    >>> db["quotes"]                                    # a handle on one table
    <hfq.Table 'quotes' version 1: 10,000 rows in 4 partitions>
    >>> "quotes" in db, "trades" in db
    (True, False)
    """

    def __init__(self, root: str, *, storage_options: dict | None = None,
                 settings: Settings | None = None, runtime: Runtime | None = None,
                 local: tuple[str, str] | None = None, default_node: str | None = None,
                 user: str | None = None) -> None:
        local_store = (local[0], open_store(local[1])) if local else None
        self.session = Session(open_store(str(root), storage_options or {}),
                               settings=settings, runtime=runtime, local=local_store,
                               default_node=default_node, user=user)
        """This database's catalog, nodes and settings (:class:`hfq.session.Session`): what
        the layers below the facade work with."""
        self._handles: weakref.WeakSet[Table] = weakref.WeakSet()
        self.session.catalog.on_commit(self._committed)
        self.recovered: list[dict[str, str]] = []
        """What ``hfq.connect(..., recover=True)`` found and did (see :meth:`check`)."""

    @classmethod
    def over(cls, session: Session) -> Database:
        """A handle over an existing session -- one :meth:`~hfq.session.Session.derive` d for
        another reader, whose grants then apply to everything done through it (what
        ``hfq.service`` does for each user).  Its table handles move on its own commits only.

        Examples
        --------
        >>> reader = hfq.Database.over(db.session.derive(user="ann", access=None))
        >>> reader.tables(), reader.session.user
        (['quotes'], 'ann')
        """
        db = cls.__new__(cls)
        db.session = session
        db._handles = weakref.WeakSet()
        db.recovered = []
        return db

    @property
    def settings(self) -> Settings:
        """The settings this database was opened with (:class:`hfq.config.Settings`).

        Examples
        --------
        >>> hfq.connect(tmp, compression="lz4").settings.compression
        'lz4'
        """
        return self.session.settings

    def __repr__(self) -> str:
        s = self.session
        where = "embedded" if s.embedded or (s.running and s.runtime().owned) else "cluster"
        nodes, tables = len(s.nodes.alive()), len(self.tables())
        return (f"<hfq.Database {s.store.url!r} ({where}, {_plural(nodes, 'node')}): "
                f"{_plural(tables, 'table')}>")

    # -- cluster ------------------------------------------------------------------------------
    def node_info(self) -> pl.DataFrame:
        """One row per live node: name, root, Ray node id, CPUs, partitions and bytes held.

        Examples
        --------
        >>> info = db.node_info()
        >>> info.columns
        ['node', 'root', 'ray_node_id', 'cpus', 'files', 'bytes']
        >>> info["files"].item(), info["bytes"].item() == quotes.partitions()["bytes"].sum()
        (4, True)
        """
        s = self.session
        infos = s.runtime().infos() if s.running else []
        held: dict[str, list[int]] = {}
        for name in self.tables():
            for fragment in s.snapshot(name).fragments():
                for node in s.nodes.holders(fragment):
                    entry = held.setdefault(node, [0, 0])
                    entry[0] += 1
                    entry[1] += fragment.bytes
        if not infos:   # embedded: local is the root's node (None only if attached, no live node)
            infos = [NodeInfo(cast(str, s.nodes.local), s.store.root)]
        return pl.DataFrame([{"node": i.name, "root": i.root, "ray_node_id": i.ray_node_id,
                              "cpus": i.cpus, "files": held.get(i.name, [0, 0])[0],
                              "bytes": held.get(i.name, [0, 0])[1]} for i in infos],
                            schema={"node": pl.String, "root": pl.String,
                                    "ray_node_id": pl.String, "cpus": pl.Int64,
                                    "files": pl.Int64, "bytes": pl.Int64})

    def rebalance(self, tables: Iterable[str] | None = None) -> maintenance.Counts:
        """Re-create missing replicas and move partitions to nodes that joined; returns files
        moved per table (a dict; its ``unreachable``: the nodes counted as down).

        Each partition ends with its ``replicas`` copies on live nodes: copies on dead nodes
        are re-created elsewhere (placement order), and a node that joined (one holding
        nothing of any table) takes the partitions placement gives it.  With no node change
        and every copy alive nothing moves -- partitions placed next to their source (minute
        bars) stay there.  Copies are made (and checked against the catalog's CRC-32) before
        one commit per table switches readers to them; the old copies stay until
        :meth:`Table.vacuum`, so no reader, old or new, ever finds a partition missing.
        A node that does not answer a ping within ``ping_timeout_s`` counts as down (one that
        crashed a moment ago is still on Ray's list of live nodes): see :mod:`hfq.maintenance`.

        Examples
        --------
        >>> db.rebalance()               # no node joined or left: nothing moves, no new version
        {'quotes': 0}
        >>> quotes.refresh().version
        1
        """
        return maintenance.rebalance(self.session, tables)

    def repair(self, tables: Iterable[str] | None = None) -> maintenance.Rows:
        """Check every copy of every file on the live nodes holding it (size and CRC-32)
        and replace each damaged or missing one by an intact copy from another holder.

        Returns one row per copy that was not intact (table, partition, file, node,
        problem, action: ``repaired from <node>`` or why not), plus a row per holder node
        that is not alive (its copies are re-created elsewhere by :meth:`rebalance`) -- a
        node that does not answer a ping counts as not alive; the list's ``unreachable``
        names those nodes.  An empty list: every live copy was intact.

        Examples
        --------
        >>> import hfq, os, tempfile, pyarrow as pa
        >>> db = hfq.connect(tempfile.mkdtemp())
        >>> t = db.create_table("t", hfq.schema.Schema({"x": hfq.schema.LONG}),
        ...                     partition_by=hfq.Hash("x", 1))
        >>> _ = t.append(pa.table({"x": [1, 2, 3]}))
        >>> db.repair()
        []
        >>> f = next(iter(t.snapshot().fragments()))
        >>> os.remove(os.path.join(db.session.store.root, f.file))   # one node: no other copy
        >>> [(r["problem"], r["action"][:12]) for r in db.repair()]
        [('damaged or missing', 'not repaired')]
        """
        return maintenance.repair(self.session, tables)

    # -- the catalog's defence (H3) --------------------------------------------------------
    def check(self, *, repair: bool = False) -> maintenance.Rows:
        """Read every catalog file back (each carries its checksum) and report every damaged,
        missing or inconsistent one: rows of table, version, file, problem, action.  An
        empty list: the catalog is intact.

        ``repair`` (what ``hfq.connect(..., recover=True)`` does): on a cluster, first
        gather the catalog files this root lacks from the nodes' copies (a new head after
        the old one's disk was lost) and restore damaged ones from them; then move what is
        still bad aside so each table opens at its newest intact version (its lost version
        numbers are never reused), and copy the catalog to nodes missing some of it.

        Examples
        --------
        >>> import hfq, os, tempfile, pyarrow as pa
        >>> root = tempfile.mkdtemp()
        >>> t = hfq.connect(root).create_table("t", hfq.schema.Schema({"x": hfq.schema.LONG}),
        ...                                    partition_by=hfq.Hash("x", 1))
        >>> _ = t.append(pa.table({"x": [1, 2]})), t.append(pa.table({"x": [3]}))
        >>> with open(os.path.join(root, "t/_versions/00000000000000000002.json"), "r+b") as f:
        ...     _ = f.truncate(100)                  # the head's record is damaged
        >>> db = hfq.connect(root)
        >>> [(r["version"], "is damaged" in r["problem"]) for r in db.check()]
        [('2', True)]
        >>> db = hfq.connect(root, recover=True)   # opens the newest intact version
        >>> len(db["t"]), db["t"].version
        (2, 1)
        >>> db["t"].append(pa.table({"x": [4]}))   # the lost number 2 is not reused
        3
        """
        return maintenance.check(self.session, repair=repair)

    def close(self) -> None:
        """Stop the embedded Ray cluster if this database started it.

        The database stays usable: reads and writes of the local node never need Ray, and
        the next compute starts it again.

        Examples
        --------
        >>> mydb = hfq.connect(tmp)
        >>> mydb.close()                 # Ray never started here: nothing to stop
        >>> mydb.tables()
        []
        """
        self.session.close()

    # -- tables -------------------------------------------------------------------------------
    def create_table(self, name: str, schema: Schema, *, partition_by: Scheme | Compo,
                     sort_by: Sequence[str] = (), date_column: str | None = None,
                     symbol_column: str | None = None, replicas: int | None = None,
                     compact_after: int | None = None, compression: str | None = None,
                     unique: Sequence[str] | str | None = None, keep: str | None = None,
                     known_at: str | None = None) -> Table:
        """Create an empty table.

        Parameters
        ----------
        name
            Letters, digits and ``_``.
        schema
            A :class:`hfq.schema.Schema`, e.g. ``hfq.schemas.TAQ``.
        partition_by
            ``hfq.Value``, ``hfq.Hash``, ``hfq.Range`` or ``hfq.Compo`` of two.
        sort_by
            Columns the rows of each partition are sorted by, e.g. ``("symbol", "time")``.
        date_column, symbol_column
            The columns ``scan(dates=..., symbols=...)`` filter on (default: the first DATE
            column and the first SYMBOL sort column).
        replicas
            Copies of each partition, on distinct nodes (default ``min(2, live nodes)``).
        compact_after
            The compaction policy of small appends (default: none, ``compact()`` by hand): a
            partition holding this many fragments of less than one record batch each gets
            them merged right after the append or load that made them
            (:func:`hfq.write.merge_small_fragments`); ``2`` keeps a table appended in thin
            slices as fast to read as one appended at once.
        compression
            The codec of this table's files -- ``"zstd"``, ``"lz4"`` or ``"none"`` -- kept
            with the table and used by every write to it (append, CSV load, compaction, minute
            bars; rebalancing copies files as they are); default: the database's
            ``compression`` setting at each write.
            lz4 writes and reads faster, zstd stores smaller (e.g. lz4 for derived tables).
        unique, keep
            A dedup key -- columns no two rows share, holding every partition column -- and
            what a write of a row whose key is stored already does: keep the stored row
            (``keep="first"``, the default), the new one (``"last"``) or refuse
            (``"error"``).  Every write that adds rows keeps it: append, CSV load, upsert,
            a live publish (:mod:`hfq.change.dedup`).
        known_at
            A TIMESTAMP or DATETIME column saying when each row became known: reads
            ``scan(known_at=...)`` and the joins' ``known_at=True`` use it
            (:mod:`hfq.change.knowledge`).

        Examples
        --------
        >>> mydb = hfq.connect(tmp)
        >>> by = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 8))   # date x 8 symbol buckets
        >>> mydb.create_table("quotes", hfq.schemas.TAQ, partition_by=by,
        ...                   sort_by=("symbol", "time"))
        <hfq.Table 'quotes' version 0: 0 rows in 0 partitions>
        >>> mydb.create_table("quotes", hfq.schemas.TAQ, partition_by=by)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        hfq.errors.TableExistsError: table 'quotes' already exists in ...; drop it first ...
        """
        manifest = self.session.create_table(
            name, schema, partition_by=partition_by, sort_by=sort_by, date_column=date_column,
            symbol_column=symbol_column, replicas=replicas, compact_after=compact_after,
            compression=compression, unique=unique, keep=keep, known_at=known_at)
        return self._handle(Table(self, name, manifest))

    def __getitem__(self, name: str) -> Table:
        return self._handle(Table(self, name))

    def _handle(self, table: Table) -> Table:
        self._handles.add(table)
        return table

    def _committed(self, manifest: Manifest) -> None:
        """A commit through this database: its handles on the table move to it."""
        for handle in list(self._handles):
            pinned = handle.snapshot()
            if handle.name == manifest.table and pinned.table_id == manifest.table_id and \
                    pinned.version < manifest.version:
                handle._refresh_to(manifest)

    def __contains__(self, name: str) -> bool:
        return self.session.exists(name)

    def tables(self) -> list[str]:
        """The names of the tables, sorted.

        Examples
        --------
        >>> db.tables()
        ['quotes']
        """
        return self.session.tables()

    # -- queries (hfq.engine) ---------------------------------------------------------------
    def sql(self, text: str, *, params: Sequence[Any] | None = None) -> Query:
        """A lazy query from one SQL ``SELECT`` (DuckDB's dialect and semantics, see
        ``docs/sql.md``) over this database's tables; ``collect()`` runs it, ``explain()``
        shows the plan.  ``params``: the values of the ``?`` or ``$1``, ``$2``... placeholders
        (bound as typed literals, never formatted into the text).  ``FROM t AT (VERSION =>
        n)`` reads a committed version, ``AT (TIMESTAMP => '...')`` or ``FOR SYSTEM_TIME AS
        OF '...'`` the version of an instant (UTC; see ``Table.scan(as_of=)``).  ``DELETE``,
        ``UPDATE``, ``INSERT INTO ... VALUES | SELECT`` and ``ALTER TABLE`` run at once, as one
        commit each, and give the rows changed (:mod:`hfq.engine.sql.dml`).  Unsupported SQL,
        unknown tables or columns and type errors raise :class:`~hfq.errors.SqlError` with the
        line and column in the text.

        Examples
        --------
        >>> import hfq, tempfile
        >>> db = hfq.connect(tempfile.mkdtemp())
        >>> t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
        ...                     sort_by=("symbol", "time"))
        >>> _ = t.append(hfq.synth.taq_table(rows_per_day=500, symbols=5))
        >>> db.sql("SELECT count(*) AS n FROM quotes WHERE bid > 0").collect()["n"][0] > 0
        True
        """
        from hfq.engine.sql import SqlCache, compile_sql  # lazily: sqlglot loads in ~0.2 s

        def version(name: str) -> tuple[str, int]:
            try:
                m = self.session.snapshot(name)
            except TableNotFoundError:
                raise QueryError(f"unknown table {name!r}") from None
            return m.table_id, m.version

        # a statement seen before, over the same table versions, skips parsing and planning
        cache = self.__dict__.setdefault("_sql_cache", SqlCache())
        return compile_sql(text, self._sql_table, params=params, cache=cache,
                           version=version, changes=self._sql_change)

    def snapshot(self, name: str, *, message: str | None = None) -> dict[str, int]:
        """Pin the newest version of every table together as database snapshot ``name``:
        ``t.scan(as_of=name)`` reads each table as it was then, and vacuum keeps those
        versions.  Each table's newest version is read in turn (no commit spans tables).
        Returns the versions pinned, by table.

        Examples
        --------
        >>> mydb = hfq.connect(tmp)
        >>> t = mydb.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"))
        >>> mydb.snapshot("eod-2007-08-02")
        {'q': 1}
        >>> _ = t.delete(symbols="IBM")
        >>> t.scan(as_of="eod-2007-08-02").count(), list(mydb.snapshots())
        (41, ['eod-2007-08-02'])
        """
        body = timeline.snapshot(self.session.catalog, name, user=self.session.user,
                                 message=message)
        return {table: int(pin[1]) for table, pin in body["tables"].items()}

    def snapshots(self) -> dict[str, dict[str, int]]:
        """Every database snapshot: name -> the versions it pins, by table.

        Examples
        --------
        >>> hfq.connect(tmp).snapshots()
        {}
        """
        return {label: {table: int(pin[1]) for table, pin in body["tables"].items()}
                for label, body in sorted(timeline.snapshots(self.session.catalog).items())}

    def drop_snapshot(self, name: str) -> None:
        """Remove database snapshot ``name`` (its versions may then be vacuumed).

        Examples
        --------
        >>> mydb = hfq.connect(tmp)
        >>> _ = mydb.snapshot("s1"); mydb.drop_snapshot("s1"); mydb.snapshots()
        {}
        """
        timeline.drop_snapshot(self.session.catalog, name)

    def _sql_change(self, name: str) -> Table:
        """The table a SQL ``DELETE``/``UPDATE``/``INSERT``/``ALTER TABLE`` changes: the one
        door from SQL to a table's writes (the service closes it: ``hfq.service``)."""
        if not self.session.exists(name):
            raise QueryError(f"unknown table {name!r}; tables: "
                             f"{', '.join(self.tables()) or '(none)'}")
        return self[name]

    def _sql_table(self, name: str, version: int | None = None, as_of: str | None = None,
                   rowid: bool = False) -> Query:
        """The query over table ``name`` (at ``version``, or as of the instant ``as_of``; its
        rows numbered in column ``rowid`` when ``rowid``) that SQL's ``FROM`` reads: the one
        door from SQL to the tables, through this database's session -- and so under its
        reader's grants, when it has an access (``hfq.service``)."""
        from hfq.engine.query import make_query  # lazily: the engine loads on first use
        try:
            m = self.session.snapshot(name)
        except TableNotFoundError:
            raise QueryError(f"unknown table {name!r}; tables: "
                             f"{', '.join(self.tables()) or '(none)'}") from None
        if as_of is not None:
            if timeline.instant(as_of) is None:
                raise QueryError(f"{as_of!r} is not a timestamp (ISO 8601, UTC unless it names "
                                 "its zone)")
            version = timeline.as_of(self.session.catalog, name, as_of)
        if version is not None and version != m.version:
            if not self.session.catalog.on_record(name, version):
                versions = self.session.catalog.versions(name)
                raise QueryError(f"table {name!r} has no version {version}; versions on "
                                 f"record: {', '.join(map(str, versions))}")
            m = self.session.snapshot(name, version)
        # the newest version reads the live rows with its files; time travel the files alone
        live = LiveView(self.session, m) if version is None and as_of is None and is_live(m) \
            else None
        return make_query(self.session, name, m, rowid=rowid, live=live)

    def drop_table(self, name: str) -> None:
        """Remove a table and all its files, on every live node.

        Examples
        --------
        >>> mydb = hfq.connect(tmp)
        >>> _ = mydb.create_table("scratch", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> mydb.drop_table("scratch")
        >>> mydb.tables(), "scratch" in mydb
        ([], False)
        """
        self.session.drop_table(name)

    # -- ingest -------------------------------------------------------------------------------
    def load_csv(self, table: str, paths: str | Iterable[str], *, on_error: str = "raise",
                 reject_path: str | None = None, progress: bool | None = None,
                 sync: bool = False, duplicates: str = "raise",
                 **csv_options: Any) -> LoadReport:
        """Load CSV files (paths, globs, fsspec URLs) into ``table`` as one atomic commit.

        See :func:`hfq.ingest.csv.load_csv` for the options; returns a
        :class:`~hfq.ingest.csv.LoadReport` (rows, bytes, seconds, rows_per_s, rejects).

        The table remembers what it loaded (each file's path, size and SHA-256, and the
        version that loaded it).  A file whose content it loaded already -- under any name --
        is refused with :class:`~hfq.errors.DuplicateLoadError` naming that version, unless
        ``duplicates="append"`` (load it again) or ``"skip"`` (leave it out; nothing loaded
        at all is no new version).

        Examples
        --------
        >>> path = f"{tmp}/2007-08-01.csv"
        >>> quotes.scan(dates="2007-08-01").to_csv(path)                 # 5,000 rows of CSV
        5000
        >>> mydb = hfq.connect(f"{tmp}/db")
        >>> _ = mydb.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> report = mydb.load_csv("quotes", path)
        >>> report.rows, report.version, len(mydb["quotes"])
        (5000, 1, 5000)
        >>> mydb.load_csv("quotes", path, duplicates="skip").rows     # loaded already
        0
        """
        return _load_csv(self.session, table, paths, on_error=on_error,
                         reject_path=reject_path, progress=progress, sync=sync,
                         duplicates=duplicates, **csv_options)


def connect(root: str | None = None, *, address: str | None = None,
            catalog: str | None = None, storage_options: dict | None = None,
            recover: bool = False, user: str | None = None, **settings: Any) -> Database:
    """Open an hfq database: embedded at ``root``, on the Ray cluster at ``address``, or
    through an hfq service at ``root="grpc+tls://host:port"`` (``user=``, ``password=``,
    optionally ``tls_root_certs=``: a :class:`hfq.service.client.RemoteDatabase` whose
    ``sql``, ``scan``, ``tables`` and ``append`` go through the service, under that user's
    grants).

    Embedded (no ``address``): ``root`` defaults to ``HFQ_ROOT`` or ``./hfq_data``; a one-node
    Ray cluster owned by this process starts when compute first needs it.

    Cluster (``address="auto"``, ``"host:port"`` or ``"ray://host:10001"``): partitions live
    under each node's ``HFQ_NODE_ROOT``; the catalog under the head node's root, or at
    ``catalog`` (a path or fsspec URL this process can reach) when the driver is elsewhere.

    Keyword settings (``compression``, ``memory_budget``, ``threads``, ...) override
    :mod:`hfq.config` for this handle.

    ``recover=True``: check the catalog first and repair it (:meth:`Database.check`), so
    every table opens at its newest intact version; what was found is logged and kept in
    ``db.recovered``.

    ``user``: who this handle's commits are made by (default: ``HFQ_USER``, else the login
    name).

    Examples
    --------
    >>> import hfq, tempfile
    >>> db = hfq.connect(tempfile.mkdtemp())
    >>> db.tables()
    []
    """
    if isinstance(root, str) and root.startswith(("grpc://", "grpc+tls://", "grpc+tcp://")):
        from hfq.service import client  # lazily: only a service's clients load Flight
        return client.connect(root, user=cast(str, user), **settings)  # type: ignore[return-value]
    if recover:
        db = connect(root, address=address, catalog=catalog, storage_options=storage_options,
                     user=user, **settings)
        db.recovered = db.check(repair=True)
        for row in db.recovered:
            log.warning("catalog: table %s version %s: %s -> %s", row["table"],
                        row["version"], row["problem"], row["action"])
        return db
    snapshot = config.get().replace(**settings) if settings else config.get()
    if address is None:
        if catalog is not None:
            raise ValueError("catalog= is for clusters (with address=); embedded, pass root")
        return Database(root or snapshot.root, storage_options=storage_options,
                        settings=snapshot, user=user)
    if root is not None:
        raise ValueError("with address=, each node's root is its HFQ_NODE_ROOT; pass "
                         "catalog= to put the catalog somewhere other than the head node")
    from hfq.runtime import connect as ray_connect  # lazily: it imports Ray
    runtime = ray_connect.attach(address, cache_bytes=snapshot.cache_bytes)
    if not runtime.alive():
        raise HfqError(f"no hfq node server could start on the cluster at {address!r}")
    local = runtime.local_name()
    local_root = runtime.info(local).root if local else None
    if local is not None and local_root is not None and not _is_node_root(local_root, local):
        local = local_root = None   # a driver on the node, but not seeing its disk
    head = runtime.head_name()
    if catalog is None:
        if head is None or not _is_node_root(runtime.info(head).root, head):
            raise HfqError("this process cannot see the head node's disk, where the catalog "
                           "lives; run the driver on the head node (ray job submit) or pass "
                           "catalog= a path or URL every driver can reach")
        catalog = runtime.info(head).root
    db = Database(catalog, storage_options=storage_options, settings=snapshot,
                  runtime=runtime,
                  local=(local, local_root) if local and local_root is not None else None,
                  default_node=head, user=user)
    if not db.tables():
        _warn_of_copies_elsewhere(db)
    return db


def _warn_of_copies_elsewhere(db: Database) -> None:
    """An empty catalog while other nodes hold copies of one: most likely a new head after
    the old one's disk was lost -- say so, and how to bring the tables back."""
    nodes = db.session.nodes_for(start=True)
    others = [n for n in nodes.alive() if n != db.session.catalog_node]
    if not others:
        return
    try:
        listed = nodes.call_each(StoreCall(catalog_files), names=others)
    except HfqError:   # a node that cannot answer now: nothing to say about it
        return
    tables = sorted({rel.split("/", 1)[0] for names in listed.values() for rel in names})
    if tables:
        log.warning("the catalog at %s holds no table, but nodes %s hold copies of the catalog "
                    "of %s (a new head after a lost disk?): hfq.connect(..., recover=True) or "
                    "`hfq check --repair` brings them back", db.session.store.url,
                    ", ".join(sorted(n for n, names in listed.items() if names)),
                    ", ".join(tables[:10]) + (" ..." if len(tables) > 10 else ""))


def _is_node_root(root: str, name: str) -> bool:
    """Is ``root`` on this machine's disk, the root of node ``name``?"""
    if not os.path.isdir(root):
        return False
    try:
        return node_identity(open_store(root)) == name
    except HfqError:
        return False


def _plural(n: int, noun: str) -> str:
    """``1 node``, ``2 nodes``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
