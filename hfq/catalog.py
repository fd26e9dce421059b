"""Tables, schemas, partitions and versions: atomic commits and snapshot reads.

Layout under the root::

    <table>/_versions/00000000000000000007.json   one manifest per committed version
    <table>/data/<partition path>/<txn>-<n>.arrow  immutable fragment files

A manifest lists *every* partition and fragment of its version, so a reader that loads one
manifest has a consistent snapshot, whatever commits after it.  A commit writes the next manifest
under a temporary name and publishes it with an atomic create-if-absent
(:meth:`Store.create_exclusive`): a writer killed at any instant leaves either the old version or
the new one visible, never a partial one.  Two writers racing for the same version number: one
wins, the other re-reads the new head, re-applies its change (appends commute) and tries the next
number.  Fragment files are written before the commit and never modified; files no manifest
references (a writer that died before committing) are removed by :func:`sweep`, which
:meth:`hfq.Table.vacuum` runs on every node.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hfq.errors import CommitConflictError, HfqError, TableExistsError, TableNotFoundError
from hfq.partition import Compo, Scheme, scheme_from_json
from hfq.schema import Schema, check_name
from hfq.storage.store import HOST, Store, pid_alive, temp_name, temp_owner_alive

__all__ = ["Catalog", "Manifest", "Transaction", "list_table_files", "remove_table_files",
           "sweep"]

FORMAT = 1
_VERSIONS = "_versions"
_TRASH = ".trash"
_MAX_ATTEMPTS = 10_000
_CACHED_MANIFESTS = 64


def _version_name(version: int) -> str:
    return f"{version:020d}.json"


@dataclass
class Manifest:
    """One committed version of a table: everything a reader needs, nothing that changes."""

    table: str
    version: int
    schema: Schema
    partition_by: Scheme | Compo
    sort_by: tuple[str, ...]
    partitions: dict[str, dict]   # partition path -> {"key": [...], "fragments": [...]}
    op: str = "create"
    committed_at: float = field(default_factory=time.time)
    options: dict[str, Any] = field(default_factory=dict)
    table_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Random per creation: a writer that began before a drop + recreate cannot commit."""

    def to_json(self) -> dict:
        return {
            "format": FORMAT, "table": self.table, "version": self.version,
            "schema": self.schema.to_json(), "partition_by": self.partition_by.to_json(),
            "sort_by": list(self.sort_by), "op": self.op, "committed_at": self.committed_at,
            "options": self.options, "table_id": self.table_id, "partitions": self.partitions,
        }

    @classmethod
    def from_json(cls, data: dict) -> Manifest:
        if data.get("format") != FORMAT:
            raise HfqError(f"manifest format {data.get('format')!r} is not supported "
                           f"(this hfq reads format {FORMAT})")
        return cls(table=data["table"], version=data["version"],
                   schema=Schema.from_json(data["schema"]),
                   partition_by=scheme_from_json(data["partition_by"]),
                   sort_by=tuple(data["sort_by"]), partitions=data["partitions"],
                   op=data["op"], committed_at=data["committed_at"],
                   options=data.get("options", {}), table_id=data["table_id"])

    @property
    def rows(self) -> int:
        return sum(f["rows"] for p in self.partitions.values() for f in p["fragments"])

    def files(self) -> set[str]:
        return {f["file"] for p in self.partitions.values() for f in p["fragments"]}


class Catalog:
    """The tables under one root."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # manifests never change once published: parsed ones are kept, keyed by path and
        # checked against the file's identity (a dropped and recreated table reuses numbers)
        self._manifests: OrderedDict[str, tuple[tuple, Manifest]] = OrderedDict()

    # -- tables -------------------------------------------------------------------------------
    def tables(self) -> list[str]:
        return sorted(name for name in self.store.listdir("")
                      if not name.startswith(".") and self._head(name) is not None)

    def create(self, name: str, schema: Schema, partition_by: Scheme | Compo,
               sort_by: Iterable[str], options: dict | None = None) -> Manifest:
        check_name(name, "table")
        manifest = Manifest(table=name, version=0, schema=schema, partition_by=partition_by,
                            sort_by=tuple(sort_by), partitions={}, options=options or {})
        self.store.makedirs(f"{name}/{_VERSIONS}")
        if not self._publish(manifest):
            raise TableExistsError(f"table {name!r} already exists in {self.store.url}; "
                                   "drop it first or pick another name")
        return manifest

    def drop(self, name: str) -> None:
        self.snapshot(name)  # raises TableNotFoundError
        remove_table_files(self.store, name)

    # -- versions -----------------------------------------------------------------------------
    def snapshot(self, name: str, version: int | None = None) -> Manifest:
        """The manifest of ``version`` (default: the newest committed one)."""
        check_name(name, "table")
        head = self._head(name)
        if head is None:
            known = ", ".join(self.tables()) or "none"
            raise TableNotFoundError(f"no table {name!r} in {self.store.url} (tables: {known})")
        if version is None:
            version = head
        elif not 0 <= version <= head:
            raise TableNotFoundError(f"table {name!r} has versions 0..{head}, not {version}")
        path = f"{name}/{_VERSIONS}/{_version_name(version)}"
        stamp = self.store.stamp(path)
        cached = self._manifests.get(path)
        if stamp is not None and cached is not None and cached[0] == stamp:
            self._manifests.move_to_end(path)
            return cached[1]
        manifest = Manifest.from_json(json.loads(self.store.read_bytes(path)))
        if stamp is not None:
            self._manifests[path] = (stamp, manifest)
            if len(self._manifests) > _CACHED_MANIFESTS:
                self._manifests.popitem(last=False)
        return manifest

    def versions(self, name: str) -> list[int]:
        return sorted(int(n[:-5]) for n in self.store.listdir(f"{name}/{_VERSIONS}")
                      if n.endswith(".json") and n[:-5].isdigit())

    def _head(self, name: str) -> int | None:
        versions = self.versions(name)
        return versions[-1] if versions else None

    def _publish(self, manifest: Manifest, *, sync: bool = False) -> bool:
        final = f"{manifest.table}/{_VERSIONS}/{_version_name(manifest.version)}"
        tmp = temp_name(final)
        self.store.write_bytes(tmp, json.dumps(manifest.to_json(), separators=(",", ":"))
                               .encode(), sync=sync)
        won = self.store.create_exclusive(tmp, final)
        if won and sync:
            self.store.fsync(f"{manifest.table}/{_VERSIONS}")
        return won

    # -- maintenance --------------------------------------------------------------------------
    def forget_versions(self, name: str, keep_versions: int, grace_s: float) -> int:
        """Forget all but the newest ``keep_versions`` versions; returns how many went.

        A version is forgotten only once a newer one has been committed for ``grace_s``
        seconds, so a reader that planned against it recently can still read it.
        """
        if keep_versions < 1:
            raise ValueError("keep_versions must be at least 1")
        versions = self.versions(name)
        if not versions:
            raise TableNotFoundError(f"no table {name!r} in {self.store.url}")
        now = time.time()
        forgotten = 0
        for old, newer in zip(versions[:-keep_versions], versions[1:]):
            if now - self.snapshot(name, newer).committed_at >= grace_s:
                self.store.remove(f"{name}/{_VERSIONS}/{_version_name(old)}")
                forgotten += 1
        return forgotten

    def kept_manifests(self, name: str) -> list[Manifest]:
        """Every version still on record (what vacuum must keep the files of)."""
        out = []
        for v in self.versions(name):
            try:
                out.append(self.snapshot(name, v))
            except (FileNotFoundError, TableNotFoundError):   # forgotten meanwhile
                continue
        return out


def list_table_files(store: Store, table: str) -> list[tuple[str, float]]:
    """A node's files of ``table`` (the first step of a sweep: list before looking at the
    catalog, so a file committed after the listing is never touched)."""
    return store.walk_files(table)


def sweep(store: Store, table: str, referenced: set[str], grace_s: float,
          files: list[tuple[str, float]], committed: set[str] | None = None) -> int:
    """Remove from ``files`` (listed *before* ``referenced`` was computed) the data files no
    kept version places on this node, and leftover temporary files.

    ``committed``: every file any kept version references, on any node.  A file in it but not
    placed here is a stale copy (left by a rebalance) and goes once older than ``grace_s`` (a
    copy a rebalance is making right now is younger).  Otherwise never removed: files of a
    writer still running on this host, and files younger than ``grace_s`` whose writer runs
    elsewhere; files of writers that died on this host before committing go at once.
    """
    now = time.time()
    removed = 0
    for rel, mtime in files:
        base = rel.rsplit("/", 1)[-1]
        if base.startswith(".tmp~"):
            doomed = not temp_owner_alive(base) or now - mtime > grace_s
        elif rel.startswith(f"{table}/data/") and rel not in referenced:
            if committed is not None and rel in committed:
                doomed = now - mtime >= grace_s
            else:
                alive = _writer_alive(base)
                doomed = alive is False or (alive is None and now - mtime >= grace_s)
        else:
            doomed = False
        if doomed:
            store.remove(rel)
            removed += 1
    return removed


def remove_table_files(store: Store, table: str) -> None:
    """Delete a table's directory: renamed away first, so no reader sees half of it."""
    if not store.exists(table):
        return
    trash = f"{_TRASH}/{table}-{uuid.uuid4().hex}"
    store.makedirs(_TRASH)
    store.rename(table, trash)
    store.remove_tree(trash)


def _writer_alive(file_name: str) -> bool | None:
    """For a fragment named by :meth:`Transaction.new_file`: is its writer running?  None when
    it cannot be told (another host, or a name hfq did not make)."""
    parts = file_name.split("-")
    if len(parts) < 5 or parts[1] != HOST or not parts[2].isdigit():
        return None
    return pid_alive(int(parts[2]))


class Transaction:
    """Fragments written for one change of one table, made visible by :meth:`commit`.

    A transaction never writes into another's files: its fragment names carry its own id.
    """

    def __init__(self, catalog: Catalog | None, base: Manifest,
                 remove: Callable[[list[dict]], None] | None = None) -> None:
        self.catalog = catalog
        self.base = base
        self._remove = remove
        self.id = f"{int(time.time() * 1000):013d}-{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.added: dict[str, tuple[list, list[dict]]] = {}   # path -> (key, fragments)
        self.removed: dict[str, set[str]] = {}               # path -> files replaced
        self.moved: dict[str, list[str]] = {}                # file -> the nodes now holding it
        self._counter = itertools.count(1)

    def new_file(self, partition: str) -> str:
        n = next(self._counter)  # atomic under the GIL: writer threads call this concurrently
        return f"{self.base.table}/data/{partition}/{self.id}-{n:05d}.arrow"

    def add(self, partition: str, key: list, fragment: dict) -> None:
        self.added.setdefault(partition, (key, []))[1].append(fragment)

    def replace(self, partition: str, files: Iterable[str]) -> None:
        self.removed.setdefault(partition, set()).update(files)

    def move(self, file: str, nodes: list[str]) -> None:
        """Record that ``file`` (already copied there) is now held by ``nodes``."""
        self.moved[file] = list(nodes)

    def abort(self) -> None:
        fragments = [f for _, frags in self.added.values() for f in frags]
        if self._remove is not None:
            self._remove(fragments)
        elif self.catalog is not None:
            for fragment in fragments:
                self.catalog.store.remove(fragment["file"])
        self.added.clear()

    def commit(self, op: str, *, sync: bool = False) -> Manifest:
        """Publish the newest version + this change as the next version.

        Every attempt starts from the newest committed version (not from the base): a version
        number below the head may be free again after ``vacuum(keep_versions=...)``.  A
        publish that still lands below the head (versions forgotten meanwhile) is withdrawn
        and retried, so a commit is only reported once it is the head.
        """
        store = self.catalog.store   # files were fsynced when written (``sync=True``)
        for _ in range(_MAX_ATTEMPTS):
            head = self.catalog.snapshot(self.base.table)
            manifest = self._apply(head, op)
            if not self.catalog._publish(manifest, sync=sync):
                continue
            if self.catalog.versions(self.base.table)[-1] == manifest.version:
                return manifest
            store.remove(f"{manifest.table}/{_VERSIONS}/{_version_name(manifest.version)}")
        raise CommitConflictError(f"table {self.base.table!r}: gave up after {_MAX_ATTEMPTS} "
                                  "attempts to commit against concurrent writers")

    def _apply(self, head: Manifest, op: str) -> Manifest:
        if head.table_id != self.base.table_id:
            raise CommitConflictError(
                f"table {head.table!r} was dropped and created again while this {op} was "
                "running; nothing was committed")
        partitions = {p: {"key": v["key"], "fragments": list(v["fragments"])}
                      for p, v in head.partitions.items()}
        for path, files in self.removed.items():
            if not files:
                continue
            present = {f["file"] for f in partitions.get(path, {}).get("fragments", [])}
            if not files <= present:
                raise CommitConflictError(
                    f"table {head.table!r}, partition {path}: another writer changed it "
                    f"during this {op}; nothing was committed, run it again")
            partitions[path]["fragments"] = [f for f in partitions[path]["fragments"]
                                             if f["file"] not in files]
        for path, (key, fragments) in self.added.items():
            entry = partitions.setdefault(path, {"key": key, "fragments": []})
            entry["fragments"].extend(fragments)
        if self.moved:   # files compacted away meanwhile simply are not moved
            for entry in partitions.values():
                entry["fragments"] = [{**f, "nodes": self.moved[f["file"]]}
                                      if f["file"] in self.moved else f
                                      for f in entry["fragments"]]
        partitions = {p: v for p, v in sorted(partitions.items()) if v["fragments"]}
        return Manifest(table=head.table, version=head.version + 1, schema=head.schema,
                        partition_by=head.partition_by, sort_by=head.sort_by,
                        partitions=partitions, op=op, options=head.options,
                        table_id=head.table_id)
