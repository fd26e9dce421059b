"""The ``hfq`` command.

Examples
--------
::

    hfq demo --rows-per-day 2000000
    hfq synth taq data/ --days 5 --rows-per-day 1000000
    hfq --root db create quotes --schema TAQ --partition date --hash symbol:100 --sort symbol,time
    hfq --root db ingest quotes 'data/taq_*.csv'
    hfq --root db tables
    hfq partitions quotes --root db --all
    hfq scan quotes --dates 2007-08-01 --symbols IBM,MSFT --where "bid > 0 AND ofr > bid"
    hfq scan quotes --where "symbol IN ('IBM', 'MSFT') AND time >= '09:30'" --out ibm.csv
    hfq info quotes --json
    hfq rebalance --address auto

Global options (``--root``, ``--address``, ``--json``, ``--debug``) go before or after the
command.  Errors are one line on stderr (``hfq: error: ...``), exit status 2 for a usage error
and 1 for any other; ``--debug`` adds the traceback.

The package
-----------
* :mod:`hfq.cli.app` -- :func:`main` and the parser built from the registered commands;
* :mod:`hfq.cli.commands` -- the commands, one module per group (``tables``, ``scan``,
  ``maintenance``...), and :data:`~hfq.cli.commands.COMMANDS`, which registers them;
* :mod:`hfq.cli.args` -- :class:`~hfq.cli.args.Command`, :class:`UsageError` (exit status 2),
  the global options and the argument types (dates, positive integers...);
* :mod:`hfq.cli.render` -- tables sized to the terminal, strict JSON, sizes, cells;
* :mod:`hfq.cli.database` -- the database and table the global options name.

Adding a command
----------------
One new module in ``hfq/cli/commands/`` declares it, and one line registers it::

    # hfq/cli/commands/hello.py
    import argparse

    from hfq.cli.args import Command
    from hfq.cli.database import open_table
    from hfq.cli.render import emit_json

    def _arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("table", help="the table")      # every option needs a help text

    def _hello(args: argparse.Namespace) -> int:
        t = open_table(args)
        if args.json:
            emit_json({"table": t.name, "rows": len(t)})
        else:
            print(f"hello, {t.name}")
        return 0                                       # the exit status

    HELLO = Command("hello", "greet a table", _arguments, _hello)

    # hfq/cli/commands/__init__.py: one line in COMMANDS, where `hfq --help` should list it
    hello.HELLO,

The global options come with every command; raise :class:`UsageError` for a command line
that cannot work (exit status 2); any :class:`~hfq.errors.HfqError` becomes one line on stderr
with exit status 1.  ``tests/unit/test_cli.py`` checks that every option has a help text and
that ``hfq --help`` lists every registered command.
"""

from __future__ import annotations

from hfq.cli.app import build_parser, main
from hfq.cli.args import UsageError
from hfq.cli.commands import COMMANDS as _REGISTERED

__all__ = ["COMMANDS", "UsageError", "build_parser", "main"]

COMMANDS: list[tuple[str, str]] = [(c.name, c.help) for c in _REGISTERED]
"""``(name, one-line help)`` of every command, in ``hfq --help`` order."""

_parser = build_parser   # the name the tests know it by
