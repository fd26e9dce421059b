"""The ``hfq`` program: the parser built from the registered commands, and :func:`main`, which
runs one and turns every error into one line on stderr and an exit status."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

import polars as pl
import pyarrow as pa

import hfq
from hfq.cli.args import Formatter, Handler, Parser, UsageError, global_options
from hfq.cli.commands import COMMANDS
from hfq.cli.render import json_on_stdout
from hfq.errors import HfqError

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hfq`` command with ``argv`` (default: ``sys.argv[1:]``); returns the exit
    status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # --help, --version, usage errors: argparse has printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    func: Handler | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    debug = bool(getattr(args, "debug", False))
    try:
        if args.json:
            with json_on_stdout():   # stdout holds the JSON only
                code = _run(func, args)
        else:
            code = _run(func, args)
        sys.stdout.flush()   # a closed pipe shows here, not at the interpreter's exit
        return code
    except UsageError as exc:
        return _fail(exc, 2, debug)
    except KeyboardInterrupt:
        print("hfq: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # `hfq scan ... | head`: the reader left; say nothing more
        _quiet_stdout()
        return 141
    except (HfqError, ValueError, KeyError, OSError, pl.exceptions.PolarsError,
            pa.ArrowException) as exc:
        return _fail(exc, 1, debug)
    except Exception as exc:  # noqa: BLE001 - a bug: still one line, the traceback on --debug
        return _fail(exc, 1, debug, internal=True)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``hfq``: the global options, then one subcommand per registered
    :class:`~hfq.cli.args.Command` (:data:`hfq.cli.commands.COMMANDS`)."""
    p = Parser(prog="hfq", formatter_class=Formatter,
               parents=[global_options(on_subcommand=False)],
               description="Financial tick data, stored as partitioned Arrow and computed "
                           "where it lives.",
               epilog="Run 'hfq COMMAND --help' for a command's options.  Errors are one "
                      "line on stderr;\nexit status 2 for a usage error, 1 for any other.")
    p.add_argument("--version", action="version", version=f"hfq {hfq.__version__}",
                   help="print the version and exit")
    sub = p.add_subparsers(title="commands", metavar="COMMAND")
    glob = [global_options(on_subcommand=True)]
    for command in COMMANDS:
        cp = sub.add_parser(command.name, help=command.help, description=command.help,
                            formatter_class=Formatter, parents=glob)
        cp.set_defaults(func=command.run)
        command.arguments(cp)
    return p


def _run(func: Handler, args: argparse.Namespace) -> int:
    """``func(args)``; a Ray connection it opened is closed before it returns, so Ray's log
    lines (a node marked dead...) end with the command, not after its output."""
    ray_before = _ray_connected()
    try:
        return int(func(args) or 0)
    finally:
        if not ray_before and _ray_connected():
            sys.modules["ray"].shutdown()


def _ray_connected() -> bool:
    ray = sys.modules.get("ray")   # never imported: never connected
    return ray is not None and bool(ray.is_initialized())


def _fail(exc: BaseException, code: int, debug: bool, *, internal: bool = False) -> int:
    if debug:
        traceback.print_exc()
    text = _one_line(exc)
    if internal:
        text = f"internal error: {type(exc).__name__}: {text}"
        if not debug:
            text += " (run with --debug for the traceback)"
    print(f"hfq: error: {text}", file=sys.stderr)
    return code


def _one_line(exc: BaseException) -> str:
    """An exception's message as one line: the first paragraph, its lines joined by '; '."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    if isinstance(exc, KeyError) and not isinstance(exc, HfqError) and exc.args:
        text = str(exc.args[0])
    else:
        text = str(exc) or type(exc).__name__
    first = text.strip().split("\n\n", 1)[0]
    return "; ".join(line.strip() for line in first.splitlines() if line.strip())


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush is
    silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
