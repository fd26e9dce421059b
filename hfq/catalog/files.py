"""A node's files of a table: listing, sweeping orphans, removing a whole table.

These run on the node that holds the files (through :meth:`hfq.runtime.Nodes.call_each`) and
look only at names and ages, never at file contents.

A process also keeps the ids of its transactions still running (:func:`begin_transaction`,
:func:`end_transaction`): a file named after one of its own transactions that is not running
any more is a leftover of a failed write, which :func:`sweep` removes at once although the
process (the writer) is alive -- a long-lived driver that hit a full disk does not keep it full.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from dataclasses import dataclass

from hfq.storage.store import HOST, Store, pid_alive, temp_name, temp_owner_alive

__all__ = ["Listing", "Writer", "begin_transaction", "end_transaction", "list_changed_files",
           "list_table_files", "live_writer", "remove_files", "remove_prefixed",
           "remove_table_files", "sweep", "sweep_changed", "transaction_of", "writer_alive"]

_TRASH = ".trash"

Writer = tuple[str, int, frozenset[str]]
"""(host, pid, ids of the transactions it is running): what a process knows of its writes."""

_live: set[str] = set()
_live_lock = threading.Lock()


def begin_transaction(txn_id: str) -> None:
    """``txn_id`` of this process is running: its files are not leftovers."""
    with _live_lock:
        _live.add(txn_id)


def end_transaction(txn_id: str) -> None:
    """``txn_id`` committed (its files are referenced) or was abandoned (they are garbage)."""
    with _live_lock:
        _live.discard(txn_id)


def live_writer() -> Writer:
    """This process as a writer, for :func:`sweep` (take it *after* listing the files)."""
    with _live_lock:
        return HOST, os.getpid(), frozenset(_live)


def transaction_of(file_name: str) -> str | None:
    """The transaction id that starts a fragment name (``<ms>-<host>-<pid>-<rand>-...``), or
    of the fragment a temporary file (``.tmp~host~pid~rand~<name>``) becomes; None for other
    names."""
    if file_name.startswith(".tmp~"):
        parts = file_name.split("~", 4)
        if len(parts) != 5:
            return None
        file_name = parts[4]
    parts = file_name.split("-")
    if len(parts) < 5 or not parts[0].isdigit() or not parts[2].isdigit():
        return None
    return "-".join(parts[:4])


def _abandoned(file_name: str, writer: Writer | None) -> bool:
    """Named after a transaction of ``writer`` that is not running any more?"""
    txn = transaction_of(file_name)
    if writer is None or txn is None:
        return False
    host, pid, live = writer
    parts = txn.split("-")
    return parts[1] == host and int(parts[2]) == pid and txn not in live


def list_table_files(store: Store, table: str) -> list[tuple[str, float]]:
    """A node's files of ``table`` (the first step of a sweep: list before looking at the
    catalog, so a file committed after the listing is never touched)."""
    return store.walk_files(table)


def sweep(store: Store, table: str, referenced: set[str], grace_s: float,
          files: list[tuple[str, float]], committed: set[str] | None = None,
          writer: Writer | None = None) -> int:
    """See :func:`_sweep`; returns how many files went."""
    return len(_sweep(store, table, referenced, grace_s, files, committed, writer)[0])


def _sweep(store: Store, table: str, referenced: set[str], grace_s: float,
           files: list[tuple[str, float]], committed: set[str] | None = None,
           writer: Writer | None = None) -> tuple[list[str], list[str]]:
    """Remove from ``files`` (listed *before* ``referenced`` was computed) the data files no
    kept version places on this node, and leftover temporary files.

    ``writer``: the calling process's :func:`live_writer` (taken after the listing): files
    of its transactions that are not running any more go at once, whatever their age.

    ``committed``: every file any kept version references, on any node.  A file in it but not
    placed here is a stale copy (left by a rebalance) and goes once older than ``grace_s`` (a
    copy a rebalance is making right now is younger).  Otherwise never removed: files of a
    writer still running on this host, and files younger than ``grace_s`` whose writer runs
    elsewhere; files of writers that died on this host before committing go at once.

    Returns the files removed and the candidates spared (too young, writer alive): what the next
    sweep must look at again.
    """
    now = time.time()
    removed: list[str] = []
    spared: list[str] = []
    for rel, mtime in files:
        base = rel.rsplit("/", 1)[-1]
        if base.startswith(".tmp~"):
            doomed = not temp_owner_alive(base) or now - mtime > grace_s or \
                _abandoned(base, writer)
        elif rel.startswith(f"{table}/data/") and rel not in referenced:
            if committed is not None and rel in committed:
                doomed = now - mtime >= grace_s
            else:
                alive = writer_alive(base)
                doomed = alive is False or (alive is None and now - mtime >= grace_s) or \
                    _abandoned(base, writer)
        else:
            continue
        if doomed:
            store.remove(rel)
            removed.append(rel)
        else:
            spared.append(rel)
    return removed, spared


# -- incremental sweeps: a node looks only at what changed since its last sweep ----------------
_SLACK_S = 2.0
"""Directory times a little older than the last listing still count as changed (a file
system's clock ticks coarser than ``time.time``)."""


@dataclass(frozen=True)
class Listing:
    """What :func:`list_changed_files` found on a node: the candidate files (path, mtime),
    when the listing started (by the clock that stamps the node's files), and whether it
    covered every file."""

    files: list[tuple[str, float]]
    started: float
    full: bool


def list_changed_files(store: Store, table: str, since: float | None, depth: int,
                       look: list[str]) -> Listing:
    """The files of ``table`` on this node a sweep must look at (listed *before* the catalog
    is read, as :func:`list_table_files`).

    With ``since`` (when this node's last finished sweep started listing, by its clock) on a
    local disk: the files of the directories under ``data/`` changed since then (one
    ``stat`` per directory down to the partitions': a file written, renamed or removed
    changes its directory's time), of the partitions in ``look`` (named by the catalog, or
    where the last sweep spared a file), and the temporary files of the other directories.
    Otherwise (None, or a remote store) every file.  ``depth``: the number of partition
    levels (directories) under ``<table>/data``.
    """
    started = _disk_now(store, table)   # before listing: what changes from now on is newer
    root = getattr(store, "root", None)
    if since is None or not isinstance(root, str) or not getattr(store, "local", False):
        return Listing(store.walk_files(table), started, True)
    after = since - _SLACK_S
    base = os.path.join(root, table)
    changed = {p for p in look if all(c not in ("", ".", "..") for c in p.split("/"))}
    if _mtime(os.path.join(base, "data")) >= after:
        changed.add("")
    level = [""]
    for _ in range(depth):   # every directory down to the partitions': one stat each
        below = []
        for rel in level:
            for entry in _scan(os.path.join(base, "data", rel)):
                if entry.is_dir(follow_symlinks=False):
                    below.append(f"{rel}/{entry.name}" if rel else entry.name)
                    if _mtime(entry) >= after:
                        changed.add(below[-1])
        level = below
    files = []
    for sub in sorted(changed):   # (a partition's directory: anything below it as well)
        files += _files_in(base, f"data/{sub}" if sub else "data", table,
                           below=bool(sub) and sub.count("/") + 1 >= depth)
    for entry in _scan(base):
        if entry.is_dir(follow_symlinks=False) and entry.name != "data":
            files += _files_in(base, entry.name, table, temps_only=True)
    files += _files_in(base, "", table, temps_only=True)
    return Listing(files, started, False)


def _disk_now(store: Store, table: str) -> float:
    """The time by the clock that stamps ``table``'s directories (a shared disk's server may
    disagree with this node's): a file made and removed; this node's clock if that fails."""
    root = getattr(store, "root", None)
    if not isinstance(root, str) or not getattr(store, "local", False):
        return time.time()
    probe = os.path.join(root, temp_name(f"{table}/clock"))
    try:
        with open(probe, "wb"):
            pass
        try:
            return os.stat(probe).st_mtime
        finally:
            os.remove(probe)
    except OSError:
        return time.time()


def _mtime(entry: os.DirEntry[str] | str) -> float:
    try:
        return entry.stat(follow_symlinks=False).st_mtime if isinstance(entry, os.DirEntry) \
            else os.stat(entry, follow_symlinks=False).st_mtime
    except FileNotFoundError:   # removed meanwhile: nothing to look at, nothing lost
        return 0.0


def _scan(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _files_in(base: str, sub: str, table: str, *, temps_only: bool = False,
              below: bool = False) -> list[tuple[str, float]]:
    """The files directly in ``<table>/<sub>`` (only temporaries: ``temps_only``); with
    ``below``, those of its subdirectories too (under a partition's: never made by hfq)."""
    out = []
    prefix = f"{table}/{sub}/" if sub else f"{table}/"
    for entry in _scan(os.path.join(base, sub) if sub else base):
        if temps_only and not entry.name.startswith(".tmp~"):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                out.append((prefix + entry.name, entry.stat(follow_symlinks=False).st_mtime))
            elif below and entry.is_dir(follow_symlinks=False):
                out += _files_in(base, f"{sub}/{entry.name}", table, below=True)
        except FileNotFoundError:
            continue
    return out


def sweep_changed(store: Store, table: str, listing: Listing, referenced: set[str],
                  grace_s: float, committed: set[str], writer: Writer) -> tuple[int, list[str]]:
    """:func:`sweep` of a :func:`list_changed_files` listing.  Returns how many files went
    and the partitions where one was spared (the next sweep looks at them again)."""
    removed, spared = _sweep(store, table, referenced, grace_s, listing.files, committed,
                             writer)
    data = f"{table}/data/"
    return len(removed), sorted({rel[len(data):].rsplit("/", 1)[0] for rel in spared
                                 if rel.startswith(data)})


def remove_files(store: Store, rels: list[str]) -> int:
    for rel in rels:
        store.remove(rel)
    return len(rels)


def remove_prefixed(store: Store, table: str, prefix: str) -> int:
    """Remove ``table``'s files whose name starts with ``prefix`` (one transaction's)."""
    doomed = [rel for rel, _ in store.walk_files(table)
              if rel.rsplit("/", 1)[-1].startswith(prefix)]
    return remove_files(store, doomed)


def remove_table_files(store: Store, table: str) -> None:
    """Delete a table's directory: renamed away first, so no reader sees half of it."""
    if not store.exists(table):
        return
    trash = f"{_TRASH}/{table}-{uuid.uuid4().hex}"
    store.makedirs(_TRASH)
    store.rename(table, trash)
    store.remove_tree(trash)


def writer_alive(file_name: str) -> bool | None:
    """For a fragment named by :class:`~hfq.catalog.catalog.FileNamer`: is the process that
    would commit it running?  None when it cannot be told (another host, or a name hfq did
    not make)."""
    parts = file_name.split("-")
    if len(parts) < 5 or parts[1] != HOST or not parts[2].isdigit():
        return None
    return pid_alive(int(parts[2]))
