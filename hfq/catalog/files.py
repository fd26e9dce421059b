"""A node's files of a table: listing, sweeping orphans, removing a whole table.

These run on the node that holds the files (through :meth:`hfq.runtime.Nodes.call_each`) and
look only at names and ages, never at file contents.
"""

from __future__ import annotations

import time
import uuid

from hfq.storage.store import HOST, Store, pid_alive, temp_owner_alive

__all__ = ["list_table_files", "remove_files", "remove_prefixed", "remove_table_files", "sweep",
           "writer_alive"]

_TRASH = ".trash"


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
                alive = writer_alive(base)
                doomed = alive is False or (alive is None and now - mtime >= grace_s)
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
