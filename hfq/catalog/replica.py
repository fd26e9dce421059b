"""Copies of the catalog on a node's disk: what a node holds, reading and writing them.

These run on a node (through :meth:`hfq.runtime.Nodes.call_each`, as ``StoreCall`` s) and know
only its :class:`~hfq.storage.store.Store`.  A node keeps the catalog files of every table at
the same paths as the catalog root does (``<table>/_versions/``, ``<table>/_manifests/``,
``<table>/_claims/``), next to its data files, so a new head can gather the catalog back from
the nodes (:meth:`hfq.catalog.Catalog.adopt`) after losing its disk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hfq.storage.store import Store, temp_name

__all__ = ["CATALOG_DIRS", "catalog_files", "read_catalog_files", "write_catalog_files"]

CATALOG_DIRS = ("_versions", "_manifests", "_claims")
"""A table's catalog directories (the data lives in ``data/``)."""


def catalog_files(store: Store) -> list[str]:
    """Every catalog file under ``store``'s root (temporaries left out)."""
    out = []
    for table in store.listdir(""):
        if table.startswith("."):
            continue
        for sub in CATALOG_DIRS:
            out += [f"{table}/{sub}/{n}" for n in store.listdir(f"{table}/{sub}")
                    if not n.startswith(".")]
    return sorted(out)


def read_catalog_files(store: Store, rels: Iterable[str]) -> dict[str, bytes]:
    """The bytes of those of ``rels`` the store holds."""
    out = {}
    for rel in rels:
        try:
            out[rel] = store.read_bytes(rel)
        except FileNotFoundError:
            continue
    return out


def write_catalog_files(store: Store, written: Mapping[str, bytes],
                        removed: Iterable[str] = ()) -> int:
    """Write ``written`` (each through a temporary and a rename: a reader never sees half a
    file) and remove ``removed``; returns the files written."""
    for rel, data in written.items():
        store.makedirs(rel.rsplit("/", 1)[0])
        tmp = temp_name(rel)
        store.write_bytes(tmp, data)
        store.rename(tmp, rel)
    for rel in removed:
        store.remove(rel)
    return len(written)
