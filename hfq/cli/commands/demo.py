"""``hfq demo`` and ``hfq synth``: synthetic data, and the demo built on it."""

from __future__ import annotations

import argparse
import datetime as dt
import os

from hfq.cli.args import Command, positive
from hfq.cli.render import emit_json, say

__all__ = ["DEMO", "SYNTH"]


# -- hfq demo ----------------------------------------------------------------------------------
def _demo_arguments(d: argparse.ArgumentParser) -> None:
    d.add_argument("--dir", default=None,
                   help="where the demo writes its CSV, database and plot (default: "
                        "$HFQ_DEMO_DIR, else ~/.cache/hfq/demo); its csv/ and db/ are "
                        "replaced")
    d.add_argument("--days", type=positive, default=5, help="trading days from 2007-08-01")
    d.add_argument("--rows-per-day", type=positive, default=2_000_000, help="quotes a day")
    d.add_argument("--symbols", type=positive, default=8000, help="distinct symbols")


def _demo(args: argparse.Namespace) -> int:
    from hfq.demo import run_demo

    def echo(text: str) -> None:
        say(args, text)

    result = run_demo(args.dir, days=args.days, rows_per_day=args.rows_per_day,
                      symbols=args.symbols, echo=echo)
    if args.json:
        emit_json(result)
    return 0


DEMO = Command("demo", "synthetic TAQ week -> CSV -> hfq: reads, a point query, analytics, vs "
               "pickle", _demo_arguments, _demo)


# -- hfq synth ---------------------------------------------------------------------------------
def _synth_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("kind", choices=["taq", "readings"], help="what to generate")
    s.add_argument("directory", help="where the CSV files go (created if missing)")
    s.add_argument("--days", type=positive, default=1, help="days from 2007-08-01")
    s.add_argument("--rows-per-day", type=positive, default=1_000_000,
                   help="taq: quotes a day")
    s.add_argument("--symbols", type=positive, default=8000, help="taq: distinct symbols")
    s.add_argument("--devices", type=positive, default=3000, help="readings: devices")


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
        emit_json({"kind": args.kind, "files": files,
                   "bytes": sum(os.path.getsize(x) for x in files)})
    else:
        print("\n".join(files))
    return 0


SYNTH = Command("synth", "write synthetic TAQ or sensor data as CSV files", _synth_arguments,
                _synth)
