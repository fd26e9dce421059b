"""The TAQ scenario's plain reads of a few symbols (today: ``q_top_window``), timed alone
through hfq, DuckDB and polars in one process -- for a before/after of the read path without
the whole ``taq`` scenario's 6 minutes.

    python benchmarks/taq_selective.py DIR [--quotes 20000000] [--queries ID ...]

DIR keeps the day (generated and loaded by hfq's NYSE TAQ loader the first time, as the
``taq`` scenario does: seed 29, trades 15% of the quotes, symbol buckets up to 64).  Each
answer is checked against DuckDB's before timing; the figure is the median of 15 runs after
one warm-up, for every contender.  ``--queries`` times the scenario's queries named instead,
selective or not.  Run it with ``PYTHONPATH`` set to another checkout to time
that checkout's hfq against the same peers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hfq  # noqa: E402
from hfq.engine.fastpath import FAST_SYMBOLS  # noqa: E402
from hfq.ingest.taq import load_taq  # noqa: E402
from hfq.ingest.taq_synth import nyse_files  # noqa: E402
from scenarios.queries import differs, normal  # noqa: E402
from scenarios.taq import QUERIES, duck_connection, symbol_params, texts  # noqa: E402


def day(root: str, quotes: int) -> hfq.Database:
    path = os.path.join(root, "db")
    if not os.path.isdir(path):
        os.makedirs(root, exist_ok=True)
        bbo, trade = nyse_files(root, "2026-04-01", quotes=quotes, trades=int(quotes * 0.15),
                                seed=29)
        db = hfq.connect(path)
        buckets = max(4, min(64, quotes // 300_000))
        for name, schema, src in (("quotes", hfq.schemas.NYSE_QUOTES, bbo),
                                  ("trades", hfq.schemas.NYSE_TRADES, trade)):
            load_taq(db.create_table(name, schema, sort_by=("symbol", "time"),
                                     partition_by=hfq.Hash("symbol", buckets)), src)
    return hfq.connect(path)


def median_seconds(run: Callable[[], Any], n: int = 15) -> float:
    run()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--quotes", type=int, default=20_000_000)
    ap.add_argument("--queries", nargs="+", metavar="ID",
                    help="the taq scenario's queries to time (default: the plain reads of "
                         "a few symbols)")
    args = ap.parse_args()
    unknown = set(args.queries or ()) - {spec.id for spec in QUERIES}
    if unknown:
        raise SystemExit(f"no such taq queries: {', '.join(sorted(unknown))}")
    db = day(args.dir, args.quotes)
    quotes, trades = db["quotes"].to_arrow(), db["trades"].to_arrow()
    params, _ = symbol_params(quotes)
    con = duck_connection({"quotes": quotes, "trades": trades})
    lazy = {"quotes": pl.from_arrow(quotes).lazy(), "trades": pl.from_arrow(trades).lazy()}
    print(f"hfq from {os.path.dirname(hfq.__file__)}; {quotes.num_rows:,} quotes")
    for spec in QUERIES:
        sql = texts(spec, params)
        if args.queries:
            if spec.id not in args.queries:
                continue
        elif not _plain_read_of_few_symbols(db, sql["hfq"]):
            continue
        want = normal(con.sql(sql["duck"]).pl())
        for name, got in (("hfq", db.sql(sql["hfq"]).collect()),
                          ("polars", spec.polars(lambda t: lazy[t], params).collect())):
            problem = differs(normal(got), want)
            if problem is not None:
                raise SystemExit(f"{spec.id}: {name}'s answer differs from DuckDB's: {problem}")
        h = median_seconds(lambda q=sql["hfq"]: db.sql(q).collect())
        d = median_seconds(lambda q=sql["duck"]: con.sql(q).pl())
        p = median_seconds(lambda f=spec.polars: f(lambda t: lazy[t], params).collect())
        print(f"{spec.id:20} {want.height:>9,} rows   hfq {h * 1e3:8.2f} ms   DuckDB "
              f"{d * 1e3:8.2f} ms ({d / h:5.2f}x)   polars {p * 1e3:8.2f} ms ({p / h:5.2f}x)",
              flush=True)


def _plain_read_of_few_symbols(db: hfq.Database, sql: str) -> bool:
    try:
        plain = db.sql(sql)._plain()
    except hfq.errors.HfqError:
        return False
    symbols = None if plain is None else plain.plan.filters.symbols
    return symbols is not None and len(symbols) <= FAST_SYMBOLS


if __name__ == "__main__":
    main()
