"""The service's commands: ``serve``, ``user``, ``grant``, ``revoke``, ``quota``.

Run as ``python -m hfq.service <command> ...`` (``hfq serve``, ``hfq user`` ... once the
``hfq`` command's package takes them).  They work on the catalog root given by ``--root``
(or ``HFQ_ROOT``) -- whoever runs them can write the catalog, and so is trusted (see the
trust boundary in docs/service.md)::

    python -m hfq.service --root db user add ann --role analyst       # asks for a password
    python -m hfq.service --root db user add loader --service         # prints its key once
    python -m hfq.service --root db grant SELECT ON quotes TO analyst --where "ex IN ('N','P')" \\
        --hide mmid
    python -m hfq.service --root db grant analyst TO bob              # a role to a user
    python -m hfq.service --root db revoke SELECT ON quotes FROM analyst
    python -m hfq.service --root db quota analyst --max-rows 10000000 --timeout 60
    python -m hfq.service --root db serve --host 0.0.0.0 --port 8815 --cert c.pem --key k.pem

Examples
--------
>>> import tempfile, hfq
>>> root = tempfile.mkdtemp()
>>> _ = hfq.connect(root).create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
>>> main(["--root", root, "grant", "SELECT", "ON", "quotes", "TO", "analyst", "--hide", "mmid"])
0
>>> main(["--root", root, "grant", "--list"])
analyst  quotes  SELECT  rows: all  hidden: mmid
0
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys
from collections.abc import Sequence

import hfq
from hfq.errors import HfqError
from hfq.service.identity import Admin
from hfq.service.passwords import Passwords
from hfq.service.serving import ServiceConfig, serve
from hfq.service.state import SecurityStore

__all__ = ["main"]


def _password(args: argparse.Namespace, prompt: str) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass(prompt)
    if getpass.getpass("again: ") != first:
        raise HfqError("the two passwords differ")
    return first


def _admin(args: argparse.Namespace) -> Admin:
    db = hfq.connect(args.root)
    return Admin(SecurityStore(db.session), by=os.environ.get("HFQ_USER") or getpass.getuser(),
                 passwords=Passwords())


def _user(args: argparse.Namespace) -> int:
    admin = _admin(args)
    if args.action == "list":
        for u in admin.users():
            print(f"{u['user']}  {u['kind']}{'  admin' if u['admin'] else ''}  "
                  f"roles: {u['roles'] or '-'}")
        return 0
    if not args.name:
        raise HfqError(f"user {args.action}: name the user")
    if args.action == "add":
        password = None if args.service else _password(args, f"password for {args.name}: ")
        key = admin.add_user(args.name, password, service=args.service, admin=args.admin,
                             roles=args.role or ())
        if key:
            print(f"the key of service account {args.name} (shown once): {key}")
    elif args.action == "passwd":
        kind = next(u["kind"] for u in admin.users() if u["user"] == args.name) \
            if any(u["user"] == args.name for u in admin.users()) else "user"
        key = admin.set_password(args.name, None if kind == "service" else
                                 _password(args, f"new password for {args.name}: "))
        if key:
            print(f"the new key of service account {args.name} (shown once): {key}")
    else:
        admin.remove_user(args.name)
    return 0


def _grant(args: argparse.Namespace, revoke: bool) -> int:
    admin = _admin(args)
    if getattr(args, "list", False):
        for g in admin.grants():
            print(f"{g['grantee']}  {g['table']}  {g['privileges']}  rows: {g['rows'] or 'all'}"
                  f"  hidden: {g['hidden'] or '-'}")
        return 0
    words = args.words
    to = "FROM" if revoke else "TO"
    upper = [w.upper() for w in words]
    if len(words) == 3 and upper[1] == to:            # a role to / from a user
        (admin.revoke_role if revoke else admin.grant_role)(words[0], words[2])
        return 0
    if len(words) != 5 or upper[1] != "ON" or upper[3] != to:
        raise HfqError(f"usage: {'revoke' if revoke else 'grant'} PRIVILEGES ON TABLE {to} "
                       f"GRANTEE, or ROLE {to} USER")
    privileges = [p for p in words[0].split(",") if p]
    if revoke:
        admin.revoke(privileges, words[2], words[4])
    else:
        admin.grant(privileges, words[2], words[4], rows=args.where,
                    hide=[c for c in args.hide.split(",") if c] if args.hide else None)
    return 0


def _quota(args: argparse.Namespace) -> int:
    _admin(args).set_quota(args.grantee, max_concurrent=args.max_concurrent,
                           max_rows=args.max_rows, max_bytes=args.max_bytes,
                           timeout_s=args.timeout)
    return 0


def _serve(args: argparse.Namespace) -> int:
    db = hfq.connect(address=args.address) if args.address else hfq.connect(args.root)
    tls = None
    if args.cert or args.key:
        if not (args.cert and args.key):
            raise HfqError("TLS needs both --cert and --key")
        with open(args.cert, "rb") as c, open(args.key, "rb") as k:
            tls = (c.read(), k.read())
    service = serve(db, host=args.host, port=args.port, tls=tls, insecure=args.insecure,
                    config=ServiceConfig(heavy_slots=args.heavy_slots))
    print(f"hfq service at {service.location}", flush=True)
    try:
        service.wait()
    except KeyboardInterrupt:
        service.shutdown()
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hfq.service",
                                description="the hfq service: serve, users, grants, quotas")
    p.add_argument("--root", default=os.environ.get("HFQ_ROOT", "hfq_data"),
                   help="the catalog root (default: HFQ_ROOT, else ./hfq_data)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve the database over Arrow Flight SQL")
    s.add_argument("--address", help="the Ray cluster to attach to (default: embedded)")
    s.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    s.add_argument("--port", type=int, default=8815, help="the port (0: any free one)")
    s.add_argument("--cert", help="the TLS certificate chain (PEM)")
    s.add_argument("--key", help="the TLS private key (PEM)")
    s.add_argument("--insecure", action="store_true",
                   help="allow plain gRPC on a non-loopback address (passwords in clear)")
    s.add_argument("--heavy-slots", type=int, default=2,
                   help="heavy queries at once, across users (point reads never wait)")
    s.set_defaults(run=_serve)
    u = sub.add_parser("user", help="add, change, remove or list users")
    u.add_argument("action", choices=["add", "passwd", "rm", "list"], help="what to do")
    u.add_argument("name", nargs="?", help="the user")
    u.add_argument("--role", action="append", help="a role of the user (repeatable)")
    u.add_argument("--service", action="store_true",
                   help="a service account: its key is generated and printed once")
    u.add_argument("--admin", action="store_true", help="may see and do everything")
    u.add_argument("--password-stdin", action="store_true",
                   help="read the password from standard input")
    u.set_defaults(run=_user)
    for name, revoke in (("grant", False), ("revoke", True)):
        g = sub.add_parser(name, help=f"{name} privileges on a table, or a role")
        g.add_argument("words", nargs="*", help="PRIVILEGES ON TABLE TO|FROM GRANTEE, or "
                                                "ROLE TO|FROM USER")
        if not revoke:
            g.add_argument("--where", help="the grantee's row policy (an SQL condition)")
            g.add_argument("--hide", help="columns masked from the grantee (comma-separated)")
            g.add_argument("--list", action="store_true", help="list every grant")
        g.set_defaults(run=lambda a, r=revoke: _grant(a, r))
    q = sub.add_parser("quota", help="set a user's or role's query limits")
    q.add_argument("grantee", help="the user or role")
    q.add_argument("--max-concurrent", type=int, help="queries running at once")
    q.add_argument("--max-rows", type=int, help="rows one answer may hold")
    q.add_argument("--max-bytes", type=int, help="bytes one answer may hold")
    q.add_argument("--timeout", type=float, help="seconds one query may run")
    q.set_defaults(run=_quota)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; 1 (and one line on stderr) for an hfq error."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        return int(args.run(args))
    except HfqError as exc:
        print(f"hfq: error: {exc}", file=sys.stderr)
        return 1
