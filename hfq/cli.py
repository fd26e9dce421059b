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
    hfq scan quotes --dates 2007-08-01 --symbols IBM,MSFT --where "bid > 0 and ofr > bid"
    hfq scan quotes --where "symbol in ('IBM', 'MSFT') and time >= '09:30'" --out ibm.csv
    hfq info quotes --json
    hfq rebalance --address auto

Global options (``--root``, ``--address``, ``--json``, ``--debug``) go before or after the
command.  Errors are one line on stderr (``hfq: error: ...``), exit status 2 for a usage error
and 1 for any other; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import math
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import polars as pl
import pyarrow as pa

import hfq
from hfq.errors import HfqError

__all__ = ["UsageError", "WhereError", "main", "parse_where"]

Handler = Callable[[argparse.Namespace], int]


class UsageError(ValueError):
    """A command line that cannot work as given (exit status 2)."""


class WhereError(UsageError):
    """A ``--where`` expression outside the small language :func:`parse_where` accepts."""


# -- entry point -------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hfq`` command with ``argv`` (default: ``sys.argv[1:]``); returns the exit
    status."""
    parser = _parser()
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
        code = int(func(args) or 0)
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


# -- the parser --------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"hfq: error: {message} (see '{self.prog} --help')\n")


class _Formatter(argparse.RawDescriptionHelpFormatter):
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


def _global_options(*, on_subcommand: bool) -> _Parser:
    """``--root --address --json --debug``: on the main parser with their defaults, and on
    every subcommand with ``SUPPRESS`` so a value given before the command is kept."""
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if on_subcommand else value

    g = _Parser(add_help=False)
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


COMMANDS: list[tuple[str, str]] = [
    ("demo", "synthetic TAQ week -> CSV -> hfq: reads, a point query, analytics, vs pickle"),
    ("synth", "write synthetic TAQ or sensor data as CSV files"),
    ("create", "create a table"),
    ("ingest", "load CSV files (paths, globs, URLs) into a table as one commit"),
    ("tables", "list the tables: version, rows, partitions, files, bytes"),
    ("info", "one table: version, rows, partitions, partitioning, sort order, schema"),
    ("partitions", "a table's partitions: a summary, or every one with --all"),
    ("scan", "read rows (--dates, --symbols, --where): the first rows, the plan, or CSV"),
    ("compact", "merge each partition's files into one sorted file"),
    ("verify", "check every file's checksum against the catalog"),
    ("rebalance", "give every partition its replicas on the live nodes; move some to new nodes"),
    ("repair", "replace every damaged or missing copy of a file by a good copy"),
    ("check", "read the catalog back: damaged, missing or inconsistent versions (--repair)"),
    ("vacuum", "remove files of writers that died; forget old versions"),
    ("drop", "remove a table and all its files"),
    ("quality", "market-data quality per symbol-day: bad prices, crossed quotes, gaps, jumps"),
    ("sql", "run one SQL SELECT over the tables (DuckDB/Postgres flavour), next to the data"),
]


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hfq", formatter_class=_Formatter,
                parents=[_global_options(on_subcommand=False)],
                description="Financial tick data, stored as partitioned Arrow and computed "
                            "where it lives.",
                epilog="Run 'hfq COMMAND --help' for a command's options.  Errors are one "
                       "line on stderr;\nexit status 2 for a usage error, 1 for any other.")
    p.add_argument("--version", action="version", version=f"hfq {hfq.__version__}",
                   help="print the version and exit")
    sub = p.add_subparsers(title="commands", metavar="COMMAND")
    glob = [_global_options(on_subcommand=True)]
    helps = dict(COMMANDS)

    def command(name: str, func: Handler) -> argparse.ArgumentParser:
        cp = sub.add_parser(name, help=helps[name], description=helps[name],
                            formatter_class=_Formatter, parents=glob)
        cp.set_defaults(func=func)
        return cp

    d = command("demo", _demo)
    d.add_argument("--dir", default=None,
                   help="where the demo writes its CSV, database and plot (default: "
                        "$HFQ_DEMO_DIR, else ~/.cache/hfq/demo); its csv/ and db/ are "
                        "replaced")
    d.add_argument("--days", type=_positive, default=5, help="trading days from 2007-08-01")
    d.add_argument("--rows-per-day", type=_positive, default=2_000_000, help="quotes a day")
    d.add_argument("--symbols", type=_positive, default=8000, help="distinct symbols")

    s = command("synth", _synth)
    s.add_argument("kind", choices=["taq", "readings"], help="what to generate")
    s.add_argument("directory", help="where the CSV files go (created if missing)")
    s.add_argument("--days", type=_positive, default=1, help="days from 2007-08-01")
    s.add_argument("--rows-per-day", type=_positive, default=1_000_000,
                   help="taq: quotes a day")
    s.add_argument("--symbols", type=_positive, default=8000, help="taq: distinct symbols")
    s.add_argument("--devices", type=_positive, default=3000, help="readings: devices")

    c = command("create", _create)
    c.add_argument("table", help="the new table's name")
    c.add_argument("--schema", required=True, type=str.upper,
                   choices=["TAQ", "TRADES", "L2", "READINGS", "DEVICE_INFO"],
                   help="a built-in schema")
    c.add_argument("--partition", required=True, metavar="COLUMN",
                   help="first level: one partition per value of COLUMN, e.g. date")
    c.add_argument("--hash", default=None, type=_hash_spec, metavar="COLUMN:BUCKETS",
                   help="second level: BUCKETS hash buckets of COLUMN (100 if only COLUMN "
                        "is given), e.g. symbol:100 (default: none)")
    c.add_argument("--sort", default="", metavar="COLUMNS",
                   help="sort columns within a partition, comma separated (default: none)")

    i = command("ingest", _ingest)
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

    command("tables", _tables)

    f = command("info", _info)
    f.add_argument("table", help="the table")

    pt = command("partitions", _partitions)
    pt.add_argument("table", help="the table")
    pt.add_argument("--all", action="store_true",
                    help="every partition (path, rows, bytes, files, nodes, checksum) instead "
                         "of the summary")

    sc = command("scan", _scan)
    sc.add_argument("table", help="the table")
    sc.add_argument("--dates", default=None, type=_dates, metavar="DATE[,LAST]",
                    help="one date, or an inclusive FIRST,LAST range (either may be empty), "
                         "YYYY-MM-DD or YYYYMMDD (default: all)")
    sc.add_argument("--symbols", default=None, metavar="SYMS",
                    help="comma separated (default: all)")
    sc.add_argument("--columns", default=None, metavar="COLS",
                    help="comma separated, in this order (default: all)")
    sc.add_argument("--where", default=None, metavar="EXPR",
                    help="a row filter: comparisons, and/or/not, + - * / %%, columns, "
                         "numbers, 'strings', COL in (...), COL is None; e.g. \"bid > 0 and "
                         "ofr > bid\" or \"symbol in ('IBM','MSFT') and time >= '09:30'\" "
                         "(default: none)")
    sc.add_argument("--at-version", type=_non_negative, default=None,
                    metavar="N", help="read committed version N (default: the newest)")
    sc.add_argument("--limit", type=_non_negative, default=10,
                    help="rows to show (with --json: to include as 'head')")
    sc.add_argument("--explain", action="store_true",
                    help="print the plan (partitions and batches kept/pruned) only")
    sc.add_argument("--out", default=None, metavar="FILE",
                    help="write every matching row to this CSV file (default: none)")

    cp = command("compact", _compact)
    cp.add_argument("table", help="the table")

    v = command("verify", _verify)
    v.add_argument("table", help="the table")

    rb = command("rebalance", _rebalance)
    rb.add_argument("tables", nargs="*", help="the tables (default: every table)")

    rp = command("repair", _repair)
    rp.add_argument("tables", nargs="*", help="the tables (default: every table)")

    ck = command("check", _check)
    ck.add_argument("--repair", action="store_true",
                    help="restore bad catalog files from the nodes' copies, set aside what "
                         "cannot be restored: each table opens at its newest intact version")

    va = command("vacuum", _vacuum)
    va.add_argument("table", help="the table")
    va.add_argument("--keep-versions", type=_positive, default=None, metavar="N",
                    help="also forget all but the newest N versions (default: keep all)")

    dr = command("drop", _drop)
    dr.add_argument("table", help="the table to remove, with all its files")

    # -- hfq quality (hfq.quality) --
    qc = command("quality", _quality)
    qc.add_argument("table", help="the quotes table")
    qc.add_argument("--dates", default=None, type=_dates, metavar="DATE[,LAST]",
                    help="one date, or an inclusive FIRST,LAST range (default: all)")
    qc.add_argument("--symbols", default=None, metavar="SYMS",
                    help="comma separated (default: all)")
    qc.add_argument("--session", default="09:30-16:00", type=_session, metavar="START-END",
                    help="the trading session, end excluded: rows outside it and minutes "
                         "without quotes in it are counted")
    qc.add_argument("--max-ratio", type=float, default=1.2, metavar="R",
                    help="ofr/bid at or above R is an extreme (wide) quote")
    qc.add_argument("--jump-k", type=float, default=10.0, metavar="K",
                    help="a mid move beyond K scaled MADs of the symbol-day's moves is a jump")
    qc.add_argument("--at-version", type=_non_negative, default=None, metavar="N",
                    help="report on committed version N (default: the newest)")
    qc.add_argument("--all", action="store_true",
                    help="every symbol-day's counts instead of the summary")
    qc.add_argument("--png", default=None, metavar="PATH",
                    help="also draw the report as a PNG at PATH (default: none)")

    # -- hfq sql (hfq.engine) --
    sq = command("sql", _sql)
    sq.add_argument("query", help="one SELECT, e.g. \"SELECT symbol, count(*) FROM quotes "
                                  "GROUP BY symbol\"")
    sq.add_argument("--limit", type=_non_negative, default=20,
                    help="rows to show (with --json: to include)")
    sq.add_argument("--explain", action="store_true",
                    help="print the plan (node and driver stages, partitions) only")
    sq.add_argument("--out", default=None, metavar="FILE",
                    help="write every row of the answer to this CSV file (default: none)")
    return p


# -- argument types ----------------------------------------------------------------------------
def _positive(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def _non_negative(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def _int(text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _hash_spec(text: str) -> tuple[str, int]:
    column, sep, buckets = text.partition(":")
    if not column or (sep and not buckets):
        raise argparse.ArgumentTypeError(f"{text!r} is not COLUMN:BUCKETS, e.g. symbol:100")
    return column, _positive(buckets) if sep else 100


def _date(text: str) -> str:
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


def _dates(text: str) -> str | tuple[str | None, str | None]:
    parts = [x.strip() for x in text.split(",")]
    if len(parts) == 1:
        return _date(parts[0])
    if len(parts) != 2 or not any(parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not DATE or FIRST,LAST")
    first, last = (_date(x) if x else None for x in parts)
    if first and last and first > last:
        raise argparse.ArgumentTypeError(f"{text!r}: the first date is after the last")
    return first, last


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


# -- output ------------------------------------------------------------------------------------
def _emit_json(value: Any) -> None:
    """Strict JSON on stdout (NaN and infinities, which JSON lacks, as null)."""
    print(json.dumps(_finite(value), indent=2, default=_jsonable, allow_nan=False))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "item"):   # numpy scalars
        return value.item()
    return str(value)


@dataclass
class _Grid:
    """A table to print: headers, rows of text, the right-aligned columns."""

    headers: list[str]
    rows: list[list[str]]
    right: set[str] = field(default_factory=set)
    show_header: bool = True


def _grid(headers: Sequence[str], rows: Iterable[Sequence[Any]], *,
          right: Iterable[str] = (), show_header: bool = True) -> _Grid:
    return _Grid(list(headers), [[str(x) for x in row] for row in rows], set(right),
                 show_header)


def _show(*items: str | _Grid) -> None:
    """Print lines and tables on stdout with rich, cells never wrapped (a table too wide for
    the terminal cuts cells with an ellipsis); without rich installed, as plain columns."""
    try:
        text = _rich_text(items)
    except ImportError:
        text = "\n".join(item if isinstance(item, str) else _plain(item) for item in items)
    print("\n".join(line.rstrip() for line in text.splitlines()))


def _rich_text(items: Sequence[str | _Grid]) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable
    # the terminal's width, or 200 columns when stdout is not a terminal
    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 200,
                      soft_wrap=False, highlight=False, emoji=False, markup=False)
    rendered: list[Any] = []
    for item in items:
        if isinstance(item, str):
            rendered.append(item)
            continue
        widths = _fit(item, console.width)
        console.width = max(console.width, sum(widths) + 3 * (len(widths) - 1))
        table = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                          show_header=item.show_header)
        for name, width in zip(item.headers, widths):
            table.add_column(name, no_wrap=True, width=width, overflow="ellipsis",
                             justify="right" if name in item.right else "left")
        for row in item.rows:
            table.add_row(*row)
        rendered.append(table)
    with console.capture() as captured:
        for thing in rendered:
            console.print(thing)
    return captured.get()


def _fit(grid: _Grid, width: int) -> list[int]:
    """Column widths for ``width`` characters: numbers and the first column in full; the
    other text columns share what is left (each at least 12 characters, then cut with an
    ellipsis: never folded, never dropped); the total may exceed ``width`` when it must."""
    full = [max([len(h)] + [len(row[i]) for row in grid.rows])
            for i, h in enumerate(grid.headers)]
    give = [i for i, h in enumerate(grid.headers) if i > 0 and h not in grid.right]
    left = width - 3 * (len(full) - 1) - sum(w for i, w in enumerate(full) if i not in give)
    out = list(full)
    for n, i in enumerate(sorted(give, key=lambda k: full[k])):
        share = left // (len(give) - n)
        out[i] = min(full[i], max(min(full[i], 12), share))
        left -= out[i]
    return out


def _plain(grid: _Grid) -> str:
    rows = ([grid.headers] if grid.show_header else []) + grid.rows
    widths = [max([len(r[i]) for r in rows] or [0]) for i in range(len(grid.headers))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) if h in grid.right else c.ljust(w)
                 for c, w, h in zip(row, widths, grid.headers)]
        lines.append("   ".join(cells))
    if grid.show_header:
        lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def _size(n: int | float) -> str:
    """Bytes in decimal units: 1.2 MB."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{value} TB"   # pragma: no cover


def _say(args: argparse.Namespace, text: str) -> None:
    """Human text: stdout, or stderr with --json (stdout is for the JSON)."""
    print(text, file=sys.stderr if args.json else sys.stdout)


# -- database ----------------------------------------------------------------------------------
def _db(args: argparse.Namespace) -> hfq.Database:
    if args.address:
        if args.root:
            raise UsageError("--root and --address exclude each other: on a cluster each "
                             "node's root is its HFQ_NODE_ROOT")
        return hfq.connect(address=args.address)
    return hfq.connect(args.root)


def _table(args: argparse.Namespace) -> hfq.Table:
    return _db(args)[args.table]


def _stats(table: hfq.Table) -> dict[str, Any]:
    parts = table.partitions()
    return {"table": table.name, "version": table.version, "rows": len(table),
            "partitions": parts.height, "files": int(parts["files"].sum()),
            "bytes": int(parts["bytes"].sum())}


def _scheme_text(scheme: Any) -> str:
    """``date / hash(symbol, 100)``: one word per partitioning level."""
    levels = scheme.levels() if hasattr(scheme, "levels") else [scheme]
    words = []
    for level in levels:
        spec = level.to_json() if hasattr(level, "to_json") else {}
        kind, column = spec.get("kind"), spec.get("column", "?")
        if kind == "value":
            words.append(column + (f" by {spec['by']}" if spec.get("by") else ""))
        elif kind == "hash":
            words.append(f"hash({column}, {spec.get('buckets')})")
        elif kind == "range":
            words.append(f"range({column}, {len(spec.get('boundaries', []))} boundaries)")
        else:
            words.append(repr(level))
    return " / ".join(words)


# -- commands ----------------------------------------------------------------------------------
def _create(args: argparse.Namespace) -> int:
    schema = getattr(hfq.schemas, args.schema)
    scheme: hfq.Value | hfq.Compo = hfq.Value(args.partition)
    if args.hash:
        column, buckets = args.hash
        scheme = hfq.Compo(hfq.Value(args.partition), hfq.Hash(column, buckets))
    t = _db(args).create_table(args.table, schema, partition_by=scheme,
                               sort_by=_split(args.sort) or ())
    if args.json:
        _emit_json({"table": t.name, "version": t.version, "created": True,
                    "partitioning": _scheme_text(scheme), "sort_by": _split(args.sort) or []})
    else:
        print(f"created {t.name}: partitioned by {_scheme_text(scheme)}")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    report = _db(args).load_csv(args.table, args.paths, on_error=args.on_error,
                                reject_path=args.rejects,
                                progress=False if args.no_progress or args.json else None,
                                duplicates=args.duplicates)
    if args.json:
        _emit_json({"table": report.table, "files": [str(x) for x in report.files],
                    "rows": report.rows, "bytes": report.bytes, "seconds": report.seconds,
                    "rows_per_s": report.rows_per_s, "version": report.version,
                    "rejected": report.rejected, "reject_path": report.reject_path})
    else:
        print(report)
    return 0


def _tables(args: argparse.Namespace) -> int:
    db = _db(args)
    stats = [_stats(db[name]) for name in db.tables()]
    if args.json:
        _emit_json(stats)
    elif not stats:
        print(f"no tables in {args.root or os.environ.get('HFQ_ROOT') or './hfq_data'}")
    else:
        _show(_grid(
            ["table", "version", "rows", "partitions", "files", "size"],
            ([s["table"], s["version"], f"{s['rows']:,}", f"{s['partitions']:,}",
              f"{s['files']:,}", _size(s["bytes"])] for s in stats),
            right=["version", "rows", "partitions", "files", "size"]))
    return 0


def _info(args: argparse.Namespace) -> int:
    t = _table(args)
    m = t.snapshot()
    scheme: Any = getattr(m, "partition_by", None)
    sort_by = list(getattr(m, "sort_by", ()))
    info = _stats(t)
    info.update(versions=t.versions(), partitioning=_scheme_text(scheme),
                partition_by=scheme.to_json() if hasattr(scheme, "to_json") else repr(scheme),
                sort_by=sort_by,
                schema=[{"name": name, "type": getattr(ctype, "name", str(ctype))}
                        for name, ctype in t.schema])
    if args.json:
        _emit_json(info)
        return 0
    versions = info["versions"]
    on_record = (f"{versions[0]}..{versions[-1]}" if len(versions) > 2
                 else ", ".join(map(str, versions)))
    _show(_grid(["", ""], show_header=False, rows=[
        ("table", t.name),
        ("version", f"{t.version} (on record: {on_record})"),
        ("rows", f"{info['rows']:,}"),
        ("partitions", f"{info['partitions']:,} ({info['files']:,} files, "
                       f"{_size(info['bytes'])})"),
        ("partitioned by", info["partitioning"]),
        ("sorted by", ", ".join(sort_by) or "-"),
        ("schema", f"{len(info['schema'])} columns:"),
    ]), _grid(["column", "type"], [(c["name"], c["type"]) for c in info["schema"]]))
    return 0


def _partitions(args: argparse.Namespace) -> int:
    t = _table(args)
    parts = t.partitions()
    if args.all:
        return _all_partitions(args, t, parts)
    keys = parts["key"].to_list()
    scheme: Any = getattr(t.snapshot(), "partition_by", None)
    first = scheme.levels()[0].column if hasattr(scheme, "levels") else "key"
    groups: dict[str, list[int]] = {}
    for key, rows, size, files in zip(keys, parts["rows"], parts["bytes"], parts["files"]):
        entry = groups.setdefault(key[0] if key else "", [0, 0, 0, 0])
        entry[0] += 1
        entry[1] += rows
        entry[2] += size
        entry[3] += files
    paths = parts["partition"].to_list()
    summary = {**_stats(t), "first_partition": paths[0] if paths else None,
               "last_partition": paths[-1] if paths else None, "by": first,
               "groups": [{first: k, "partitions": v[0], "rows": v[1], "bytes": v[2],
                           "files": v[3]} for k, v in groups.items()]}
    if args.json:
        _emit_json(summary)
        return 0
    lines: list[Any] = [f"{t.name} version {t.version}: {summary['partitions']:,} partitions, "
                        f"{summary['rows']:,} rows, {summary['files']:,} files, "
                        f"{_size(summary['bytes'])}"]
    if paths:
        lines += [f"first {paths[0]}, last {paths[-1]}", "",
                  _grid([first, "partitions", "rows", "files", "size"],
                        ([g[first], f"{g['partitions']:,}", f"{g['rows']:,}",
                          f"{g['files']:,}", _size(g["bytes"])] for g in summary["groups"]),
                        right=["partitions", "rows", "files", "size"]),
                  "", f"every partition: hfq partitions {t.name} --all"]
    _show(*lines)
    return 0


def _all_partitions(args: argparse.Namespace, t: hfq.Table, parts: pl.DataFrame) -> int:
    if args.json:
        _emit_json(parts.to_dicts())
        return 0
    _show(f"{t.name} version {t.version}: {parts.height:,} partitions", "", _grid(
        ["partition", "rows", "bytes", "files", "nodes", "checksum"],
        ([r["partition"], f"{r['rows']:,}", f"{r['bytes']:,}", r["files"],
          ",".join(r["nodes"]), r["checksum"]] for r in parts.iter_rows(named=True)),
        right=["rows", "bytes", "files"]))
    return 0


def _scan(args: argparse.Namespace) -> int:
    t = _table(args)
    schema = t.schema if args.at_version is None else t.snapshot(args.at_version).schema
    types = {f.name: f.type for f in schema.arrow}
    where = None if args.where is None else parse_where(args.where, types)
    scan = t.scan(columns=_split(args.columns), where=where, dates=args.dates,
                  symbols=_split(args.symbols), version=args.at_version)
    version = t.version if args.at_version is None else args.at_version
    head = {"table": t.name, "version": version}
    if args.explain:
        plan = scan.explain()
        if args.json:
            _emit_json({**head, "plan": plan})
        else:
            print(plan)
        return 0
    if args.out:
        rows = scan.to_csv(args.out)
        if args.json:
            _emit_json({**head, "rows": rows, "out": args.out})
        else:
            print(f"wrote {rows:,} rows to {args.out}")
        return 0
    first = _head(scan.iter_arrow(), args.limit)
    rows = scan.count()
    frame = pl.from_arrow(first) if first is not None else pl.DataFrame()
    assert isinstance(frame, pl.DataFrame)
    if args.json:
        _emit_json({**head, "rows": rows, "columns": frame.columns or
                    _split(args.columns) or schema.names,
                    "head": frame.to_dicts()})
        return 0
    shown = f" (first {frame.height:,} shown)" if 0 < frame.height < rows else ""
    if not frame.height:
        print(f"{rows:,} rows{shown}")
        return 0
    cells = [[_cell(v) for v in row] for row in frame.iter_rows()]
    numeric = [name for name, dtype in frame.schema.items() if dtype.is_numeric()]
    grid = _grid(frame.columns, cells, right=numeric)
    fits = _columns_that_fit(grid, _width())
    hidden = len(frame.columns) - fits
    if hidden:
        grid = _grid(frame.columns[:fits], [row[:fits] for row in cells], right=numeric)
        shown += f"; {hidden} more columns not shown (choose with --columns, or --json)"
    _show(grid, f"{rows:,} rows{shown}")
    return 0


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    return str(value)


def _columns_that_fit(grid: _Grid, width: int) -> int:
    """How many leading columns fit in ``width`` characters (at least one)."""
    used = -3
    for i, name in enumerate(grid.headers):
        used += 3 + max([len(name)] + [len(row[i]) for row in grid.rows])
        if used > width and i > 0:
            return i
    return len(grid.headers)


def _head(batches: Iterable[pa.Table], limit: int) -> pa.Table | None:
    """The first ``limit`` rows of a stream of tables, reading no further than needed."""
    got: list[pa.Table] = []
    have = 0
    for table in batches:
        if have >= limit:
            break
        got.append(table.slice(0, limit - have))
        have += got[-1].num_rows
        if have >= limit:
            break
    if not got:
        return None
    return pa.concat_tables(got)


def _width() -> int:
    """The terminal's width, or 200 columns when stdout is not a terminal."""
    return shutil.get_terminal_size((200, 24)).columns if sys.stdout.isatty() else 200


def _compact(args: argparse.Namespace) -> int:
    t = _table(args)
    before = _stats(t)
    version = t.compact()
    after = _stats(t)
    if args.json:
        _emit_json({"table": t.name, "version_before": before["version"], "version": version,
                    "files_before": before["files"], "files": after["files"],
                    "bytes_before": before["bytes"], "bytes": after["bytes"]})
    elif version == before["version"]:
        print(f"{t.name}: every partition is one file already (version {version})")
    else:
        print(f"compacted {t.name}: {before['files']:,} files -> {after['files']:,} "
              f"({_size(before['bytes'])} -> {_size(after['bytes'])}), version {version}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    t = _table(args)
    checked = t.verify()
    if args.json:
        _emit_json({"table": t.name, "version": t.version, "files_checked": int(checked),
                    "ok": True, "unreachable": list(checked.unreachable)})
    else:
        print(f"{checked} files match their checksums ({t.name} version {t.version})")
        _say_unreachable(checked.unreachable, "their copies were not checked")
    return 0


def _rebalance(args: argparse.Namespace) -> int:
    """``hfq rebalance [TABLE ...]``: files moved per table."""
    db = _db(args)
    for name in args.tables:
        db[name]   # an unknown table is a one-line error before any work
    moved = db.rebalance(args.tables or None)
    if args.json:
        _emit_json({"moved": dict(moved), "unreachable": list(moved.unreachable)})
    else:
        for name, files in moved.items():
            print(f"{name}: {files:,} files moved" if files else f"{name}: nothing to move")
        _say_unreachable(moved.unreachable, "their copies were re-created on the others")
    return 0


def _say_unreachable(nodes: Sequence[str], consequence: str) -> None:
    """The line saying which nodes a maintenance call counted as down (none: no line)."""
    if nodes:
        print(f"counted as down (no answer to a ping, or gone): hfq node"
              f"{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}; {consequence}")


def _repair(args: argparse.Namespace) -> int:
    """``hfq repair [TABLE ...]``: exit status 1 when some copy could not be repaired."""
    db = _db(args)
    for name in args.tables:
        db[name]   # an unknown table is a one-line error before any work
    rows = db.repair(args.tables or None)
    failed = [r for r in rows if not r["action"].startswith("repaired")]
    if args.json:
        _emit_json({"repaired": len(rows) - len(failed), "not_repaired": len(failed),
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


def _check(args: argparse.Namespace) -> int:
    """``hfq check [--repair]``: exit status 1 when the catalog had a problem (with
    ``--repair``: when some table has no intact version left)."""
    db = _db(args)
    rows = db.check(repair=args.repair)
    if args.json:
        _emit_json({"ok": not rows, "problems": rows, "unreachable": list(rows.unreachable)})
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


def _vacuum(args: argparse.Namespace) -> int:
    t = _table(args)
    result = t.vacuum(keep_versions=args.keep_versions)
    if args.json:
        _emit_json({"table": t.name, "version": t.version, **result,
                    "unreachable": list(result.unreachable)})
    else:
        print(f"vacuumed {t.name}: " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                                 for k, v in result.items()))
        _say_unreachable(result.unreachable, "their files were left as they are")
    return 0


def _session(text: str) -> tuple[dt.time, dt.time]:
    from hfq.quality import parse_time
    start, sep, end = text.partition("-")
    try:
        first, last = parse_time(start), parse_time(end)
    except HfqError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not START-END times of day, e.g. 09:30-16:00") from None
    if not sep or first >= last:
        raise argparse.ArgumentTypeError(f"{text!r}: the session must start before it ends")
    return first, last


def _quality(args: argparse.Namespace) -> int:
    t = _table(args)
    report = t.quality(args.dates, _split(args.symbols), version=args.at_version,
                       progress=False if args.json else None, session=args.session,
                       max_ratio=args.max_ratio, jump_k=args.jump_k)
    if args.png:
        report.plot(args.png)
        _say(args, f"wrote {args.png}")
    days = report.by_symbol_day
    if args.json:
        _emit_json({**report.to_dict(), "symbol_days": days.to_dicts()} if args.all
                   else report.to_dict())
        return 0
    if args.all:
        counts = days.columns[2:]
        _show(report.headline(), "", _grid(
            ["symbol", "date", *counts],
            ([r["symbol"], r["date"], *(f"{r[c]:,}" for c in counts)]
             for r in days.iter_rows(named=True)), right=counts))
        return 0
    summary = report.summary()
    _show(report.headline(), "", _grid(
        ["check", "count", "unit", "share", "symbol-days", "worst", "rule"],
        ([r["check"], f"{r['count']:,}", r["unit"], f"{r['share']:.3%}",
          f"{r['symbol_days']:,}", r["worst"], r["rule"]] for r in summary.iter_rows(named=True)),
        right=["count", "share", "symbol-days"]),
        "", f"every symbol-day: hfq quality {t.name} --all")
    return 0


def _sql(args: argparse.Namespace) -> int:
    """``hfq sql "SELECT ..."``: the answer as a table, JSON, CSV, or the plan."""
    query = _db(args).sql(args.query)
    if args.explain:
        plan = query.explain()
        if args.json:
            _emit_json({"query": args.query, "plan": plan})
        else:
            print(plan)
        return 0
    frame = query.collect()
    if args.out:
        frame.write_csv(args.out)
        if args.json:
            _emit_json({"rows": frame.height, "out": args.out})
        else:
            print(f"wrote {frame.height:,} rows to {args.out}")
        return 0
    head = frame.head(args.limit)
    if args.json:
        _emit_json({"rows": frame.height, "columns": frame.columns,
                    "rows_shown": head.height, "head": head.to_dicts()})
        return 0
    shown = f" (first {head.height:,} shown)" if head.height < frame.height else ""
    if not head.height:
        print(f"{frame.height:,} rows")
        return 0
    cells = [[_cell(v) for v in row] for row in head.iter_rows()]
    numeric = [name for name, dtype in head.schema.items() if dtype.is_numeric()]
    _show(_grid(head.columns, cells, right=numeric), f"{frame.height:,} rows{shown}")
    return 0


def _drop(args: argparse.Namespace) -> int:
    _db(args).drop_table(args.table)
    if args.json:
        _emit_json({"table": args.table, "dropped": True})
    else:
        print(f"dropped {args.table}")
    return 0


def _synth(args: argparse.Namespace) -> int:
    from hfq import synth
    os.makedirs(args.directory, exist_ok=True)
    if args.kind == "taq":
        first = dt.date(2007, 8, 1)
        dates = [(first + dt.timedelta(days=k)).isoformat() for k in range(args.days)]
        files = [str(x) for x in synth.taq_csv_files(args.directory, dates=dates,
                                                       rows_per_day=args.rows_per_day,
                                                       symbols=args.symbols)]
    else:
        path = os.path.join(args.directory, "readings.csv")
        synth.write_readings_csv(path, days=args.days, devices=args.devices)
        info = os.path.join(args.directory, "device_info.csv")
        synth.write_device_info_csv(info, devices=args.devices)
        files = [path, info]
    if args.json:
        _emit_json({"kind": args.kind, "files": files,
                    "bytes": sum(os.path.getsize(x) for x in files)})
    else:
        print("\n".join(files))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from hfq.demo import run_demo

    def echo(text: str) -> None:
        _say(args, text)

    result = run_demo(args.dir, days=args.days, rows_per_day=args.rows_per_day,
                      symbols=args.symbols, echo=echo)
    if args.json:
        _emit_json(result)
    return 0


# -- --where: a small expression language, parsed without eval ----------------------------------
_COMPARE: dict[type[ast.cmpop], Callable[[pl.Expr, pl.Expr], pl.Expr]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}
_ARITH: dict[type[ast.operator], Callable[[pl.Expr, pl.Expr], pl.Expr]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
}
_REFUSED: dict[type[ast.AST], str] = {
    ast.Call: "a function call", ast.Attribute: "attribute access", ast.Subscript: "indexing",
    ast.Lambda: "a lambda", ast.IfExp: "an if-else expression", ast.NamedExpr: "an assignment",
    ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.GeneratorExp: "a comprehension",
    ast.Dict: "a dict", ast.Starred: "a starred expression", ast.JoinedStr: "an f-string",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield", ast.Slice: "a slice",
}


def parse_where(text: str, columns: Mapping[str, pa.DataType]) -> pl.Expr:
    """A polars expression from a small, safe filter language (never ``eval``).

    ``columns`` maps the table's column names to their Arrow types.  Accepted: comparisons
    (chained too), ``and``/``or``/``not``, ``+ - * / // %`` and unary minus, column names,
    numbers, strings, ``True``/``False``, ``COL in (...)`` / ``not in``, ``COL is None`` /
    ``is not None``.  A string compared with a date, time or timestamp column is read as one
    (``date >= '2007-08-02'``, ``time < '09:30'``).  Anything else raises :class:`WhereError`
    naming it.

    Examples
    --------
    >>> import pyarrow as pa
    >>> cols = {"bid": pa.float64(), "ofr": pa.float64(), "symbol": pa.string()}
    >>> parse_where("bid > 0 and ofr > bid", cols)  # doctest: +ELLIPSIS
    <Expr [...] at ...>
    >>> parse_where("__import__('os')", cols)
    Traceback (most recent call last):
    ...
    hfq.cli.WhereError: --where: a function call is not allowed: __import__('os')
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        where = f" at character {exc.offset}" if exc.offset else ""
        raise WhereError(f"--where: invalid syntax{where}: {text.strip()!r}") from None
    expr, kind = _Where(text.strip(), columns).convert(tree.body)
    if kind != "bool":
        raise WhereError(f"--where must be a condition (e.g. a comparison), not a value: "
                         f"{text.strip()!r}")
    return expr


class _Where:
    """Converts one parsed ``--where`` expression; each node gives (expression, kind), kind
    one of ``bool``, ``value`` or ``null`` (only valid in ``is None``)."""

    def __init__(self, text: str, columns: Mapping[str, pa.DataType]) -> None:
        self.text = text
        self.columns = columns

    def fail(self, node: ast.AST, what: str) -> NoReturn:
        segment = ast.get_source_segment(self.text, node) or self.text
        raise WhereError(f"--where: {what} is not allowed: {segment}")

    def convert(self, node: ast.expr) -> tuple[pl.Expr, str]:
        if isinstance(node, ast.BoolOp):
            parts = [self.condition(v) for v in node.values]
            out = parts[0]
            for part in parts[1:]:
                out = out & part if isinstance(node.op, ast.And) else out | part
            return out, "bool"
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return ~self.condition(node.operand), "bool"
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                value = self.value(node.operand)
                return (-value if isinstance(node.op, ast.USub) else value), "value"
            self.fail(node, "'~' (use 'not')")
        if isinstance(node, ast.BinOp):
            op = _ARITH.get(type(node.op))
            if op is None:
                hint = {ast.BitAnd: "'&' (use 'and')", ast.BitOr: "'|' (use 'or')"}
                self.fail(node, hint.get(type(node.op), f"the operator {type(node.op).__name__}"))
            return op(self.value(node.left), self.value(node.right)), "value"
        if isinstance(node, ast.Compare):
            return self.compare(node), "bool"
        if isinstance(node, ast.Name):
            return pl.col(self.column(node)), ("bool" if pa.types.is_boolean(
                self.columns[node.id]) else "value")
        if isinstance(node, ast.Constant):
            if node.value is None:
                return pl.lit(None), "null"
            if isinstance(node.value, bool):
                return pl.lit(node.value), "bool"
            if isinstance(node.value, (int, float, str)):
                return pl.lit(node.value), "value"
            self.fail(node, f"a {type(node.value).__name__} literal")
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            self.fail(node, "a list of values outside 'COL in (...)'")
        self.fail(node, _REFUSED.get(type(node), f"the construct {type(node).__name__}"))

    def column(self, node: ast.Name) -> str:
        if node.id not in self.columns:
            raise WhereError(f"--where: unknown column {node.id!r}; the columns are "
                             f"{', '.join(self.columns)}")
        return node.id

    def condition(self, node: ast.expr) -> pl.Expr:
        expr, kind = self.convert(node)
        if kind != "bool":
            self.fail(node, "a value where a condition is needed")
        return expr

    def value(self, node: ast.expr) -> pl.Expr:
        expr, kind = self.convert(node)
        if kind == "null":
            self.fail(node, "None outside 'is None'")
        return expr

    def compare(self, node: ast.Compare) -> pl.Expr:
        out: pl.Expr | None = None
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                term = self.membership(left, right)
                term = ~term if isinstance(op, ast.NotIn) else term
            elif isinstance(op, (ast.Is, ast.IsNot)):
                if not (isinstance(right, ast.Constant) and right.value is None):
                    self.fail(node, "'is' with anything but None")
                term = self.value(left).is_null() if isinstance(op, ast.Is) \
                    else self.value(left).is_not_null()
            else:
                if any(isinstance(x, ast.Constant) and x.value is None for x in (left, right)):
                    self.fail(node, "comparing with None (use 'is None' / 'is not None')")
                term = _COMPARE[type(op)](self.operand(left, right), self.operand(right, left))
            out = term if out is None else out & term
            left = right
        assert out is not None
        return out

    def operand(self, node: ast.expr, other: ast.expr) -> pl.Expr:
        """``node`` as a comparison operand: a string literal against a temporal column
        becomes that column's type."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                isinstance(other, ast.Name) and other.id in self.columns:
            return pl.lit(self.literal(node, self.columns[other.id]))
        return self.value(node)

    def literal(self, node: ast.Constant, dtype: pa.DataType) -> Any:
        text = str(node.value)
        try:
            if pa.types.is_date(dtype):
                return dt.date.fromisoformat(_date(text))
            if pa.types.is_time(dtype):
                return dt.time.fromisoformat(text)
            if pa.types.is_timestamp(dtype):
                return dt.datetime.fromisoformat(text)
        except (ValueError, argparse.ArgumentTypeError):
            raise WhereError(f"--where: {text!r} is not a {dtype} value") from None
        return node.value

    def membership(self, left: ast.expr, right: ast.expr) -> pl.Expr:
        if not isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            self.fail(right, "'in' without a list of values such as ('IBM', 'MSFT')")
        values = []
        for element in right.elts:
            if not (isinstance(element, ast.Constant) and
                    isinstance(element.value, (int, float, str, bool))):
                self.fail(element, "anything but a number or a string inside 'in (...)'")
            values.append(self.literal(element, self.columns[left.id])
                          if isinstance(left, ast.Name) and left.id in self.columns
                          else element.value)
        return self.value(left).is_in(values)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
