"""Literals and types: SQL type names to polars types, INTERVAL and date/time literals,
integer arguments (LIMIT, offsets)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Sequence
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.exprs import every_row, may_raise
from hfq.engine.sql.errors import error
from hfq.errors import SqlError

__all__ = ["bind", "comparable", "compare", "count_of", "divide", "interval_ns", "kind",
           "months_of", "parse_literal", "parse_temporal", "same_time_type"]

_UNITS_NS = {"nanosecond": 1, "ns": 1, "microsecond": 10**3, "us": 10**3,
             "millisecond": 10**6, "ms": 10**6, "second": 10**9, "s": 10**9, "sec": 10**9,
             "minute": 60 * 10**9, "min": 60 * 10**9, "m": 60 * 10**9,
             "hour": 3600 * 10**9, "h": 3600 * 10**9, "hr": 3600 * 10**9,
             "day": 86400 * 10**9, "d": 86400 * 10**9, "week": 7 * 86400 * 10**9,
             "w": 7 * 86400 * 10**9}
_CALENDAR = ("month", "mon", "year", "yr", "y", "quarter", "decade", "century", "millennium")
_PAIR = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")
_CLOCK = re.compile(r"^\s*([-+]?)(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d+)?))?\s*$")


def _unit(word: str) -> str:
    w = word.lower()
    if w in _UNITS_NS or w in _CALENDAR:
        return w
    return w[:-1] if w.endswith("s") and (w[:-1] in _UNITS_NS or w[:-1] in _CALENDAR) else w


def interval_ns(node: exp.Expression) -> int:
    """An INTERVAL literal as nanoseconds: ``INTERVAL '5 minutes'``, ``INTERVAL 30 SECONDS``,
    ``INTERVAL '8 hours 30 minutes'``, ``INTERVAL '01:30:00'``.  Months and years have no
    fixed length: refused here (``time_bucket`` and ``date_trunc`` take them)."""
    if not isinstance(node, exp.Interval):
        raise error(node, f"expected an INTERVAL, got {node.sql()!r}")
    text = node.this.name if node.this is not None else ""
    unit = node.unit.name if node.unit is not None else ""
    if unit:
        text = f"{text} {unit}"
    clock = _CLOCK.match(text)
    if clock:
        sign = -1 if clock.group(1) == "-" else 1
        ns = (int(clock.group(2)) * 3600 + int(clock.group(3)) * 60) * 10**9 + \
            round(float(clock.group(4) or 0) * 10**9)
        return sign * ns
    pos, total, seen = 0, 0, False
    while pos < len(text):
        m = _PAIR.match(text, pos)
        if not m:
            raise error(node, f"interval {node.sql('duckdb')!r}: use e.g. INTERVAL '5 minutes'"
                              " or INTERVAL '8 hours 30 minutes'")
        amount, word = m.group(1), _unit(m.group(2))
        if word in _CALENDAR:
            raise error(node, f"interval {node.sql('duckdb')!r}: months and years have no "
                              "fixed length (time_bucket and date_trunc take them)")
        if word not in _UNITS_NS:
            raise error(node, f"interval {node.sql('duckdb')!r}: unknown unit {m.group(2)!r}")
        value = decimal.Decimal(amount) * _UNITS_NS[word]
        if value != int(value):
            raise error(node, f"interval {node.sql('duckdb')!r} is finer than a nanosecond")
        total += int(value)
        pos, seen = m.end(), True
    if not seen:
        raise error(node, f"interval {node.sql('duckdb')!r}: use e.g. INTERVAL '5 minutes'")
    return total


def months_of(node: exp.Expression) -> int | None:
    """An INTERVAL of whole months or years (``'1 month'``, ``'2 years'``) as months, else
    None."""
    if not isinstance(node, exp.Interval):
        return None
    text = node.this.name if node.this is not None else ""
    unit = node.unit.name if node.unit is not None else ""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]+)\s*", f"{text} {unit}" if unit else text)
    if not m:
        return None
    word = _unit(m.group(2))
    factor = {"month": 1, "mon": 1, "year": 12, "yr": 12, "y": 12, "quarter": 3}.get(word)
    return int(m.group(1)) * factor if factor else None


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
    """A date/time literal's text as a Python value of ``dtype``, or a named error (a
    timestamp with an offset is an aware datetime)."""
    try:
        if dtype == pl.Date:
            return dt.date.fromisoformat(text.strip())
        if dtype == pl.Time:
            return dt.time.fromisoformat(text.strip())
        value = dt.datetime.fromisoformat(text.strip())
        if isinstance(dtype, pl.Datetime) and dtype.time_zone:
            value = value.astimezone(dt.timezone.utc) if value.tzinfo else \
                value.replace(tzinfo=dt.timezone.utc)
        return value
    except ValueError:
        raise error(node, f"{text!r} is not a valid {_sql_name(dtype)} literal") from None


def _sql_name(dtype: Any) -> str:
    if dtype == pl.Date:
        return "DATE"
    if dtype == pl.Time:
        return "TIME"
    return "TIMESTAMPTZ" if getattr(dtype, "time_zone", None) else "TIMESTAMP"


def parse_temporal(lit: pl.Expr, dtype: pl.DataType, node: exp.Expression) -> pl.Expr:
    """A string literal compared with a date/time column, as a literal of its type."""
    try:
        text = pl.select(lit).item()
    except pl.exceptions.PolarsError:
        return lit
    if not isinstance(text, str):
        return lit
    if isinstance(dtype, pl.Datetime):
        value = parse_literal(text, pl.Datetime("us", dtype.time_zone), node)
        if dtype.time_zone is None and value.tzinfo is not None:
            value = value.replace(tzinfo=None)
        return pl.lit(value).cast(pl.Datetime("us", dtype.time_zone))
    return pl.lit(parse_literal(text, dtype, node), dtype=dtype)


_UNIT_RANK = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def same_time_type(left: pl.Expr, lt: pl.DataType, right: pl.Expr, rt: pl.DataType,
                   node: exp.Expression) -> tuple[pl.Expr, pl.Expr]:
    """Two dates/timestamps of different types in one: a DATE becomes a TIMESTAMP at
    midnight, a TIMESTAMP without a zone meets a TIMESTAMPTZ in UTC (the session's zone),
    and both take the finer unit (a literal takes its column's unit when that loses
    nothing).  A TIME meets only a TIME."""
    if isinstance(lt, pl.Duration) or isinstance(rt, pl.Duration):
        # DATE +/- INTERVAL is a TIMESTAMP in DuckDB (polars kept the DATE: the hours were
        # dropped, F120)
        if isinstance(lt, pl.Date):
            return left.cast(pl.Datetime("us")), right
        if isinstance(rt, pl.Date):
            if isinstance(node, exp.Sub):
                raise error(node, f"type mismatch in {node.sql('duckdb')!r}: an INTERVAL minus "
                                  "a DATE")
            return left, right.cast(pl.Datetime("us"))
        return left, right
    if isinstance(lt, pl.Time) or isinstance(rt, pl.Time):
        sides = node.this, node.expression
        raise error(node, f"type mismatch in {node.sql('duckdb')!r}: "
                          f"{sides[0].sql('duckdb')} is {_sql_name(lt)}, "
                          f"{sides[1].sql('duckdb')} is {_sql_name(rt)}")
    if isinstance(lt, pl.Date):
        lt, left = rt, left.cast(pl.Datetime(getattr(rt, "time_unit", "us"),
                                             getattr(rt, "time_zone", None)))
        return left, right
    if isinstance(rt, pl.Date):
        right = right.cast(pl.Datetime(getattr(lt, "time_unit", "us"),
                                       getattr(lt, "time_zone", None)))
        return left, right
    assert isinstance(lt, pl.Datetime) and isinstance(rt, pl.Datetime)
    if lt.time_zone and not rt.time_zone:
        right = right.dt.replace_time_zone("UTC")
    elif rt.time_zone and not lt.time_zone:
        left = left.dt.replace_time_zone("UTC")
    elif lt.time_zone != rt.time_zone:
        left, right = left.dt.convert_time_zone("UTC"), right.dt.convert_time_zone("UTC")
    lu, ru = lt.time_unit or "us", rt.time_unit or "us"
    if lu == ru:
        return left, right
    if _literal_fits(right, lu):
        return left, right.dt.cast_time_unit(lu)
    if _literal_fits(left, ru):
        return left.dt.cast_time_unit(ru), right
    other = right if lu == "ns" else left
    if "ns" in (lu, ru) and _literal_fits(other, "us") and not _literal_fits(other, "ns"):
        # a literal past the nanoseconds' range (years 1678-2261): 'infinity' compares
        # with every value (in microseconds: each is on one side of it); another raises,
        # as DuckDB's "could not convert Timestamp to higher precision"
        if pl.select(other.dt.replace_time_zone(None).dt.cast_time_unit("us")).item() \
                not in (dt.datetime.min, dt.datetime.max):
            raise error(node, f"{node.sql('duckdb')}: a timestamp outside years 1678-2261 "
                              "does not convert to a nanosecond TIMESTAMP")
        return left.dt.cast_time_unit("us"), right.dt.cast_time_unit("us")
    unit = lu if _UNIT_RANK[lu] > _UNIT_RANK[ru] else ru
    return left.dt.cast_time_unit(unit), right.dt.cast_time_unit(unit)


def _literal_fits(e: pl.Expr, unit: str) -> bool:
    """Is ``e`` a timestamp literal exactly representable in ``unit``?"""
    if e.meta.root_names():
        return False
    try:
        value = pl.select(e.dt.replace_time_zone(None).dt.cast_time_unit("us")).item()
    except (pl.exceptions.PolarsError, OverflowError, ValueError):
        return False
    if not isinstance(value, dt.datetime):
        return False
    if unit == "s":
        return value.microsecond == 0
    if unit == "ms":
        return value.microsecond % 1000 == 0
    return unit != "ns" or 1678 <= value.year <= 2261


def comparable(value: pl.Expr, vt: pl.DataType, values: pl.Series
               ) -> tuple[pl.Expr, pl.Series]:
    """``value`` and ``values`` in one type for a set test (as SQL compares them)."""
    st = values.dtype
    if vt == st or isinstance(vt, pl.Null) or isinstance(st, pl.Null):
        return value, values
    if _is_text(vt) and _is_text(st):   # categorical against text: as it is (pruning)
        return value, values.cast(pl.String)
    if _is_text(vt) or _is_text(st):
        return value.cast(pl.String), values.cast(pl.String)
    if vt.is_numeric() and st.is_numeric():
        if vt.is_integer() and st.is_integer():
            return value.cast(pl.Int64), values.cast(pl.Int64)
        return value.cast(pl.Float64), values.cast(pl.Float64)
    if vt.is_temporal() and st.is_temporal():
        return value, values.cast(vt)
    return value, values


def _is_text(dtype: pl.DataType) -> bool:
    return dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))


def _typed(value: Any, node: exp.Expression) -> exp.Expression:
    """A Python value as a typed literal node."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise error(node, f"parameter {value} does not fit in a BIGINT")
        if value == -(2**31):   # DuckDB binds it an INTEGER (the literal -2147483648 is a
            # BIGINT: the negation of 2147483648), F110
            return exp.cast(exp.Neg(this=exp.Literal.number(2**31)), exp.DataType.Type.INT)
        return exp.Literal.number(value) if value >= 0 else \
            exp.Neg(this=exp.Literal.number(-value))
    if isinstance(value, decimal.Decimal):
        text = format(value, "f")
        lit = exp.Literal.number(text.lstrip("-"))
        return exp.Neg(this=lit) if text.startswith("-") else lit
    if isinstance(value, float):   # a DOUBLE, exactly (repr round-trips)
        return exp.cast(exp.Literal.string(repr(value)), exp.DataType.Type.DOUBLE)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, dt.datetime):
        kind = exp.DataType.Type.TIMESTAMPTZ if value.tzinfo else exp.DataType.Type.TIMESTAMP
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), kind)
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.DATE)
    if isinstance(value, dt.time):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.TIME)
    if isinstance(value, dt.timedelta):
        us = (value.days * 86400 + value.seconds) * 10**6 + value.microseconds
        return exp.Interval(this=exp.Literal.string(f"{us} microseconds"))
    raise error(node, f"a parameter of type {type(value).__name__} is not supported "
                      "(None, bool, int, float, Decimal, str, date, time, datetime, timedelta)")


def bind(tree: exp.Expression, params: Sequence[Any] | None) -> exp.Expression:
    """``tree`` with its ``?`` / ``$n`` placeholders replaced by ``params`` as typed literals
    (a wrong count, or both styles, is a named error)."""
    holders = [n for n in tree.walk(bfs=False) if isinstance(n, exp.Placeholder)]
    given = list(params) if params is not None else []
    if not holders:
        if given:
            raise SqlError(f"{len(given)} parameters given, but the statement has no "
                           "placeholder ($1 or ?)")
        return tree
    numbered = [h for h in holders if h.this is not None]
    if numbered and len(numbered) != len(holders):
        raise error(holders[0], "use either ? or $1, $2, ... placeholders, not both")
    if numbered:
        if any(not str(h.this).isdigit() for h in numbered):
            raise error(numbered[0], "named parameters are not supported; use $1 or ?")
        wanted = max(int(h.this) for h in numbered)
    else:
        wanted = len(holders)
    if len(given) != wanted:
        raise error(holders[0], f"the statement takes {wanted} parameters, {len(given)} "
                                "given")
    for i, h in enumerate(holders):
        value = given[int(h.this) - 1 if numbered else i]
        h.replace(_typed(value, h))
    return tree


_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=",
            "eq_missing": "eq_missing", "ne_missing": "ne_missing"}
_COMPARE = {"==": pl.Expr.eq, "!=": pl.Expr.ne, "<": pl.Expr.lt, "<=": pl.Expr.le,
            ">": pl.Expr.gt, ">=": pl.Expr.ge, "eq_missing": pl.Expr.eq_missing,
            "ne_missing": pl.Expr.ne_missing}


def compare(left: pl.Expr, right: pl.Expr, op: str) -> pl.Expr:
    """``left op right`` with a constant never on the left of a column expression: polars
    (2.1) evaluates ``constant op when(...)...`` to the wrong number of rows (one, or one
    per morsel: ``TIME '09:30' >= nullif(time, time)`` answered one row where the
    table has seven, a WHERE crashed in pyarrow's filter), while ``expression op
    constant`` is right -- so the comparison is flipped, which is exact.

    Examples
    --------
    >>> import polars as pl
    >>> compare(pl.lit(1), pl.col("x"), "<")   # doctest: +ELLIPSIS
    <Expr ['[(col("x")) > (dyn int: 1)]'] at ...>
    """
    # each side with whether the other is a NULL literal (evaluated once: a polars select)
    sides = ((left, _is_null(right)), (right, _is_null(left)))
    if op not in ("eq_missing", "ne_missing"):
        for side, null in sides:
            if null and side.meta.root_names():
                # NULL of BOOLEAN on every row, ``side`` evaluated: polars (2.1) makes ``x op
                # NULL`` a NULL of the wrong length inside a group, and a sort_by over it read
                # memory past its end (``first(nullif(l0, NULL) ORDER BY ...)`` answered
                # 139750215930072) -- and an x that fails still fails on every row (F84)
                return pl.when(side.is_null() | side.is_not_null()).then(
                    pl.lit(None, dtype=pl.Boolean))
    if not left.meta.root_names() and right.meta.root_names():
        out = _COMPARE[_FLIPPED[op]](right, left)
    else:
        out = _COMPARE[op](left, right)
    # polars simplifies ``x op NULL`` to NULL without evaluating x: an x that fails (an
    # overflow) is evaluated on every row all the same, as DuckDB does (F84)
    for side, null in sides:
        if null and may_raise(side):
            out = every_row(side, out)
    return out


def _is_null(e: pl.Expr) -> bool:
    """Whether ``e`` is a NULL constant: a NULL literal, or one cast (``CAST(NULL AS
    TIMESTAMP)`` beside a TIMESTAMP column is ``NULL.dt.cast_time_unit(...)``, which slipped
    past a test for literals alone: ``arg_max(nullif(ts0, CAST(NULL AS TIMESTAMP)), id)``
    read memory past a group's end, F149)."""
    if e.meta.root_names():
        return False
    try:
        values = pl.select(e).to_series()
    except pl.exceptions.PolarsError:   # (a constant that fails, or reads the frame)
        return False
    return len(values) > 0 and bool(values.is_null().all())


def divide(left: pl.Expr, right: pl.Expr, like: pl.Expr | None = None) -> pl.Expr:
    """``left / right`` rounded as IEEE division (and DuckDB): polars multiplies by the
    reciprocal of a scalar divisor, one unit in the last place off, so a constant divisor
    is made a column of itself: right times a column of ones (polars drops an added 0.0,
    and 0.0 + -0.0 would lose a -0.0 divisor's sign) as long as ``left`` -- or ``like``, a
    cheaper expression of the same length (``left`` is computed again for it: a window's
    rolled sum twice).  A divisor of +-2^k whose reciprocal is a normal double is left a
    scalar: ``x * 2^-k`` and ``x / 2^k`` are then the rounding of one real number, the same
    double (``(bid + ofr) / 2`` needs no column of ones)."""
    if right.meta.root_names() or not left.meta.root_names() or _power_of_two(right):
        return left / right
    shape = left if like is None else like
    return left / (right * (shape.is_null().cast(pl.Float64) * 0.0 + 1.0))


def _power_of_two(e: pl.Expr) -> bool:
    """Whether ``e`` (reading no column) is one DOUBLE +-2^k, -1021 <= k <= 1021."""
    try:
        values = pl.select(e).to_series()
    except pl.exceptions.PolarsError:
        return False
    if values.len() != 1 or values.null_count() or values.dtype != pl.Float64:
        return False
    mantissa, exponent = math.frexp(values.item())
    return abs(mantissa) == 0.5 and -1021 <= exponent - 1 <= 1021
