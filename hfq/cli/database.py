"""The database and table the global options name, and how the commands describe a table."""

from __future__ import annotations

import argparse
from typing import Any

import hfq
from hfq.cli.args import UsageError

__all__ = ["open_db", "open_table", "scheme_text", "table_stats"]


def open_db(args: argparse.Namespace) -> hfq.Database:
    """The database of ``--root`` (embedded) or ``--address`` (a cluster)."""
    if args.address:
        if args.root:
            raise UsageError("--root and --address exclude each other: on a cluster each "
                             "node's root is its HFQ_NODE_ROOT")
        return hfq.connect(address=args.address)
    return hfq.connect(args.root)


def open_table(args: argparse.Namespace) -> hfq.Table:
    """The table named by the command's ``table`` argument."""
    return open_db(args)[args.table]


def table_stats(table: hfq.Table) -> dict[str, Any]:
    """Table, version, rows, partitions, files and bytes of ``table``."""
    parts = table.partitions()
    return {"table": table.name, "version": table.version, "rows": len(table),
            "partitions": parts.height, "files": int(parts["files"].sum()),
            "bytes": int(parts["bytes"].sum())}


def scheme_text(scheme: Any) -> str:
    """``date / hash(symbol, 100)``: one word per partitioning level."""
    levels = scheme.levels() if hasattr(scheme, "levels") else [scheme]
    words = []
    for level in levels:
        spec = level.to_json() if hasattr(level, "to_json") else {}
        kind, column = spec.get("kind"), spec.get("column", "?")
        if kind == "value":
            words.append(column + (f" by {spec['by']}" if spec.get("by") else ""))
        elif kind == "hash":
            words.append(f"hash({column}, {spec.get('buckets')})")
        elif kind == "range":
            words.append(f"range({column}, {len(spec.get('boundaries', []))} boundaries)")
        else:
            words.append(repr(level))
    return " / ".join(words)
