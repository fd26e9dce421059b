"""``hfq serve``, ``hfq user``, ``hfq grant``, ``hfq revoke``, ``hfq quota``: the shared service
(:mod:`hfq.service`) and who may do what in it.

They work on the catalog root of ``--root`` (or ``HFQ_ROOT``): whoever runs them can write the
catalog, and so is trusted (see the trust boundary in docs/service.md)::

    hfq --root db user add ann --role analyst            # asks for a password
    hfq --root db user add loader --service              # prints its key once
    hfq --root db grant SELECT ON quotes TO analyst --where "ex IN ('N','P')" --hide mmid
    hfq --root db grant analyst TO bob                   # a role to a user
    hfq --root db revoke SELECT ON quotes FROM analyst
    hfq --root db quota analyst --max-rows 10000000 --timeout 60
    hfq --root db serve --host 0.0.0.0 --port 8815 --cert c.pem --key k.pem

The service's modules (Flight, argon2) load when one of these runs, not with ``hfq``.

Examples
--------
>>> import tempfile, hfq
>>> from hfq.cli.app import main
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
import os
import sys
from typing import Any

from hfq.cli.args import Command, UsageError, positive
from hfq.cli.database import open_db

__all__ = ["GRANT", "QUOTA", "REVOKE", "SERVE", "USER"]


def _password(args: argparse.Namespace, prompt: str) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass(prompt)
    if getpass.getpass("again: ") != first:
        raise UsageError("the two passwords differ")
    return first


def _admin(args: argparse.Namespace) -> Any:
    from hfq.service.identity import Admin  # argon2 loads when an admin command runs
    from hfq.service.passwords import Passwords
    from hfq.service.state import SecurityStore
    return Admin(SecurityStore(open_db(args).session),
                 by=os.environ.get("HFQ_USER") or getpass.getuser(), passwords=Passwords())


# -- hfq serve ---------------------------------------------------------------------------------
def _serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    p.add_argument("--port", type=int, default=8815, help="the port (0: any free one)")
    p.add_argument("--cert", help="the TLS certificate chain (PEM)")
    p.add_argument("--key", help="the TLS private key (PEM)")
    p.add_argument("--insecure", action="store_true",
                   help="allow plain gRPC on a non-loopback address (passwords in clear)")
    p.add_argument("--heavy-slots", type=positive, default=2,
                   help="heavy queries at once, across users (point reads never wait)")


def _serve(args: argparse.Namespace) -> int:
    from hfq.service.serving import ServiceConfig, serve
    tls = None
    if args.cert or args.key:
        if not (args.cert and args.key):
            raise UsageError("TLS needs both --cert and --key")
        with open(args.cert, "rb") as c, open(args.key, "rb") as k:
            tls = (c.read(), k.read())
    service = serve(open_db(args), host=args.host, port=args.port, tls=tls,
                    insecure=args.insecure, config=ServiceConfig(heavy_slots=args.heavy_slots))
    print(f"hfq service at {service.location}", flush=True)
    try:
        service.wait()
    except KeyboardInterrupt:
        service.shutdown()
    return 0


# -- hfq user ----------------------------------------------------------------------------------
def _user_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["add", "passwd", "rm", "list"], help="what to do")
    p.add_argument("name", nargs="?", help="the user")
    p.add_argument("--role", action="append", help="a role of the user (repeatable)")
    p.add_argument("--service", action="store_true",
                   help="a service account: its key is generated and printed once")
    p.add_argument("--admin", action="store_true", help="may see and do everything")
    p.add_argument("--password-stdin", action="store_true",
                   help="read the password from standard input")


def _user(args: argparse.Namespace) -> int:
    admin = _admin(args)
    if args.action == "list":
        for u in admin.users():
            print(f"{u['user']}  {u['kind']}{'  admin' if u['admin'] else ''}  "
                  f"roles: {u['roles'] or '-'}")
        return 0
    if not args.name:
        raise UsageError(f"user {args.action}: name the user")
    if args.action == "add":
        password = None if args.service else _password(args, f"password for {args.name}: ")
        key = admin.add_user(args.name, password, service=args.service, admin=args.admin,
                             roles=args.role or ())
        if key:
            print(f"the key of service account {args.name} (shown once): {key}")
    elif args.action == "passwd":
        kinds = {u["user"]: u["kind"] for u in admin.users()}
        key = admin.set_password(args.name, None if kinds.get(args.name) == "service" else
                                 _password(args, f"new password for {args.name}: "))
        if key:
            print(f"the new key of service account {args.name} (shown once): {key}")
    else:
        admin.remove_user(args.name)
    return 0


# -- hfq grant / revoke ------------------------------------------------------------------------
def _grant_arguments(p: argparse.ArgumentParser, *, revoke: bool = False) -> None:
    to = "FROM" if revoke else "TO"
    p.add_argument("words", nargs="*", help=f"PRIVILEGES ON TABLE {to} GRANTEE, or ROLE {to} "
                                            "USER")
    if not revoke:
        p.add_argument("--where", help="the grantee's row policy (an SQL condition)")
        p.add_argument("--hide", help="columns masked from the grantee (comma-separated)")
        p.add_argument("--list", action="store_true", help="list every grant")


def _grant(args: argparse.Namespace, revoke: bool = False) -> int:
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
        raise UsageError(f"{'revoke' if revoke else 'grant'} PRIVILEGES ON TABLE {to} "
                         f"GRANTEE, or ROLE {to} USER")
    privileges = [p for p in words[0].split(",") if p]
    if revoke:
        admin.revoke(privileges, words[2], words[4])
    else:
        admin.grant(privileges, words[2], words[4], rows=args.where,
                    hide=[c for c in args.hide.split(",") if c] if args.hide else None)
    return 0


# -- hfq quota ---------------------------------------------------------------------------------
def _quota_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("grantee", help="the user or role")
    p.add_argument("--max-concurrent", type=positive, help="queries running at once")
    p.add_argument("--max-rows", type=positive, help="rows one answer may hold")
    p.add_argument("--max-bytes", type=positive, help="bytes one answer may hold")
    p.add_argument("--timeout", type=float, help="seconds one query may run")


def _quota(args: argparse.Namespace) -> int:
    _admin(args).set_quota(args.grantee, max_concurrent=args.max_concurrent,
                           max_rows=args.max_rows, max_bytes=args.max_bytes,
                           timeout_s=args.timeout)
    return 0


SERVE = Command("serve", "serve the database over Arrow Flight SQL (users, grants, quotas, "
                "audit: docs/service.md)", _serve_arguments, _serve)
USER = Command("user", "add, change the password of, remove or list the service's users",
               _user_arguments, _user)
GRANT = Command("grant", "grant privileges on a table (with a row policy and masked columns) "
                "or a role", _grant_arguments, _grant)
REVOKE = Command("revoke", "revoke privileges on a table, or a role",
                 lambda p: _grant_arguments(p, revoke=True),
                 lambda a: _grant(a, revoke=True))
QUOTA = Command("quota", "set a user's or role's query limits", _quota_arguments, _quota)
