"""``CAST(x AS type)``, ``x::type``, ``TRY_CAST`` and typed literals (``TIMESTAMP '...'``)
with DuckDB's conversions.

Integers of every width become BIGINT (hfq's one integer type in SQL: safer than DuckDB's
narrower results, which can overflow) after a range check against the named type; doubles
round half to even on the way to an integer, decimals half away from zero (as DuckDB);
a value that does not convert fails the query (``TRY_CAST``: NULL).  Conversions whose text
DuckDB formats differently from polars (doubles, timestamps and times to VARCHAR) and
casts to types hfq does not hold are refused by name.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.sql.errors import unsupported
from hfq.engine.sql.literals import interval_ns, parse_literal
from hfq.engine.sql.scope import Compiles

__all__ = ["cast", "narrow_column", "sql_type", "target_type"]

T = exp.DataType.Type
_INT_RANGE = {T.TINYINT: 8, T.SMALLINT: 16, T.INT: 32, T.BIGINT: 64}
_TRUE = ("true", "t", "yes", "y", "1")
_FALSE = ("false", "f", "no", "n", "0")
_TIMESTAMPS = {T.TIMESTAMP: "us", T.TIMESTAMPNTZ: "us", T.DATETIME: "us",
               T.TIMESTAMP_MS: "ms", T.TIMESTAMP_NS: "ns"}


def target_type(node: exp.Cast) -> pl.DataType:
    """The polars type a CAST makes, or refused by name."""
    to = node.to
    kind = to.this
    if to.expressions and kind != T.DECIMAL:
        raise unsupported(node, f"CAST to {to.sql('duckdb')}")
    if kind in _INT_RANGE:
        return pl.Int64()
    if kind == T.DOUBLE:
        return pl.Float64()
    if kind == T.FLOAT:
        return pl.Float32()
    if kind == T.DECIMAL:
        params = [int(p.this.this) for p in to.expressions] if to.expressions else [18, 3]
        if len(params) == 1:
            params.append(0)
        return pl.Decimal(*params)
    if kind in (T.VARCHAR, T.TEXT, T.CHAR):
        return pl.String()
    if kind == T.BOOLEAN:
        return pl.Boolean()
    if kind == T.DATE:
        return pl.Date()
    if kind == T.TIME:
        return pl.Time()
    if kind in _TIMESTAMPS:
        return pl.Datetime(_TIMESTAMPS[kind])   # type: ignore[arg-type]
    if kind == T.TIMESTAMPTZ:
        return pl.Datetime("us", "UTC")
    if kind == T.INTERVAL:
        return pl.Duration("us")
    raise unsupported(node, f"CAST to {to.sql('duckdb')}")


def cast(c: Compiles, node: exp.Cast, *, safe: bool) -> pl.Expr:
    """``node`` (a CAST or TRY_CAST) compiled."""
    target = target_type(node)
    inner = node.this
    if isinstance(inner, exp.Literal) and inner.is_string:
        literal = _string_literal(c, inner.this, target, node)
        if literal is not None:
            return literal
    if isinstance(inner, exp.Null):
        return pl.lit(None, dtype=target)
    value = c.expr(inner)
    source = c.dtype(value)
    what = f"CAST to {node.to.sql('duckdb')}"

    def checked(out: pl.Expr, bad: pl.Expr) -> pl.Expr:
        if safe:
            return pl.when(bad.fill_null(False)).then(pl.lit(None, dtype=target)) \
                .otherwise(out)
        return c.fail(out, bad, node, f"conversion failed ({what})")

    narrow = target == pl.Int64 and _INT_RANGE[node.to.this] < 64
    if (source == target and not narrow) or isinstance(source, pl.Null):
        return value.cast(target)
    if target == pl.Int64:
        bits = _INT_RANGE[node.to.this]
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if source.is_float():
            rounded = value.round(0)   # half to even, as DuckDB casts doubles
            # bounds as doubles: 2^63 - 1 as a double is 2^63, itself past BIGINT
            bad = value.is_nan() | (rounded < float(lo)) | (rounded >= -float(lo))
            return checked(pl.when(bad).then(None).otherwise(rounded).cast(pl.Int64), bad)
        if isinstance(source, pl.Decimal):
            rounded = _whole(value, source.scale) if source.scale else value
            out = rounded.cast(pl.Int64, strict=False)
            return checked(out, out.is_null() & value.is_not_null() | (out < lo) | (out > hi))
        if source.is_integer() or source == pl.Boolean:
            out = value.cast(pl.Int64)
            return checked(out, (out < lo) | (out > hi)) if bits < 64 else out
        if _text(source):
            out = value.cast(pl.String).str.strip_chars().cast(pl.Int64, strict=False)
            return checked(out, out.is_null() & value.is_not_null() | (out < lo) | (out > hi))
    if isinstance(target, pl.Decimal) and source.is_float():
        # scaled in DOUBLE and rounded half away from zero, as DuckDB; past the precision
        # (or NaN, inf) the cast fails; past 2^53 units (where DuckDB's digits and a
        # double's part) it is refused
        scaled = (value.cast(pl.Float64) * 10.0 ** (target.scale or 0)).round(
            0, mode="half_away_from_zero")
        bad = ~scaled.is_finite() | (scaled.abs() >= 10.0 ** (target.precision or 38))
        whole = pl.when(bad).then(None).otherwise(scaled).cast(pl.Int64, strict=False)
        out = (whole.cast(pl.Decimal(38, 0)) *
               decimal.Decimal(10) ** -(target.scale or 0)).cast(target)
        out = c.fail(out, ~bad & (scaled.abs() >= 2.0**53), node,
                     f"{what} of a DOUBLE of more than 2^53 units is not supported")
        return checked(out, bad)
    if isinstance(target, pl.Decimal) and (isinstance(source, pl.Decimal) or
                                           source.is_integer()):
        # rounded half away from zero to the target's scale, as DuckDB (polars: half to
        # even); past the target's precision the cast fails by name
        scale, digits = target.scale or 0, (target.precision or 38) - (target.scale or 0)
        rounded = value.round(scale, mode="half_away_from_zero") \
            if isinstance(source, pl.Decimal) and (source.scale or 0) > scale else value
        if digits >= (38 if isinstance(source, pl.Decimal) else 19):
            return rounded.cast(target)
        limit = decimal.Decimal(10) ** digits
        bad = (rounded >= limit) | (rounded <= -limit)
        return checked(pl.when(bad).then(None).otherwise(rounded).cast(target), bad)
    if target.is_float() or isinstance(target, pl.Decimal):
        if source.is_numeric() and target == pl.Float32 and source.is_float():
            # a finite DOUBLE past FLOAT's range fails, as DuckDB's (F89; polars: +-inf)
            out = value.cast(target)
            return checked(out, out.is_infinite() & value.is_finite())
        if source.is_numeric():
            return value.cast(target)
        if _text(source) and target.is_float():
            out = value.cast(pl.String).str.strip_chars().cast(target, strict=False)
            return checked(out, out.is_null() & value.is_not_null())
    if target == pl.String:
        if _text(source) or source.is_integer() or source in (pl.Boolean, pl.Date) or \
                isinstance(source, pl.Decimal):
            return value.cast(pl.String)
    if target == pl.Boolean and (source.is_integer() or source.is_float()):
        return value != 0
    if target == pl.Boolean and _text(source):   # DuckDB's words, any case, no blanks
        word = value.cast(pl.String).str.to_lowercase()
        out = pl.when(word.is_in(_TRUE)).then(True).when(word.is_in(_FALSE)).then(False)
        return checked(out, out.is_null() & value.is_not_null())
    if target == pl.Date:
        if isinstance(source, pl.Datetime):
            return _utc(value, source).dt.date()
        if _text(source):
            out = value.cast(pl.String).str.to_date(strict=False)
            return checked(out, out.is_null() & value.is_not_null())
    if target == pl.Time and isinstance(source, pl.Datetime):
        return _utc(value, source).dt.time()
    if isinstance(target, pl.Datetime):
        if isinstance(source, pl.Date):
            out = value.cast(pl.Datetime(target.time_unit))
            return out.dt.replace_time_zone(target.time_zone) if target.time_zone else out
        if isinstance(source, pl.Datetime):
            out = _utc(value, source) if source.time_zone else value
            if target.time_zone is None:
                out = out.dt.replace_time_zone(None)
            elif source.time_zone is None:   # a local time read in the session's zone
                out = out.dt.replace_time_zone("UTC")
            return out.dt.cast_time_unit(target.time_unit or "us")
    raise unsupported(node, f"CAST from {_name(source)} to {node.to.sql('duckdb')}")


def _string_literal(c: Compiles, text: str, target: pl.DataType, node: exp.Cast
                    ) -> pl.Expr | None:
    """A typed literal (``TIMESTAMP '...'``, ``'-infinity'::TIMESTAMP``, ``INTERVAL``...)."""
    if target.is_temporal() and not isinstance(target, pl.Duration):
        return pl.lit(_temporal_value(text, target, node), dtype=target)
    if isinstance(target, pl.Duration):
        iv = exp.Interval(this=exp.Literal.string(text))
        iv.meta.update(node.meta)
        return pl.lit(dt.timedelta(microseconds=interval_ns(iv) // 1000), dtype=target)
    return None


def _temporal_value(text: str, target: pl.DataType, node: exp.Expression) -> Any:
    word = text.strip().lower()
    if isinstance(target, pl.Datetime) and word in ("infinity", "+infinity", "-infinity"):
        # DuckDB's infinite timestamps, as its Python values show them
        value = dt.datetime.min if word.startswith("-") else dt.datetime.max
        return value.replace(tzinfo=dt.timezone.utc) if target.time_zone else value
    if isinstance(target, pl.Datetime):
        value = parse_literal(text, pl.Datetime("us"), node)
        if target.time_zone:   # an instant: an offset in the text counts, else UTC
            return value.astimezone(dt.timezone.utc) if value.tzinfo else \
                value.replace(tzinfo=dt.timezone.utc)
        return value.replace(tzinfo=None)   # DuckDB's TIMESTAMP ignores an offset
    return parse_literal(text, target, node)


def sql_type(dtype: pl.DataType) -> str | None:
    """The SQL type holding values of ``dtype`` (what a CAST to it is written with), or
    None when there is none."""
    if dtype.is_integer():
        return "BIGINT"
    if isinstance(dtype, pl.Decimal):
        return f"DECIMAL({dtype.precision or 38}, {dtype.scale or 0})"
    if isinstance(dtype, pl.Datetime):
        unit = {"ns": "TIMESTAMP_NS", "ms": "TIMESTAMP_MS"}.get(dtype.time_unit or "us",
                                                               "TIMESTAMP")
        return "TIMESTAMPTZ" if dtype.time_zone and unit == "TIMESTAMP" else \
            None if dtype.time_zone else unit
    simple = {pl.Float64: "DOUBLE", pl.Float32: "FLOAT", pl.String: "VARCHAR",
              pl.Boolean: "BOOLEAN", pl.Date: "DATE", pl.Time: "TIME"}
    if isinstance(dtype, (pl.Categorical, pl.Enum)):
        return "VARCHAR"
    return next((name for t, name in simple.items() if dtype == t), None)


def _whole(value: pl.Expr, scale: int) -> pl.Expr:
    """The DECIMAL ``value`` (of ``scale`` > 0) rounded half away from zero to a whole
    number, as DuckDB's CAST to an integer: exactly, in its 128-bit units (through DOUBLE,
    2.5 * (2^53 + 1) was 22517998136852484, not ...483: F139; polars' own rounding fails
    where the rounded value needs one digit more than the type holds)."""
    units = value.to_physical()
    unit = 10 ** scale   # (even: half of it is exact; twice a remainder could pass 2^127)
    size = units.abs()
    whole = size // unit + (size % unit >= unit // 2).cast(pl.Int128)
    return pl.when(units < 0).then(pl.lit(0, dtype=pl.Int128) - whole).otherwise(whole)


def _utc(value: pl.Expr, source: pl.DataType) -> pl.Expr:
    tz = getattr(source, "time_zone", None)
    return value.dt.convert_time_zone("UTC") if tz and tz != "UTC" else value


def _text(dtype: pl.DataType) -> bool:
    return dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))


def _name(dtype: pl.DataType) -> str:
    if dtype.is_float():
        return "DOUBLE"
    if isinstance(dtype, pl.Datetime):
        return "TIMESTAMPTZ" if dtype.time_zone else "TIMESTAMP"
    if isinstance(dtype, pl.Time):
        return "TIME"
    if _text(dtype):
        return "VARCHAR"
    return str(dtype)


def narrow_column(c: Compiles, node: exp.Expression, value: pl.Expr) -> bool:
    """Whether ``node`` is a bare column of an integer type of 32 bits or fewer (compiled
    as ``value``, that column widened to BIGINT): fewer than 2^32 of its values cannot sum
    past BIGINT, so such sums need no 128-bit arithmetic."""
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Column):
        return False
    inner = value.meta.pop()
    return len(inner) == 1 and inner[0].meta.is_column() and \
        c.dtype(inner[0]) in (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16)
