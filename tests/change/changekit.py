"""Helpers of the tests of data that changes (issue 27): a keyed tick schema, rows with the
nasty values (NULL, NaN, +-inf, -0.0, int extremes, empty text, duplicate keys, midnight),
a polars model of every operation, and a child process that runs one operation (for kill -9
at a fault point)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import polars as pl

import hfq
from hfq import schema as s

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _module(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# the suite's helpers, by path (``conftest`` is a different module in each directory)
_FAULTS = _module("_hfq_faultkit", os.path.join(ROOT, "tests", "faults", "faultkit.py"))
_SHARED = _FAULTS

SCHEMA = s.Schema({"symbol": s.SYMBOL, "date": s.DATE, "time": s.TIMESTAMP, "seq": s.LONG,
                   "px": s.DOUBLE, "qty": s.INT, "note": s.STRING})
KEY = ("symbol", "date", "time", "seq")
SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 3))
SYMBOLS = ["AA", "BB", "CC", "DD", "EE"]
DAYS = [dt.date(2024, 1, 2), dt.date(2024, 1, 3), dt.date(2024, 1, 4)]

_PX = [1.5, -0.0, 0.0, float("nan"), float("inf"), float("-inf"), None, 100.25, 1e300]
_QTY = [0, 1, -1, 2**31 - 1, -(2**31), None, 7]
_NOTE = ["", None, "x", "é ü", "a,b"]


def rows(n: int, seed: int, *, days: list[dt.date] | None = None,
         symbols: list[str] | None = None, seq_max: int = 3) -> pl.DataFrame:
    """``n`` rows with nasty values and many duplicate keys (a few times, seq in 0..seq_max)."""
    rng = np.random.default_rng(seed)
    days = days or DAYS
    symbols = symbols or SYMBOLS
    day = [days[i] for i in rng.integers(0, len(days), n)]
    seconds = rng.choice([0, 1, 34_200, 34_201, 86_399], n)   # midnight, 09:30, the last second
    return pl.DataFrame({
        "symbol": [symbols[i] for i in rng.integers(0, len(symbols), n)],
        "date": day,
        "time": [dt.datetime.combine(d, dt.time()) + dt.timedelta(seconds=int(x))
                 for d, x in zip(day, seconds)],
        "seq": rng.integers(0, seq_max + 1, n).tolist(),
        "px": [_PX[i] for i in rng.integers(0, len(_PX), n)],
        "qty": [_QTY[i] for i in rng.integers(0, len(_QTY), n)],
        "note": [_NOTE[i] for i in rng.integers(0, len(_NOTE), n)],
    }, schema={"symbol": pl.String, "date": pl.Date, "time": pl.Datetime("ns"),
               "seq": pl.Int64, "px": pl.Float64, "qty": pl.Int32, "note": pl.String})


def canonical(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in one order, text as text, floats bit for bit (NaN and -0.0 kept apart): the
    suite's ``canonical`` (tests/conftest.py)."""
    return _SHARED.canonical(df)

def same(table: Any, model: pl.DataFrame) -> bool:
    got = table if isinstance(table, pl.DataFrame) else table.to_polars()
    return canonical(got).equals(canonical(model))


def text(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with its categorical columns as text (frames from the table and from the test
    then compare and join)."""
    return df.with_columns(pl.col(pl.Categorical).cast(pl.String))


def dedup_model(old: pl.DataFrame, new: pl.DataFrame, key: tuple[str, ...], keep: str
                ) -> pl.DataFrame:
    """The polars reading of a keyed write: ``new``'s rows deduped (first or last of a key, in
    the order the table stores them: sorted by (symbol, time), ties in arrival order), then
    merged with ``old`` by the policy."""
    order = ["symbol", "time"]
    old, new = text(old), text(new)
    new = new.with_row_index("__arrival").sort([*order, "__arrival"])
    new = new.unique(subset=list(key), keep="last" if keep == "last" else "first",
                     maintain_order=True).drop("__arrival")
    if keep == "last":
        kept = old.join(new.select(key), on=list(key), how="anti", nulls_equal=True)
        return pl.concat([kept, new])
    fresh = new.join(old.select(key), on=list(key), how="anti", nulls_equal=True)
    return pl.concat([old, fresh])


def make(db: hfq.Database, name: str = "t", **options: Any) -> hfq.Table:
    return db.create_table(name, SCHEMA, partition_by=SCHEME, sort_by=("symbol", "time"),
                           **options)


# -- a process that runs one operation -------------------------------------------------------------
CHILD = textwrap.dedent("""
    import json, sys
    import polars as pl
    import hfq
    sys.path.insert(0, sys.argv[4])
    import changekit as ck
    root, op, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    db = hfq.connect(root, threads=2)
    t = db["t"]
    print("started", flush=True)
    new = ck.rows(args.get("n", 60), args.get("seed", 9))
    if op == "delete":
        r = t.delete(symbols=["AA", "BB"], where=pl.col("seq") >= 1)
    elif op == "update":
        r = t.update(set={"px": pl.col("px") * 2, "note": "fixed"}, where=pl.col("seq") == 0)
    elif op == "upsert":
        r = t.upsert(new, keep="last")
    elif op == "overwrite":
        r = t.overwrite(new.filter(pl.col("date") == ck.DAYS[0]), dates=ck.DAYS[0])
    elif op == "append":
        r = t.append(new)
    else:
        raise SystemExit(f"unknown op {op}")
    print("done", t.refresh().version, flush=True)
""")


def run_child(root: str, op: str, args: dict[str, Any] | None = None, *,
              fault: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = _FAULTS.child_env(fault)
    return subprocess.run([sys.executable, "-c", CHILD, root, op, json.dumps(args or {}),
                           os.path.dirname(os.path.abspath(__file__))],
                          capture_output=True, text=True, env=env, timeout=timeout)
