"""Scalar functions: maths, strings, date/time parts, truncation and ``time_bucket``.

:data:`BY_CLASS` maps the sqlglot classes of functions it parses into a class of their own
(``EXTRACT``, ``year()``, ``date_trunc``...) to their rule; :func:`call` compiles the rest by
name.  A function not listed is refused by name.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.exprs import bucket_expr, parse_every
from hfq.engine.sql import strings
from hfq.engine.sql.casts import sql_type
from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.literals import compare, count_of, divide, interval_ns, kind, months_of
from hfq.engine.sql.scope import Compiles
from hfq.engine.sql.syntax import args_of, name_of
from hfq.engine.sql.windows import duck_type

__all__ = ["BY_CLASS", "as_text", "call", "log10", "part", "time_bucket", "trunc",
           "typed_literals"]

_PARTS = {"year": "year", "month": "month", "day": "day", "hour": "hour", "minute": "minute",
          "second": "second", "millisecond": "millisecond", "microsecond": "microsecond",
          "quarter": "quarter", "week": "week", "dow": "weekday", "doy": "ordinal_day",
          "dayofweek": "weekday", "dayofyear": "ordinal_day", "isodow": "weekday",
          "epoch": "epoch"}
_TRUNC = {"second": "1s", "minute": "1m", "hour": "1h", "day": "1d", "week": "1w",
          "month": "1mo", "quarter": "1q", "year": "1y", "millisecond": "1ms"}


def part(c: Compiles, name: str, value: pl.Expr, node: exp.Expression) -> pl.Expr:
    """``EXTRACT(name FROM value)`` as DuckDB gives it: BIGINT (``epoch``: seconds as a
    DOUBLE), ``millisecond``/``microsecond`` counting the seconds too, ``dow`` Sunday = 0,
    ``isodow`` Sunday = 7."""
    key = _PARTS.get(name.lower())
    if key is None:
        raise error(node, f"unsupported date part {name!r}; use one of "
                          f"{', '.join(sorted(_PARTS))}")
    dtype = c.dtype(value)
    if not dtype.is_temporal() or isinstance(dtype, pl.Duration):
        raise error(node, f"EXTRACT({name} ...) needs a DATE, TIME or TIMESTAMP")
    if isinstance(dtype, pl.Time) and key in ("year", "month", "day", "quarter", "week",
                                               "weekday", "ordinal_day"):
        raise error(node, f"EXTRACT({name} ...) of a TIME")
    if key == "epoch":
        # (divided as IEEE division: polars' x / 1e6 multiplies by 1e-6, an ulp off on some
        # rows and not on others, so equal timestamps made two GROUP BY keys -- F78)
        if isinstance(dtype, pl.Time):
            return divide(value.to_physical().cast(pl.Float64), pl.lit(1e9))
        return divide(value.dt.epoch("us").cast(pl.Float64), pl.lit(1e6))
    if key == "millisecond":
        return value.dt.second().cast(pl.Int64) * 1000 + value.dt.millisecond().cast(pl.Int64)
    if key == "microsecond":
        return value.dt.second().cast(pl.Int64) * 1_000_000 + \
            value.dt.microsecond().cast(pl.Int64)
    out = getattr(value.dt, key)().cast(pl.Int64)
    if name.lower() in ("dow", "dayofweek"):
        return out % 7   # Sunday = 0
    return out


def trunc(c: Compiles, unit: str, value: pl.Expr, node: exp.Expression) -> pl.Expr:
    """``date_trunc(unit, value)``."""
    every = _TRUNC.get(unit.lower().strip("'"))
    if every is None:
        raise error(node, f"date_trunc unit {unit!r}: use one of {', '.join(_TRUNC)}")
    dtype = c.dtype(value)
    if not dtype.is_temporal():   # a NULL of no type too (DuckDB cannot choose either)
        raise error(node, "date_trunc needs a DATE, TIME or TIMESTAMP (CAST a NULL to one)")
    if isinstance(dtype, pl.Duration):   # DuckDB truncates its months/days/micros apart
        raise unsupported(node, "date_trunc of an INTERVAL")
    if isinstance(dtype, pl.Time):
        return bucket_expr(value, parse_every(every), 0, dtype)
    out = value.dt.truncate(every)
    return out.cast(pl.Datetime("us")) if isinstance(dtype, pl.Date) else out


_ORIGIN_US = 946857600 * 10**6   # 2000-01-03 00:00 (a Monday): DuckDB's default origin
_DAY_US = 86400 * 10**6


def time_bucket(c: Compiles, width: exp.Expression, col: exp.Expression,
                origin: exp.Expression | None, node: exp.Expression) -> pl.Expr:
    """``time_bucket(width, value[, origin or offset])`` as DuckDB: buckets of ``width``
    aligned to 2000-01-03 00:00 (a Monday), months to 2000-01-01; a TIME is bucketed as
    1970-01-01 at that time (wrapping to the day before); an INTERVAL third argument
    shifts the buckets, a TIMESTAMP or TIME one is their origin."""
    value = c.expr(col)
    dtype = c.dtype(value)
    if not dtype.is_temporal() or isinstance(dtype, pl.Duration):
        raise error(node, "time_bucket needs a DATE, TIME or TIMESTAMP")
    tu: Any = getattr(dtype, "time_unit", None) or "us"
    months = months_of(width)
    if months is not None:
        if origin is not None or isinstance(dtype, pl.Time):
            raise unsupported(node, "time_bucket in months with an origin, or of a TIME")
        m = value.dt.year().cast(pl.Int64) * 12 + value.dt.month().cast(pl.Int64) - 1 - 2000 * 12
        start = (m // months) * months + 2000 * 12
        day = pl.date(start // 12, start % 12 + 1, 1)
        if isinstance(dtype, pl.Date):
            return day
        out = day.cast(pl.Datetime(tu))
        tz = getattr(dtype, "time_zone", None)
        return out.dt.replace_time_zone(tz) if tz else out
    ns = interval_ns(width)
    if ns <= 0 or ns % 1000:
        raise error(width, "time_bucket's width must be a positive whole number of "
                           "microseconds")
    every = ns // 1000
    anchor = _ORIGIN_US
    if origin is not None:
        if isinstance(origin, exp.Interval):
            anchor += interval_ns(origin) // 1000
        else:
            lit = pl.select(c.expr(origin)).item()
            if isinstance(lit, dt.datetime) and not isinstance(dtype, pl.Time):
                anchor = _epoch_us(lit)
            elif isinstance(lit, dt.time) and isinstance(dtype, pl.Time):
                anchor = ((lit.hour * 60 + lit.minute) * 60 + lit.second) * 10**6 + \
                    lit.microsecond
            else:
                raise error(origin, "time_bucket's third argument must be an INTERVAL "
                                    "(offset), a TIMESTAMP (origin) or, for a TIME, a TIME")
    if isinstance(dtype, pl.Time) and anchor % every == 0 and every <= _DAY_US:
        # buckets with an edge at midnight (10 minutes or an hour from the default origin):
        # the form below with its shifts cancelled -- 0 <= us < a day for a TIME, so start
        # = us // every * every, within the day -- in 2 steps instead of 8 (a third of a
        # 10-minute GROUP BY's time over a day of trades); at most a day wide, so the width
        # in ns stays a BIGINT (polars makes a NULL of a wider literal)
        w = every * 1000
        return (value.to_physical() // w * w).cast(pl.Time)
    if isinstance(dtype, pl.Time):
        us = value.to_physical() // 1000
    elif isinstance(dtype, pl.Date):
        us = value.to_physical().cast(pl.Int64) * _DAY_US
    else:
        phys = value.to_physical()
        us = phys // 1000 if tu == "ns" else phys * {"us": 1, "ms": 1000, "s": 10**6}[tu]
    start = ((us - anchor) // every) * every + anchor
    if isinstance(dtype, pl.Time):
        return (start % _DAY_US * 1000).cast(pl.Time)
    if isinstance(dtype, pl.Date):
        return (start // _DAY_US).cast(pl.Int32).cast(pl.Date)
    out = start.cast(pl.Datetime("us", getattr(dtype, "time_zone", None)))
    return out.dt.cast_time_unit(tu)


def _epoch_us(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds


def _extract(c: Compiles, node: exp.Extract) -> pl.Expr:
    return _null_part(node.expression, c.expr(node.expression),
                      part(c, node.this.name, c.expr(node.expression), node))


def _null_part(arg: exp.Expression, value: pl.Expr, out: pl.Expr) -> pl.Expr:
    """``EXTRACT``/``date_part`` of a constant NULL is a DOUBLE NULL, as DuckDB binds it (its
    constant folding leaves a NULL literal, whose overload is DOUBLE; ``day(NULL::DATE)``
    stays BIGINT): ``lag(EXTRACT(day FROM CAST(NULL AS DATE)), 1, 7)`` is 7.0 there (F83)."""
    if arg.find(exp.Column, exp.Subquery, exp.Select) is not None:
        return out
    try:
        null = pl.select(value).to_series().is_null().all()
    except Exception:   # noqa: BLE001 -- a constant that fails stays as it is (raised later)
        return out
    return pl.lit(None, dtype=pl.Float64) if null else out


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


def log10(value: pl.Expr) -> pl.Expr:
    """DuckDB's ``log10``: polars' is ``ln(x) / ln(10)``, an ulp under the integer at exact
    powers of ten (log10(1000) = 2.9999999999999996, so floor(log(1e300)) was 299, F81); a
    value whose rounded logarithm n gives back ``10^n`` exactly is n.

    Examples
    --------
    >>> pl.select(log10(pl.lit(pl.Series([1000.0, 1e300, 1e-300, 0.001, 0.0, None, 1e-323])))
    ...           ).to_series().to_list()
    [3.0, 300.0, -300.0, -3.0, -inf, None, -323.0051853474518]
    """
    x = value.cast(pl.Float64)
    r = x.log10()
    n = r.round()
    # (and r is an ulp from n: a subnormal such as 9.9e-324 rounds 10^-323 to itself, F96)
    near = (r - n).abs() <= 1e-12 * n.abs().clip(lower_bound=1.0)
    return pl.when(r.is_finite() & near & (pl.lit(10.0).pow(n) == x)).then(n).otherwise(r)


def _log(c: Compiles, node: exp.Expression) -> pl.Expr:
    if node.expression is None:   # DuckDB's log(x) is base 10
        return log10(c.expr(node.this))
    base = node.this
    if not (isinstance(base, exp.Literal) and not base.is_string):
        raise error(base, "log(base, x) takes a numeric literal base")
    if float(base.this) == 10:   # (sqlglot parses log10(x) as log(10, x))
        return log10(c.expr(node.expression))
    return c.expr(node.expression).cast(pl.Float64).log(float(base.this))


def _coalesce(c: Compiles, node: exp.Expression) -> pl.Expr:
    """The first non-NULL argument.  As DuckDB's (a CASE WHEN a IS NOT NULL THEN a ...), an
    argument is evaluated -- its errors raised -- only for rows whose earlier arguments are
    all NULL."""
    args: list[pl.Expr] = []
    before: pl.Expr | None = None   # the earlier arguments are all NULL
    nodes = [node.this, *node.expressions]
    for arg in nodes:
        e = c.under(before, arg)
        args.append(e)
        before = e.is_null() if before is None else before & e.is_null()
    return pl.coalesce(as_text(c, typed_literals(c, nodes, args, node)))


def typed_literals(c: Compiles, nodes: list[exp.Expression | None], values: list[pl.Expr],
                   node: exp.Expression) -> list[pl.Expr]:
    """``values`` (the compiled ``nodes`` one result is chosen from: a CASE's, IF's or
    coalesce's) with each string literal among values of another type cast to their type,
    as DuckDB binds it (``coalesce(date, '2024-03-01')`` is a DATE, ``coalesce(sign(x),
    '0')`` a TINYINT, ``coalesce(l0, 'x')`` fails); hfq answered text (F112).  Refused by name
    where that type is not known exactly (values of several types, a DECIMAL whose precision
    hfq does not derive).  Values of different kinds (a number beside a date/time or text)
    are a named error, as DuckDB's binder's (a BOOLEAN beside a number is allowed)."""
    literal = [n is not None and isinstance(n, exp.Literal) and n.is_string for n in nodes]
    others = [(n, v) for n, v, lit in zip(nodes, values, literal)
              if not lit and n is not None and not isinstance(c.dtype(v), pl.Null)]
    kinds = sorted({kind(c.dtype(v)) for _, v in others} - {""})
    if len(kinds) > 1 and kinds != ["a boolean", "a number"]:   # DuckDB's binder refuses
        # these (F121; a BOOLEAN beside an integer is an INTEGER there)
        raise error(node, f"type mismatch in {node.sql('duckdb')!r}: {' and '.join(kinds)} "
                          "among the values one result is chosen from")
    if not any(literal) or not others:
        return values
    dtypes = {c.dtype(v) for _, v in others}
    if any(d == pl.String or isinstance(d, (pl.Categorical, pl.Enum)) for d in dtypes):
        return values   # text: the literal stays text
    parts = [n.copy() for n, _ in others]
    narrow = duck_type(exp.Coalesce(this=parts[0], expressions=parts[1:]))
    target = narrow or (sql_type(next(iter(dtypes))) if len(dtypes) == 1 else None)
    if target is None or target.startswith("DECIMAL(38"):
        names = sorted(sql_type(d) or str(d) for d in dtypes)
        raise unsupported(node, f"a string literal among values of {' and '.join(names)} here "
                                "(DuckDB casts it to their type, which hfq does not know)")
    to = exp.DataType.build(target, dialect="duckdb")
    return [c.expr(exp.cast(n.copy(), to)) if lit and n is not None else v
            for n, v, lit in zip(nodes, values, literal)]


def as_text(c: Compiles, branches: list[pl.Expr]) -> list[pl.Expr]:
    """The values one result is chosen from (a CASE's, IF's or coalesce's), SYMBOL/CHAR ones
    as text when the others are not all that same dictionary type: polars' supertype of a
    dictionary and text is the dictionary at run time but text in the plan's schema, so a
    sort of the result failed (F87).  Untyped NULLs do not count.

    Examples
    --------
    >>> import polars as pl
    >>> class C:
    ...     def dtype(self, e):
    ...         return pl.select(e).to_series().dtype
    >>> sym = pl.lit("A", dtype=pl.Categorical)
    >>> [pl.select(e).to_series().dtype for e in as_text(C(), [sym, pl.lit("b")])]
    [String, String]
    >>> [pl.select(e).to_series().dtype for e in as_text(C(), [sym, pl.lit(None)])]
    [Categorical, Null]
    """
    dtypes = [c.dtype(b) for b in branches]
    typed = {d for d in dtypes if d != pl.Null}
    if len(typed) < 2 or not any(isinstance(d, (pl.Categorical, pl.Enum)) for d in typed):
        return branches
    return [b.cast(pl.String) if isinstance(d, (pl.Categorical, pl.Enum)) else b
            for b, d in zip(branches, dtypes)]


def _if(c: Compiles, node: exp.Expression) -> pl.Expr:
    """``if(cond, a, b)``: a CASE -- each branch evaluated only for the rows it applies to."""
    cond = c.predicate(node.this, "IF").fill_null(False)
    false = node.args.get("false")
    true, other = as_text(c, typed_literals(
        c, [node.args["true"], false],
        [c.under(cond, node.args["true"]),
         c.under(~cond, false) if false is not None else pl.lit(None)], node))
    return pl.when(cond).then(true).otherwise(other)


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
    # DOUBLE results, FLOAT arguments included (as DuckDB's)
    "sqrt": lambda e: e.cast(pl.Float64).sqrt(), "exp": lambda e: e.cast(pl.Float64).exp(),
    "ln": lambda e: e.cast(pl.Float64).log(), "log10": log10,
    "lower": lambda e: e.cast(pl.String).str.to_lowercase(),
    "upper": lambda e: e.cast(pl.String).str.to_uppercase(),
    "length": lambda e: e.cast(pl.String).str.len_chars().cast(pl.Int64),
}


def round_decimal(c: Compiles, x: pl.Expr, scale: int, digits: int, node: exp.Expression,
                  bits: int | None = None) -> pl.Expr:
    """``x`` (a DECIMAL of ``scale``, or with ``bits`` an integer of that width) rounded to
    ``digits`` (< ``scale``) places, half away from zero, exactly: on its unscaled 128-bit
    integer (polars' DECIMAL product keeps the larger scale only, so scaling by 10^digits
    first rounded twice: round(214748364.7, -1) gave 214748370, F105).  A result past the
    type (38 digits; the integer's width) fails as DuckDB's "Overflow in ROUND" (F108)."""
    raw = x.to_physical().cast(pl.Int128)
    k = scale - digits
    if k > 38:   # |raw| < 10^38 <= half a step: every value rounds to 0
        whole = raw * 0
    else:        # 10^38 is still an Int128 literal; |raw| + 10^k / 2 < 2^127
        whole = (raw.abs() + 10 ** k // 2) // 10 ** k
        whole = pl.when(raw < 0).then(0 - whole).otherwise(whole)
    e = min(max(-digits, 0), 38)   # the result is whole * 10^e (whole is 0 past 38)
    if bits is not None:   # bounds on whole: polars' Int128 products wrap silently
        hi = 2 ** (bits - 1) - 1
        bad = (whole > hi // 10 ** e) | (whole < -((hi + 1) // 10 ** e))
    elif scale == 0 and e > 0:   # 10^38 and past (with a scale, whole * 10^e cannot)
        bad = whole.abs() >= 10 ** (38 - e)
    else:
        bad = pl.lit(False)
    what = "integer" if bits is not None else "DECIMAL(38)"
    whole = c.fail(pl.when(bad).then(0).otherwise(whole), bad, node,
                   f"Overflow in ROUND of {what}")
    out = whole * 10 ** e
    if bits is not None:
        return out.cast(pl.Int64)
    return out.cast(pl.Decimal(38, 0)) * (decimal.Decimal(10) ** -max(digits, 0))


def _round(c: Compiles, x: pl.Expr, digits: int, node: exp.Expression) -> pl.Expr:
    dtype = c.dtype(x)
    if isinstance(dtype, pl.Null):   # DuckDB binds round(NULL) to its BIGINT overload
        return x.cast(pl.Int64)
    if dtype.is_integer():   # an integer stays one, as in DuckDB (round(15, -1) is 20)
        return x if digits >= 0 else \
            round_decimal(c, x, 0, digits, node, bits=_int_bits(args_of(node)[0]))
    if isinstance(dtype, pl.Decimal):   # DuckDB: a DECIMAL of scale min(scale, digits)
        return x if digits >= (dtype.scale or 0) else \
            round_decimal(c, x, dtype.scale or 0, digits, node)
    x = x.cast(pl.Float64)
    if digits == 0:
        return x.round(0, mode="half_away_from_zero")
    if digits > 308:    # 10^digits past DOUBLE (a Python OverflowError): x as it is (F111)
        return x
    if digits < -323:   # 10^digits is 0.0 (x * 0 / 0 was NaN): DuckDB's 0.0, inf/NaN kept
        return pl.when(x.is_finite()).then(pl.lit(0.0)).otherwise(x)
    return _round_scaled(x, digits)


def _int_bits(node: exp.Expression) -> int:
    """The width of DuckDB's integer type of ``node``: a constant's (CAST(x AS INTEGER) is
    32 bits), else BIGINT's 64 (columns of fewer bits are read as BIGINT, ``docs/sql.md``)."""
    return {"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32}.get(duck_type(node) or "", 64)


def _split(a: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    t = a * 134217729.0   # Veltkamp: 2**27 + 1
    hi = t - (t - a)
    return hi, a - hi


def _round_scaled(x: pl.Expr, digits: int) -> pl.Expr:
    """``x`` rounded half away from zero at ``digits`` places, decided on the exact value of
    ``x * 10**digits`` (as DuckDB: ``round(2.675, 2)`` is 2.67, the double 2.675 being just
    below it): the product's rounding error (Dekker's two-product) breaks the ties that the
    rounded product shows."""
    m = 10.0**digits
    p = x * m
    xh, xl = _split(x)
    mh, ml = _split(pl.lit(m))
    err = ((xh * mh - p) + xh * ml + xl * mh) + xl * ml
    low = p.floor()
    tie = (p - low) == 0.5
    up = pl.when(p >= 0).then(err >= 0).otherwise(err > 0)
    whole = pl.when(tie).then(pl.when(up).then(low + 1).otherwise(low)) \
        .otherwise(p.round(0, mode="half_away_from_zero"))
    # divided by a column, not a scalar: polars multiplies by a scalar's reciprocal
    return pl.when(p.is_finite()).then(whole / (x * 0.0 + m)).otherwise(x)


def _substr(c: Compiles, s: pl.Expr, start: pl.Expr, length: pl.Expr | None) -> pl.Expr:
    """DuckDB's substring: 1-based; a start of 0 is the place before the first character,
    a negative one counts from the end; a negative length takes the characters before."""
    s = s.cast(pl.String)
    n = s.str.len_chars().cast(pl.Int64)
    begin = pl.when(start > 0).then(start - 1).when(start == 0).then(-1).otherwise(n + start)
    if length is None:
        lo, hi = begin, n
    else:
        lo = pl.when(length >= 0).then(begin).otherwise(begin + length)
        hi = pl.when(length >= 0).then(begin + length).otherwise(begin)
    lo = pl.max_horizontal(lo, pl.lit(0, pl.Int64))
    hi = pl.min_horizontal(hi, n)
    return s.str.slice(lo, pl.max_horizontal(hi - lo, pl.lit(0, pl.Int64)))


def _greatest(c: Compiles, args: list[pl.Expr], node: exp.Expression, *, most: bool
              ) -> pl.Expr:
    """greatest/least: NULLs skipped, NaN the largest, text (SYMBOL too) as text."""
    kinds = {kind(c.dtype(a)) for a in args} - {""}
    if len(kinds) > 1:
        raise error(node, f"type mismatch in {node.sql('duckdb')}: "
                          f"{' and '.join(sorted(kinds))}")
    if kinds == {"text"}:
        args = [a.cast(pl.String) for a in args]
    floats = [a for a in args if c.dtype(a).is_float()]
    if not floats:
        return (pl.max_horizontal if most else pl.min_horizontal)(args)
    plain = [pl.when(a.is_nan()).then(None).otherwise(a) if c.dtype(a).is_float() else a
             for a in args]
    nan = pl.any_horizontal([a.is_nan().fill_null(False) for a in floats])
    best = (pl.max_horizontal if most else pl.min_horizontal)(plain)
    # of equal values DuckDB keeps the first: greatest(-0.0, 0.0) is -0.0, polars' 0.0
    # (x / greatest(...) then +-inf; F91)
    best = pl.when(best == 0).then(
        pl.coalesce([pl.when(a == 0).then(a) for a in plain])).otherwise(best)
    if most:
        return pl.when(nan).then(pl.lit(float("nan"))).otherwise(best)
    return pl.when(best.is_null() & nan).then(pl.lit(float("nan"))).otherwise(best)


def _power(base: pl.Expr, exponent: pl.Expr) -> pl.Expr:
    """``base ^ exponent`` as C's ``pow`` (DuckDB's): polars computes a constant exponent
    0.5 as sqrt (power(-inf, 0.5) NaN, DuckDB +inf; -0.0 for 0.0) and 2, 3, 4 by
    multiplying (an ulp off pow's); an exponent that is a column takes the element-wise pow,
    except on a one-row frame or in the streaming engine (there 0.5 is fixed at -inf and
    -0.0; 2, 3, 4 may stay an ulp off) (F94)."""
    if not exponent.meta.root_names():   # a constant: made a column of base's rows
        try:
            half = pl.select(exponent).to_series().to_list() == [0.5]
        except pl.exceptions.PolarsError:
            half = False
        exponent = pl.when(base.is_null()).then(None).otherwise(exponent)
        if half:   # a one-row frame (or streaming) still takes sqrt: C's values at -inf, -0.0
            return pl.when(base.is_infinite() & (base < 0)).then(-base).otherwise(
                base.pow(exponent) + 0.0)   # (no inf literal: plans are serialized as JSON)
    return base.pow(exponent)


def _sign(c: Compiles, x: pl.Expr) -> pl.Expr:
    """-1, 0 or 1 (0 for NaN and -0.0), as DuckDB."""
    nan = x.is_nan() if c.dtype(x).is_float() else pl.lit(False)
    return pl.when(x.is_null()).then(None).when(nan).then(0).when(x > 0).then(1) \
        .when(x < 0).then(-1).otherwise(0).cast(pl.Int64)


def call(c: Compiles, node: exp.Expression) -> pl.Expr:
    """A scalar function by name, or refused by name."""
    name = name_of(node)
    args = args_of(node)
    if name in strings.RULES:   # reverse, replace, starts_with, contains, strpos, trim...
        return strings.RULES[name](c, node, args)
    if name in _SIMPLE and len(args) == 1:
        return _SIMPLE[name](c.expr(args[0]))
    if name == "abs" and len(args) == 1:
        x = c.expr(args[0])
        if isinstance(c.dtype(x), pl.Null):   # abs(NULL): a NULL BIGINT, as DuckDB's
            return x.cast(pl.Int64)
        if c.dtype(x).is_integer():
            return c.fail(x.abs(), x == -(2**63), node, "integer overflow")
        return x.abs()
    if name in ("floor", "ceil", "ceiling") and len(args) == 1:
        x = c.expr(args[0])
        dtype = c.dtype(x)
        if dtype.is_integer() or isinstance(dtype, pl.Null):   # a DOUBLE, as DuckDB's
            return x.cast(pl.Float64)
        out = x.floor() if name == "floor" else x.ceil()
        if isinstance(dtype, pl.Decimal):   # a DECIMAL of scale 0, as DuckDB's
            return out.cast(pl.Decimal(dtype.precision, 0))
        return out
    if name == "sign" and len(args) == 1:
        return _sign(c, c.expr(args[0]))
    if name == "round" and len(args) in (1, 2):
        digits = 0
        if len(args) == 2:
            d = args[1]
            neg = isinstance(d, exp.Neg)
            digits = (count_of(d.this if neg else d, "round's digits") or 0) * (-1 if neg else 1)
        return _round(c, c.expr(args[0]), digits, node)
    if name in ("pow", "power") and len(args) == 2:
        return _power(c.expr(args[0]).cast(pl.Float64), c.expr(args[1]).cast(pl.Float64))
    if name in ("greatest", "least") and args:
        return _greatest(c, c.exprs(args), node, most=name == "greatest")
    if name in ("substr", "substring") and len(args) in (2, 3):
        return _substr(c, c.expr(args[0]), c.expr(args[1]),
                       c.expr(args[2]) if len(args) > 2 else None)
    if name == "concat":
        return pl.concat_str([e.cast(pl.String) for e in c.exprs(args)], ignore_nulls=True)
    if name in ("date_part", "datepart") and len(args) == 2:
        if not (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise error(args[0], "date_part takes a string literal part")
        return _null_part(args[1], c.expr(args[1]), part(c, args[0].this, c.expr(args[1]),
                                                          node))
    if name == "date_trunc" and len(args) == 2:
        return trunc(c, args[0].name, c.expr(args[1]), node)
    if name == "time_bucket" and len(args) in (2, 3):
        return time_bucket(c, args[0], args[1], args[2] if len(args) == 3 else None, node)
    if name == "minute_of_day" and len(args) == 1:
        v = c.expr(args[0])
        return v.dt.hour().cast(pl.Int64) * 60 + v.dt.minute().cast(pl.Int64)
    if name in ("millisecond", "microsecond") and len(args) == 1:
        return part(c, name, c.expr(args[0]), node)
    if name == "epoch" and len(args) == 1:
        return part(c, "epoch", c.expr(args[0]), node)
    if name in ("isnan", "is_nan", "isinf", "is_inf", "isfinite") and len(args) == 1:
        x = c.expr(args[0])
        if not c.dtype(x).is_float():
            return pl.when(x.is_not_null()).then(name == "isfinite")
        if name in ("isnan", "is_nan"):
            return x.is_nan()
        return x.is_infinite() if name in ("isinf", "is_inf") else x.is_finite()
    if name == "nullif" and len(args) == 2:
        # (nullif(NULL, x) stays x's type: an untyped NULL constant made GROUP BY ALL group
        # an empty input into one row, F124; beside a date in coalesce it is refused, F121)
        a, b = c.coerce(c.expr(args[0]), c.expr(args[1]), node)
        return pl.when(compare(a, b, "==")).then(None).otherwise(a)
    raise unsupported(node)
