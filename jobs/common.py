"""What every job shares: where to run (``--address``, ``--root``) and connecting there.

Jobs import this as ``common``: ``python jobs/x.py`` puts ``jobs/`` first on ``sys.path``, locally
and under ``ray job submit`` alike.
"""

from __future__ import annotations

import argparse
import json

import hfq


def job_parser(doc: str) -> argparse.ArgumentParser:
    """A job's argument parser: its docstring's first paragraph, and the connection options."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_connection_args(p)
    return p


def parse(p: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse ``argv`` and check the connection options together."""
    args = p.parse_args(argv)
    check_connection_args(p, args)
    return args


def add_connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default="auto",
                   help='Ray cluster address ("auto", "host:port"), or "local": embedded at --root')
    p.add_argument("--root", help="database root with --address local (default: HFQ_ROOT or "
                                  "./hfq_data)")


def check_connection_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.root and args.address != "local":
        p.error("--root is for --address local; a cluster keeps data under each HFQ_NODE_ROOT")


def connect(args: argparse.Namespace) -> hfq.Database:
    if args.address == "local":
        return hfq.connect(args.root)
    return hfq.connect(address=args.address)


def add_selection_args(p: argparse.ArgumentParser, table: str = "quotes") -> None:
    """``--table``, ``--dates FIRST LAST`` and ``--symbols``: which rows a job reads."""
    p.add_argument("--table", default=table)
    p.add_argument("--dates", nargs=2, metavar=("FIRST", "LAST"),
                   help="inclusive ISO date range (default: every date)")
    p.add_argument("--symbols", nargs="+", help="only these symbols (default: all)")


def selection(args: argparse.Namespace) -> dict:
    """The ``dates=`` / ``symbols=`` arguments of a scan or an analytic."""
    return {"dates": tuple(args.dates) if args.dates else None, "symbols": args.symbols}


def print_result(result: dict) -> dict:
    """The job's result as one JSON line on stdout (what scripts and tests read)."""
    print(json.dumps(result, default=str), flush=True)
    return result
