"""Older on-disk formats, for tests and benchmarks of migration and of the split catalog's
gains: :func:`rewrite_as_format_1`."""

from __future__ import annotations

import json
import os
import shutil

from hfq.catalog.catalog import Catalog
from hfq.storage.store import open_store

__all__ = ["rewrite_as_format_1"]


def rewrite_as_format_1(root: str, table: str) -> None:
    """Rewrite every version of ``table`` in the embedded database at ``root`` as hfq wrote
    it before the split catalog (format 1): one JSON file per version listing every
    partition -- no checksum, no manifest pieces, no version claims.  Each version file is
    replaced, never written through, so a copy whose files are hard links of another
    database's leaves that database as it was."""
    catalog = Catalog(open_store(root))
    for v in catalog.versions(table):
        m = catalog.snapshot(table, v)
        body = {"format": 1, "table": m.table, "version": m.version,
                "schema": m.schema.to_json(), "partition_by": m.partition_by.to_json(),
                "sort_by": list(m.sort_by), "op": m.op, "committed_at": m.committed_at,
                "options": dict(m.options), "table_id": m.table_id,
                "partitions": {p: e.to_json() for p, e in m.partitions.items()}}
        path = os.path.join(root, table, "_versions", f"{v:020d}.json")
        os.unlink(path)
        with open(path, "w") as f:
            json.dump(body, f, separators=(",", ":"))
    for sub in ("_manifests", "_claims"):
        shutil.rmtree(os.path.join(root, table, sub), ignore_errors=True)
