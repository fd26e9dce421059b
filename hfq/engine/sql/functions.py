"""Scalar functions: maths, strings, date/time parts, truncation and ``time_bucket``.

:data:`BY_CLASS` maps the sqlglot classes of functions it parses into a class of their own
(``EXTRACT``, ``year()``, ``date_trunc``...) to their rule; :func:`call` compiles the rest by
name.  A function not listed is refused by name.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.exprs import bucket_expr, parse_every
from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.literals import count_of, interval_ns
from hfq.engine.sql.scope import Compiles
from hfq.engine.sql.syntax import args_of, name_of
from hfq.errors import QueryError

__all__ = ["BY_CLASS", "call", "part", "time_bucket", "trunc"]

_PARTS = {"year": "year", "month": "month", "day": "day", "hour": "hour", "minute": "minute",
          "second": "second", "millisecond": "millisecond", "microsecond": "microsecond",
          "quarter": "quarter", "week": "week", "dow": "weekday", "doy": "ordinal_day",
          "dayofweek": "weekday", "dayofyear": "ordinal_day", "isodow": "weekday",
          "epoch": "epoch"}
_TRUNC = {"second": "1s", "minute": "1m", "hour": "1h", "day": "1d", "week": "1w",
          "month": "1mo", "quarter": "1q", "year": "1y", "millisecond": "1ms"}


def part(c: Compiles, name: str, value: pl.Expr, node: exp.Expression) -> pl.Expr:
    """``EXTRACT(name FROM value)`` as BIGINT (``epoch``: seconds as DOUBLE)."""
    key = _PARTS.get(name.lower())
    if key is None:
        raise error(node, f"unsupported date part {name!r}; use one of "
                          f"{', '.join(sorted(_PARTS))}")
    if key == "epoch":
        dtype = c.dtype(value)
        if isinstance(dtype, pl.Time):
            return value.to_physical().cast(pl.Float64) / 1e9
        return value.dt.epoch("us").cast(pl.Float64) / 1e6
    out = getattr(value.dt, key)()
    if key == "second":
        out = value.dt.second()
    return out.cast(pl.Int64)


def trunc(c: Compiles, unit: str, value: pl.Expr, node: exp.Expression) -> pl.Expr:
    """``date_trunc(unit, value)``."""
    every = _TRUNC.get(unit.lower().strip("'"))
    if every is None:
        raise error(node, f"date_trunc unit {unit!r}: use one of {', '.join(_TRUNC)}")
    dtype = c.dtype(value)
    if isinstance(dtype, pl.Time):
        return bucket_expr(value, parse_every(every), 0, dtype)
    out = value.dt.truncate(every)
    return out.cast(pl.Datetime("us")) if isinstance(dtype, pl.Date) else out


def time_bucket(c: Compiles, width: exp.Expression, col: exp.Expression,
                origin: exp.Expression | None, node: exp.Expression) -> pl.Expr:
    """``time_bucket(width, col[, origin])``."""
    every = interval_ns(width)
    value = c.expr(col)
    dtype = c.dtype(value)
    anchor = 0
    if origin is not None:
        if isinstance(origin, exp.Interval):
            anchor = interval_ns(origin)
        else:
            lit = pl.select(c.expr(origin)).item()
            if isinstance(lit, dt.datetime):
                lit = lit.time()
            if not isinstance(lit, dt.time):
                raise error(origin, "time_bucket's origin must be a TIME, TIMESTAMP or "
                                    "INTERVAL literal")
            anchor = ((lit.hour * 60 + lit.minute) * 60 + lit.second) * 10**9
    try:
        return bucket_expr(value, every, anchor, dtype)
    except QueryError as exc:
        raise error(node, f"time_bucket: {exc}") from None


def _extract(c: Compiles, node: exp.Extract) -> pl.Expr:
    return part(c, node.this.name, c.expr(node.expression), node)


def _part_of(name: str) -> Callable[[Compiles, exp.Expression], pl.Expr]:
    def rule(c: Compiles, node: exp.Expression) -> pl.Expr:
        return part(c, name, c.expr(node.this), node)
    return rule


def _day_of_week(c: Compiles, node: exp.Expression) -> pl.Expr:
    return part(c, "dow", c.expr(node.this), node) % 7


def _timestamp_trunc(c: Compiles, node: exp.Expression) -> pl.Expr:
    return trunc(c, node.args["unit"].name, c.expr(node.this), node)


def _date_bin(c: Compiles, node: exp.Expression) -> pl.Expr:
    # sqlglot keeps DuckDB's third argument (origin or offset) under "unit"
    third = node.args.get("origin") or node.args.get("unit") or node.args.get("zone")
    return time_bucket(c, node.this, node.expression, third, node)


def _log(c: Compiles, node: exp.Expression) -> pl.Expr:
    if node.expression is None:   # DuckDB's log(x) is base 10
        return c.expr(node.this).cast(pl.Float64).log10()
    base = node.this
    if not (isinstance(base, exp.Literal) and not base.is_string):
        raise error(base, "log(base, x) takes a numeric literal base")
    return c.expr(node.expression).cast(pl.Float64).log(float(base.this))


def _coalesce(c: Compiles, node: exp.Expression) -> pl.Expr:
    return pl.coalesce(c.exprs([node.this, *node.expressions]))


def _if(c: Compiles, node: exp.Expression) -> pl.Expr:
    return pl.when(c.expr(node.this)).then(c.expr(node.args["true"])).otherwise(
        c.expr(node.args["false"]) if node.args.get("false") is not None else pl.lit(None))


def _epoch(c: Compiles, node: exp.Expression) -> pl.Expr:
    return part(c, "epoch", c.expr(node.this), node)


BY_CLASS: dict[type[exp.Expression], Callable[[Compiles, Any], pl.Expr]] = {
    exp.Extract: _extract, exp.Year: _part_of("year"), exp.Month: _part_of("month"),
    exp.Day: _part_of("day"), exp.Hour: _part_of("hour"), exp.Minute: _part_of("minute"),
    exp.Second: _part_of("second"), exp.DayOfWeek: _day_of_week,
    exp.TimestampTrunc: _timestamp_trunc, exp.DateTrunc: _timestamp_trunc,
    exp.DateBin: _date_bin, exp.Log: _log, exp.Coalesce: _coalesce, exp.If: _if,
    exp.TimeToUnix: _epoch}


_SIMPLE: dict[str, Callable[[pl.Expr], pl.Expr]] = {
    "abs": pl.Expr.abs, "sqrt": pl.Expr.sqrt, "exp": pl.Expr.exp,
    "ln": pl.Expr.log, "log10": pl.Expr.log10, "floor": pl.Expr.floor,
    "ceil": pl.Expr.ceil, "ceiling": pl.Expr.ceil, "sign": pl.Expr.sign,
    "lower": lambda e: e.cast(pl.String).str.to_lowercase(),
    "upper": lambda e: e.cast(pl.String).str.to_uppercase(),
    "length": lambda e: e.cast(pl.String).str.len_chars().cast(pl.Int64),
    "trim": lambda e: e.cast(pl.String).str.strip_chars(),
}


def call(c: Compiles, node: exp.Expression) -> pl.Expr:
    """A scalar function by name, or refused by name."""
    name = name_of(node)
    args = args_of(node)
    if name in _SIMPLE and len(args) == 1:
        return _SIMPLE[name](c.expr(args[0]))
    if name == "round":
        digits = count_of(args[1], "round") if len(args) > 1 else 0
        return c.expr(args[0]).round(digits or 0)
    if name in ("pow", "power"):
        return c.expr(args[0]).cast(pl.Float64).pow(c.expr(args[1]))
    if name in ("greatest", "least"):
        fn = pl.max_horizontal if name == "greatest" else pl.min_horizontal
        return fn(c.exprs(args))
    if name in ("substr", "substring"):
        start = c.expr(args[1])
        length = c.expr(args[2]) if len(args) > 2 else None
        return c.expr(args[0]).cast(pl.String).str.slice(start - 1, length)
    if name == "concat":
        return pl.concat_str([e.cast(pl.String) for e in c.exprs(args)], ignore_nulls=True)
    if name in ("date_part", "datepart") and len(args) == 2:
        if not (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise error(args[0], "date_part takes a string literal part")
        return part(c, args[0].this, c.expr(args[1]), node)
    if name == "date_trunc" and len(args) == 2:
        return trunc(c, args[0].name, c.expr(args[1]), node)
    if name == "time_bucket" and len(args) in (2, 3):
        return time_bucket(c, args[0], args[1], args[2] if len(args) == 3 else None, node)
    if name in ("minute_of_day",) and len(args) == 1:
        v = c.expr(args[0])
        return v.dt.hour().cast(pl.Int64) * 60 + v.dt.minute().cast(pl.Int64)
    if name == "epoch" and len(args) == 1:
        return part(c, "epoch", c.expr(args[0]), node)
    if name in ("isnan",):
        return c.expr(args[0]).is_nan()
    raise unsupported(node)
