"""A linear regression over a table, each partition reduced where it is stored; prints the
regression table (coefficients, standard errors, t, p, R^2).

Expressions are SQL expressions over the table's columns (parsed by ``polars.sql_expr``).  The
default is the relative quoted spread on the quote size in dollars::

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python jobs/ols.py --dates 2007-08-01 2007-08-05 --robust HC1

    python jobs/ols.py --address local --root ./hfq_data \\
        --y "ofr / bid - 1" --x "quote_size=(bidsiz + ofrsiz) * (ofr + bid) / 2" \\
        --where "ofr > bid AND bid > 0 AND ofr / bid < 1.1"

The rows are the clean quotes by default (``hfq.quality.clean_quotes()``: positive prices, no
sentinel offers, not crossed, ``ofr/bid < 1.2``); ``--where`` replaces that filter, ``--where
''`` fits every row.

Prints the summary, then one JSON line: ``{"job": "ols", "n": ..., "coef": {...},
"stderr": {...}, "tstat": {...}, "pvalue": {...}, "r2": ..., ...}``.
"""

from __future__ import annotations

import argparse
import time

import polars as pl
from common import add_selection_args, connect, job_parser, parse, print_result, selection

from hfq import analytics as ha
from hfq.quality import clean_quotes

DEFAULT_Y = "ofr / bid - 1"
DEFAULT_X = ["quote_size=(bidsiz + ofrsiz) * (ofr + bid) / 2"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = job_parser(__doc__)
    add_selection_args(p)
    p.add_argument("--y", default=DEFAULT_Y, help="dependent variable (SQL expression)")
    p.add_argument("--x", nargs="+", default=DEFAULT_X, metavar="NAME=EXPR",
                   help="regressors, each NAME=SQL expression")
    p.add_argument("--where", default=None,
                   help="row filter (SQL); '' for none (default: the clean quotes, "
                        "hfq.quality.clean_quotes())")
    p.add_argument("--no-intercept", action="store_true")
    p.add_argument("--robust", choices=["HC0", "HC1"], help="robust standard errors")
    args = parse(p, argv)
    for item in args.x:
        if "=" not in item:
            p.error(f"--x wants NAME=EXPR, got {item!r}")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    x = {name.strip(): pl.sql_expr(expr) for name, expr in
         (item.split("=", 1) for item in args.x)}
    db = connect(args)
    try:
        table = db[args.table]
        db.session.nodes_for(start=True).alive()
        started = time.perf_counter()
        fit = ha.ols(table, y=pl.sql_expr(args.y).alias(args.y), x=x,   # named as written
                     where=clean_quotes() if args.where is None else
                     pl.sql_expr(args.where) if args.where else None,
                     intercept=not args.no_intercept, robust=args.robust, progress=False,
                     **selection(args))
        seconds = time.perf_counter() - started
        print(fit.summary())
        return print_result({
            "job": "ols", "table": args.table, "y": args.y, "n": fit.n,
            "df_model": fit.df_model, "df_resid": fit.df_resid, "coef": fit.coef,
            "stderr": fit.stderr, "tstat": fit.tstat, "pvalue": fit.pvalue, "r2": fit.r2,
            "adj_r2": fit.adj_r2, "resid_std": fit.resid_std, "cov_type": fit.cov_type,
            "seconds": round(seconds, 3)})
    finally:
        db.close()


if __name__ == "__main__":
    main()
