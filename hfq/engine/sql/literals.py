"""Literals and types: SQL type names to polars types, INTERVAL and date/time literals,
integer arguments (LIMIT, offsets)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.exprs import parse_every
from hfq.engine.sql.errors import error
from hfq.errors import QueryError

__all__ = ["CAST_TYPES", "TEMPORAL_TYPES", "count_of", "interval_ns", "kind", "parse_literal",
           "parse_temporal"]

TEMPORAL_TYPES = {
    exp.DataType.Type.DATE: pl.Date, exp.DataType.Type.TIME: pl.Time,
    exp.DataType.Type.TIMESTAMP: pl.Datetime("us"), exp.DataType.Type.DATETIME: pl.Datetime("us"),
    exp.DataType.Type.TIMESTAMPNTZ: pl.Datetime("us"),
    exp.DataType.Type.TIMESTAMPTZ: pl.Datetime("us", "UTC")}
CAST_TYPES: dict[Any, Any] = {
    exp.DataType.Type.TINYINT: pl.Int64, exp.DataType.Type.SMALLINT: pl.Int64,
    exp.DataType.Type.INT: pl.Int64, exp.DataType.Type.BIGINT: pl.Int64,
    exp.DataType.Type.DOUBLE: pl.Float64, exp.DataType.Type.FLOAT: pl.Float64,
    exp.DataType.Type.DECIMAL: pl.Float64, exp.DataType.Type.VARCHAR: pl.String,
    exp.DataType.Type.TEXT: pl.String, exp.DataType.Type.CHAR: pl.String,
    exp.DataType.Type.BOOLEAN: pl.Boolean, **TEMPORAL_TYPES}
_INTERVAL_UNITS = {"nanosecond": "ns", "microsecond": "us", "millisecond": "ms", "second": "s",
                   "minute": "m", "hour": "h", "day": "d", "week": "w"}


def interval_ns(node: exp.Expression) -> int:
    """An INTERVAL literal as nanoseconds (days and finer)."""
    if not isinstance(node, exp.Interval):
        raise error(node, f"expected an INTERVAL, got {node.sql()!r}")
    text = node.this.name if node.this is not None else ""
    unit = node.unit.name if node.unit is not None else ""
    if not unit:
        m = re.match(r"^\s*(\d+)\s*([a-zA-Z]+)\s*$", text)
        if not m:
            raise error(node, f"interval {node.sql()!r}: use e.g. INTERVAL '5 minutes'")
        text, unit = m.group(1), m.group(2)
    key = unit.lower().rstrip("s") if unit.lower() not in ("s", "ms", "us", "ns") else unit
    short = _INTERVAL_UNITS.get(key, key)
    if short == "w":
        return int(text) * 7 * 86400 * 10**9
    try:
        return parse_every(f"{int(text)}{short}")
    except (QueryError, ValueError) as exc:
        raise error(node, f"interval {node.sql()!r}: {exc}") from None


def count_of(node: exp.Expression | None, what: str) -> int | None:
    """A non-negative integer literal (None when ``node`` is None)."""
    if node is None:
        return None
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    raise error(node, f"{what} takes a non-negative integer literal")


def kind(dtype: pl.DataType) -> str:
    """The family of a type for SQL's type checks ("" when unknown or null)."""
    if dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum)):
        return "text"
    if dtype.is_numeric():
        return "a number"
    if dtype == pl.Boolean:
        return "a boolean"
    if dtype.is_temporal():
        return "a date/time"
    return ""


def parse_literal(text: str, dtype: Any, node: exp.Expression) -> Any:
    """A date/time literal's text as a Python value of ``dtype``, or a named error."""
    try:
        if dtype == pl.Date:
            return dt.date.fromisoformat(text.strip())
        if dtype == pl.Time:
            return dt.time.fromisoformat(text.strip())
        value = dt.datetime.fromisoformat(text.strip())
        if isinstance(dtype, pl.Datetime) and dtype.time_zone and value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value
    except ValueError:
        raise error(node, f"{text!r} is not a valid {dtype} literal") from None


def parse_temporal(lit: pl.Expr, dtype: pl.DataType, node: exp.Expression) -> pl.Expr:
    """A string literal compared with a date/time column, as a literal of its type."""
    try:
        text = pl.select(lit).item()
    except pl.exceptions.PolarsError:
        return lit
    if not isinstance(text, str):
        return lit
    target: Any = dtype
    value = parse_literal(text, pl.Datetime("us", getattr(dtype, "time_zone", None))
                          if isinstance(dtype, pl.Datetime) else target, node)
    if isinstance(dtype, pl.Datetime):
        return pl.lit(value).cast(dtype)
    return pl.lit(value, dtype=target)
