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

from hfq.storage.store import HOST, Store, pid_alive, temp_owner_alive

__all__ = ["Writer", "begin_transaction", "end_transaction", "list_table_files", "live_writer",
           "remove_files", "remove_prefixed", "remove_table_files", "sweep", "transaction_of",
           "writer_alive"]

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
    """Remove from ``files`` (listed *before* ``referenced`` was computed) the data files no
    kept version places on this node, and leftover temporary files.

    ``writer``: the calling process's :func:`live_writer` (taken after the listing): files
    of its transactions that are not running any more go at once, whatever their age.

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
            doomed = False
        if doomed:
            store.remove(rel)
            removed += 1
    return removed


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
