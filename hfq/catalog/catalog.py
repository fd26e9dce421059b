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
number; a change that does not commute (the files it replaces are gone) is a
:class:`~hfq.errors.CommitConflictError` and nothing is published.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hfq.catalog.files import remove_table_files
from hfq.catalog.records import (
    Fragment,
    Manifest,
    PartitionEntry,
    manifest_from_bytes,
    manifest_to_bytes,
    new_manifest,
    partition_entry,
)
from hfq.errors import CommitConflictError, TableExistsError, TableNotFoundError
from hfq.partition import Compo, Scheme
from hfq.schema import Schema, check_name
from hfq.storage.store import HOST, Store, temp_name

__all__ = ["Catalog", "FileNamer", "Transaction"]

log = logging.getLogger("hfq")

VERSIONS = "_versions"
_MAX_ATTEMPTS = 10_000
_CACHED_MANIFESTS = 64


def version_name(version: int) -> str:
    return f"{version:020d}.json"


class Catalog:
    """The tables under one root."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # manifests never change once published: parsed ones are kept, keyed by path and
        # checked against the file's identity (a dropped and recreated table reuses numbers)
        self._manifests: OrderedDict[str, tuple[tuple[Any, ...], Manifest]] = OrderedDict()
        self._listeners: list[Callable[[Manifest], None]] = []

    def on_commit(self, listener: Callable[[Manifest], None]) -> None:
        """Call ``listener(manifest)`` after every commit made through this catalog object."""
        self._listeners.append(listener)

    # -- tables -------------------------------------------------------------------------------
    def tables(self) -> list[str]:
        return sorted(name for name in self.store.listdir("")
                      if not name.startswith(".") and self._head(name) is not None)

    def create(self, name: str, schema: Schema, partition_by: Scheme | Compo,
               sort_by: Iterable[str], options: Mapping[str, Any] | None = None) -> Manifest:
        check_name(name, "table")
        manifest = new_manifest(name, schema, partition_by, sort_by, options or {})
        self.store.makedirs(f"{name}/{VERSIONS}")
        if not self._publish(manifest):
            raise TableExistsError(f"table {name!r} already exists in {self.store.url}; "
                                   "drop it first or pick another name")
        return manifest

    def drop(self, name: str) -> None:
        """Remove the table's directory under the catalog root (its versions and any files)."""
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
        path = f"{name}/{VERSIONS}/{version_name(version)}"
        stamp = self.store.stamp(path)
        cached = self._manifests.get(path)
        if stamp is not None and cached is not None and cached[0] == stamp:
            self._manifests.move_to_end(path)
            return cached[1]
        manifest = manifest_from_bytes(self.store.read_bytes(path), self.store.path(path))
        if stamp is not None:
            self._manifests[path] = (stamp, manifest)
            if len(self._manifests) > _CACHED_MANIFESTS:
                self._manifests.popitem(last=False)
        return manifest

    def versions(self, name: str) -> list[int]:
        return sorted(int(n[:-5]) for n in self.store.listdir(f"{name}/{VERSIONS}")
                      if n.endswith(".json") and n[:-5].isdigit())

    def _head(self, name: str) -> int | None:
        versions = self.versions(name)
        return versions[-1] if versions else None

    def _publish(self, manifest: Manifest, *, sync: bool = False) -> bool:
        final = f"{manifest.table}/{VERSIONS}/{version_name(manifest.version)}"
        tmp = temp_name(final)
        self.store.write_bytes(tmp, manifest_to_bytes(manifest), sync=sync)
        won = self.store.create_exclusive(tmp, final)
        if won and sync:
            self.store.fsync(f"{manifest.table}/{VERSIONS}")
        return won

    def commit(self, txn: Transaction, op: str, *, sync: bool = False) -> Manifest:
        """Publish the newest version + ``txn``'s change as the next version; the new manifest.

        Every attempt starts from the newest committed version (not from the transaction's
        base): a version number below the head may be free again after
        ``vacuum(keep_versions=...)``.  A publish that still lands below the head (versions
        forgotten meanwhile) is withdrawn and retried, so a commit is only reported once it
        is the head.

        Raises
        ------
        CommitConflictError
            The table was dropped and re-created, or a file the change replaces is gone (another
            writer compacted or rewrote the partition); nothing was published.
        """
        for attempt in range(_MAX_ATTEMPTS):
            head = self.snapshot(txn.base.table)
            manifest = txn.apply(head, op)
            if not self._publish(manifest, sync=sync):
                if attempt and attempt % 100 == 0:
                    log.info("table %s: commit of %s lost %d races, retrying", txn.base.table,
                             op, attempt)
                continue
            if self.versions(txn.base.table)[-1] == manifest.version:
                for listener in self._listeners:
                    listener(manifest)
                return manifest
            self.store.remove(f"{manifest.table}/{VERSIONS}/{version_name(manifest.version)}")
        raise CommitConflictError(f"table {txn.base.table!r}: gave up after {_MAX_ATTEMPTS} "
                                  "attempts to commit against concurrent writers")

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
                self.store.remove(f"{name}/{VERSIONS}/{version_name(old)}")
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


@dataclass(frozen=True)
class FileNamer:
    """Names the fragment files of one transaction, in any process (it is picklable).

    Names start with the transaction id (``<ms>-<host>-<pid>-<random>``, the committing
    process), so the files of a transaction that never committed can be found by prefix on
    every node and told apart from live ones (:func:`hfq.catalog.files.sweep`).
    """

    table: str
    txn_id: str

    def new_file(self, partition: str) -> str:
        return (f"{self.table}/data/{partition}/{self.txn_id}-{_PROCESS_TAG}-"
                f"{next(_COUNTER):06d}.arrow")


_PROCESS_TAG = uuid.uuid4().hex[:6]
_COUNTER = itertools.count(1)   # atomic under the GIL: writer threads call it concurrently


class Transaction:
    """The change of one writer to one table, made visible by :meth:`Catalog.commit`.

    It only records: fragments added per partition, files a partition replaces, files moved
    to other nodes.  Writing and removing files is the write operator's job
    (:mod:`hfq.write`).
    """

    def __init__(self, catalog: Catalog, base: Manifest) -> None:
        self.catalog = catalog
        self.base = base
        self.id = f"{int(time.time() * 1000):013d}-{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.namer = FileNamer(base.table, self.id)
        self.added: dict[str, tuple[tuple[Any, ...], list[Fragment]]] = {}
        self.removed: dict[str, set[str]] = {}
        self.moved: dict[str, tuple[str, ...]] = {}

    def add(self, partition: str, key: Sequence[Any], fragment: Fragment) -> None:
        self.added.setdefault(partition, (tuple(key), []))[1].append(fragment)

    def replace(self, partition: str, files: Iterable[str]) -> None:
        self.removed.setdefault(partition, set()).update(files)

    def move(self, file: str, nodes: Iterable[str]) -> None:
        """Record that ``file`` (already copied there) is now held by ``nodes``."""
        self.moved[file] = tuple(nodes)

    def apply(self, head: Manifest, op: str) -> Manifest:
        """``head`` with this change applied, as the next version."""
        if head.table_id != self.base.table_id:
            raise CommitConflictError(
                f"table {head.table!r} was dropped and created again while this {op} was "
                "running; nothing was committed")
        partitions: dict[str, PartitionEntry] = dict(head.partitions)
        for path, files in self.removed.items():
            if not files:
                continue
            entry = partitions.get(path)
            present = {f.file for f in entry.fragments} if entry is not None else set()
            if entry is None or not files <= present:
                raise CommitConflictError(
                    f"table {head.table!r}, partition {path}: another writer changed it "
                    f"during this {op}; nothing was committed, run it again")
            partitions[path] = entry.with_fragments(f for f in entry.fragments
                                                    if f.file not in files)
        for path, (key, fragments) in self.added.items():
            entry = partitions.get(path)
            partitions[path] = partition_entry(key, fragments) if entry is None else \
                entry.with_fragments([*entry.fragments, *fragments])
        if self.moved:   # files compacted away meanwhile simply are not moved
            partitions = {p: v.with_fragments(f.placed_on(self.moved[f.file])
                                              if f.file in self.moved else f
                                              for f in v.fragments)
                          for p, v in partitions.items()}
        return head.successor(partitions, op)
