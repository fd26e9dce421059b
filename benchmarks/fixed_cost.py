"""Issue 29's per-query fixed cost: a one-symbol question through ``db.sql`` on the median
symbol of a NYSE TAQ day (about 100 rows: the work itself is microseconds, the rest is
looking up the compiled statement, planning the read, finding the symbol's rows and building
the answer), against the target of 0.3 ms.

    python benchmarks/fixed_cost.py DIR [--quotes 2000000] [--runs 2000]

DIR keeps the day (made as ``benchmarks/taq_selective.py`` makes it). For every question of
the ``taq`` scenario that names the median symbol alone (``{sym}``), the answer is checked
against DuckDB's first; then ``db.sql(text)`` (the statement cache's hit) and
``.collect()`` are timed apart and together, median over ``--runs`` after a warm-up, with
DuckDB's and polars' times for the same question beside them. For where the time goes,
``py-spy record -r 2000 -f raw -o OUT -- python benchmarks/fixed_cost.py DIR --runs 20000``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from taq_selective import day, median_seconds  # noqa: E402

from scenarios.queries import differs, normal  # noqa: E402
from scenarios.taq import QUERIES, duck_connection, symbol_params, texts  # noqa: E402


def median_ms(run: Callable[[], Any], runs: int) -> float:
    return median_seconds(run, runs) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--quotes", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=2000)
    args = ap.parse_args()
    db = day(args.dir, args.quotes)
    quotes, trades = db["quotes"].to_arrow(), db["trades"].to_arrow()
    params, counts = symbol_params(quotes)
    sym = params["sym"]
    con = duck_connection({"quotes": quotes, "trades": trades})
    lazy = {"quotes": pl.from_arrow(quotes).lazy(), "trades": pl.from_arrow(trades).lazy()}
    rows = counts.filter(pl.col("symbol") == sym)["len"][0]
    print(f"{quotes.num_rows:,} quotes; the median symbol {sym!r} has {rows} quotes; "
          f"median of {args.runs} runs (ms)")
    print(f"{'question':20} {'db.sql':>8} {'collect':>8} {'total':>8} {'DuckDB':>8} "
          f"{'polars':>8}")
    for spec in QUERIES:
        if "{sym}" not in spec.sql or "{top}" in spec.sql or "{syms" in spec.sql:
            continue
        sql = texts(spec, params)
        want = normal(con.sql(sql["duck"]).pl())
        got = normal(db.sql(sql["hfq"]).collect())
        problem = differs(got, want)
        if problem is not None:
            raise SystemExit(f"{spec.id}: hfq's answer differs from DuckDB's: {problem}")
        text = sql["hfq"]
        query = db.sql(text)
        compile_ms = median_ms(lambda t=text: db.sql(t), args.runs)
        collect_ms = median_ms(query.collect, args.runs)
        total_ms = median_ms(lambda t=text: db.sql(t).collect(), args.runs)
        duck_ms = median_ms(lambda q=sql["duck"]: con.sql(q).pl(), args.runs // 4)
        polars_ms = median_ms(lambda f=spec.polars: f(lambda t: lazy[t], params).collect(),
                              args.runs // 4)
        print(f"{spec.id:20} {compile_ms:8.3f} {collect_ms:8.3f} {total_ms:8.3f} "
              f"{duck_ms:8.3f} {polars_ms:8.3f}", flush=True)


if __name__ == "__main__":
    main()
