"""``hfq create``, ``tables``, ``info``, ``partitions``, ``drop``: tables and what they hold."""

from __future__ import annotations

import argparse
import os
from typing import Any

import polars as pl

import hfq
from hfq.cli.args import Command, hash_spec, split
from hfq.cli.database import open_db, open_table, scheme_text, table_stats
from hfq.cli.render import emit_json, grid, show, size

__all__ = ["CREATE", "DROP", "INFO", "PARTITIONS", "TABLES"]


# -- hfq create --------------------------------------------------------------------------------
def _create_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("table", help="the new table's name")
    c.add_argument("--schema", required=True, type=str.upper,
                   choices=["TAQ", "TRADES", "L2", "READINGS", "DEVICE_INFO"],
                   help="a built-in schema")
    c.add_argument("--partition", required=True, metavar="COLUMN",
                   help="first level: one partition per value of COLUMN, e.g. date")
    c.add_argument("--hash", default=None, type=hash_spec, metavar="COLUMN:BUCKETS",
                   help="second level: BUCKETS hash buckets of COLUMN (100 if only COLUMN "
                        "is given), e.g. symbol:100 (default: none)")
    c.add_argument("--sort", default="", metavar="COLUMNS",
                   help="sort columns within a partition, comma separated (default: none)")


def _create(args: argparse.Namespace) -> int:
    schema = getattr(hfq.schemas, args.schema)
    scheme: hfq.Value | hfq.Compo = hfq.Value(args.partition)
    if args.hash:
        column, buckets = args.hash
        scheme = hfq.Compo(hfq.Value(args.partition), hfq.Hash(column, buckets))
    t = open_db(args).create_table(args.table, schema, partition_by=scheme,
                                   sort_by=split(args.sort) or ())
    if args.json:
        emit_json({"table": t.name, "version": t.version, "created": True,
                   "partitioning": scheme_text(scheme), "sort_by": split(args.sort) or []})
    else:
        print(f"created {t.name}: partitioned by {scheme_text(scheme)}")
    return 0


CREATE = Command("create", "create a table", _create_arguments, _create)


# -- hfq tables --------------------------------------------------------------------------------
def _no_arguments(_: argparse.ArgumentParser) -> None:
    return None


def _tables(args: argparse.Namespace) -> int:
    db = open_db(args)
    stats = [table_stats(db[name]) for name in db.tables()]
    if args.json:
        emit_json(stats)
    elif not stats:
        print(f"no tables in {args.root or os.environ.get('HFQ_ROOT') or './hfq_data'}")
    else:
        show(grid(
            ["table", "version", "rows", "partitions", "files", "size"],
            ([s["table"], s["version"], f"{s['rows']:,}", f"{s['partitions']:,}",
              f"{s['files']:,}", size(s["bytes"])] for s in stats),
            right=["version", "rows", "partitions", "files", "size"]))
    return 0


TABLES = Command("tables", "list the tables: version, rows, partitions, files, bytes",
                 _no_arguments, _tables)


# -- hfq info ----------------------------------------------------------------------------------
def _table_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", help="the table")


def _info(args: argparse.Namespace) -> int:
    t = open_table(args)
    m = t.snapshot()
    scheme: Any = getattr(m, "partition_by", None)
    sort_by = list(getattr(m, "sort_by", ()))
    info = table_stats(t)
    info.update(versions=t.versions(), partitioning=scheme_text(scheme),
                partition_by=scheme.to_json() if hasattr(scheme, "to_json") else repr(scheme),
                sort_by=sort_by,
                schema=[{"name": name, "type": getattr(ctype, "name", str(ctype))}
                        for name, ctype in t.schema])
    if args.json:
        emit_json(info)
        return 0
    versions = info["versions"]
    on_record = (f"{versions[0]}..{versions[-1]}" if len(versions) > 2
                 else ", ".join(map(str, versions)))
    show(grid(["", ""], show_header=False, rows=[
        ("table", t.name),
        ("version", f"{t.version} (on record: {on_record})"),
        ("rows", f"{info['rows']:,}"),
        ("partitions", f"{info['partitions']:,} ({info['files']:,} files, "
                       f"{size(info['bytes'])})"),
        ("partitioned by", info["partitioning"]),
        ("sorted by", ", ".join(sort_by) or "-"),
        ("schema", f"{len(info['schema'])} columns:"),
    ]), grid(["column", "type"], [(c["name"], c["type"]) for c in info["schema"]]))
    return 0


INFO = Command("info", "one table: version, rows, partitions, partitioning, sort order, schema",
               _table_argument, _info)


# -- hfq partitions ----------------------------------------------------------------------------
def _partitions_arguments(pt: argparse.ArgumentParser) -> None:
    pt.add_argument("table", help="the table")
    pt.add_argument("--all", action="store_true",
                    help="every partition (path, rows, bytes, files, nodes, checksum) instead "
                         "of the summary")


def _partitions(args: argparse.Namespace) -> int:
    t = open_table(args)
    parts = t.partitions()
    if args.all:
        return _all_partitions(args, t, parts)
    keys = parts["key"].to_list()
    scheme: Any = getattr(t.snapshot(), "partition_by", None)
    first = scheme.levels()[0].column if hasattr(scheme, "levels") else "key"
    groups: dict[str, list[int]] = {}
    for key, rows, nbytes, files in zip(keys, parts["rows"], parts["bytes"], parts["files"]):
        entry = groups.setdefault(key[0] if key else "", [0, 0, 0, 0])
        entry[0] += 1
        entry[1] += rows
        entry[2] += nbytes
        entry[3] += files
    paths = parts["partition"].to_list()
    summary = {**table_stats(t), "first_partition": paths[0] if paths else None,
               "last_partition": paths[-1] if paths else None, "by": first,
               "groups": [{first: k, "partitions": v[0], "rows": v[1], "bytes": v[2],
                           "files": v[3]} for k, v in groups.items()]}
    if args.json:
        emit_json(summary)
        return 0
    lines: list[Any] = [f"{t.name} version {t.version}: {summary['partitions']:,} partitions, "
                        f"{summary['rows']:,} rows, {summary['files']:,} files, "
                        f"{size(summary['bytes'])}"]
    if paths:
        lines += [f"first {paths[0]}, last {paths[-1]}", "",
                  grid([first, "partitions", "rows", "files", "size"],
                       ([g[first], f"{g['partitions']:,}", f"{g['rows']:,}",
                         f"{g['files']:,}", size(g["bytes"])] for g in summary["groups"]),
                       right=["partitions", "rows", "files", "size"]),
                  "", f"every partition: hfq partitions {t.name} --all"]
    show(*lines)
    return 0


def _all_partitions(args: argparse.Namespace, t: hfq.Table, parts: pl.DataFrame) -> int:
    if args.json:
        emit_json(parts.to_dicts())
        return 0
    show(f"{t.name} version {t.version}: {parts.height:,} partitions", "", grid(
        ["partition", "rows", "bytes", "files", "nodes", "checksum"],
        ([r["partition"], f"{r['rows']:,}", f"{r['bytes']:,}", r["files"],
          ",".join(r["nodes"]), r["checksum"]] for r in parts.iter_rows(named=True)),
        right=["rows", "bytes", "files"]))
    return 0


PARTITIONS = Command("partitions", "a table's partitions: a summary, or every one with --all",
                     _partitions_arguments, _partitions)


# -- hfq drop ----------------------------------------------------------------------------------
def _drop_arguments(dr: argparse.ArgumentParser) -> None:
    dr.add_argument("table", help="the table to remove, with all its files")


def _drop(args: argparse.Namespace) -> int:
    open_db(args).drop_table(args.table)
    if args.json:
        emit_json({"table": args.table, "dropped": True})
    else:
        print(f"dropped {args.table}")
    return 0


DROP = Command("drop", "remove a table and all its files", _drop_arguments, _drop)
