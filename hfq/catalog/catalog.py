"""Tables, schemas, partitions and versions: atomic commits, snapshot reads, self-defence.

Layout under the root::

    <table>/_versions/00000000000000000007.json     the record of version 7 (sealed, small)
    <table>/_manifests/<txn>-<group>.<sha>.json      immutable manifest pieces, shared by versions
    <table>/_claims/00000000000000000007            a version number that was published
    <table>/.vacuum.json                             what the last vacuum saw (hfq.catalog.vacuum)
    <table>/data/<partition path>/<txn>-<n>.arrow    immutable fragment files

A version's *record* holds the schema, options, totals and one reference per group of
partitions (a day, for the default scheme); each group's partition entries live in a *piece*
named after its SHA-256 (see :mod:`hfq.catalog.records`).  A commit writes the pieces of the
groups it changed, then publishes the next record with one atomic create-if-absent
(:meth:`Store.create_exclusive`): a writer killed at any instant leaves either the old version
or the new one visible, never a partial one.  Two writers racing for the same number: one wins,
the other re-reads the head, re-applies its change (appends commute) and tries the next number;
a change that does not commute (the files it replaces are gone) is a
:class:`~hfq.errors.CommitConflictError` and nothing is published.

Version numbers are never reused: after its publish a commit leaves a claim marker
(``_claims/<n>``, the highest kept), and the next number is above both the newest record and
the highest claim -- so deleting the head's record neither rolls the table back silently (a
claim above the newest record is a :class:`~hfq.errors.ManifestError`, "version n is
missing") nor lets its number be taken again.  The highest claim is also where a reader
starts looking for the head: it probes the records above it until a number is absent, so no
read or commit lists ``_versions/`` (:meth:`Catalog._newest`).  :meth:`Catalog.check` reads
every file back and reports damage; with ``repair`` it restores damaged or missing files from
copies (the nodes'
replicas, :mod:`hfq.catalog.replica`), moves what cannot be restored to ``_damaged/`` and
marks the lost numbers (``_claims/<n>.lost``), so the table opens at its newest intact version.
Every file a commit writes is also handed to the ``on_files`` listeners (the database
replicates them to the nodes).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hfq import faults
from hfq.catalog.files import live_writer, remove_table_files, transaction_of, writer_alive
from hfq.catalog.records import (
    Fragment,
    LoadRecord,
    Manifest,
    PartitionEntry,
    Partitions,
    PieceRef,
    build_history,
    build_ledger,
    history_from_bytes,
    ledger_from_bytes,
    manifest_from_bytes,
    manifest_to_bytes,
    new_manifest,
    partition_entry,
    piece_from_bytes,
    record_time,
)
from hfq.errors import (
    CommitConflictError,
    HfqError,
    ManifestError,
    TableExistsError,
    TableNotFoundError,
)
from hfq.partition import Compo, Scheme
from hfq.schema import Schema, check_name
from hfq.storage.store import HOST, Store, temp_name

__all__ = ["Catalog", "FileNamer", "StaleReadError", "Transaction"]

log = logging.getLogger(__name__)

VERSIONS = "_versions"
PIECES = "_manifests"
CLAIMS = "_claims"
DAMAGED = "_damaged"
VACUUM_STATE = ".vacuum.json"
_MAX_ATTEMPTS = 10_000
_CACHED_RECORDS = 64
_CACHED_PIECES = 2048

FilesListener = Callable[[dict[str, bytes], list[str]], None]
"""``(files written: path -> bytes, files removed)`` -- paths relative to the root."""
Fetch = Callable[[list[str]], Mapping[str, Sequence[bytes]]]
"""Copies of catalog files kept elsewhere (the nodes): path -> candidate contents."""


class StaleReadError(CommitConflictError):
    """A change computed from rows that another writer changed meanwhile (a delete, update,
    upsert or keyed append read partitions that are not the same at the head): nothing was
    published; the writer computes its change again on the new head."""


def version_name(version: int) -> str:
    return f"{version:020d}.json"


class Catalog:
    """The tables under one root."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # version records never change once published: parsed ones are kept, keyed by path and
        # checked against the file's identity (a dropped and recreated table reuses numbers)
        self._records: OrderedDict[str, tuple[tuple[Any, ...], Manifest]] = OrderedDict()
        # pieces are named after their content: parsed ones are kept by name alone
        self._pieces: OrderedDict[str, Mapping[str, PartitionEntry]] = OrderedDict()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Manifest], None]] = []
        self._file_listeners: list[FilesListener] = []

    def on_commit(self, listener: Callable[[Manifest], None]) -> None:
        """Call ``listener(manifest)`` after every commit made through this catalog object."""
        self._listeners.append(listener)

    def on_files(self, listener: FilesListener) -> None:
        """Call ``listener(written, removed)`` with every catalog file this catalog object
        writes or removes (a commit's record, pieces and claim; forgotten versions): how
        the database keeps copies of the catalog on the nodes."""
        self._file_listeners.append(listener)

    def _tell(self, written: dict[str, bytes], removed: list[str]) -> None:
        for listener in self._file_listeners:
            listener(written, removed)

    # -- tables -------------------------------------------------------------------------------
    def tables(self) -> list[str]:
        out = []
        for name in self.store.listdir(""):
            if name.startswith("."):
                continue
            claimed = self._claimed(name)[0]
            if claimed is not None or self._newest(name, claimed) is not None:
                out.append(name)
        return sorted(out)

    def create(self, name: str, schema: Schema, partition_by: Scheme | Compo,
               sort_by: Iterable[str], options: Mapping[str, Any] | None = None, *,
               user: str | None = None) -> Manifest:
        check_name(name, "table")
        manifest = replace(new_manifest(name, schema, partition_by, sort_by, options or {}),
                           info={"user": user, "args": {}, "message": None, "job": None,
                                 "rows_added": 0, "rows_removed": 0, "partitions": 0,
                                 "files": 0})
        self.store.makedirs(f"{name}/{VERSIONS}")
        if self._claimed(name)[0] is not None or not self._publish(manifest):
            raise TableExistsError(f"table {name!r} already exists in {self.store.url}; "
                                   "drop it first or pick another name")
        claim, _ = self._claim(name, 0)
        try:   # no vacuum yet (hfq.catalog.vacuum); without the file the first one is full too
            _write_file(self.store, f"{name}/{VACUUM_STATE}", b"{}")
        except OSError:
            pass
        self._tell({self._record_path(name, 0): manifest_to_bytes(manifest), **claim}, [])
        return manifest

    def drop(self, name: str) -> None:
        """Remove the table's directory under the catalog root (its versions and any files)."""
        check_name(name, "table")
        claimed = self._claimed(name)[0]
        if claimed is None and self._newest(name, claimed) is None:
            self.snapshot(name)   # raises TableNotFoundError
        remove_table_files(self.store, name)

    # -- versions -----------------------------------------------------------------------------
    def snapshot(self, name: str, version: int | None = None) -> Manifest:
        """The manifest of ``version`` (default: the newest committed one).

        Raises :class:`~hfq.errors.ManifestError` when that version's files are damaged, or
        when the newest committed version's record is missing.
        """
        check_name(name, "table")
        claimed, lost = self._claimed(name)   # claims first: a claim follows its record
        head = self._newest(name, claimed)
        if head is None and claimed is None:
            known = ", ".join(self.tables()) or "none"
            raise TableNotFoundError(f"no table {name!r} in {self.store.url} (tables: {known})")
        if claimed is not None and (head is None or claimed > head) and claimed not in lost:
            path = self.store.path(self._record_path(name, claimed))
            raise ManifestError(
                f"table {name!r}: version {claimed} was committed but its record {path} is "
                f"missing (newest on record: {head}); hfq.connect(root, recover=True) or "
                "`hfq check --repair` opens the newest intact version", path=path, table=name,
                version=claimed)
        if head is None:
            raise ManifestError(f"table {name!r} has no intact version left (see `hfq check`)",
                                path=self.store.path(f"{name}/{VERSIONS}"), table=name)
        if version is None:
            version = head
        elif not self.on_record(name, version, head=head):
            raise TableNotFoundError(f"table {name!r} has no version {version} on record "
                                     f"(versions {_ranges(self.versions(name))})")
        return self._read(name, version)

    def _read(self, name: str, version: int, *, fresh: bool = False) -> Manifest:
        path = self._record_path(name, version)
        try:
            stamp = self.store.stamp(path)
            cached = self._records.get(path)
            if not fresh and stamp is not None and cached is not None and cached[0] == stamp:
                with self._lock:
                    self._records.move_to_end(path)
                return cached[1]
            data = self.store.read_bytes(path)
        except FileNotFoundError:
            raise TableNotFoundError(f"table {name!r}: version {version} is not on record any "
                                     "more (forgotten by vacuum meanwhile)") from None
        where = self.store.path(path)
        manifest = manifest_from_bytes(data, where, PieceReader(self, name, fresh),
                                       table=name, version=version)
        if manifest.table != name or manifest.version != version:
            raise ManifestError(
                f"catalog file {where} is inconsistent: it holds version {manifest.version} of "
                f"table {manifest.table!r}, its name says version {version} of {name!r}; "
                "hfq.connect(root, recover=True) or `hfq check --repair` opens the newest "
                "intact version", path=where, table=name, version=version)
        if stamp is not None and not fresh:
            with self._lock:
                self._records[path] = (stamp, manifest)
                if len(self._records) > _CACHED_RECORDS:
                    self._records.popitem(last=False)
        return manifest

    def committed_at(self, name: str, version: int) -> float:
        """When ``version`` was committed (its record's ``committed_at``), read without
        building the whole manifest when it is not cached: what a search by time looks at.
        Raises :class:`~hfq.errors.TableNotFoundError` when it is not on record."""
        path = self._record_path(name, version)
        try:
            stamp = self.store.stamp(path)
            cached = self._records.get(path)
            if stamp is not None and cached is not None and cached[0] == stamp:
                return cached[1].committed_at
            data = self.store.read_bytes(path)
        except FileNotFoundError:
            raise TableNotFoundError(f"table {name!r}: version {version} is not on record any "
                                     "more (forgotten by vacuum meanwhile)") from None
        return record_time(data, self.store.path(path), table=name, version=version)

    def piece(self, name: str, ref: PieceRef, *, fresh: bool = False
              ) -> Mapping[str, PartitionEntry]:
        """The partitions of one manifest piece (read once, then from the cache)."""
        path = f"{name}/{PIECES}/{ref.name}"
        if not fresh:
            with self._lock:
                cached = self._pieces.get(path)
                if cached is not None:
                    self._pieces.move_to_end(path)
                    return cached
        where = self.store.path(path)
        try:
            data = self.store.read_bytes(path)
        except FileNotFoundError:
            raise ManifestError(f"catalog file {where} is missing (a manifest piece of table "
                                f"{name!r}); hfq.connect(root, recover=True) or `hfq check "
                                "--repair` opens the newest intact version", path=where,
                                table=name) from None
        entries = piece_from_bytes(data, where, ref, name)
        self._keep_piece(path, entries)
        return entries

    def _keep_piece(self, path: str, entries: Mapping[str, PartitionEntry]) -> None:
        with self._lock:
            self._pieces[path] = entries
            if len(self._pieces) > _CACHED_PIECES:
                self._pieces.popitem(last=False)

    def loads(self, manifest: Manifest) -> list[LoadRecord]:
        """The files ``load_csv`` loaded into the table up to ``manifest``'s version."""
        if manifest.loads is None:
            return []
        data, where = self._named_piece(manifest, manifest.loads, "the loaded-files ledger")
        return ledger_from_bytes(data, where, manifest.loads, manifest.table, manifest.table_id)

    def _named_piece(self, manifest: Manifest, name: str, what: str) -> tuple[bytes, str]:
        """The bytes of piece ``name`` of ``manifest``'s table and where it is; a missing one
        is a :class:`~hfq.errors.ManifestError` naming ``what`` it is."""
        path = f"{manifest.table}/{PIECES}/{name}"
        where = self.store.path(path)
        try:
            return self.store.read_bytes(path), where
        except FileNotFoundError:
            raise ManifestError(f"catalog file {where} is missing ({what} of version "
                                f"{manifest.version} of table {manifest.table!r})", path=where,
                                table=manifest.table, version=manifest.version) from None

    def history_detail(self, manifest: Manifest) -> dict[str, Any] | None:
        """What the commit of ``manifest`` did per partition (rows added, removed) and the
        source files it loaded (:func:`~hfq.catalog.records.history_from_bytes`); None for
        a version whose commit recorded none (version 0, a schema change, or written before
        commits recorded it)."""
        if manifest.history is None:
            return None
        data, where = self._named_piece(manifest, manifest.history, "the history")
        return history_from_bytes(data, where, manifest.history, manifest.table,
                                  manifest.table_id)

    def versions(self, name: str) -> list[int]:
        """Every version number on record, oldest first: a listing of ``_versions`` (costs
        the number of versions; :meth:`head` and :meth:`on_record` do not)."""
        return sorted(int(n[:-5]) for n in self.store.listdir(f"{name}/{VERSIONS}")
                      if n.endswith(".json") and n[:-5].isdigit())

    def head(self, name: str) -> int | None:
        """The newest version number on record (None: no table), without listing the
        versions (see :meth:`_newest`)."""
        check_name(name, "table")
        return self._newest(name, self._claimed(name)[0])

    def on_record(self, name: str, version: int, *, head: int | None = None) -> bool:
        """Whether ``version``'s record is there (one existence check, no listing);
        ``head``: the newest number, when the caller knows it."""
        if head is None:
            head = self.head(name)
        return head is not None and 0 <= version <= head and \
            (version == head or self.store.exists(self._record_path(name, version)))

    def _newest(self, name: str, claimed: int | None) -> int | None:
        """The newest record's number, found from the highest claim (:meth:`_claimed`, read
        first) by probing forward -- no listing of the versions.

        A claim is written just after its record is published and the claims below it are
        removed then, so the highest claim is a hint of the head that costs one small
        listing: the truth stays the records.  Numbers are handed out one above the newest
        record or claim, so the records above the highest claim (commits that died or are
        running between their publish and their claim) follow it without a gap: probing
        ``claimed + 1, claimed + 2, ...`` until one is absent finds the newest.  When the
        claimed number's own record is absent (withdrawn by its commit, lost, deleted) and
        the next one too, or there is no claim (a table written before claims), the
        ``_versions`` listing decides, as it always did.
        """
        if claimed is None:
            return self._head(name)
        if not self.store.exists(self._record_path(name, claimed)):
            if not self.store.exists(self._record_path(name, claimed + 1)):
                return self._head(name)
            claimed += 1
        while self.store.exists(self._record_path(name, claimed + 1)):
            claimed += 1
        return claimed

    def _head(self, name: str, versions: list[int] | None = None) -> int | None:
        """The newest version number by listing them all."""
        versions = self.versions(name) if versions is None else versions
        return versions[-1] if versions else None

    def _claimed(self, name: str) -> tuple[int | None, set[int]]:
        """The highest version number ever published (None: no claim) and the numbers
        :meth:`check` gave up as lost."""
        numbers, lost = [], set()
        for n in self.store.listdir(f"{name}/{CLAIMS}"):
            if n.isdigit():
                numbers.append(int(n))
            elif n.endswith(".lost") and n[:-5].isdigit():
                lost.add(int(n[:-5]))
        return (max(numbers) if numbers else None), lost

    @staticmethod
    def _record_path(name: str, version: int) -> str:
        return f"{name}/{VERSIONS}/{version_name(version)}"

    def _claim(self, name: str, version: int) -> tuple[dict[str, bytes], list[str]]:
        """Mark ``version`` as published; claims below it go.  The files written, removed."""
        rel = f"{name}/{CLAIMS}/{version:020d}"
        removed = []
        try:
            self.store.makedirs(f"{name}/{CLAIMS}")
            self.store.write_bytes(rel, b"")
            for n in self.store.listdir(f"{name}/{CLAIMS}"):
                number = n[:-5] if n.endswith(".lost") else n
                if number.isdigit() and int(number) < version:
                    self.store.remove(f"{name}/{CLAIMS}/{n}")
                    removed.append(f"{name}/{CLAIMS}/{n}")
        except OSError as exc:   # the version is committed; only its number's guard is missing
            log.warning("table %s: version %d is committed but marking its number failed (%s)",
                        name, version, exc)
            return {}, removed
        return {rel: b""}, removed

    def _publish(self, manifest: Manifest, *, sync: bool = False,
                 data: bytes | None = None, txn: Transaction | None = None) -> bool:
        """Create ``manifest``'s record (``data``: its bytes, when made already) if its
        number is free; whether it was.  ``txn``'s :attr:`~Transaction.published` follows:
        None while the record is being made visible (a failure there leaves it unknown),
        then whether it won."""
        final = self._record_path(manifest.table, manifest.version)
        tmp = temp_name(final)
        try:
            self.store.write_bytes(tmp, manifest_to_bytes(manifest) if data is None else data,
                                   sync=sync)
        except BaseException:   # e.g. a full disk: no temporary left behind
            self.store.remove(tmp)
            raise
        if txn is not None:
            txn.published = None
        won = self.store.create_exclusive(tmp, final)
        if txn is not None:
            txn.published = won
        if won and sync:
            self.store.fsync(f"{manifest.table}/{VERSIONS}")
        return won

    def _store_pieces(self, manifest: Manifest, sync: bool) -> list[str]:
        """Write the pieces ``manifest`` made that are not stored yet; the paths written."""
        written = []
        for name, data in manifest.pending.items():
            rel = f"{manifest.table}/{PIECES}/{name}"
            if self.store.exists(rel):
                continue
            self.store.makedirs(f"{manifest.table}/{PIECES}")
            tmp = temp_name(rel)
            try:
                self.store.write_bytes(tmp, data, sync=sync)
                self.store.rename(tmp, rel)
            except BaseException:
                self.store.remove(tmp)
                raise
            written.append(rel)
        return written

    def commit(self, txn: Transaction, op: str, *, sync: bool = False) -> Manifest:
        """Publish the newest version + ``txn``'s change as the next version; the new manifest.

        Every attempt starts from the newest committed version (not from the transaction's
        base), numbered above it and above every number ever claimed.  A publish that still
        lands below the head (versions forgotten meanwhile) is withdrawn and retried, so a
        commit is only reported once it is the head or an ancestor of it -- a head made on
        top of this version already holds its change, which a retry would apply twice.  The
        pieces it wrote are removed when it fails before its version was published (they are
        named after the transaction: no other version shares them); once ``txn.published`` is
        not False (:attr:`Transaction.published`) a failure leaves them, and the writer leaves
        its data files: the version may be on record and names them.

        Raises
        ------
        CommitConflictError
            The table was dropped and re-created, or a file the change replaces is gone (another
            writer compacted or rewrote the partition); nothing was published.
        """
        name = txn.base.table
        written: list[str] = []
        try:
            for attempt in range(_MAX_ATTEMPTS):
                # the claims before the head: a claim follows its record, so a commit made
                # in between is in the head read next.  (The head first, then a claim made
                # in between, would number this commit above one it does not hold: a lost
                # append published as the newest version.)
                claimed = self._claimed(name)[0]
                faults.point("catalog.commit.between_claims_and_head")
                head = self.snapshot(name)
                number = max(head.version, -1 if claimed is None else claimed) + 1
                manifest = txn.apply(head, op, version=number)
                written += self._store_pieces(manifest, sync)
                record = manifest_to_bytes(manifest)
                faults.point("catalog.commit.before_publish")
                if not self._publish(manifest, sync=sync, data=record, txn=txn):
                    if attempt and attempt % 100 == 0:
                        log.info("table %s: commit of %s lost %d races, retrying", name, op,
                                 attempt)
                    continue
                faults.point("catalog.commit.before_claim")
                claim = self._claim(name, number)
                faults.point("catalog.commit.after_publish")
                top = self.head(name)
                if top is None:
                    raise TableNotFoundError(f"table {name!r} was dropped during this {op}")
                if top != manifest.version and not self._descends(name, top, manifest.version):
                    self.store.remove(self._record_path(name, manifest.version))
                    txn.published = False
                    continue
                return self._committed(manifest, claim, record)
        except BaseException:
            if txn.published is False:   # (a failure after the publish, e.g. reading the
                for rel in written:         # head back, leaves a committed version: its
                    self.store.remove(rel)  # pieces stay)
            raise
        raise CommitConflictError(f"table {name!r}: gave up after {_MAX_ATTEMPTS} "
                                  "attempts to commit against concurrent writers")

    def _descends(self, name: str, top: int, version: int) -> bool:
        """Whether version ``top`` was made on top of ``version`` (following the parents
        down); False when a version on the way is gone or names no parent."""
        while top > version:
            try:
                parent = self.version(name, top).parent
            except (FileNotFoundError, TableNotFoundError):
                return False
            if parent is None:
                return False
            top = parent
        return top == version

    def _committed(self, manifest: Manifest, claim: tuple[dict[str, bytes], list[str]],
                   record: bytes) -> Manifest:
        """Tell the listeners of a commit that won (``record``: its record's bytes); the
        version is kept in the cache of parsed records, so the next snapshot does not read
        back and parse what this process just wrote."""
        name = manifest.table
        path = self._record_path(name, manifest.version)
        files = {f"{name}/{PIECES}/{n}": data for n, data in manifest.pending.items()}
        files[path] = record
        files.update(claim[0])
        parts = manifest.partitions
        if isinstance(parts, Partitions):
            for ref in parts.refs.values():
                if ref.name in manifest.pending:
                    self._keep_piece(f"{name}/{PIECES}/{ref.name}", parts.group(ref.group))
        manifest = replace(manifest, pending={})
        try:
            stamp = self.store.stamp(path)
        except OSError:
            stamp = None
        if stamp is not None:
            with self._lock:
                self._records[path] = (stamp, manifest)
                if len(self._records) > _CACHED_RECORDS:
                    self._records.popitem(last=False)
        self._tell(files, claim[1])
        for listener in self._listeners:
            listener(manifest)
        return manifest

    def migrate(self, name: str) -> Manifest:
        """Write a format-1 table in format 2 now (one commit, ``op="migrate"``); any table's
        next commit does it anyway.  Returns the head (unchanged if it is format 2 already)."""
        head = self.snapshot(name)
        if isinstance(head.partitions, Partitions):
            return head
        return self.commit(Transaction(self, head), "migrate")

    # -- maintenance --------------------------------------------------------------------------
    def forget_versions(self, name: str, keep_versions: int | None, grace_s: float, *,
                        keep_for_s: float = 0.0, pinned: Iterable[int] = ()) -> int:
        """Forget versions (their records; vacuum then removes the files only they used);
        returns how many went.  Kept: the newest ``keep_versions`` (None: the newest one),
        every version in ``pinned`` (tagged, or in a database snapshot), and every version
        that was the newest at some instant of the last ``keep_for_s`` seconds -- or of the
        last ``grace_s``, so that a reader that planned against it recently can still read
        it.  A version superseded longer ago than both goes.
        """
        if keep_versions is not None and keep_versions < 1:
            raise ValueError("keep_versions must be at least 1")
        versions = self.versions(name)
        if not versions:
            raise TableNotFoundError(f"no table {name!r} in {self.store.url}")
        keep = set(pinned)
        now, window = time.time(), max(grace_s, keep_for_s)
        gone = []
        candidates = versions[:-(keep_versions or 1)]
        for old, newer in zip(candidates, versions[1:]):
            if old in keep:
                continue
            if now - self.version(name, newer).committed_at >= window:
                self.store.remove(self._record_path(name, old))
                gone.append(self._record_path(name, old))
        if gone:
            self._tell({}, gone)
        return len(gone)

    def kept_manifests(self, name: str) -> list[Manifest]:
        """Every version still on record (what vacuum must keep the files of)."""
        out = []
        for v in self.versions(name):
            try:
                out.append(self.version(name, v))
            except (FileNotFoundError, TableNotFoundError):   # forgotten meanwhile
                continue
        return out

    def version(self, name: str, version: int) -> Manifest:
        """The manifest of ``version``, read (or taken from the cache) without the head's
        checks :meth:`snapshot` makes: for walking many versions.  Raises
        :class:`~hfq.errors.TableNotFoundError` when it is not on record."""
        check_name(name, "table")
        return self._read(name, version)

    def list_pieces(self, name: str) -> list[tuple[str, float]]:
        """The manifest piece files of ``name`` (path, mtime), temporaries left out."""
        return [(rel, mtime) for rel, mtime in self.store.walk_files(f"{name}/{PIECES}")
                if not rel.rsplit("/", 1)[-1].startswith(".")]

    def sweep_pieces(self, name: str, grace_s: float, *,
                     listed: list[tuple[str, float]] | None = None,
                     referenced: set[str] | None = None) -> int:
        """Remove the manifest pieces no kept version references (left by a writer that died
        or lost its commit, or by versions forgotten); returns how many went.

        The pieces are listed first, the kept versions read after, so a piece a commit
        publishes meanwhile is either not listed or referenced -- a caller passing
        ``listed`` (:meth:`list_pieces`) and ``referenced`` (names of the pieces and ledgers
        kept versions use, a superset is fine) must have taken them in that order.  A piece
        of a transaction still running (on this host: its process is alive and, for this
        process, the transaction is not finished) or younger than ``grace_s`` (written on
        another host) stays.
        """
        if listed is None:
            listed = self.list_pieces(name)
        if not listed:
            return 0
        writer = live_writer()
        if referenced is None:
            referenced = set()
            for m in self.kept_manifests(name):
                if isinstance(m.partitions, Partitions):
                    referenced |= {r.name for r in m.partitions.refs.values()}
                if m.loads:
                    referenced.add(m.loads)
                if m.history:
                    referenced.add(m.history)
        now, gone = time.time(), []
        for rel, mtime in listed:
            base = rel.rsplit("/", 1)[-1]
            if base in referenced:
                continue
            txn = transaction_of(base)
            alive = writer_alive(base)
            mine = txn is not None and txn.split("-")[1:3] == [writer[0], str(writer[1])]
            if (mine and txn not in writer[2]) or alive is False or \
                    (alive is None and now - mtime >= grace_s):
                self.store.remove(rel)
                gone.append(rel)
        if gone:
            self._tell({}, gone)
        return len(gone)

    # -- self-defence -------------------------------------------------------------------------
    def check(self, names: Iterable[str] | None = None, *, repair: bool = False,
              fetch: Fetch | None = None) -> list[dict[str, str]]:
        """Read every catalog file of ``names`` (default: every table) back and report each
        damaged, missing or inconsistent one: rows of ``table``, ``version``, ``file``,
        ``problem`` and ``action``.  An empty list: the catalog is intact.

        ``repair``: restore each bad file from an intact copy ``fetch`` finds (the nodes'
        replicas), then move what is still bad to ``<table>/_damaged/`` and mark the numbers
        of lost versions, so the table opens at its newest intact version (and no number is
        ever used twice).
        """
        rows: list[dict[str, str]] = []
        for name in (self.tables() if names is None else names):
            problems = self._problems(name)
            if repair and problems and fetch is not None:
                restored = self._restore(name, problems, fetch)
                if restored:
                    rows += [_row(name, v, path, why, "restored from a replica")
                             for v, path, why in problems if path in restored]
                    problems = self._problems(name)
            if repair and problems:
                rows += self._quarantine(name, problems)
            else:
                rows += [_row(name, v, path, why, "none (check --repair)")
                         for v, path, why in problems]
        return rows

    def _problems(self, name: str) -> list[tuple[int | None, str, str]]:
        """(version, file, problem) of every bad catalog file of ``name``."""
        out: list[tuple[int | None, str, str]] = []
        intact: dict[int, Manifest] = {}
        for v in self.versions(name):
            try:
                m = self._read(name, v, fresh=True)
                parts = m.partitions
                if isinstance(parts, Partitions):
                    for ref in parts.refs.values():
                        self.piece(name, ref, fresh=True)
                self.loads(m)
                self.history_detail(m)
                intact[v] = m
            except ManifestError as exc:
                out.append((v, exc.path or self._record_path(name, v), str(exc)))
            except TableNotFoundError:   # forgotten meanwhile
                continue
        if intact:
            newest = intact[max(intact)]
            for v, m in intact.items():
                if m.table_id != newest.table_id:
                    out.append((v, self.store.path(self._record_path(name, v)),
                                f"version {v} belongs to another incarnation of table "
                                f"{name!r} (table id {m.table_id}, newest {newest.table_id})"))
        claimed, lost = self._claimed(name)
        newest_v = max(intact) if intact else -1
        bad = {v for v, _, _ in out}
        if claimed is not None:
            for v in range(newest_v + 1, claimed + 1):
                if v not in bad and v not in lost and v not in intact and \
                        self.store.exists(f"{name}/{CLAIMS}/{v:020d}"):
                    out.append((v, self.store.path(self._record_path(name, v)),
                                f"version {v} was committed but its record is missing"))
        return out

    def _restore(self, name: str, problems: list[tuple[int | None, str, str]],
                 fetch: Fetch) -> set[str]:
        """Install intact copies of the problem files; the paths (absolute) restored."""
        rels = {self._rel(path): path for _, path, _ in problems}
        found = fetch(sorted(rels))
        restored = set()
        for rel, candidates in found.items():
            for data in candidates:
                if self._valid(name, rel, data):
                    _write_file(self.store, rel, data)
                    restored.add(rels[rel])
                    break
        with self._lock:
            self._records.clear()
        return restored

    def _valid(self, name: str, rel: str, data: bytes) -> bool:
        """Is ``data`` an intact copy of catalog file ``rel``?"""
        base = rel.rsplit("/", 1)[-1]
        try:
            if f"/{VERSIONS}/" in rel:
                m = manifest_from_bytes(data, rel)
                return m.table == name and version_name(m.version) == base
            if f"/{PIECES}/" in rel:
                return base.endswith(f".{hashlib.sha256(data).hexdigest()[:32]}.json")
        except HfqError:
            return False
        return f"/{CLAIMS}/" in rel

    def adopt(self, copies: Mapping[str, Sequence[bytes]]) -> list[str]:
        """Install the catalog files of ``copies`` (path -> candidate contents, e.g. every
        node's replica) that this root lacks, each checked first; returns the paths installed.
        How a new head recovers the catalog after losing its disk."""
        installed = []
        order = sorted(copies, key=lambda r: f"/{VERSIONS}/" in r)   # records last
        for rel in order:
            parts = rel.split("/")
            if len(parts) != 3 or self.store.exists(rel):
                continue
            for data in copies[rel]:
                if self._valid(parts[0], rel, data):
                    _write_file(self.store, rel, data)
                    installed.append(rel)
                    break
        return installed

    def _quarantine(self, name: str, problems: list[tuple[int | None, str, str]]
                    ) -> list[dict[str, str]]:
        """Move bad records aside and mark lost numbers: the table opens at its newest
        intact version."""
        rows = []
        self.store.makedirs(f"{name}/{DAMAGED}")
        self.store.makedirs(f"{name}/{CLAIMS}")
        stamp = time.strftime("%Y%m%dT%H%M%S")
        for version, path, why in problems:
            rel = self._rel(path)
            moved = []
            for doomed in {rel, self._record_path(name, version) if version is not None
                           else rel}:
                if self.store.exists(doomed):
                    aside = f"{name}/{DAMAGED}/{doomed.rsplit('/', 1)[-1]}.{stamp}"
                    self.store.rename(doomed, aside)
                    moved.append(aside)
            action = f"moved to {', '.join(moved)}" if moved else "nothing left to move"
            if version is not None:
                self.store.write_bytes(f"{name}/{CLAIMS}/{version:020d}.lost", b"")
                action += f"; version {version} given up (its number is not reused)"
            rows.append(_row(name, version, path, why, action))
        with self._lock:
            self._records.clear()
            self._pieces.clear()
        head = self._head(name)
        for row in rows:
            row["action"] += f"; the table opens at version {head}" if head is not None else \
                "; no intact version is left"
        return rows

    def _rel(self, path: str) -> str:
        """A path under this root, relative to it (paths in errors are absolute)."""
        root = self.store.path("")
        if path.startswith(root):
            return path[len(root):].lstrip("/")
        return path


def _layout(m: Manifest) -> int:
    """The column layout a version writes its files in (:mod:`hfq.catalog.evolution`)."""
    return int((m.options.get("evolution") or {}).get("layout", 0))


def _write_file(store: Store, rel: str, data: bytes) -> None:
    store.makedirs(rel.rsplit("/", 1)[0])
    tmp = temp_name(rel)
    store.write_bytes(tmp, data)
    store.rename(tmp, rel)


def _row(table: str, version: int | None, path: str, problem: str, action: str
         ) -> dict[str, str]:
    return {"table": table, "version": "" if version is None else str(version), "file": path,
            "problem": problem, "action": action}


def _ranges(numbers: list[int]) -> str:
    """``0..4, 7`` for [0, 1, 2, 3, 4, 7]."""
    out, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(str(n) if n == start else f"{start}..{n}")
            start = None
    return ", ".join(out) or "none"


@dataclass(frozen=True)
class PieceReader:
    """Reads the pieces of one table's versions through its catalog's cache (picklable
    only as far as the catalog's store is; a manifest shipped to a node carries its
    partitions instead, see :class:`~hfq.catalog.records.Partitions`)."""

    catalog: Catalog
    table: str
    fresh: bool = False

    def __call__(self, ref: PieceRef) -> Mapping[str, PartitionEntry]:
        return self.catalog.piece(self.table, ref, fresh=self.fresh)


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
    to other nodes, files loaded (:meth:`record_load`).  Writing and removing files is the
    write operator's job (:mod:`hfq.write`).
    """

    def __init__(self, catalog: Catalog, base: Manifest) -> None:
        self.catalog = catalog
        self.base = base
        self.id = f"{int(time.time() * 1000):013d}-{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.namer = FileNamer(base.table, self.id)
        self.added: dict[str, tuple[tuple[Any, ...], list[Fragment]]] = {}
        self.removed: dict[str, set[str]] = {}
        self.moved: dict[str, tuple[str, ...]] = {}
        self.loaded: list[tuple[str, int, str]] = []
        # -- the history entry (records.Manifest.info) and how the change validates itself --
        self.user: str | None = None
        self.args: Mapping[str, Any] = {}
        self.message: str | None = None
        self.job: str | None = None
        self.counts: dict[str, tuple[int, int]] | None = None
        """Rows (added, removed) per partition, when the writer knows them better than its
        files say (a delete rewrites a file of 100 rows as one of 90: 10 removed)."""
        self.check_reads: Callable[[Manifest], bool] | None = None
        """For a change computed from rows it read: whether what it read is the same at
        ``head`` (False: :class:`StaleReadError`, nothing published)."""
        self.reshape: Callable[[Manifest], tuple[Schema, Mapping[str, Any], Sequence[str]]] \
            | None = None
        """For a schema change: the head's new schema, options and sort columns."""
        self.published: bool | None = False
        """Whether this change's version is on record, as :meth:`Catalog.commit` knows it,
        also when the commit raised: False -- it is not (not published yet, its publish lost
        the race or was withdrawn), its files may go; True -- published: its files stay,
        whatever failed after; None -- the publish itself failed half-way (the record may be
        there): its files stay too (``vacuum()`` removes them if no version names them)."""

    def add(self, partition: str, key: Sequence[Any], fragment: Fragment) -> None:
        self.added.setdefault(partition, (tuple(key), []))[1].append(fragment)

    def replace(self, partition: str, files: Iterable[str]) -> None:
        self.removed.setdefault(partition, set()).update(files)

    def move(self, file: str, nodes: Iterable[str]) -> None:
        """Record that ``file`` (already copied there) is now held by ``nodes``."""
        self.moved[file] = tuple(nodes)

    def record_load(self, path: str, size: int, sha256: str) -> None:
        """Record that this change loads the file at ``path`` (its size and SHA-256)."""
        self.loaded.append((path, size, sha256))

    def apply(self, head: Manifest, op: str, *, version: int | None = None) -> Manifest:
        """``head`` with this change applied, as version ``version`` (default: the next)."""
        if head.table_id != self.base.table_id:
            raise CommitConflictError(
                f"table {head.table!r} was dropped and created again while this {op} was "
                "running; nothing was committed")
        if (self.added or self.removed) and _layout(head) != _layout(self.base):
            raise CommitConflictError(
                f"table {head.table!r}: its columns changed (version {head.version}) during "
                f"this {op}; nothing was committed, run it again")
        if self.check_reads is not None and head.version != self.base.version and \
                not self.check_reads(head):
            raise StaleReadError(
                f"table {head.table!r}: rows this {op} read were changed by version "
                f"{head.version}; nothing was committed")
        changes: dict[str, PartitionEntry | None] = {}
        counts: dict[str, list[int]] = {}

        def current(path: str) -> PartitionEntry | None:
            return changes[path] if path in changes else head.partitions.get(path)

        stand_in: set[str] = set()   # partitions whose added fragments replace others
        for path, files in self.removed.items():
            if not files:
                continue
            entry = current(path)
            present = {f.file for f in entry.fragments} if entry is not None else set()
            if entry is None or not files <= present:
                raise CommitConflictError(
                    f"table {head.table!r}, partition {path}: another writer changed it "
                    f"during this {op}; nothing was committed, run it again")
            counts.setdefault(path, [0, 0])[1] += sum(f.rows for f in entry.fragments
                                                      if f.file in files)
            # what replaces fragments stands where the first of them stood: rows that sort
            # equal keep their stored (arrival) order, whatever was appended after them
            first = next(i for i, f in enumerate(entry.fragments) if f.file in files)
            added = self.added.get(path, ((), []))[1]
            changes[path] = entry.with_fragments(
                [*(f for f in entry.fragments[:first] if f.file not in files), *added,
                 *(f for f in entry.fragments[first:] if f.file not in files)])
            stand_in.add(path)
        for path, (key, fragments) in self.added.items():
            counts.setdefault(path, [0, 0])[0] += sum(f.rows for f in fragments)
            if path in stand_in:
                continue
            entry = current(path)
            changes[path] = partition_entry(key, fragments) if entry is None else \
                entry.with_fragments([*entry.fragments, *fragments])
        prefix = len(f"{head.table}/data/")
        for path in {f[prefix:].rsplit("/", 1)[0] for f in self.moved}:
            entry = current(path)   # files compacted away meanwhile simply are not moved
            if entry is not None:
                changes[path] = entry.with_fragments(
                    f.placed_on(self.moved[f.file]) if f.file in self.moved else f
                    for f in entry.fragments)
        number = head.version + 1 if version is None else version
        ledger = None
        if self.loaded:
            records = [*self.catalog.loads(head),
                       *(LoadRecord(p, s, h, number) for p, s, h in self.loaded)]
            ledger = build_ledger(head.table, head.table_id, records, self.id)
        per_partition = {p: (int(c[0]), int(c[1])) for p, c in counts.items()}
        if self.counts is not None:
            per_partition = dict(self.counts)
        history = None
        if per_partition or self.loaded:
            history = build_history(head.table, head.table_id, number, per_partition,
                                    self.loaded, self.id)
        info = {"user": self.user, "args": dict(self.args), "message": self.message,
                "job": self.job,
                "rows_added": sum(a for a, _ in per_partition.values()),
                "rows_removed": sum(r for _, r in per_partition.values()),
                "partitions": len(per_partition), "files": len(self.loaded)}
        schema, options, sort_by = (None, None, None) if self.reshape is None else \
            self.reshape(head)
        return head.evolve(changes, op, version=number, origin=self.id, loads=ledger,
                           load=PieceReader(self.catalog, head.table), info=info,
                           history=history, schema=schema, options=options, sort_by=sort_by)

