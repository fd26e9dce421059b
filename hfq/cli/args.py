"""What every command shares on its way in: the :class:`Command` record that declares one,
the argument parser with one-line usage errors, the global options, and the argument types
(dates, positive integers, ``COLUMN:BUCKETS``...)."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

__all__ = ["Command", "Formatter", "Handler", "Parser", "UsageError", "date", "dates",
           "global_options", "hash_spec", "non_negative", "positive", "split"]

Handler = Callable[[argparse.Namespace], int]
"""What runs a command: the parsed arguments in, the exit status out."""


class UsageError(ValueError):
    """A command line that cannot work as given (exit status 2)."""


@dataclass(frozen=True)
class Command:
    """One ``hfq`` command: its name, its one-line help (shown by ``hfq --help`` and as the
    command's description), what adds its arguments to its parser, and what runs it."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Handler


# -- the parser --------------------------------------------------------------------------------
class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"hfq: error: {message} (see '{self.prog} --help')\n")


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; every option's default appended unless the help states it."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        if action.option_strings or action.nargs in ("?", "*"):
            return f"{text} (default: %(default)s)"
        return text


def global_options(*, on_subcommand: bool) -> Parser:
    """``--root --address --json --debug``: on the main parser with their defaults, and on
    every subcommand with ``SUPPRESS`` so a value given before the command is kept."""
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if on_subcommand else value

    g = Parser(add_help=False)
    opts = g.add_argument_group("global options (before or after the command)")
    opts.add_argument("--root", metavar="DIR", default=default(None),
                      help="database directory or fsspec URL (default: $HFQ_ROOT, else "
                           "./hfq_data)")
    opts.add_argument("--address", metavar="ADDR", default=default(None),
                      help="a running Ray cluster: 'auto', HOST:PORT or ray://HOST:10001 "
                           "(default: none, embedded at --root)")
    opts.add_argument("--json", action="store_true", default=default(False),
                      help="print machine-readable JSON on stdout (other text goes to "
                           "stderr; NaN and infinities as null)")
    opts.add_argument("--debug", action="store_true", default=default(False),
                      help="show the traceback of an error")
    return g


# -- argument types ----------------------------------------------------------------------------
def positive(text: str) -> int:
    """An integer of 1 or more (``1_000`` allowed)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def non_negative(text: str) -> int:
    """An integer of 0 or more."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def _int(text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def hash_spec(text: str) -> tuple[str, int]:
    """``COLUMN:BUCKETS`` (100 buckets when only ``COLUMN`` is given)."""
    column, sep, buckets = text.partition(":")
    if not column or (sep and not buckets):
        raise argparse.ArgumentTypeError(f"{text!r} is not COLUMN:BUCKETS, e.g. symbol:100")
    return column, positive(buckets) if sep else 100


def date(text: str) -> str:
    """A date, ``YYYY-MM-DD`` or ``YYYYMMDD``, as ``YYYY-MM-DD``."""
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    reason = ""
    if len(text) == 10 and text[4:5] == "-" == text[7:8]:
        try:
            dt.date.fromisoformat(text)
        except ValueError as exc:
            reason = f": {exc}"
    raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD or YYYYMMDD){reason}")


def dates(text: str) -> str | tuple[str | None, str | None]:
    """One date, or an inclusive ``FIRST,LAST`` range (either may be empty)."""
    parts = [x.strip() for x in text.split(",")]
    if len(parts) == 1:
        return date(parts[0])
    if len(parts) != 2 or not any(parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not DATE or FIRST,LAST")
    first, last = (date(x) if x else None for x in parts)
    if first and last and first > last:
        raise argparse.ArgumentTypeError(f"{text!r}: the first date is after the last")
    return first, last


def split(text: str | None) -> list[str] | None:
    """A comma-separated list (None stays None)."""
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]
