"""``hfq quality``: market-data quality per symbol-day (:mod:`hfq.quality`)."""

from __future__ import annotations

import argparse
import datetime as dt

from hfq.cli.args import Command, dates, non_negative, split
from hfq.cli.database import open_table
from hfq.cli.render import emit_json, grid, say, show
from hfq.errors import HfqError

__all__ = ["QUALITY"]


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


def _arguments(qc: argparse.ArgumentParser) -> None:
    qc.add_argument("table", help="the quotes table")
    qc.add_argument("--dates", default=None, type=dates, metavar="DATE[,LAST]",
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
    qc.add_argument("--at-version", type=non_negative, default=None, metavar="N",
                    help="report on committed version N (default: the newest)")
    qc.add_argument("--all", action="store_true",
                    help="every symbol-day's counts instead of the summary")
    qc.add_argument("--png", default=None, metavar="PATH",
                    help="also draw the report as a PNG at PATH (default: none)")


def _quality(args: argparse.Namespace) -> int:
    t = open_table(args)
    report = t.quality(args.dates, split(args.symbols), version=args.at_version,
                       progress=False if args.json else None, session=args.session,
                       max_ratio=args.max_ratio, jump_k=args.jump_k)
    if args.png:
        report.plot(args.png)
        say(args, f"wrote {args.png}")
    days = report.by_symbol_day
    if args.json:
        emit_json({**report.to_dict(), "symbol_days": days.to_dicts()} if args.all
                  else report.to_dict())
        return 0
    if args.all:
        counts = days.columns[2:]
        show(report.headline(), "", grid(
            ["symbol", "date", *counts],
            ([r["symbol"], r["date"], *(f"{r[c]:,}" for c in counts)]
             for r in days.iter_rows(named=True)), right=counts))
        return 0
    summary = report.summary()
    show(report.headline(), "", grid(
        ["check", "count", "unit", "share", "symbol-days", "worst", "rule"],
        ([r["check"], f"{r['count']:,}", r["unit"], f"{r['share']:.3%}",
          f"{r['symbol_days']:,}", r["worst"], r["rule"]] for r in summary.iter_rows(named=True)),
        right=["count", "share", "symbol-days"]),
        "", f"every symbol-day: hfq quality {t.name} --all")
    return 0


QUALITY = Command("quality", "market-data quality per symbol-day: bad prices, crossed quotes, "
                  "gaps, jumps", _arguments, _quality)
