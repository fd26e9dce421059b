"""SQL window functions (``f(...) OVER (PARTITION BY ... ORDER BY ... ROWS|RANGE ...)``) as
polars window expressions.

Supported: ``row_number``, ``rank``, ``dense_rank``, ``lag``, ``lead``, ``first_value``,
``last_value`` (whole partition), and ``sum``/``avg``/``min``/``max``/``count`` over the whole
partition, over ``ROWS BETWEEN n PRECEDING AND CURRENT ROW`` (or ``UNBOUNDED PRECEDING``), and
over ``RANGE`` frames ending at the current row -- the SQL default with an ``ORDER BY``
(peers included) or ``RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND CURRENT ROW`` -- on one
ascending ORDER BY column.  Windows whose PARTITION BY includes the table's partition columns
(symbol and date) run on the nodes.
"""

from __future__ import annotations

from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.literals import count_of, interval_ns
from hfq.engine.sql.scope import Compiles
from hfq.engine.sql.syntax import args_of, is_agg, name_of

__all__ = ["window_expr"]

_BIG = 2**62


def window_expr(c: Compiles, node: exp.Window) -> pl.Expr:
    """A window function call as a polars window expression, or refused by name."""
    fn = node.this
    if isinstance(fn, (exp.IgnoreNulls, exp.RespectNulls)):
        raise unsupported(fn, "IGNORE/RESPECT NULLS")
    part = [c.expr(p) for p in node.args.get("partition_by") or []]
    order = node.args.get("order")
    ordered = list(order.expressions) if order is not None else []
    keys = [c.expr(o.this) for o in ordered]
    desc = [bool(o.args.get("desc")) for o in ordered]
    spec = node.args.get("spec")
    over_kw: dict[str, Any] = {}
    if keys:
        over_kw["order_by"] = keys
        over_kw["descending"] = desc[0] if len(set(desc)) == 1 else None
        if over_kw["descending"] is None:
            raise unsupported(node, "window ORDER BY with mixed directions")
        over_kw["nulls_last"] = True

    def over(e: pl.Expr, *, ordered_rows: bool = True) -> pl.Expr:
        kw = over_kw if ordered_rows else {}
        if part:
            return e.over(part, **kw)
        return e.over(pl.lit(0), **kw)

    name = name_of(fn)
    if isinstance(fn, exp.RowNumber):
        return over(pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
    if isinstance(fn, (exp.Rank, exp.DenseRank)) or name in ("rank", "dense_rank"):
        if not keys:
            return over(pl.lit(1, dtype=pl.Int64), ordered_rows=False)
        key = keys[0] if len(keys) == 1 else pl.struct(keys)
        method: Any = "dense" if isinstance(fn, exp.DenseRank) or name == "dense_rank" \
            else "min"
        return over(key.rank(method, descending=desc[0]).cast(pl.Int64), ordered_rows=False)
    if isinstance(fn, (exp.Lag, exp.Lead)):
        args = args_of(fn)
        value = c.expr(args[0])
        n = count_of(args[1], "lag/lead offset") if len(args) > 1 else 1
        fill = c.expr(args[2]) if len(args) > 2 else None
        shift = (n or 0) * (1 if isinstance(fn, exp.Lag) else -1)
        return over(value.shift(shift, fill_value=fill))
    if isinstance(fn, (exp.FirstValue, exp.LastValue)):
        value = c.expr(fn.this)
        whole = spec is not None and _is_unbounded(spec, "start") and \
            _is_unbounded(spec, "end")
        if isinstance(fn, exp.FirstValue) and (whole or spec is None or
                                               _is_unbounded(spec, "start")):
            return over(value.first())
        if isinstance(fn, exp.LastValue) and (whole or not keys):
            return over(value.last())
        raise unsupported(node, "last_value() with a frame ending at the current row")
    if not is_agg(fn):
        raise unsupported(fn, f"window function {name}()")
    return _aggregate_window(c, node, fn, name, part, keys, desc, spec, over)


def _is_unbounded(spec: exp.WindowSpec, side: str) -> bool:
    return str(spec.args.get(side) or "").upper() == "UNBOUNDED"


def _aggregate_window(c: Compiles, node: exp.Window, fn: exp.Expression, name: str,
                      part: list[pl.Expr], keys: list[pl.Expr], desc: list[bool],
                      spec: exp.WindowSpec | None, over: Any) -> pl.Expr:
    args = args_of(fn)
    if isinstance(fn, exp.Count) and (not args or isinstance(args[0], exp.Star)):
        value = pl.int_range(pl.len()).is_not_null().cast(pl.Int64)   # one per row
        kind = "count"
    else:
        if args and isinstance(args[0], exp.Distinct):
            raise unsupported(fn, f"{name}(DISTINCT ...) OVER")
        value = c.expr(args[0])
        kind = {"count": "count", "sum": "sum", "avg": "mean", "min": "min", "max": "max"}.get(
            name, "")
        if not kind:
            raise unsupported(fn, f"window aggregate {name}()")
        if kind == "count":
            value = value.is_not_null().cast(pl.Int64)
    whole = (not keys and spec is None) or (spec is not None and _is_unbounded(spec, "start")
                                            and _is_unbounded(spec, "end"))
    if whole:
        agg = {"count": value.sum(), "sum": pl.when(value.count() > 0).then(value.sum()),
               "mean": value.mean(), "min": value.min(), "max": value.max()}[kind]
        return over(agg, ordered_rows=False)
    if spec is not None and str(spec.args.get("end") or "").upper() != "CURRENT ROW":
        raise unsupported(spec, "window frames that do not end at the CURRENT ROW")
    frame_kind = (spec.args.get("kind") or "range").lower() if spec is not None else "range"
    start = spec.args.get("start") if spec is not None else "UNBOUNDED"
    if frame_kind == "rows":
        if str(start).upper() == "UNBOUNDED":
            cum = {"count": value.cum_sum(), "sum": value.cum_sum(), "min": value.cum_min(),
                   "max": value.cum_max(),
                   "mean": value.cum_sum() / value.is_not_null().cast(pl.Int64).cum_sum()}[kind]
            return over(cum)
        n = count_of(start if isinstance(start, exp.Expression) else None,
                                "ROWS n PRECEDING")
        size = (n or 0) + 1
        roll = {"count": value.rolling_sum(size, min_samples=1),
                "sum": value.rolling_sum(size, min_samples=1),
                "mean": value.rolling_mean(size, min_samples=1),
                "min": value.rolling_min(size, min_samples=1),
                "max": value.rolling_max(size, min_samples=1)}[kind]
        return over(roll)
    # RANGE: rows whose order key lies in [key - width, key] (peers included)
    if len(keys) != 1 or desc[0]:
        raise unsupported(node, "RANGE frames need exactly one ascending ORDER BY column")
    if str(start).upper() == "UNBOUNDED":
        width = _BIG
    elif isinstance(start, exp.Interval):
        width = interval_ns(start)
        if _unit_of(c, keys[0]) is None:
            raise error(start, "an INTERVAL frame needs a time ORDER BY column")
        width //= _unit_of(c, keys[0]) or 1
    else:
        width = count_of(start if isinstance(start, exp.Expression) else None,
                                    "RANGE n PRECEDING") or 0
    by = keys[0].to_physical()
    window = f"{width + 1}i"   # (key - width - 1, key]: closed on the right, integer keys
    roll = {"count": value.rolling_sum_by(by, window, closed="right"),
            "sum": value.rolling_sum_by(by, window, closed="right"),
            "mean": value.rolling_mean_by(by, window, closed="right"),
            "min": value.rolling_min_by(by, window, closed="right"),
            "max": value.rolling_max_by(by, window, closed="right")}[kind]
    return over(roll, ordered_rows=False)


def _unit_of(c: Compiles, key: pl.Expr) -> int | None:
    """Nanoseconds per unit of the key's physical integer (None: not a time)."""
    dtype = c.dtype(key)
    if isinstance(dtype, pl.Time):
        return 1
    if isinstance(dtype, pl.Datetime):
        return {"ns": 1, "us": 1000, "ms": 10**6}[dtype.time_unit or "us"]
    if isinstance(dtype, pl.Date):
        return 86400 * 10**9
    return None
