"""What every job shares: where to run (``--address``, ``--root``) and connecting there.

Jobs import this as ``common``: ``python jobs/x.py`` puts ``jobs/`` first on ``sys.path``, locally
and under ``ray job submit`` alike.
"""

from __future__ import annotations

import argparse

import hfq


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
