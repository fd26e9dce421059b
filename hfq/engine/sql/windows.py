"""SQL window functions (``f(...) OVER (PARTITION BY ... ORDER BY ... ROWS|RANGE ...)``) as
polars window expressions, with DuckDB's semantics.

Rows are ordered by the ORDER BY keys, each ascending or descending, NULLs last unless
``NULLS FIRST``, NaN above every number.  Ranking functions rank NULL keys like any other
(last); aggregates skip NULL inputs (a running sum keeps its value over a NULL, a frame of
only NULLs gives NULL, ``count`` 0); ``max`` is NaN once a NaN is in the frame, ``min`` only
when every value in it is NaN.  Frames: the whole partition (no ORDER BY, or UNBOUNDED on
both sides), ``ROWS BETWEEN a AND b`` with ``n PRECEDING``/``n FOLLOWING``/``CURRENT ROW``/
``UNBOUNDED``, and ``RANGE`` frames ending at the current row -- the default with an ORDER BY
(peers included) or ``RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND CURRENT ROW`` on one
ascending time or number key.  Windows whose PARTITION BY includes the table's partition
columns (symbol and date) run on the nodes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from sqlglot import exp

from hfq.engine import kernels
from hfq.engine.aggs import lighter
from hfq.engine.exprs import every_row
from hfq.engine.ops import choice
from hfq.engine.sql.casts import narrow_column, sql_type
from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.literals import count_of, divide, interval_ns
from hfq.engine.sql.literals import kind as kind_name
from hfq.engine.sql.scope import Compiles
from hfq.engine.sql.syntax import args_of, is_agg, name_of

__all__ = ["adds_alike", "order_moves", "window_expr"]

_I64 = 2**63 - 1
WINDOW_ROWS = 2**32
"""Fewer values than this of a column of 32 bits or fewer sum inside BIGINT (a test may make
it smaller)."""
FLAT_ROWS = 1_000
"""A window over partitions in order (:meth:`_Window.in_order`) runs flat (without ``over``)
where they hold this many rows or fewer on average."""
_AGG_KINDS = {"count": "count", "sum": "sum", "avg": "mean", "mean": "mean", "min": "min",
              "max": "max"}


@dataclass
class _Window:
    """One OVER clause: its partition keys and its order."""

    c: Compiles
    part: list[pl.Expr]
    keys: list[pl.Expr]
    desc: list[bool]
    nulls_last: list[bool]

    def over(self, e: pl.Expr, *, ordered: bool = True,
             flat: Callable[[Shift], pl.Expr] | None = None) -> pl.Expr:
        """``e`` per partition, evaluated over the partition's rows in window order -- as
        they stand where :meth:`in_order` holds over a frame of ``SHARED_ROWS`` rows or
        more (polars' ``order_by`` sorts the rows again for every window: 40 ms over 1 M
        rows by (time, seq), where a table's rows already lie in that order).  ``flat``,
        when given, makes ``e`` from a shift alone; there it runs over the whole frame with
        :meth:`shift`, without ``over`` (which evaluates ``e`` partition by partition: a
        5-row avg over 1.5 M trades of 28,000 symbols 297 ms, flat 84)."""
        part = self.part or [pl.lit(0)]
        if not ordered or not self.keys:
            return e.over(part)
        if len(set(self.desc)) == 1 and len(set(self.nulls_last)) == 1:
            out = e.over(part, order_by=self.keys, descending=self.desc[0],
                         nulls_last=self.nulls_last[0])
        else:
            out = e.over(part, order_by=self.code(), nulls_last=True)
        test = self.in_order()
        if test is None:
            return out
        as_they_lie = choice(test, e.over(part), out, large=True)
        if flat is None:
            return as_they_lie
        if not self.part:
            return choice(test, flat(self.shift), out, large=True)
        # (over few long partitions, over evaluates as fast: 50 symbols' 10-row avgs 34 ms
        # over, 38 flat; one test where it runs flat, over many short ones)
        return choice(test & (self.parts() * FLAT_ROWS >= pl.len()), flat(self.shift),
                      as_they_lie, large=True)

    def shift(self, e: pl.Expr, k: int) -> pl.Expr:
        """``e`` of the row ``k`` rows back (ahead, below 0) in the same partition, NULL where
        there is none -- over a frame whose partitions are each one run of rows
        (:meth:`in_order`)."""
        if k == 0:
            return e
        same = pl.all_horizontal([p.shift(k).eq_missing(p) for p in self.part]) \
            if self.part else pl.lit(True)
        return pl.when(same).then(e.shift(k))

    def in_order(self) -> pl.Expr | None:
        """Whether each partition's rows are one run of consecutive rows whose keys come
        strictly after the row before's in window order (one boolean over the frame, for
        :func:`hfq.engine.ops.choice`): then the rows stand in the one order the ORDER BY
        allows (no peers), and ``e.over(part)`` reads them as ``order_by`` would.  None (the
        rows are sorted) unless every key is a number or a time -- never NULL or NaN, whose
        places are the sort's to give -- and every PARTITION BY key reads a column and is not
        a double (whose NaN and -0.0 group as equal values may not compare)."""
        known = []
        for k in self.keys:
            dtype = self.c.dtype(k)
            if not (dtype.is_numeric() or dtype.is_temporal()) or dtype == pl.Boolean:
                return None
            known.append(k.is_not_null() & ~k.is_nan() if dtype.is_float() else
                         k.is_not_null())
        if any(not p.meta.root_names() or self.c.dtype(p).is_float() for p in self.part):
            return None
        after: pl.Expr | None = None   # the keys from this one on come strictly after
        for k, desc in reversed(list(zip(self.keys, self.desc))):
            before = k.shift()
            step = k < before if desc else k > before
            after = step if after is None else step | ((k == before) & after)
        assert after is not None
        if not self.part:
            return pl.all_horizontal(known).all() & after.fill_null(True).all()
        # each partition one run of rows (as many runs as partitions), in order within it
        # (a test over(part) cost 320 ms over 1.5 M trades of 28,000 symbols; this, 20)
        first = pl.int_range(pl.len()) == 0
        same = ~first & pl.all_horizontal([p.eq_missing(p.shift()) for p in self.part])
        runs = (~same).sum()
        return pl.all_horizontal(known).all() & (runs == self.parts()) & \
            (after.fill_null(True) | ~same).all()

    def parts(self) -> pl.Expr:
        """The number of partitions in the frame."""
        # (fields named apart: keys k % 2 and k % 3 would both be "k")
        return self.part[0].n_unique() if len(self.part) == 1 else \
            pl.struct([p.alias(f"p{i}") for i, p in enumerate(self.part)]).n_unique()

    def code(self) -> pl.Expr:
        """One ascending key without NULLs ordering rows as the ORDER BY does."""
        ranks = []
        for k, d, last in zip(self.keys, self.desc, self.nulls_last):
            r = k.rank("dense", descending=d).cast(pl.Int64)
            ranks.append(r.fill_null(r.max().fill_null(0) + 1 if last else 0))
        if len(ranks) == 1:
            return ranks[0]
        # (fields named apart: keys k % 2 and k % 3 would both be "k")
        return pl.struct([r.alias(f"k{i}") for i, r in enumerate(ranks)]).rank("dense") \
            .cast(pl.Int64)

    def peers(self, e: pl.Expr) -> pl.Expr:
        """``e`` (ordered) taken at the last row of each set of peers (rows with equal
        keys), as RANGE frames ending at the CURRENT ROW include them."""
        row = pl.int_range(pl.len(), dtype=pl.Int64)
        last = row == pl.len() - 1
        for k in self.keys:
            last = last | k.ne_missing(k.shift(-1))
        at = pl.when(last).then(row).otherwise(None).fill_null(strategy="backward")
        return self.over(e.gather(at))


def window_expr(c: Compiles, node: exp.Window) -> pl.Expr:
    """A window function call as a polars window expression, or refused by name."""
    fn = node.this
    ignore_nulls = isinstance(fn, exp.IgnoreNulls)
    if isinstance(fn, (exp.IgnoreNulls, exp.RespectNulls)):
        fn = fn.this
    order = node.args.get("order")
    ordered = list(order.expressions) if order is not None else []
    # a key repeated later in the ORDER BY never breaks a tie: only its first place counts
    ordered = [o for i, o in enumerate(ordered)
               if all(o.this != p.this for p in ordered[:i])]
    # a key that reads no column (a literal, a scalar subquery's value) is one value on
    # every row: it orders nothing and leaves peers as they are, so it is dropped; keys all
    # of that kind make every row a peer, which the frames here do not compute: refused
    keys = [(o, _text(c, c.expr(o.this))) for o in ordered]
    if keys and not any(k.meta.root_names() for _, k in keys):
        raise unsupported(ordered[0], "a window ordered only by keys that read no column "
                                      "(DuckDB takes every row as a peer): write it without")
    ordered = [o for o, k in keys if k.meta.root_names()]
    w = _Window(c, [c.expr(p) for p in node.args.get("partition_by") or []],
                [k for _, k in keys if k.meta.root_names()],
                [bool(o.args.get("desc")) for o in ordered],
                [not o.args.get("nulls_first") for o in ordered])
    spec = node.args.get("spec")
    name = name_of(fn)
    if ignore_nulls and not isinstance(fn, (exp.FirstValue, exp.LastValue, exp.Lag, exp.Lead)):
        raise unsupported(node, f"IGNORE NULLS with {name}()")
    if isinstance(fn, exp.RowNumber):
        return w.over(pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
    if isinstance(fn, (exp.Rank, exp.DenseRank)):
        if fn.expressions:
            raise unsupported(fn, f"{name}() with arguments")
        if not w.keys:
            return w.over(pl.lit(1, dtype=pl.Int64), ordered=False)
        how: Any = "dense" if isinstance(fn, exp.DenseRank) else "min"
        if len(w.keys) == 1:   # one key: ranked directly, NULLs after (or before) the rest
            key = w.keys[0]
            ranked = key.rank(how, descending=w.desc[0]).cast(pl.Int64)
            after = key.count().cast(pl.Int64) if how == "min" else \
                key.drop_nulls().n_unique().cast(pl.Int64)
            nulls = key.null_count().cast(pl.Int64)
            out = pl.when(key.is_null()).then(after + 1 if w.nulls_last[0] else 1) \
                .otherwise(ranked if w.nulls_last[0] else
                           ranked + (nulls if how == "min" else
                                     (nulls > 0).cast(pl.Int64)))
            return w.over(out, ordered=False)
        code = w.code()
        return w.over(code.rank(how).cast(pl.Int64), ordered=False)
    if isinstance(fn, exp.Ntile):
        n = count_of(fn.this, "ntile(n)")
        if not n:
            raise error(fn, "ntile(n) takes a positive integer literal")
        row, size = pl.int_range(pl.len(), dtype=pl.Int64), pl.len().cast(pl.Int64)
        per, extra = size // n, size % n   # the first `extra` buckets hold one row more
        big = extra * (per + 1)
        bucket = pl.when(row < big).then(row // (per + 1)).otherwise(
            extra + (row - big) // pl.when(per > 0).then(per).otherwise(1))
        return w.over(bucket + 1)
    if isinstance(fn, (exp.Lag, exp.Lead)):
        return _lag(c, w, fn, ignore_nulls)
    if isinstance(fn, (exp.FirstValue, exp.LastValue)):
        return _first_last(c, w, node, fn, spec, ignore_nulls)
    if not is_agg(fn):
        raise unsupported(fn, f"window function {name}()")
    return _aggregate(c, w, node, fn, name, spec)


def _text(c: Compiles, e: pl.Expr) -> pl.Expr:
    """A SYMBOL/CHAR (categorical) order key as its text (it orders as text)."""
    return e.cast(pl.String) if isinstance(c.dtype(e), (pl.Categorical, pl.Enum)) else e


def _value(c: Compiles, node: exp.Expression) -> pl.Expr:
    """A window function's argument, one value per row even when it is a constant (a
    literal would be one value: shifted or rolled, it is gone) -- a scalar subquery's
    value too, though its SQL names columns (of its own table); an aggregate of a grouped
    query (``sum(count(*)) OVER ()``) is a column of the groups already."""
    value = c.expr(node)
    return value if value.meta.root_names() else pl.repeat(value, pl.len())


def _lag(c: Compiles, w: _Window, fn: exp.Expression, ignore_nulls: bool) -> pl.Expr:
    args = args_of(fn)
    value = _value(c, args[0])
    n = count_of(args[1], "lag/lead offset") if len(args) > 1 else 1
    if ignore_nulls:
        raise unsupported(fn, f"IGNORE NULLS with {name_of(fn)}()")
    shift = (n or 0) * (1 if isinstance(fn, exp.Lag) else -1)
    out = value.shift(shift)
    if len(args) <= 2:
        return w.over(out, flat=lambda at: at(value, shift))
    # the default, in the value's type (DuckDB casts it so)
    if args[2].find(exp.Column):
        raise unsupported(args[2], f"{name_of(fn)}() with a default that is not a "
                                   "constant")
    target = sql_type(c.dtype(value))
    if target is None:
        raise unsupported(args[2], f"{name_of(fn)}() with a default, of a "
                                   f"{c.dtype(value)} value")
    default = args[2].copy()
    narrow = duck_type(args[0])   # DuckDB's type of a constant, narrower than hfq's
    if narrow is not None:        # (lag(2, 1, 2^40): INTEGER, the default fails)
        default = exp.cast(default, exp.DataType.build(narrow, dialect="duckdb"))
    elif target.startswith("DECIMAL(38") and not isinstance(args[2], exp.Null):
        # a DECIMAL whose precision hfq does not track (l0 * 1.5: DuckDB's DECIMAL(20, 1)):
        # whether DuckDB can cast the default to it is not known here (F106)
        raise unsupported(args[2], f"{name_of(fn)}() with a default, of a DECIMAL "
                                   "expression whose precision hfq does not track")
    fill = c.expr(exp.cast(default, exp.DataType.build(target, dialect="duckdb")))
    # (flat: a row k rows back in the partition is one where a column of TRUE shifts in)
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    outside = row < shift if shift >= 0 else row >= pl.len() + shift
    return w.over(pl.when(outside).then(fill).otherwise(out), flat=lambda at: pl.when(
        at(pl.repeat(True, pl.len()), shift).is_null()).then(fill).otherwise(at(value, shift)))


_INT_WIDTH = {"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32}
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INTEGER": 10}   # as a DECIMAL(n, 0)
_NARROW_CASTS = {exp.DataType.Type.TINYINT: "TINYINT", exp.DataType.Type.SMALLINT: "SMALLINT",
                 exp.DataType.Type.INT: "INTEGER", exp.DataType.Type.FLOAT: "FLOAT"}


def duck_type(node: exp.Expression) -> str | None:
    """DuckDB's type of a constant where it is narrower than the type hfq computes it in
    (64-bit integers, DECIMAL(38, s)): an integer literal is an INTEGER when it fits 32 bits,
    a decimal literal a DECIMAL of its written digits, ``sign()`` a TINYINT, a CAST to
    TINYINT/SMALLINT/INTEGER/FLOAT that type, ``+ - * % //`` of those the wider (a bare
    literal takes the other side's type), ``abs``/``round``/``trunc``/``nullif`` of one its
    type, ``greatest``/``least``/``coalesce``/CASE results the widest; None otherwise.

    Examples
    --------
    >>> import sqlglot
    >>> [duck_type(sqlglot.parse_one(t)) for t in ("2", "-2.5", "000.50", "sign(1) + 1",
    ...                                             "2147483648", "x", "CAST(x AS REAL)",
    ...                                             "abs(7)", "CASE WHEN x THEN 100 END",
    ...                                             "greatest(7, 2147483648)")]
    ['INTEGER', 'DECIMAL(2, 1)', 'DECIMAL(5, 2)', 'TINYINT', None, None, 'FLOAT', 'INTEGER', \
'INTEGER', None]
    """
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        text = str(node.this)
        if text.isdigit():
            return "INTEGER" if int(text) < 2 ** 31 else None
        whole, dot, frac = text.partition(".")
        if dot and (whole + frac).isdigit() and frac:
            digits = max(len(whole) + len(frac), len(frac))
            return f"DECIMAL({digits}, {len(frac)})" if digits <= 38 else None
        return None
    if isinstance(node, exp.Sign):
        return "TINYINT"
    if isinstance(node, exp.Cast):   # CAST(x AS INTEGER): hfq computes it in BIGINT (F88)
        return _NARROW_CASTS.get(node.to.this)
    if isinstance(node, (exp.Abs, exp.Nullif)):   # the value's type (F90)
        return duck_type(node.this)
    if isinstance(node, (exp.Round, exp.Trunc, exp.Ceil, exp.Floor)):
        inner = duck_type(node.this)
        if inner in _INT_WIDTH:   # ceil/floor of an integer is a DOUBLE in DuckDB
            return inner if isinstance(node, (exp.Round, exp.Trunc)) else None
        return _decimal_rounded(node, inner) if inner else None
    if isinstance(node, (exp.Greatest, exp.Least, exp.Coalesce, exp.Case, exp.If)):
        if isinstance(node, exp.Case):   # the widest of the results; NULLs take any type
            parts = [b.args.get("true") for b in node.args.get("ifs") or []] + \
                [node.args.get("default")]
        elif isinstance(node, exp.If):   # if(c, a, b): a CASE (F113)
            parts = [node.args.get("true"), node.args.get("false")]
        else:
            parts = [node.this, *node.expressions]
        parts = [n for n in parts if n is not None and not isinstance(n, exp.Null)]
        types = [duck_type(n) for n in parts]
        literal = [_bare(n) for n in parts]
        if any(literal) and any(t in ("TINYINT", "SMALLINT") and not lit
                                for t, lit in zip(types, literal)):
            # DuckDB gives an integer literal the narrow type beside it when it fits
            # (coalesce(CAST(1 AS TINYINT), 2) is a TINYINT), by rules hfq does not follow
            raise unsupported(node, "the type of an integer literal beside a TINYINT or "
                                    "SMALLINT value here (DuckDB narrows the literal)")
        if not types or not all(t in _INT_WIDTH for t in types):
            return _decimal_widest(types)   # (F106)
        return max(types, key=lambda t: _INT_WIDTH[t or ""])
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.IntDiv)):
        left, right = duck_type(node.this), duck_type(node.expression)
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul)) and left and right and \
                left.startswith("DECIMAL") and right.startswith("DECIMAL"):
            return _decimal_arithmetic(node, left, right)   # (F95)
        if left not in _INT_WIDTH or right not in _INT_WIDTH:
            return None
        bare = [isinstance(n, exp.Literal) for n in (node.this, node.expression)]
        if bare[0] != bare[1]:
            return right if bare[0] else left
        return max(left, right, key=_INT_WIDTH.__getitem__)
    return None


def _decimal_rounded(node: exp.Expression, inner: str) -> str | None:
    """DuckDB's DECIMAL of round/trunc/ceil/floor of a DECIMAL(p, s): the precision kept,
    the scale the digits asked for (none by default, negative as none, at most s):
    round(0.5) is DECIMAL(2, 0), round(12.345, 5) DECIMAL(5, 3) (F99); None when the digits
    are not an integer literal."""
    if not inner.startswith("DECIMAL"):
        return None
    p, s = map(int, inner[8:-1].split(","))
    digits = node.args.get("decimals")
    if digits is None:
        return f"DECIMAL({p}, 0)"
    sign = -1 if isinstance(digits, exp.Neg) else 1
    digits = digits.this if sign < 0 else digits
    if isinstance(node, (exp.Ceil, exp.Floor)) or not (
            isinstance(digits, exp.Literal) and str(digits.this).isdigit()):
        return None
    return f"DECIMAL({p}, {min(max(sign * int(digits.this), 0), s)})"


def _bare(node: exp.Expression) -> bool:
    """An integer literal, signed or in parentheses."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit()


def _decimal_widest(types: list[str | None]) -> str | None:
    """DuckDB's DECIMAL of greatest/least/coalesce/CASE over DECIMALs and narrow integers:
    the widest integer part and the largest scale (coalesce(1.25, 1.25) is DECIMAL(3, 2),
    coalesce(1, 1.25) DECIMAL(12, 2): an INTEGER counts as DECIMAL(10, 0)); None when another
    type takes part, no DECIMAL does, or past 38 digits."""
    parts = []
    for t in types:
        if t in _INT_WIDTH:
            parts.append((_INT_DIGITS[t], 0))
        elif t and t.startswith("DECIMAL"):
            p, s = map(int, t[8:-1].split(","))
            parts.append((p, s))
        else:
            return None
    if len(parts) == sum(t in _INT_WIDTH for t in types):
        return None
    s = max(s for _, s in parts)
    p = max(p - s for p, s in parts) + s
    return f"DECIMAL({p}, {s})" if p <= 38 else None


def _decimal_arithmetic(node: exp.Expression, left: str, right: str) -> str | None:
    """DuckDB's DECIMAL of ``+ - *`` of two DECIMALs: a sum keeps the larger scale and the
    wider integer part plus one digit (2.0 + 0.1 is DECIMAL(3, 1)), a product adds
    precisions and scales; None past 38 digits."""
    (p1, s1), (p2, s2) = (map(int, t[8:-1].split(",")) for t in (left, right))
    if isinstance(node, exp.Mul):
        p, s = p1 + p2, s1 + s2
    else:
        s = max(s1, s2)
        p = max(p1 - s1, p2 - s2) + s + 1
    return f"DECIMAL({p}, {s})" if p <= 38 else None


def _bounds(spec: exp.WindowSpec | None, c: Compiles) -> tuple[str, Any, Any]:
    """(kind, start, end): offsets as ints (negative: preceding), None for UNBOUNDED, or the
    INTERVAL node of a RANGE offset."""
    if spec is None:
        return "range", None, 0
    kind = (spec.args.get("kind") or "range").lower()
    if kind not in ("rows", "range"):
        raise unsupported(spec, f"{kind.upper()} frames")

    def side(value: Any, side: Any) -> Any:
        text = str(value or "").upper()
        if text == "UNBOUNDED":
            return None
        if text == "CURRENT ROW":
            return 0
        if value is None:   # ROWS 2 PRECEDING: the end is the current row
            return 0
        sign = -1 if str(side or "").upper() == "PRECEDING" else 1
        if isinstance(value, exp.Interval):
            if sign > 0:
                raise unsupported(spec, "RANGE frames that end after the CURRENT ROW")
            return value
        n = count_of(value, f"{kind.upper()} n PRECEDING/FOLLOWING")
        return sign * (n or 0)

    start = side(spec.args.get("start"), spec.args.get("start_side"))
    end = side(spec.args.get("end"), spec.args.get("end_side"))
    return kind, start, end


def _first_last(c: Compiles, w: _Window, node: exp.Window, fn: exp.Expression,
                spec: exp.WindowSpec | None, ignore_nulls: bool) -> pl.Expr:
    value = _value(c, fn.this)
    kind, start, end = _bounds(spec, c)
    if not w.keys or (start is None and end is None):
        pick = value.drop_nulls() if ignore_nulls else value
        pick = pick.first() if isinstance(fn, exp.FirstValue) else pick.last()
        return w.over(every_row(value, pick), ordered=bool(w.keys))
    if isinstance(fn, exp.FirstValue) and start is None:
        if ignore_nulls:   # the first non-NULL value up to this row
            seen = value.is_not_null().cum_sum() > 0
            return w.over(pl.when(seen).then(every_row(value, value.drop_nulls().first())))
        return w.over(every_row(value, value.first()))
    if isinstance(fn, exp.LastValue) and end == 0 and start is None:
        running = value.fill_null(strategy="forward") if ignore_nulls else value
        return w.peers(running) if kind == "range" else w.over(running)
    raise unsupported(node, f"{name_of(fn)}() over this frame")


def _aggregate(c: Compiles, w: _Window, node: exp.Window, fn: exp.Expression, name: str,
               spec: exp.WindowSpec | None) -> pl.Expr:
    args = args_of(fn)
    if isinstance(fn, exp.Count) and (not args or isinstance(args[0], exp.Star)):
        value = pl.int_range(pl.len()).is_not_null()   # one per row
        kind = "count"
    else:
        if args and isinstance(args[0], exp.Distinct):
            raise unsupported(fn, f"{name}(DISTINCT ...) OVER")
        if len(args) != 1:
            raise unsupported(fn, f"window aggregate {name}() with {len(args)} arguments")
        value = _value(c, args[0])
        kind = _AGG_KINDS.get(name, "")
        if not kind:
            raise unsupported(fn, f"window aggregate {name}()")
        if kind == "count":
            value = value.is_not_null()
    dtype = c.dtype(value)
    if dtype == pl.Null and kind != "count":   # an untyped NULL (F86): every frame holds
        if kind in ("min", "max"):              # no value; typed as the grouped aggregate
            return w.over(value, ordered=False)   # (polars rolls no Null column)
        value = value.cast(pl.Float64 if kind == "mean" else pl.Int64)
        dtype = c.dtype(value)
    if kind in ("sum", "mean") and (dtype.is_temporal() or isinstance(dtype, pl.Duration)):
        # (date - NULL: polars rolls no dates or durations, said in its words)
        raise unsupported(fn, f"window {name}() over {sql_type(dtype) or 'INTERVAL'} values")
    if kind == "mean" and isinstance(dtype, pl.Decimal):
        return _decimal_mean(c, w, node, value, dtype, spec)
    if kind in ("sum", "mean") and dtype == pl.Float32:   # FLOAT summed in DOUBLE, as
        value, dtype = value.cast(pl.Float64), pl.Float64()   # DuckDB's sum/avg (F76)
    if kind == "sum" and dtype == pl.Int64:
        # exact in 128 bits, as DuckDB's HUGEINT sum; past BIGINT it fails by name, as the
        # grouped sum does (F47: a running sum of -1 and -2^63 wrapped to 2^63 - 1)
        total = _framed(c, w, node, kind, value.cast(pl.Int128), pl.Int128(), spec)
        narrow = total.cast(pl.Int64, strict=False)
        exact = c.fail(narrow, narrow.is_null() & total.is_not_null(), node,
                       "integer overflow (the sum leaves BIGINT)")
        if not narrow_column(c, args[0], value):
            return exact
        # a column of 32 bits or fewer, widened: in a frame (a node's batch) of fewer than
        # 2^32 rows no window frame's sum leaves BIGINT, so it is summed there (the 128-bit
        # sum cost 1.4x); a longer one sums in 128 bits -- no row count fails
        return choice(pl.len() < WINDOW_ROWS, _framed(c, w, node, kind, value, dtype, spec),
                      exact)
    return _framed(c, w, node, kind, value, dtype, spec)


def _decimal_mean(c: Compiles, w: _Window, node: exp.Window, value: pl.Expr,
                  dtype: pl.Decimal, spec: exp.WindowSpec | None) -> pl.Expr:
    """A frame's avg of DECIMALs as DuckDB's avg state: the DECIMAL's integers summed
    exactly (128 bits), as a DOUBLE over count * 10^scale, as the grouped avg (a mean of
    the values as doubles lost (2^63 + 1) + (2 - 2^63) to 0.0 for DuckDB's 1.5: F144; and
    0.3 / 3 is 0.09999999999999999, DuckDB's 3 / 30 = 0.1).  A partition whose largest
    value times its row count reaches 2^126 units, so that a frame's sum could leave 128
    bits, fails by name (DuckDB's HUGEINT sum fails past 2^127)."""
    units = value.to_physical().cast(pl.Int128)
    reach = units.abs().max().cast(pl.Float64) * pl.len()
    units = c.fail(units, w.over(reach, ordered=False) >= 2.0**126, node,
                   "a window avg of DECIMALs whose sum could leave 128 bits (largest value "
                   "times the partition's rows past 2^126 units) is not supported")
    total = _framed(c, w, node, "sum", units, pl.Int128(), spec)
    n = _framed(c, w, node, "count", value.is_not_null(), pl.Boolean(), spec)
    return pl.when(n > 0).then(total.cast(pl.Float64) /
                               (n.cast(pl.Float64) * 10.0 ** (dtype.scale or 0)))


def _framed(c: Compiles, w: _Window, node: exp.Window, kind: str, value: pl.Expr,
            dtype: pl.DataType, spec: exp.WindowSpec | None) -> pl.Expr:
    """Aggregate ``kind`` of ``value`` over the window's frame."""
    frame, start, end = _bounds(spec, c)
    if not w.keys and (spec is None or (frame == "range" and start is None)):
        start, end = None, None   # (without ORDER BY every row is every row's peer)
    if start is None and end is None:   # the whole partition (doubles: in window order)
        in_order = kind in ("sum", "mean") and dtype.is_float()
        out = _whole(kind, value, dtype)
        if in_order and not w.keys:   # every row each other's peer: no order to add in
            out = _unordered(c, node, kind, value, out)
        return w.over(out, ordered=in_order)
    if frame == "rows":
        if start is None and end == 0:
            return w.over(_running_checked(c, w, node, kind, value, dtype))
        if start is None or end is None:
            raise unsupported(spec, "ROWS frames unbounded on one side only, other than "
                                    "UNBOUNDED PRECEDING AND CURRENT ROW")
        if start > end:
            raise error(spec, "a window frame's start is after its end")
        if kind in ("sum", "mean") and dtype.is_float() and end - start >= _SHORT_FRAME:
            size = value.cast(pl.Float64).abs()
            out = _one_sign(w, kind, value, lambda e: _sliding(kind, e, dtype, -start, end),
                            _frame(size, "sum", -start, end),
                            _sliding_tree(kind, value, -start, end), ahead=end > 0,
                            rows=(-start, end))
            out = _past_double(c, node, kind, value, out,
                               lambda e: _frame(e, "sum", -start, end))
            return w.over(_in_tree(c, w, node, kind, value, out, "a sliding",
                                   lambda e: _tree_sum(e, -start, end)))
        f, ft, back = _in_doubles(c, node, kind, value, dtype)
        flat = None if -start + end >= _SHORT_FRAME or kind not in ("count", "sum", "mean") \
            or (kind != "count" and not ft.is_float()) else \
            (lambda shift: back(_sliding(kind, f, ft, -start, end, shift)))
        return w.over(back(_sliding(kind, f, ft, -start, end)), flat=flat)
    # RANGE frames
    if end != 0:
        raise unsupported(spec, "RANGE frames that do not end at the CURRENT ROW")
    if start is None:   # running, peers included
        key = w.keys[0] if len(w.keys) == 1 else None
        by = _rebased(c, key, node) if key is not None and not w.desc[0] and \
            w.nulls_last[0] and not (kind in ("sum", "mean") and dtype.is_float()) else None
        # (doubles are summed in order, row after row, as DuckDB's running sum: the NULL
        # keys' whole-partition total was polars' sum, another rounding -- 1e300 + 2 - 1e300
        # then 102 more gave 0.0, DuckDB 102)
        if key is not None and by is not None and _short_span(c, key) and \
                (kind == "count" or (kind in ("sum", "mean") and dtype.is_integer())):
            return w.over(_running_by(kind, value, dtype, key), ordered=False)
        if key is not None and by is not None:
            # one ascending time or narrow integer key: a rolling window over every smaller
            # key; the NULL keys come last, peers of each other: their frame is every row
            known = key.is_not_null()
            f, ft, back = _in_doubles(c, node, kind, value, dtype)
            rolled = back(_by_range(kind, pl.when(known).then(f), ft, by, f"{_I64}i"))
            return w.over(pl.when(known).then(rolled).otherwise(_whole(kind, value, dtype)),
                          ordered=False)
        out = w.peers(_running_checked(c, w, node, kind, value, dtype))
        if kind not in ("sum", "mean") or not dtype.is_float():
            return out
        # ties: the peers' order decides the sum (F131), as with an offset (F102)
        tied = _tie_dependent(value, pl.lit(True), w.code(), f"{2**62}i")
        checked = c.fail(out, w.over(tied, ordered=False), node,
                         f"a running RANGE frame's {'avg' if kind == 'mean' else kind} of "
                         "DOUBLEs over tied ORDER BY keys, whose value depends on the order "
                         "of the ties (DuckDB's sort leaves them in none), is not supported")
        v = value.cast(pl.Float64)
        calm = w.over(~((v.min() < 0) & (v.max() > 0)), ordered=False).all()
        return choice(calm, out, checked)
    if len(w.keys) != 1 or w.desc[0]:
        raise unsupported(node, "RANGE frames with an offset need exactly one ascending "
                                "ORDER BY column")
    key = w.keys[0]
    kt = c.dtype(key)
    if not (kt.is_integer() or kt.is_temporal()) or isinstance(kt, pl.Duration):
        by_node = node.args["order"].expressions[0].this
        raise unsupported(node, f"RANGE frames with an offset over ORDER BY {by_node.sql()} "
                                f"({kind_name(kt) or kt}; integer, DATE, TIME or TIMESTAMP "
                                "keys only)")
    if isinstance(start, exp.Interval):
        unit = _unit_of(c, key)
        if unit is None:
            raise error(start, "an INTERVAL frame needs a time ORDER BY column")
        width = interval_ns(start) // unit
    else:
        width = -start
    if width >= _I64:
        raise error(spec, f"a RANGE frame offset of {width} is past BIGINT")
    # (key - width - 1, key]: closed on the right, integer keys; a NULL key's frame is the
    # NULL keys (its peers), the others' frames hold no NULL key
    known = key.is_not_null()
    phys = key.to_physical().cast(pl.Int64)
    by = phys.fill_null(phys.min().fill_null(0))
    f, ft, back = _in_doubles(c, node, kind, value, dtype)

    def rolling(f: pl.Expr, value: pl.Expr) -> pl.Expr:
        rolled = back(_by_range(kind, pl.when(known).then(f), ft, by, f"{width + 1}i"))
        full = pl.when(known).then(rolled).otherwise(
            _whole(kind, pl.when(~known).then(value), dtype))
        # a frame without NULL keys (most) needs none of that: one rolling window
        return choice(known.all(), back(_by_range(kind, f, ft, phys, f"{width + 1}i")), full)
    out = rolling(f, value)
    if kind in ("sum", "mean") and dtype.is_float():   # in DuckDB's order (F129)
        first = not w.nulls_last[0]
        size = pl.when(known).then(value.cast(pl.Float64).abs())
        frames = size.rolling_sum_by(by, f"{width + 1}i", closed="right")
        out = _one_sign(w, kind, value, lambda e: rolling(e, e), frames, _in_tree(
            c, w, node, kind, value, _range_tree(kind, value, phys, width, first), "a RANGE",
            lambda e: _range_sum(e, phys, width, first)), key=by)
    if kt == pl.Int64 and width:   # key - width past BIGINT: DuckDB raises
        out = c.fail(out, phys < -_I64 - 1 + width, node,
                     f"integer overflow (the frame's start, ORDER BY key - {width})")
    if kind in ("sum", "mean") and dtype.is_float():
        out = _past_double(c, node, kind, pl.when(known).then(value), out, lambda e: (
            e.rolling_sum_by(by, f"{width + 1}i", closed="right")))
        # a frame without NULL keys whose values hold one sign (prices) has no partition
        # the check could fail (it looks only at mixed signs and the NULL keys): skipped
        # there (it doubled the window's cost).  Over the frame, min/max ignore NaN as in
        # each partition, whose min/max lie within the frame's; NULL (no value): checked.
        # (The choice picks the check, not the answer: a choice between the answer and the
        # answer checked doubled its expression at each check, and the cost of choosing)
        v = value.cast(pl.Float64)
        tied = choice(known.all() & ~((v.min() < 0) & (v.max() > 0)), pl.lit(False),
                      _tie_dependent(value, known, by, f"{width + 1}i"))
        out = c.fail(out, tied, node,
                     f"a RANGE frame's {'avg' if kind == 'mean' else kind} of DOUBLEs "
                     "over tied ORDER BY keys, whose value depends on the order of the "
                     "ties (DuckDB's sort leaves them in none), is not supported")
    return w.over(out, ordered=False)


def _running_checked(c: Compiles, w: _Window, node: exp.Expression, kind: str,
                     value: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A running frame's ``kind`` of ``value``; a sum or avg of DOUBLEs fails by name where
    the partition's finite values of one sign sum past DOUBLE's range: a running total then
    meets inf - inf at a row that moves with the order of the additions (DuckDB NaN where
    polars' running sum stayed inf, fuzz seed 73)."""
    # (no PARTITION BY and no ORDER BY: DuckDB's streaming window, row by row)
    out = _running(kind, value, dtype, streaming=not (w.part or w.keys))
    if kind not in ("sum", "mean") or not dtype.is_float():
        return out
    out = _past_double(c, node, kind, value, out, lambda e: e.sum(), "running")
    return _in_tree(c, w, node, kind, value, out, "a running", lambda e: _tree_sum(e, None, 0))


#: frames of fewer rows than this hold no aligned block of 16 rows but at their start, so
#: DuckDB's segment tree adds them row by row whatever its layout
_BLOCK = 17


#: frames of at most this many DOUBLEs of one sign sum alike in any order (two orders part
#: by at most ``2 (k - 1) 2^-53`` of the sum: under 1e-9 up to 4.5 million values) --
#: :func:`_calm`.  The engine's batches of partitions hold at most as many rows
#: (``hfq.engine.execute.BATCH_ROWS``, pinned by ``tests/unit/test_window_sums.py``)
_CALM_ROWS = 4_000_000


def _calm(value: pl.Expr) -> pl.Expr:
    """Whether the DOUBLEs ``value`` hold one sign (zeros aside) and number at most
    ``_CALM_ROWS`` over the frame -- prices, sizes: then any order of adding k of them
    lies within ``(k - 1) 2^-53`` of their exact sum, so DuckDB's segment tree and a running
    sum row by row (``cum_sum``) agree within 1e-9, and a running frame is summed natively
    instead of in the tree (one Python call per partition, 3-5x slower); sliding and RANGE
    frames, rolled by adding and subtracting, also need :func:`_rolls_near`.  One boolean
    over the whole frame (:func:`hfq.engine.ops.choice`): holding there, it holds in each
    partition.
    An infinity or a NaN keeps its sign's rule (every order gives inf, or NaN); frames
    whose finite values sum past DOUBLE's range fail by name either way
    (:func:`_past_double`, checked on the answer chosen); polars' sums of -0.0 are +0.0,
    as DuckDB's (they start at +0.0: the same test file)."""
    v = value.cast(pl.Float64)
    return ~((v.min() < 0) & (v.max() > 0)) & (pl.len() <= _CALM_ROWS)


def _one_sign(w: _Window, kind: str, value: pl.Expr, roll: Callable[[pl.Expr], pl.Expr],
              frames: pl.Expr, tree: pl.Expr, *, ahead: bool = False,
              key: pl.Expr | None = None, rows: tuple[int, int] | None = None) -> pl.Expr:
    """A sliding or RANGE frame's sum or avg (``kind``) of the DOUBLEs ``value``: ``roll``
    (polars' rolled sum or avg of what it is given) of their units of 1e-4 where they are
    decimals of one sign (:func:`_in_units`, exact), else of the values where their rolled
    sums stay near (:func:`_rolls_near` given ``frames``, ``ahead`` and ``key``; frames of
    zeros :func:`_snapped`), else ``tree``, DuckDB's order.  A ROWS frame (``rows``: its
    rows back and ahead) whose rolled sums cannot stay near (:func:`_hopeless`) goes to the
    tree without the test, which sorts the rows into window order once more."""
    rolled = choice(_calm(value) & _rolls_near(w, value, frames, ahead=ahead, key=key),
                    _snapped(kind, roll(value), value), tree)
    if rows is not None:
        rolled = choice(_calm(value) & ~_hopeless(w, value, *rows), rolled, tree)
    return choice(_in_units(value), _in_decimals(roll(_units(value)), value), rolled)


def _hopeless(w: _Window, value: pl.Expr, before: int, after: int) -> pl.Expr:
    """Whether :func:`_rolls_near` fails over the finite DOUBLEs ``value`` (:func:`_calm`)
    and their ROWS frames from ``before`` rows back to ``after`` ahead, found without the
    window order -- a partition's sum of magnitudes past ~5.6e5 times its largest (a million
    prices).  Its last row with a frame fails the test: the frames' sums so far there are
    all of them, ``S``; a value lies in the frames of ``width`` rows but within
    ``|before| + |after|`` rows of an end (fewer, none at worst), so ``S >= width (sum|v| -
    (|before| + |after|) max|v|)``; the frame holds at most ``width`` values, and the test
    needs ``S <= _NEAR max(frame, zero)``.  A margin of 1e-4 covers the errors of the sums
    (the rolled ones ``_ROLLED`` of S per row: under 4e-9 of S over _CALM_ROWS rows).  Not
    found with a NaN or an infinity, nor where the values' sum leaves DOUBLE's range: the
    test runs."""
    v = value.cast(pl.Float64).abs()
    width, edge = before + after + 1, abs(before) + abs(after)
    big = v.max()
    zero = _zero_bound(_least(value.cast(pl.Float64)))
    least = width * (v.sum() - edge * big)
    # (a sum past DOUBLE's range bounds nothing -- its values may lie in rows no frame holds
    # -- and made least inf or NaN, which polars ranks above inf: review of 3b123a0)
    out = v.is_finite().all() & least.is_finite() & \
        (least > 1.0001 * _NEAR * pl.max_horizontal(width * big, zero))
    out = out.fill_null(False)   # (no value: NULL, not hopeless)
    return out if not w.part else w.over(out, ordered=False).any()


#: a rolled sum's error per 2^-53 of the frames' sums so far: 8 (a margin of 2), over
#: ``1 - 8 * 2^-53 * n`` for n <= _CALM_ROWS rows (the error of the magnitudes' own sums)
_ROLLED = 8 * 2.0**-53 / (1 - 8 * 2.0**-53 * _CALM_ROWS)
#: so_far <= _NEAR * frame: the rolled sum within 5e-10 of the frame's sum
_NEAR = 5e-10 / (_ROLLED * (1 + 5e-10))


def _rolls_near(w: _Window, value: pl.Expr, frames: pl.Expr, *, ahead: bool = False,
                key: pl.Expr | None = None) -> pl.Expr:
    """Whether polars' rolled sums -- each row coming in added, each leaving subtracted --
    of the DOUBLEs ``value`` (of one sign: :func:`_calm`) and their avgs, :func:`_snapped`,
    stay within 1e-9 of every frame's sum, given ``frames``, those rolled sums of the
    values' magnitudes.  Each addition or subtraction rounds by at most 2^-53 of its
    result, itself at most two frames' sums, so a row's rolled sum (``frames``' too) is
    off by at most ``e = _ROLLED * so_far``, the sum of the frames rolled before it: in
    window order up to the row -- a RANGE frame's up to its last peer (``key``), whose
    rows it holds --, or the partition's when frames reach ``ahead`` (rolled backwards).
    Where ``e`` stays under 5e-10 of the frame's sum -- beside the tree's own ``(k - 1)
    2^-53 < 4.5e-10`` (k <= _CALM_ROWS) -- the two answers agree within 1e-9.  What a frame
    keeps of that after its values left is no error of DuckDB's: a frame of zeros (zero
    bids) sums to exactly 0 there.  With ``m`` the smallest magnitude but 0, a row whose
    ``frames`` lies under ``m / 2`` passes where ``e < m / (8 n)`` (n rows: an avg's
    count at most): its frame sums to 0 (any other holds m), and :func:`_snapped` makes it
    exactly that.  What a large value leaves behind after it passes fails it (a 4.3e16
    among values near 1e6: polars' rolled sum kept 8 of its rounding, 1.1e-6 of a later
    frame's -- stop-15 review, ``tests/sql/test_findings.py`` W1), and the frame goes to
    the tree; prices pass, among zero bids too (W2), even over a long day's partition (the
    smallest frames come early, where little has rolled).  A NaN fails it, and so does
    what follows an infinity.  One boolean over the frame (:func:`hfq.engine.ops.choice`),
    each partition's frames in window order."""
    so_far = frames.sum() if ahead else frames.cum_sum()
    if key is not None:
        so_far = pl.when(key.ne_missing(key.shift(-1))).then(so_far).fill_null(
            strategy="backward")
    m = _least(value.cast(pl.Float64))   # (NULL where every value is 0 or NULL: exact then)
    near = so_far <= _NEAR * pl.when(frames >= m / 2).then(frames).otherwise(_zero_bound(m))
    return w.over(near).all()


def _zero_bound(m: pl.Expr) -> pl.Expr:
    """What :func:`_rolls_near` holds the frames' sums so far against, times ``_NEAR``, on a
    row whose frame lies under ``m / 2`` (``m``: the smallest magnitude but 0): so_far <=
    _NEAR * it gives an error under ``m / (8 n)``; :func:`_hopeless` bounds by the same."""
    return m / (8 * pl.len() * _ROLLED * _NEAR)


#: DOUBLEs that are decimals of 4 places (prices) are summed as whole units of 1e-4: exactly
_UNITS = 1e4


def _in_units(value: pl.Expr) -> pl.Expr:
    """Whether the DOUBLEs ``value`` (one boolean over the frame: :func:`hfq.engine.ops.choice`)
    are each the DOUBLE nearest a decimal of at most 4 places, hold one sign, number at most
    _CALM_ROWS, and their magnitudes in units of 1e-4 (:func:`_units`) sum under 2^52 -- as
    prices do.  Then a frame's rolled sum of the units -- each row coming in added, each
    leaving subtracted, every partial sum a whole number under 2^53 -- is exact, frames of
    zeros too, and over 1e4 lies within ``2 * 2^-53`` of the frame's values' sum (each
    value within 2^-53 of its decimal, relatively; one sign, no cancellation; one rounding
    more in the division -- an avg's, two), DuckDB's tree of k values within ``(k - 1)
    2^-53``: they agree within 1e-9 (k <= _CALM_ROWS), in one rolling pass
    as before (:func:`_rolls_near`'s bound and its fallback, the tree, cost a pass or a
    Python call per partition more).  An infinity or a NaN fails it (their units' sum is
    neither finite nor under 2^52)."""
    return value.cast(pl.Float64).map_batches(_units_test, return_dtype=pl.Boolean,
                                              returns_scalar=True)


def _units_test(s: pl.Series) -> pl.Series:
    """:func:`_in_units` over the DOUBLEs ``s``, in one pass (:func:`kernels.in_units`: its
    tests in polars cost a quarter of a window query over prices)."""
    if s.null_count():
        x, null = s.fill_null(0.0).to_numpy(), s.is_null().to_numpy()
    else:   # (the values as they lie)
        x, null = s.to_numpy(), np.zeros(0, dtype=np.bool_)
    return pl.Series([bool(kernels.in_units(x, null, _UNITS, 2.0**52, _CALM_ROWS))])


def _units(value: pl.Expr) -> pl.Expr:
    """The DOUBLEs ``value`` in whole units of 1e-4 (:func:`_in_units`), as DOUBLEs."""
    return (value.cast(pl.Float64) * _UNITS).round()


def _in_decimals(units: pl.Expr, value: pl.Expr) -> pl.Expr:
    """Units of 1e-4 (of the DOUBLEs ``value``, or rolled from them) back in decimals:
    divided as IEEE does (polars would multiply by the reciprocal of 1e4, an ulp off), the
    divisor a column as long as ``value`` (not ``units``: a rolled sum computed twice)."""
    return divide(units, pl.lit(_UNITS), like=value)


def _least(v: pl.Expr) -> pl.Expr:
    """The smallest magnitude of the DOUBLEs ``v`` but 0 (NULL where none is)."""
    return pl.when(v != 0).then(v.abs()).min()


def _snapped(kind: str, out: pl.Expr, value: pl.Expr) -> pl.Expr:
    """``out``, rolled sums (``kind`` "sum") or avgs of the DOUBLEs ``value`` over each
    row's frame, made exactly 0 where the frame's values are all 0 -- where they lie under
    ``m / 2`` (an avg: ``m / (2 n)``; given :func:`_rolls_near`, the others lie past it,
    and those under it within ``m / (8 n)`` of 0); what the frame kept of the rolling
    before, DuckDB's tree has not (W2)."""
    m = _least(value.cast(pl.Float64))
    below = m / 2 if kind == "sum" else m / (2 * pl.len())
    return pl.when(out.abs() < below).then(0.0).otherwise(out)


def _tree_frames(s: pl.Series, before: int | None, after: int) -> pl.Series:
    """The sums of the DOUBLEs ``s`` (one partition, in window order, NULLs as 0.0) over
    each row's frame -- running when ``before`` is None, else from ``before`` rows back to
    ``after`` ahead -- in DuckDB's order (:func:`hfq.engine.kernels.tree_sums`, a tree laid
    from the first row; running frames in one pass per level, ``tree_running``).  Polars
    calls it once per partition: keep it lean (an eager polars call costs ~0.1 ms)."""
    from hfq.engine.kernels import tree_rows, tree_running  # numba loads on first use
    x = s.to_numpy()   # (DOUBLEs without NULLs: :func:`_tree_sum`)
    if before is None:
        return pl.Series(s.name, tree_running(x))
    n = len(x)
    # (bounds up to 2^63 - 1 rows: clamped first, so that nothing wraps)
    before, after = max(-n - 1, min(before, n + 1)), max(-n - 1, min(after, n + 1))
    return pl.Series(s.name, tree_rows(x, before, after))


def _tree_sum(value: pl.Expr, before: int | None, after: int) -> pl.Expr:
    """:func:`_tree_frames` of ``value`` (NULLs as 0.0: adding one changes no sum here), to
    be evaluated over each partition in order."""
    return value.cast(pl.Float64).fill_null(0.0).map_batches(
        functools.partial(_tree_frames, before=before, after=after), return_dtype=pl.Float64)


def _range_frames(s: pl.Series, width: int, nulls_first: bool, kind: str | None = None
                  ) -> pl.Series:
    """Over each row's RANGE frame ``[k - width, k]`` of the integer keys ``k`` of the
    struct ``s`` (one partition, any order; a NULL key's frame: the NULL keys), the sum of
    the DOUBLEs ``v`` (without NULLs) -- or with ``kind`` ("sum" or "mean") their sum or
    avg, NULLs skipped (NULL over a frame without a value) -- in DuckDB's order: its tree
    over the rows sorted by key, the NULL keys last or first (ties as they came: DuckDB's
    own order of ties is none, checked apart).  Polars calls it once per partition: keep
    it lean (``struct.unnest`` costs ~2 us where ``struct.field`` costs ~50 us)."""
    from hfq.engine.kernels import range_bounds, tree_sums  # numba loads on first use
    parts = s.struct.unnest()
    v, k = parts.get_column("v"), parts.get_column("k")
    holes = v.null_count() > 0
    x = v.fill_null(0.0).to_numpy() if holes else v.to_numpy()
    if k.null_count() == 0:   # (most partitions: one pass, no sort where the keys are)
        keys = k.to_numpy().astype(np.int64, copy=False)
        order = None if (keys[1:] >= keys[:-1]).all() else np.argsort(keys, kind="stable")
        if order is not None:
            x, keys = x[order], keys[order]
        begin, end = range_bounds(keys, width)
    else:
        known = k.is_not_null().to_numpy()
        keys = k.fill_null(0).to_numpy().astype(np.int64, copy=False)
        order = np.lexsort((keys, known if nulls_first else ~known))
        x, keys, n = x[order], keys[order], int(known.sum())
        lo, hi = (len(x) - n, len(x)) if nulls_first else (0, n)   # the rows with a key
        nulls = (0, lo) if nulls_first else (n, len(x))   # the NULL keys' frame: each other
        begin, end = np.full(len(x), nulls[0], np.int64), np.full(len(x), nulls[1], np.int64)
        b, e = range_bounds(keys[lo:hi], width)
        begin[lo:hi], end[lo:hi] = b + lo, e + lo
    out = tree_sums(x, begin, end)
    mask = None
    if kind is not None:   # the frame's count of values: exact, from a running count
        if holes:
            seen = v.is_not_null().to_numpy()
            ahead = np.concatenate(([0], np.cumsum(seen[order] if order is not None
                                                   else seen)))
            count = ahead[end] - ahead[begin]
        else:
            count = end - begin
        mask = count == 0
        if kind == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                out = out / count
    if order is not None:
        back = np.empty_like(out)
        back[order] = out
        out = back
        if mask is not None:
            shown = np.empty_like(mask)
            shown[order] = mask
            mask = shown
    if mask is not None and mask.any():
        return pl.Series(s.name, pa.array(out, mask=mask), dtype=pl.Float64)
    return pl.Series(s.name, out, dtype=pl.Float64)


def _range_tree(kind: str, value: pl.Expr, key: pl.Expr, width: int, nulls_first: bool
                ) -> pl.Expr:
    """A RANGE frame's sum or avg of DOUBLEs over the integer ``key`` (physical, NULLs kept)
    added in DuckDB's order (a rolling sum adds the rows coming in and subtracts those
    leaving: another rounding, and 1e300 + 1 - 1e300 left 0); the frame's count exact."""
    return pl.struct(value.cast(pl.Float64).alias("v"), key.alias("k")).map_batches(
        functools.partial(_range_frames, width=width, nulls_first=nulls_first, kind=kind),
        return_dtype=pl.Float64)


def _range_sum(value: pl.Expr, key: pl.Expr, width: int, nulls_first: bool) -> pl.Expr:
    """:func:`_range_frames` of ``value`` by ``key``, to be evaluated over each partition."""
    return pl.struct(value.cast(pl.Float64).fill_null(0.0).alias("v"), key.alias("k")).map_batches(
        functools.partial(_range_frames, width=width, nulls_first=nulls_first),
        return_dtype=pl.Float64)


def _sliding_tree(kind: str, value: pl.Expr, before: int, after: int) -> pl.Expr:
    """A ROWS frame's sum or avg of DOUBLEs added in DuckDB's order (a rolling sum adds
    the row coming in and subtracts the one leaving: another rounding, and 1e300 + 1 -
    1e300 left 0)."""
    count = _frame(value.is_not_null().cast(pl.Int64), "sum", before, after).fill_null(0)
    total = _tree_sum(value, before, after)
    return pl.when(count > 0).then(total if kind == "sum" else total / count)


def _in_tree(c: Compiles, w: _Window, node: exp.Expression, kind: str, value: pl.Expr,
             out: pl.Expr, what: str, sums: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
    """``out``, ``what`` frame's sum or avg of DOUBLEs added in the order of a segment tree
    laid from the partition's first row (``sums``: a value's sum over each row's frame that
    way) -- DuckDB's order without PARTITION BY.  With one, DuckDB lays one tree over each
    hash bucket of partitions (F129), so a partition's blocks of 16 rows start where the
    partitions before it in its bucket end: there ``out`` fails by name where that could
    move a frame's sum by more than 1e-9 of it (plus 1e-12): the bound
    ``2 (k - 1) 2^-53 sum|x|`` over the frame's k finite values.  Only a partition of
    values of both signs and of 17 rows or more can (ROWS frames shorter than that never
    come here); and where every finite value is a multiple of 2^-16 and their magnitudes
    sum below 2^37 (sizes, positions, quarter ticks), every order adds exactly: those
    partitions skip the check."""
    if not w.part:
        return out
    v = value.cast(pl.Float64)
    finite = pl.when(v.is_finite()).then(v)
    k, total, size = sums(finite.is_not_null()), sums(finite), sums(finite.abs())
    bound = (k - 1.0) * 2.0**-52 * size
    name = "avg" if kind == "mean" else kind
    checked = c.fail(out, (bound > total.abs() * 1e-9 + 1e-12).any(), node,
                     f"{what} frame's {name} of DOUBLEs with PARTITION BY whose values cancel "
                     "(its value could move by more than 1e-9 of it with the order of the "
                     "additions: DuckDB adds in a segment tree laid over its hash buckets of "
                     "partitions) is not supported; CAST the values to DECIMAL for an exact sum")
    units = finite * 2.0**16
    exact = ((units == units.round()) | units.is_null()).all() & \
        (finite.abs().sum() < 2.0**37)
    safe = (pl.len() < _BLOCK) | ~((v.min() < 0) & (v.max() > 0)) | exact
    return choice(safe, out, checked)


def order_moves(value: pl.Expr, *, split: bool = False) -> pl.Expr:
    """Whether some order of adding the DOUBLEs ``value`` (an aggregate over them) could
    give another sum: a total of one sign past DOUBLE's range beside values of the other
    sign (1.8e308 twice, then -inf: NaN, or -inf), or cancelling values whose sum could move
    by more than 1e-9 of it (F102's bound ``2 (k - 1) 2^-53 sum|x|`` over the k finite
    values).  A NaN makes every order NaN, and an infinity every order that infinity,
    unless a finite total overflows.  Values of one sign do not cancel: past 4.5 million of
    them the bound passes 1e-9 only in orders built to reach it, and hfq answers them in
    its order as it does without a join (stop-17 review: a day's 5M trades' avg price over
    an ASOF join was refused).  Multiples of 2^-16 whose magnitudes sum under 2^37 add
    exactly in every order (1e7, -1e7 and 1.0: 1.0).

    ``split``: an aggregate's check (not a window's), whose sums and counts a split
    aggregation computes cheaply in each group of a partition whose values add alike
    (:func:`adds_alike`: one sign, small, no infinity) -- :func:`hfq.engine.aggs.lighter`:
    the positive and negative totals from the sum and the sign, the finite values' count
    from the count, no infinity, NaN from the sum.  Which values are multiples of 2^-16 has
    no cheaper form: that count is always computed (taken as none, a sum of whole numbers
    that cancels only across partitions was refused: stop-18 review)."""
    v = value.cast(pl.Float64)
    finite = pl.when(v.is_finite()).then(v)
    scaled = finite * 2.0**16
    up, down = finite.clip(lower_bound=0.0).sum(), finite.clip(upper_bound=0.0).sum()
    n = finite.count()
    inexact = (scaled != scaled.round()).sum()
    # (counted, not any(): sums and counts split into partial states per partition, so a
    # grouping that checks them still merges on the driver what the nodes aggregated)
    infinite = (~v.is_finite() & ~v.is_nan()).sum()
    nan = v.is_nan().sum()
    if split:
        heavy, total, plus = ~adds_alike(v), v.sum(), v.min() >= 0
        up = lighter(up, pl.when(plus).then(total).otherwise(0.0), heavy)
        down = lighter(down, pl.when(plus).then(0.0).otherwise(total), heavy)
        n = lighter(n, v.count(), heavy)
        infinite = lighter(infinite, pl.lit(0), heavy)
        nan = lighter(nan, total.is_nan(), heavy)
    bound = (up - down) * (n - 1).cast(pl.Float64) * 2.0**-52
    exact = (inexact == 0) & (up - down < 2.0**37)
    cancels = (n >= 3) & (up > 0) & (down < 0) & ~exact & \
        (bound > (up + down).abs() * 1e-9 + 1e-12)
    # (a total within a factor 2 of DOUBLE's largest: some order may pass it where polars'
    # did not -- beside an infinity, NaN against +-inf)
    past = (n >= 2) & ((up >= 2.0**1023) | (down <= -2.0**1023))
    return (nan == 0) & (past | ((infinite == 0) & cancels))


def _unordered(c: Compiles, node: exp.Expression, kind: str, value: pl.Expr,
               out: pl.Expr) -> pl.Expr:
    """``out``, the sum or avg of the DOUBLEs ``value`` over a partition whose rows have no
    order (OVER () or PARTITION BY alone), failing by name where the order of the additions
    could change it (:func:`order_moves`).  DuckDB adds them in the order the input or
    another window's sort left (fuzz seed 193, 2-node: DuckDB NaN, hfq -inf in stored
    order); values of one sign (prices) skip the check."""
    name = "avg" if kind == "mean" else kind
    checked = c.fail(out, order_moves(value), node,
                     f"a window's {name} of DOUBLEs over rows in no order (no ORDER BY) "
                     "whose values cancel or sum past DOUBLE's range (its value depends on "
                     "the order of the additions, which DuckDB leaves to the input or to "
                     "another window's sort) is not supported; CAST the values to DECIMAL "
                     "for an exact sum")
    return choice(adds_alike(value), out, checked)


def adds_alike(value: pl.Expr) -> pl.Expr:
    """Whether every order of adding the DOUBLEs ``value`` gives one sum within 1e-9: values
    of one sign, too small to sum near DOUBLE's range, in fewer rows than make even their
    rounding order matter (2 k 2^-53 > 1e-9 from k = 4.5e6) -- prices.  A cheap test to
    skip :func:`order_moves` by (:func:`hfq.engine.ops.choice`): holding over a frame, it
    holds in each of its partitions or groups."""
    v = value.cast(pl.Float64)
    small = _largest(v) * pl.len().cast(pl.Float64) < 1e307   # (an infinity is not small)
    return ~((v.min() < 0) & (v.max() > 0)) & small & (pl.len() < 4_000_000)


def _largest(v: pl.Expr) -> pl.Expr:
    """The largest magnitude of the DOUBLEs ``v``, NaN aside (0.0 where none is): from
    their min and max, cheaper than their magnitudes' max."""
    return pl.max_horizontal(v.min().abs(), v.max().abs()).fill_null(0.0)


def _past_double(c: Compiles, node: exp.Expression, kind: str, value: pl.Expr, out: pl.Expr,
                 roll: Callable[[pl.Expr], pl.Expr], frame: str = "sliding") -> pl.Expr:
    """``out`` (a sliding frame's sum or avg of DOUBLEs, rolled by adding the rows coming in
    and subtracting those leaving), failing by name where a frame's finite values of one sign
    sum past DOUBLE's range: the rolled total then stays inf after the rows leave, or
    inf - inf made NaN where DuckDB's per-frame sum is inf (F114) -- and DuckDB's own answer
    there moves with the order it adds in.  Values too small to sum that far (a partition's
    largest magnitude times its rows under 1e308: prices) skip the check.  ``frame`` names
    the frame in the message (a running one is checked over its partition's total)."""
    v = value.cast(pl.Float64)
    finite = pl.when(v.is_finite()).then(v)
    # (polars' rolled sum of finite values past DOUBLE's range is inf or even NaN)
    past = (~roll(finite.clip(lower_bound=0.0)).is_finite() |
            ~roll(finite.clip(upper_bound=0.0)).is_finite()).any()
    # (an infinity is not small: its partition is checked)
    small = _largest(v) * pl.len().cast(pl.Float64) < 1e308
    name = "avg" if kind == "mean" else kind
    return c.fail(out, choice(small, pl.lit(False), past), node,
                  f"a {frame} frame's {name} of DOUBLEs past DOUBLE's range (its value "
                  "depends on the order of the additions) is not supported")


def _tie_dependent(value: pl.Expr, known: pl.Expr, by: pl.Expr, size: str) -> pl.Expr:
    """Whether a RANGE frame of the partition holds tied keys (NULL keys are each other's
    peers) and a sum of doubles that could differ between two orders of its k values by
    more than 1e-9 of it (plus 1e-12): the bound ``2 (k - 1) 2^-53 sum|x|`` of the finite
    values.  DuckDB sorts ties in no defined order (alone, its answer moves with the input's
    row order; beside another window, with the order that window's partitioning left), so
    hfq cannot give its answer there (F102); a frame of two values passes.  Only a partition
    holding both signs can cancel: others are filtered to no rows first, so the rolling
    sums below cost little on them (prices)."""
    v = value.cast(pl.Float64)
    mixed = (v.min() < 0) & (v.max() > 0)   # (+-inf count as signs: checked further)
    v, by = pl.when(known).then(v).filter(mixed), by.filter(mixed)
    lost = value.cast(pl.Float64).filter(~known)   # the NULL keys: one frame, all peers
    finite = pl.when(v.is_finite()).then(v)

    def bad(counts: pl.Expr, up: pl.Expr, down: pl.Expr) -> pl.Expr:
        n, tied = counts % 2**32, counts >= 2**32
        bound = (up - down) * (n - 1).cast(pl.Float64) * 2.0**-52
        return (tied & (n >= 3) & (bound > (up + down).abs() * 1e-9 + 1e-12)).any()

    # one rolling sum for the count of values and (from 2^32 up) the rows with a peer
    # (the NULL keys' rows hold no value: by's filled keys tie them to nothing); the sum
    # and magnitude of the finite values from their positive and negative parts
    peers = v.is_not_null().cast(pl.Int64).rolling_sum_by(by, "1i", closed="right") > 1
    counts = (v.is_not_null().cast(pl.Int64) + peers.cast(pl.Int64) * 2**32).rolling_sum_by(
        by, size, closed="right")
    up = finite.clip(lower_bound=0.0).rolling_sum_by(by, size, closed="right")
    down = finite.clip(upper_bound=0.0).rolling_sum_by(by, size, closed="right")
    whole = pl.when(lost.is_finite()).then(lost)
    return bad(counts, up, down) | bad(lost.count() + 2**32, whole.clip(lower_bound=0.0).sum(),
                                       whole.clip(upper_bound=0.0).sum())


def _short_span(c: Compiles, key: pl.Expr) -> bool:
    """Whether the key's physical integers lie within [-2^32, 2^47] whatever its values:
    TIME (a day of nanoseconds), DATE (32 bits) and integers of 32 bits or fewer."""
    kt = c.dtype(key)
    return isinstance(kt, (pl.Time, pl.Date)) or kt in (
        pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32)


def _running_by(kind: str, value: pl.Expr, dtype: pl.DataType, key: pl.Expr) -> pl.Expr:
    """The running RANGE count, or sum/avg of integers, over one ascending key whose span
    :func:`_short_span` bounds, as one rolling window of 2^62 keys (reaching every smaller
    key; nothing overflows that near 0): the NULL keys placed one past the largest key, so
    that they come last, peers of each other, and their frame is every row (DuckDB's),
    while no other row's frame reaches them.  A sum's frame holds a value when its key is at
    least the smallest key of a row with a value (no second rolling count)."""
    phys = key.to_physical().cast(pl.Int64)
    by = phys.fill_null((phys.max() + 1).fill_null(0))
    # a frame without NULL keys (and, for a sum, without NULL values: every frame holds
    # its row's value) needs neither the filled key nor the first value's key (ops.choice)
    known = key.is_not_null().all()
    if kind != "sum":
        return choice(known, _by_range(kind, value, dtype, phys, f"{2**62}i"),
                      _by_range(kind, value, dtype, by, f"{2**62}i"))
    total = value.rolling_sum_by(by, f"{2**62}i", closed="right")
    return choice(known & value.is_not_null().all(),
                  value.rolling_sum_by(phys, f"{2**62}i", closed="right"),
                  pl.when(by >= pl.when(value.is_not_null()).then(by).min()).then(total))


def _in_doubles(c: Compiles, node: exp.Expression, kind: str, value: pl.Expr,
                dtype: pl.DataType) -> tuple[pl.Expr, pl.DataType, Callable[[pl.Expr], pl.Expr]]:
    """A DECIMAL value of a sliding or RANGE frame (polars rolls no DECIMAL) as a DOUBLE,
    and how to take the frame's sum/min/max back to DECIMAL: rounded to the scale, exact
    while the result holds fewer than 2^50 units (larger ones fail, named)."""
    if not isinstance(dtype, pl.Decimal):
        return value, dtype, lambda e: e
    scale = dtype.scale or 0
    target = dtype if kind in ("min", "max") else pl.Decimal(38, scale)

    def back(e: pl.Expr) -> pl.Expr:   # (an avg of DECIMALs never comes here: F144)
        out = e.round(scale).cast(target)
        return c.fail(out, e.abs() * 10.0**scale >= 2.0**50, node,
                      "a DECIMAL window aggregate of 2^50 units or more is not supported")
    return value.cast(pl.Float64), pl.Float64(), back


def _rebased(c: Compiles, key: pl.Expr, node: exp.Expression) -> pl.Expr | None:
    """The key's physical integers less their smallest, NULLs as 0 -- so that a window of
    BIGINT's largest width reaches every smaller key without overflow -- for keys whose
    values cannot be further apart than that: dates, times, timestamps (for nanoseconds the
    query fails, named, on keys 292 years apart) and integers narrower than BIGINT; None
    for other keys."""
    kt = c.dtype(key)
    if isinstance(kt, pl.Duration) or not (kt.is_integer() or kt.is_temporal()) or \
            kt in (pl.Int64, pl.UInt64):
        return None
    phys = key.to_physical().cast(pl.Int64)
    by = (phys - phys.min()).fill_null(0)
    if isinstance(kt, pl.Datetime) and kt.time_unit == "ns":
        by = c.fail(by, phys.max() // 2 - phys.min() // 2 >= 2**62, node,
                    "window ORDER BY timestamps more than 292 years apart")
    return by


def _finite(value: pl.Expr, dtype: pl.DataType) -> tuple[pl.Expr, pl.Expr | None]:
    """``value`` with NaN as NULL, and (for floats) a flag of its NaNs."""
    if dtype.is_float():
        return pl.when(value.is_nan()).then(None).otherwise(value), value.is_nan()
    return value, None


def _exact(value: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """The values an avg sums: integers in 128 bits (as DuckDB's HUGEINT sum of its avg), so
    a frame's sum of BIGINT extremes does not wrap before the division."""
    return value.cast(pl.Int128) if dtype.is_integer() else value


def _whole(kind: str, value: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if kind == "count":
        return value.cast(pl.Int64).sum()
    if kind == "sum":
        return pl.when(value.count() > 0).then(
            _in_order(value) if dtype.is_float() else value.sum())
    if kind == "mean" and dtype.is_integer():   # as the grouped avg (F70): summed in 128
        n = value.count()                         # bits, then divided
        return pl.when(n > 0).then(_exact(value, dtype).sum().cast(pl.Float64) / n)
    if kind == "mean":   # (sum only comes here for doubles)
        total = _in_order(value)
        return pl.when(value.count() > 0).then(total / value.count())
    if kind == "max":
        return value.nan_max() if dtype.is_float() else value.max()
    return value.min()


def _in_order(value: pl.Expr) -> pl.Expr:
    """The sum of doubles added row after row in the window's order, as DuckDB's window
    sum (polars' sum adds in blocks: 2, -1e300, ..., 1e300, 101 summed to -1, DuckDB's 101;
    F77); NULLs as +0.0, and a total of -0.0 is 0.0 as DuckDB's sum starts at +0.0."""
    total = value.fill_null(0.0).cum_sum().last()
    return pl.when(total == 0).then(0.0).otherwise(total)


def _running(kind: str, value: pl.Expr, dtype: pl.DataType, *, streaming: bool = False
             ) -> pl.Expr:
    """The aggregate of every row up to this one (NULLs skipped); ``streaming``: doubles
    summed row by row, else in DuckDB's segment tree."""
    if kind == "count":
        return value.cast(pl.Int64).cum_sum()
    seen = value.is_not_null().cast(pl.Int64).cum_sum()
    if kind in ("sum", "mean") and dtype.is_float() and not streaming:   # F129
        total = choice(_calm(value), value.fill_null(0.0).cum_sum(), _tree_sum(value, None, 0))
        return pl.when(seen > 0).then(total if kind == "sum" else total / seen)
    if kind in ("sum", "mean"):
        total = (_exact(value, dtype) if kind == "mean" else value).fill_null(0).cum_sum()
        if kind == "mean":
            total = total.cast(pl.Float64) / seen
        return pl.when(seen > 0).then(total)
    plain, nan = _finite(value, dtype)
    best = plain.fill_null(strategy="forward")
    best = best.cum_max() if kind == "max" else best.cum_min()
    if nan is None:
        return best
    nans = nan.fill_null(False).cast(pl.Int64).cum_sum()
    if kind == "max":   # NaN is the largest
        return pl.when(nans > 0).then(pl.lit(float("nan"))).otherwise(best)
    return pl.when(best.is_null() & (nans > 0)).then(pl.lit(float("nan"))).otherwise(best)


def _frame(e: pl.Expr, how: str, before: int, after: int) -> pl.Expr:
    """``how`` (sum, min, max) of ``e`` over the rows from ``before`` rows back to ``after``
    rows ahead, NULLs skipped (NULL when the frame holds no value); either bound may be on
    the other side of the current row.  Frames cut short by the partition's ends are
    rolling windows' partial starts, forward or over the reversed rows."""
    def fwd(size: int, shift: int) -> pl.Expr:
        out = getattr(e, f"rolling_{how}")(size, min_samples=1)
        return out.shift(shift) if shift else out

    def back(size: int, shift: int) -> pl.Expr:   # windows reaching forward
        out = getattr(e.reverse(), f"rolling_{how}")(size, min_samples=1)
        return (out.shift(shift) if shift else out).reverse()

    if before < 0:   # the frame starts after this row
        return back(after + before + 1, -before)
    if after < 0:    # the frame ends before this row
        return fwd(before + after + 1, -after)
    head = fwd(before + 1, 0)
    if after == 0:
        return head
    tail = back(after, 1)
    if how == "sum":
        return pl.when(head.is_null()).then(tail).when(tail.is_null()).then(head) \
            .otherwise(head + tail)
    return (pl.max_horizontal if how == "max" else pl.min_horizontal)(head, tail)


#: ROWS frames of at most this many rows plus one sum their doubles row by row, as DuckDB's
#: segment tree does (they hold no aligned block of 16 rows but at their start); longer ones
#: in its tree (:func:`_sliding_tree`)
_SHORT_FRAME = _BLOCK - 1


Shift = Callable[[pl.Expr, int], pl.Expr]
"""``shift(e, k)``: ``e`` of the row ``k`` rows back (ahead, below 0), NULL where there is
none."""


def _sliding(kind: str, value: pl.Expr, dtype: pl.DataType, before: int, after: int,
             shift: Shift | None = None) -> pl.Expr:
    """The aggregate over the rows from ``before`` rows back to ``after`` ahead.  Given
    ``shift`` (a count, or a sum/avg of doubles over fewer than ``_SHORT_FRAME`` rows: the
    forms that add each frame's rows afresh), from ``shift`` alone, rolling nothing."""
    if shift is not None:
        assert before + after < _SHORT_FRAME and (kind == "count" or (
            kind in ("sum", "mean") and dtype.is_float()))

        def rows(e: pl.Expr) -> pl.Expr:   # the count of the frame's rows where e holds
            out = shift(e, before).cast(pl.Int64).fill_null(0)
            for k in range(before - 1, -after - 1, -1):
                out = out + shift(e, k).cast(pl.Int64).fill_null(0)
            return out
        if kind == "count":
            return rows(value)
        count = rows(value.is_not_null())
    elif kind == "count":   # (value: whether the row counts)
        return _frame(value.cast(pl.Int64), "sum", before, after).fill_null(0)
    else:
        count = _frame(value.is_not_null().cast(pl.Int64), "sum", before, after).fill_null(0)
    at = shift or (lambda e, k: e.shift(k))
    if kind in ("sum", "mean") and dtype.is_float() and before + after < _SHORT_FRAME:
        # each frame's doubles added afresh, oldest first: a rolling sum adds the row coming
        # in and subtracts the one leaving, so 1e300 + 1 - 1e300 left 0, inf - inf NaN
        # (NULLs as +0.0: x + 0.0 is x but for -0.0, made 0.0 below anyway; each step names
        # the running total once -- a CASE naming it three times grew as 3^rows and ran out
        # of memory at 20 rows)
        total = at(value, before).fill_null(0.0)
        for k in range(before - 1, -after - 1, -1):   # left to right, oldest first
            total = total + at(value, k).fill_null(0.0)
        # DuckDB's sum starts at +0.0: a frame of -0.0 sums to 0.0 (polars drops a + 0.0)
        total = pl.when(total == 0).then(0.0).otherwise(total)
        total = total if kind == "sum" else total / count
        return pl.when(count > 0).then(total)
    if kind in ("sum", "mean"):
        total = _frame(value if kind == "sum" else _exact(value, dtype), "sum", before, after)
        total = total if kind == "sum" else total.cast(pl.Float64) / count
        return pl.when(count > 0).then(total)
    plain, nan = _finite(value, dtype)
    best = _frame(plain, kind, before, after)
    if nan is None:
        return pl.when(count > 0).then(best)
    nans = _frame(nan.cast(pl.Int64), "sum", before, after).fill_null(0)
    if kind == "max":
        return pl.when(nans > 0).then(pl.lit(float("nan"))).otherwise(best)
    return pl.when(best.is_null() & (nans > 0)).then(pl.lit(float("nan"))).otherwise(best)


def _by_range(kind: str, value: pl.Expr, dtype: pl.DataType, by: pl.Expr, size: str
              ) -> pl.Expr:
    if kind == "mean" and not dtype.is_integer():   # NULLs skipped; only NULLs: NULL
        return value.cast(pl.Float64).rolling_mean_by(by, size, closed="right")
    if kind == "count":   # (value: whether the row counts)
        return value.cast(pl.Int64).rolling_sum_by(by, size, closed="right")
    count = value.is_not_null().cast(pl.Int64).rolling_sum_by(by, size, closed="right")
    plain, nan = _finite(value, dtype)
    if kind in ("sum", "mean"):
        total = (value if kind == "sum" else _exact(value, dtype)).rolling_sum_by(
            by, size, closed="right")
        total = total if kind == "sum" else total.cast(pl.Float64) / count
        return pl.when(count > 0).then(total)
    best = getattr(plain, f"rolling_{kind}_by")(by, size, closed="right")
    if nan is None:
        return pl.when(count > 0).then(best)
    nans = nan.cast(pl.Int64).rolling_sum_by(by, size, closed="right")
    if kind == "max":
        return pl.when(nans > 0).then(pl.lit(float("nan"))).otherwise(best)
    return pl.when(best.is_null() & (nans > 0)).then(pl.lit(float("nan"))).otherwise(best)


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
