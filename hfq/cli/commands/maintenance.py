"""``hfq compact``, ``verify``, ``rebalance``, ``repair``, ``check``, ``vacuum``: the upkeep of
files, copies and the catalog.  Every call but compact names the nodes it counted as down
(:mod:`hfq.maintenance`): a line of text, or ``"unreachable"`` in the JSON."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from hfq.cli.args import Command, positive
from hfq.cli.database import open_db, open_table, table_stats
from hfq.cli.render import emit_json, size

__all__ = ["CHECK", "COMPACT", "REBALANCE", "REPAIR", "VACUUM", "VERIFY"]


def _table_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", help="the table")


def _tables_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("tables", nargs="*", help="the tables (default: every table)")


def _say_unreachable(nodes: Sequence[str], consequence: str) -> None:
    """The line saying which nodes a maintenance call counted as down (none: no line)."""
    if nodes:
        print(f"counted as down (no answer to a ping, or gone): hfq node"
              f"{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}; {consequence}")


# -- hfq compact -------------------------------------------------------------------------------
def _compact(args: argparse.Namespace) -> int:
    t = open_table(args)
    before = table_stats(t)
    version = t.compact()
    after = table_stats(t)
    if args.json:
        emit_json({"table": t.name, "version_before": before["version"], "version": version,
                   "files_before": before["files"], "files": after["files"],
                   "bytes_before": before["bytes"], "bytes": after["bytes"]})
    elif version == before["version"]:
        print(f"{t.name}: every partition is one file already (version {version})")
    else:
        print(f"compacted {t.name}: {before['files']:,} files -> {after['files']:,} "
              f"({size(before['bytes'])} -> {size(after['bytes'])}), version {version}")
    return 0


COMPACT = Command("compact", "merge each partition's files into one sorted file",
                  _table_argument, _compact)


# -- hfq verify --------------------------------------------------------------------------------
def _verify(args: argparse.Namespace) -> int:
    t = open_table(args)
    checked = t.verify()
    if args.json:
        emit_json({"table": t.name, "version": t.version, "files_checked": int(checked),
                   "ok": True, "unreachable": list(checked.unreachable)})
    else:
        print(f"{checked} files match their checksums ({t.name} version {t.version})")
        _say_unreachable(checked.unreachable, "their copies were not checked")
    return 0


VERIFY = Command("verify", "check every file's checksum against the catalog",
                 _table_argument, _verify)


# -- hfq rebalance -----------------------------------------------------------------------------
def _rebalance(args: argparse.Namespace) -> int:
    """``hfq rebalance [TABLE ...]``: files moved per table."""
    db = open_db(args)
    for name in args.tables:
        db[name]   # an unknown table is a one-line error before any work
    moved = db.rebalance(args.tables or None)
    if args.json:
        emit_json({"moved": dict(moved), "unreachable": list(moved.unreachable)})
    else:
        for name, files in moved.items():
            print(f"{name}: {files:,} files moved" if files else f"{name}: nothing to move")
        _say_unreachable(moved.unreachable, "their copies were re-created on the others")
    return 0


REBALANCE = Command("rebalance", "give every partition its replicas on the live nodes; move "
                    "some to new nodes", _tables_argument, _rebalance)


# -- hfq repair --------------------------------------------------------------------------------
def _repair(args: argparse.Namespace) -> int:
    """``hfq repair [TABLE ...]``: exit status 1 when some copy could not be repaired."""
    db = open_db(args)
    for name in args.tables:
        db[name]   # an unknown table is a one-line error before any work
    rows = db.repair(args.tables or None)
    failed = [r for r in rows if not r["action"].startswith("repaired")]
    if args.json:
        emit_json({"repaired": len(rows) - len(failed), "not_repaired": len(failed),
                   "copies": rows, "unreachable": list(rows.unreachable)})
    elif not rows:
        print("every copy on the live nodes matches its checksum")
    else:
        for r in rows:
            print(f"{r['table']} {r['file'] or ''} on {r['node']}: {r['problem']}: "
                  f"{r['action']}")
        print(f"{len(rows) - len(failed)} copies repaired, {len(failed)} not")
    if not args.json:
        _say_unreachable(rows.unreachable, "their copies were not checked")
    return 1 if failed else 0


REPAIR = Command("repair", "replace every damaged or missing copy of a file by a good copy",
                 _tables_argument, _repair)


# -- hfq check ---------------------------------------------------------------------------------
def _check_arguments(ck: argparse.ArgumentParser) -> None:
    ck.add_argument("--repair", action="store_true",
                    help="restore bad catalog files from the nodes' copies, set aside what "
                         "cannot be restored: each table opens at its newest intact version")


def _check(args: argparse.Namespace) -> int:
    """``hfq check [--repair]``: exit status 1 when the catalog had a problem (with
    ``--repair``: when some table has no intact version left)."""
    db = open_db(args)
    rows = db.check(repair=args.repair)
    if args.json:
        emit_json({"ok": not rows, "problems": rows, "unreachable": list(rows.unreachable)})
    elif not rows:
        print(f"every catalog file of {len(db.tables())} tables is intact")
    else:
        for r in rows:
            print(f"{r['table']} version {r['version'] or '-'}: {r['problem']}\n"
                  f"    -> {r['action']}")
        print(f"{len(rows)} problems" + ("" if args.repair else
                                         "; `hfq check --repair` opens the newest intact "
                                         "versions"))
    if not args.json:
        _say_unreachable(rows.unreachable, "their copies of the catalog were not used")
    if args.repair:
        return 1 if any("no intact version" in r["action"] for r in rows) else 0
    return 1 if rows else 0


CHECK = Command("check", "read the catalog back: damaged, missing or inconsistent versions "
                "(--repair)", _check_arguments, _check)


# -- hfq vacuum --------------------------------------------------------------------------------
def _vacuum_arguments(va: argparse.ArgumentParser) -> None:
    va.add_argument("table", help="the table")
    va.add_argument("--keep-versions", type=positive, default=None, metavar="N",
                    help="also forget all but the newest N versions (default: keep all)")


def _vacuum(args: argparse.Namespace) -> int:
    t = open_table(args)
    result = t.vacuum(keep_versions=args.keep_versions)
    if args.json:
        emit_json({"table": t.name, "version": t.version, **result,
                   "unreachable": list(result.unreachable)})
    else:
        print(f"vacuumed {t.name}: " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                                 for k, v in result.items()))
        _say_unreachable(result.unreachable, "their files were left as they are")
    return 0


VACUUM = Command("vacuum", "remove files of writers that died; forget old versions",
                 _vacuum_arguments, _vacuum)
