"""The database handle that :func:`hfq.connect` returns."""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from hfq import config
from hfq.catalog import Catalog, remove_table_files
from hfq.catalog.records import Fragment, Manifest
from hfq.config import Settings
from hfq.errors import HfqError, SchemaMismatchError, TableNotFoundError
from hfq.ingest.csv import LoadReport
from hfq.ingest.csv import load_csv as _load_csv
from hfq.partition import Compo, Scheme, check_scheme
from hfq.runtime.node import NodeInfo, node_identity
from hfq.runtime.nodes import Nodes
from hfq.runtime.placement import place, replica_count
from hfq.runtime.task import StoreCall
from hfq.schema import Schema
from hfq.storage.store import open_store
from hfq.table import Table
from hfq.write import Write

if TYPE_CHECKING:
    from hfq.runtime.cluster import Runtime

__all__ = ["Database", "connect"]


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
    """

    def __init__(self, root: str, *, storage_options: dict | None = None,
                 settings: Settings | None = None, runtime: Runtime | None = None,
                 local: tuple[str, str] | None = None, default_node: str | None = None) -> None:
        self.settings = settings or config.get()
        self.store = open_store(str(root), storage_options or {})
        self.store.makedirs("")
        self.catalog = Catalog(self.store)
        self._handles: weakref.WeakSet[Table] = weakref.WeakSet()
        self.catalog.on_commit(self._committed)
        self._runtime = runtime
        name: str | None
        if runtime is None:   # embedded: the root is this process's node
            name = node_identity(self.store)
            self.nodes = Nodes(name, self.store, None)
        else:
            name, local_root = local if local else (None, None)
            self.nodes = Nodes(name, open_store(local_root) if local_root else None, runtime,
                               default=default_node)

    def __repr__(self) -> str:
        where = "embedded" if self._runtime is None or self._runtime.owned else "cluster"
        return (f"<hfq.Database {self.store.url!r} ({where}, {len(self.nodes.alive())} "
                f"nodes): {len(self.tables())} tables>")

    # -- cluster ------------------------------------------------------------------------------
    @property
    def runtime(self) -> Runtime:
        """The Ray runtime (for an embedded database: started now if it is not running)."""
        if self._runtime is None:
            if not self.store.local:
                raise HfqError(f"compute on the nodes needs a local root; {self.store.url} is "
                               "not one")
            from hfq.runtime import connect  # lazily: it imports Ray
            self._runtime = connect.embedded(self.store.root, cpus=self.settings.threads,
                                             cache_bytes=self.settings.cache_bytes)
            if self._runtime.alive() != [self.nodes.local]:
                raise HfqError(f"the embedded node server did not find node "
                               f"{self.nodes.local} at {self.store.root}")
            self.nodes.runtime = self._runtime
        return self._runtime

    def cluster_nodes(self) -> Nodes:
        """The nodes, with the runtime started and the list of live nodes refreshed."""
        self.runtime.refresh()
        return self.nodes

    def node_info(self) -> pl.DataFrame:
        """One row per live node: name, root, Ray node id, CPUs, partitions and bytes held."""
        infos = self.runtime.infos() if self._runtime is not None else []
        held: dict[str, list[int]] = {}
        for name in self.tables():
            for fragment in self.catalog.snapshot(name).fragments():
                for node in self.nodes.holders(fragment):
                    entry = held.setdefault(node, [0, 0])
                    entry[0] += 1
                    entry[1] += fragment.bytes
        if not infos:   # embedded: local is the root's node (None only if attached, no live node)
            infos = [NodeInfo(cast(str, self.nodes.local), self.store.root)]
        return pl.DataFrame([{"node": i.name, "root": i.root, "ray_node_id": i.ray_node_id,
                              "cpus": i.cpus, "files": held.get(i.name, [0, 0])[0],
                              "bytes": held.get(i.name, [0, 0])[1]} for i in infos],
                            schema={"node": pl.String, "root": pl.String,
                                    "ray_node_id": pl.String, "cpus": pl.Int64,
                                    "files": pl.Int64, "bytes": pl.Int64})

    def rebalance(self, tables: Iterable[str] | None = None) -> dict[str, int]:
        """Move partitions to where placement puts them over the live nodes (after nodes
        joined or left); returns files moved per table.

        Copies are made (and checked against the catalog's CRC-32) before one commit per
        table switches readers to them; the old copies stay until :meth:`Table.vacuum`, so
        no reader, old or new, ever finds a partition missing.
        """
        nodes = self.cluster_nodes()
        return {name: _rebalance(self, name, nodes) for name in (tables or self.tables())}

    def close(self) -> None:
        """Stop the embedded Ray cluster if this database started it."""
        if self._runtime is not None and self._runtime.owned:
            self._runtime.shutdown()
            self._runtime = None
            self.nodes.runtime = None

    # -- tables -------------------------------------------------------------------------------
    def create_table(self, name: str, schema: Schema, *, partition_by: Scheme | Compo,
                     sort_by: Sequence[str] = (), date_column: str | None = None,
                     symbol_column: str | None = None, replicas: int | None = None) -> Table:
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
        """
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
        options = {k: v for k, v in (("date_column", date_column),
                                     ("symbol_column", symbol_column),
                                     ("replicas", replicas)) if v}
        manifest = self.catalog.create(name, schema, partition_by, sort_by, options)
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
                handle.refresh_to(manifest)

    def __contains__(self, name: str) -> bool:
        try:
            self.catalog.snapshot(name)
        except TableNotFoundError:
            return False
        return True

    def tables(self) -> list[str]:
        return self.catalog.tables()

    def drop_table(self, name: str) -> None:
        """Remove a table and all its files, on every live node."""
        self.catalog.drop(name)
        if name in self:   # re-created meanwhile: the old files are vacuum's job
            return
        self.nodes.call_each(StoreCall(remove_table_files), name)

    # -- ingest -------------------------------------------------------------------------------
    def load_csv(self, table: str, paths: str | Iterable[str], *, on_error: str = "raise",
                 reject_path: str | None = None, progress: bool | None = None,
                 sync: bool = False, **csv_options: Any) -> LoadReport:
        """Load CSV files (paths, globs, fsspec URLs) into ``table`` as one atomic commit.

        See :func:`hfq.ingest.csv.load_csv` for the options; returns a
        :class:`~hfq.ingest.csv.LoadReport` (rows, bytes, seconds, rows_per_s, rejects).
        """
        base = self.catalog.snapshot(table)
        with Write(self.catalog, self.nodes, base, self.settings, sync=sync) as write:
            return _load_csv(write, paths, settings=self.settings,
                             storage_options=self.store.storage_options, on_error=on_error,
                             reject_path=reject_path, progress=progress, **csv_options)


def connect(root: str | None = None, *, address: str | None = None,
            catalog: str | None = None, storage_options: dict | None = None,
            **settings: Any) -> Database:
    """Open an hfq database: embedded at ``root``, or on the Ray cluster at ``address``.

    Embedded (no ``address``): ``root`` defaults to ``HFQ_ROOT`` or ``./hfq_data``; a one-node
    Ray cluster owned by this process starts when compute first needs it.

    Cluster (``address="auto"``, ``"host:port"`` or ``"ray://host:10001"``): partitions live
    under each node's ``HFQ_NODE_ROOT``; the catalog under the head node's root, or at
    ``catalog`` (a path or fsspec URL this process can reach) when the driver is elsewhere.

    Keyword settings (``compression``, ``memory_budget``, ``threads``, ...) override
    :mod:`hfq.config` for this handle.

    Examples
    --------
    >>> import hfq, tempfile
    >>> db = hfq.connect(tempfile.mkdtemp())
    >>> db.tables()
    []
    """
    snapshot = config.get().replace(**settings) if settings else config.get()
    if address is None:
        if catalog is not None:
            raise ValueError("catalog= is for clusters (with address=); embedded, pass root")
        return Database(root or snapshot.root, storage_options=storage_options,
                        settings=snapshot)
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
    return Database(catalog, storage_options=storage_options, settings=snapshot,
                    runtime=runtime,
                    local=(local, local_root) if local and local_root is not None else None,
                    default_node=head)


def _is_node_root(root: str, name: str) -> bool:
    """Is ``root`` on this machine's disk, the root of node ``name``?"""
    if not os.path.isdir(root):
        return False
    try:
        return node_identity(open_store(root)) == name
    except HfqError:
        return False


def _rebalance(db: Database, name: str, nodes: Nodes) -> int:
    """Copy each partition to its placement over the live nodes, then commit the move."""
    m = db.catalog.snapshot(name)
    alive = nodes.alive()
    k = replica_count(m.options.get("replicas"), alive, name)
    copies: dict[str, list[tuple[Fragment, str]]] = {}
    with Write(db.catalog, nodes, m, db.settings) as write:
        for path, part in m.partitions.items():
            target = place(path, alive, k)
            for fragment in part.fragments:
                held = nodes.holders(fragment)
                if set(held) == set(target):
                    continue
                sources = [n for n in held if n in alive]
                if not sources:
                    continue   # no live copy to move: nothing to do until a holder returns
                for dest in target:
                    if dest not in held:
                        copies.setdefault(dest, []).append((fragment, sources[0]))
                write.move(fragment.file, target)
        nodes.copy(copies)
        if write.txn.moved:
            write.commit("rebalance")
        return len(write.txn.moved)
