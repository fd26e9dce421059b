"""``hfq ingest``: CSV files into a table, as one commit."""

from __future__ import annotations

import argparse

from hfq.cli.args import Command
from hfq.cli.database import open_db
from hfq.cli.render import emit_json

__all__ = ["INGEST"]


def _arguments(i: argparse.ArgumentParser) -> None:
    i.add_argument("table", help="the table to load into")
    i.add_argument("paths", nargs="+", help="CSV files: paths, globs or fsspec URLs")
    i.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                   help="a bad row stops the load (raise) or goes to --rejects (skip)")
    i.add_argument("--rejects", default=None, metavar="FILE",
                   help="where skipped rows go with --on-error skip (default: next to the "
                        "first CSV file)")
    i.add_argument("--no-progress", action="store_true", help="no progress bar")
    i.add_argument("--duplicates", choices=["raise", "append", "skip"], default="raise",
                   help="a file whose content the table loaded before: refuse the load "
                        "(raise), load it again (append) or leave it out (skip)")


def _ingest(args: argparse.Namespace) -> int:
    report = open_db(args).load_csv(args.table, args.paths, on_error=args.on_error,
                                    reject_path=args.rejects,
                                    progress=False if args.no_progress or args.json else None,
                                    duplicates=args.duplicates)
    if args.json:
        emit_json({"table": report.table, "files": [str(x) for x in report.files],
                   "rows": report.rows, "bytes": report.bytes, "seconds": report.seconds,
                   "rows_per_s": report.rows_per_s, "version": report.version,
                   "rejected": report.rejected, "reject_path": report.reject_path})
    else:
        print(report)
    return 0


INGEST = Command("ingest", "load CSV files (paths, globs, URLs) into a table as one commit",
                 _arguments, _ingest)
