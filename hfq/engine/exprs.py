"""Reading polars expressions as trees: what they use, whether they are row-wise, window-local
or aggregating, and the time helpers (:func:`bucket`, :func:`minute_of_day`).

A polars expression serialises to a JSON tree (``expr.meta.serialize(format="json")``) and
back; the engine walks that tree to decide where each piece can run.  Anything it does not
recognise is treated as "needs every row on the driver" -- slower, never wrong.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import json
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from hfq.errors import QueryError
from hfq.query.read import raised  # noqa: F401 - read back what fail_where plants

__all__ = ["CHOICE", "LARGE_CHOICE", "Bucket", "Tree", "bucket", "columns_of", "empty_lazy",
           "every_row", "fail_where", "from_tree", "is_choice", "is_rowwise", "local_over",
           "may_raise", "minute_of_day",
           "never_fails", "parse_every", "raised", "to_tree"]

Tree = Any
"""An expression's JSON tree: nested dicts, lists and strings."""


_EMPTY: dict[tuple, pl.LazyFrame] = {}


def empty_lazy(schema: pl.Schema | dict) -> pl.LazyFrame:
    """A LazyFrame with no rows and ``schema`` (cached: planning asks for the same schemas
    over and over, and building one costs a Series per column)."""
    key = tuple(schema.items())
    lf = _EMPTY.get(key)
    if lf is None:
        if len(_EMPTY) > 512:
            _EMPTY.clear()
        lf = _EMPTY[key] = pl.LazyFrame(schema=schema)
    return lf


class ByIdentity:
    """Values kept by the identity of live objects (and a few more parts of a key).  An
    entry leaves when its object is collected (a weak reference's finalizer), so an identity
    is never reused while its entry is there and no object is kept alive by it; past
    ``limit`` entries, new ones are not kept until old ones leave."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: dict[tuple[Any, ...], Any] = {}

    def get(self, obj: object, *more: Any) -> Any:
        return self.items.get((id(obj), *more))

    def put(self, obj: object, value: Any, *more: Any) -> None:
        if len(self.items) < self.limit:
            key = (id(obj), *more)
            self.items[key] = value
            weakref.finalize(obj, self.items.pop, key, None)


def to_tree(expr: pl.Expr) -> Tree:
    """``expr`` as polars' JSON tree (a fresh copy: callers may change it)."""
    text = _TREES.get(expr)
    if text is None:
        text = expr.meta.serialize(format="json")
        if len(text) <= _TREE_CHARS:   # (not a large literal: a list of a million values)
            _TREES.put(expr, text)
    return json.loads(text)


_TREES = ByIdentity(4096)
"""The serialized forms of the expressions alive: a compiled statement's expressions are the
same objects each time it runs, and serializing one is most of a one-symbol query's
planning (0.3 ms of 3.4 for a time window of the busiest symbol)."""
_TREE_CHARS = 1 << 16


def from_tree(tree: Tree) -> pl.Expr:
    return pl.Expr.deserialize(io.StringIO(json.dumps(tree)), format="json")


def node_kind(tree: Tree) -> tuple[str, Any]:
    """``("Column", "x")``, ``("Agg", {...})``, ``("Len", None)`` ..."""
    if isinstance(tree, str):
        return tree, None
    if isinstance(tree, dict) and len(tree) == 1:
        key = next(iter(tree))
        return key, tree[key]
    return "?", tree


def signature(function: Any) -> str:
    """A function node's name: ``Abs``, ``TemporalExpr/Hour``, ``Boolean/IsIn``..."""
    if isinstance(function, str):
        return function
    if isinstance(function, dict) and len(function) == 1:
        key, inner = next(iter(function.items()))
        if isinstance(inner, str):
            return f"{key}/{inner}"
        if isinstance(inner, dict) and len(inner) == 1 and key in ("Boolean", "StringExpr",
                                                                  "TemporalExpr", "Pow",
                                                                  "Trigonometry"):
            return f"{key}/{next(iter(inner))}"
        return key
    return "?"


@functools.lru_cache(maxsize=1)
def _elementwise() -> frozenset[str]:
    """Signatures of the polars functions known to work row by row (learned from samples, so
    the names follow the installed polars)."""
    c, s, t, d = pl.col("x"), pl.col("s"), pl.col("t"), pl.col("d")
    samples = [
        c.abs(), c.sqrt(), c.log(), c.log10(), c.log1p(), c.exp(), c.round(2), c.floor(),
        c.ceil(), c.sign(), c.clip(0, 1), c.pow(2), c.sin(), c.cos(), c.is_null(),
        c.is_not_null(), c.is_nan(), c.is_not_nan(), c.is_finite(), c.is_infinite(),
        c.is_in([1, 2]),
        c.is_between(1, 2), c.fill_null(0), c.fill_nan(0), c.not_(), c.cbrt(),
        pl.coalesce(c, s), pl.max_horizontal(c, s), pl.min_horizontal(c, s),
        pl.sum_horizontal(c, s), pl.concat_str([s, s]),
        t.dt.hour(), t.dt.minute(), t.dt.second(), t.dt.millisecond(), t.dt.microsecond(),
        t.dt.nanosecond(), t.dt.year(), t.dt.month(), t.dt.day(), t.dt.weekday(),
        t.dt.ordinal_day(), t.dt.quarter(), t.dt.week(), t.dt.date(), t.dt.time(),
        t.dt.truncate("1h"), t.dt.epoch("s"), t.dt.strftime("%H"), t.dt.combine(dt.time()),
        t.dt.replace_time_zone(None), t.dt.convert_time_zone("UTC"), t.dt.total_seconds(),
        t.dt.offset_by("1h"), d.dt.month_start(), d.dt.month_end(), t.dt.iso_year(),
        s.str.contains("a"), s.str.starts_with("a"), s.str.ends_with("a"),
        s.str.to_lowercase(), s.str.to_uppercase(), s.str.len_chars(), s.str.len_bytes(),
        s.str.slice(0, 1), s.str.replace("a", "b"), s.str.replace_all("a", "b"),
        s.str.strip_chars(), s.str.strip_chars_start(), s.str.strip_chars_end(),
        s.str.contains("a", literal=True), s.str.head(1), s.str.tail(1), s.str.zfill(3),
        s.str.pad_start(3), s.str.pad_end(3), s.str.reverse(), s.str.count_matches("a"),
        s.str.to_integer(strict=False), s.str.strptime(pl.Date, "%Y", strict=False),
        s.str.split(","), s.str.extract("a", 0),
        s.cat.starts_with("a"), s.cat.ends_with("a"), s.cat.len_bytes(), s.cat.len_chars(),
    ]
    out = set()
    for expr in samples:
        for function in _functions(to_tree(expr)):
            out.add(signature(function))
    return frozenset(out)


def _functions(tree: Tree) -> Iterable[Any]:
    kind, body = node_kind(tree)
    if kind == "Function":
        yield body["function"]
    for child in _children(tree):
        yield from _functions(child)


def _children(tree: Tree) -> list[Tree]:
    """The sub-expressions of a node (options and literals are not children)."""
    kind, body = node_kind(tree)
    if kind == "Alias":
        return [body[0]]
    if kind == "BinaryExpr":
        return [body["left"], body["right"]]
    if kind == "Cast":
        return [body["expr"]]
    if kind == "Ternary":
        return [body["predicate"], body["truthy"], body["falsy"]]
    if kind == "Function":
        return list(body["input"])
    if kind == "Agg":
        _, inner = node_kind(body)
        if isinstance(inner, list):
            return [inner[0]]
        if isinstance(inner, dict) and "input" in inner:
            return [inner["input"]]
        return [inner]
    if kind == "Over":
        order = body.get("order_by")
        return [body["function"], *body["partition_by"], *([order[0]] if order else [])]
    if kind == "Filter":
        return [body["input"], body["by"]]
    if kind == "SortBy":
        return [body["expr"], *body["by"]]
    if kind == "Sort":
        return [body["expr"]]
    if kind in ("KeepName", "RenameAlias"):
        return [body if not isinstance(body, dict) or "expr" not in body else body["expr"]]
    if kind == "Slice":
        return [body["input"], body["offset"], body["length"]]
    if kind == "Gather":
        return [body["expr"], body["idx"]]
    return []


_ROWWISE_NODES = ("Alias", "Column", "Literal", "BinaryExpr", "Cast", "Ternary", "KeepName")


def is_rowwise(tree: Tree) -> bool:
    """Every piece of the expression works row by row (it can run on any slice of rows)."""
    kind, body = node_kind(tree)
    if kind == "Selector":
        return True
    if kind not in _ROWWISE_NODES and kind != "Function":
        return False
    if kind == "Function" and signature(body["function"]) not in _elementwise():
        return False
    if kind == "Literal" and isinstance(body, dict) and "Series" in body:
        return False   # a literal Series has its own length
    return all(is_rowwise(c) for c in _children(tree))


CHOICE = "__hfq_choice"
"""The name marking the test of a choice between two forms (``hfq.engine.ops.choice``)."""
LARGE_CHOICE = CHOICE + "_large"
"""The name marking the test of a choice made only over frames of ``hfq.engine.ops.
SHARED_ROWS`` rows or more (smaller ones take the full form untested)."""


def is_choice(tree: Tree) -> bool:
    """Whether ``tree`` is a choice's test (either kind)."""
    kind, body = node_kind(tree)
    return kind == "Alias" and body[1] in (CHOICE, LARGE_CHOICE)


def local_over(tree: Tree, local: frozenset[str]) -> bool:
    """Row-wise, except for windows ``.over(keys)`` whose keys include every column in
    ``local`` (the partition columns): such a window never spans two partitions; and a
    choice whose full form is such (its light form is the same wherever its test holds over
    the frame -- a window run flat, its shifts cut where the partition keys change, has no
    ``over`` but gives what the full form gives)."""
    kind, body = node_kind(tree)
    if kind == "Ternary" and is_choice(body["predicate"]):
        return local_over(body["falsy"], local)
    if kind == "Over":
        keys = body["partition_by"]
        names = {node_kind(k)[1] for k in keys if node_kind(k)[0] == "Column"}
        if len(names) != len(keys) or not local <= names:
            return False
        return _inside_window_ok(body["function"], local)
    if kind not in _ROWWISE_NODES and kind != "Function" and kind != "Selector":
        return False
    if kind == "Function" and signature(body["function"]) not in _elementwise():
        return False
    return all(local_over(c, local) for c in _children(tree))


def _inside_window_ok(tree: Tree, local: frozenset[str]) -> bool:
    """Inside a local window anything goes (it sees one group) but another window."""
    kind, _ = node_kind(tree)
    if kind == "Over":
        return local_over(tree, local)
    return all(_inside_window_ok(c, local) for c in _children(tree))


def columns_of(tree: Tree) -> set[str] | None:
    """Input columns an expression reads; None when it may read all of them (wildcards)."""
    kind, body = node_kind(tree)
    if kind == "Column":
        return {body}
    if kind == "Selector":
        if isinstance(body, dict) and "ByName" in body:
            return set(body["ByName"]["names"])
        return None
    if kind in ("Nth", "DtypeColumn", "Columns", "Wildcard", "Exclude"):
        return None
    out: set[str] = set()
    for child in _children(tree):
        got = columns_of(child)
        if got is None:
            return None
        out |= got
    return out


def output_name(expr: pl.Expr) -> str:
    try:
        return expr.meta.output_name()
    except pl.exceptions.ComputeError as exc:
        raise QueryError(f"cannot tell the name of {expr}; give it one with .alias()") from exc


# -- errors raised by the data ------------------------------------------------------------------
_RAISE = "hfq-error: "


def fail_where(value: pl.Expr, bad: pl.Expr, message: str) -> pl.Expr:
    """``value``, but the query fails with ``message`` when ``bad`` holds on any row (SQL
    errors raised by the data: integer overflow, division by zero).  Row-wise: polars has
    no raising expression, so the row's flag becomes a string that cannot be cast to an
    integer -- which fails the query, and :func:`raised` reads the message back.

    Examples
    --------
    >>> import polars as pl
    >>> x = pl.col("x")
    >>> pl.DataFrame({"x": [1, 2]}).select(fail_where(x, x == 0, "zero")).to_series().to_list()
    [1, 2]
    >>> try:
    ...     pl.DataFrame({"x": [1, 0]}).select(fail_where(x, x == 0, "zero"))
    ... except pl.exceptions.PolarsError as exc:
    ...     raised(exc)
    'zero'
    """
    flag = pl.when(bad).then(pl.lit(_RAISE + message)).cast(pl.Int8)
    return pl.when(flag.is_null()).then(value)


def never_fails(tree: Tree) -> Tree | None:
    """The value of a :func:`fail_where` tree whose ``bad`` is the literal False (a check a
    :func:`hfq.engine.ops.choice` chose away), else None: polars would still compute the
    flag, a cast and a test per row (in a window: per partition)."""
    kind, body = node_kind(tree)
    if kind != "Ternary" or body.get("falsy") != _NULL:
        return None
    fk, fb = node_kind(body["predicate"])
    if fk != "Function" or fb.get("function") != {"Boolean": "IsNull"} or \
            len(fb.get("input", [])) != 1:
        return None
    ck, cb = node_kind(fb["input"][0])
    if ck != "Cast" or cb.get("dtype") != {"Literal": "Int8"}:
        return None
    tk, tb = node_kind(cb["expr"])
    if tk != "Ternary" or tb.get("predicate") != _FALSE or tb.get("falsy") != _NULL:
        return None
    message = tb.get("truthy", {}).get("Literal", {}).get("Scalar", {}).get("String", "")
    return body["truthy"] if message.startswith(_RAISE) else None


_NULL = {"Literal": {"Scalar": {"Null": "Null"}}}
_FALSE = {"Literal": {"Scalar": {"Boolean": False}}}


def may_raise(expr: pl.Expr) -> bool:
    """Does ``expr`` hold a :func:`fail_where` check (an error the data can raise)?"""
    return _RAISE in expr.meta.serialize(format="json")


def every_row(value: pl.Expr, pick: pl.Expr) -> pl.Expr:
    """``pick`` (one value of ``value``: its first, its last), with the errors of ``value``
    raised for every row, as SQL evaluates the argument of ``first``/``last_value`` on
    every row -- polars evaluates a row-wise expression only at the row ``.first()`` or
    ``.last()`` takes.  ``pick`` itself when ``value`` cannot raise.

    Examples
    --------
    >>> import polars as pl
    >>> x = pl.col("x")
    >>> v = fail_where(x, x == 0, "zero")
    >>> pl.LazyFrame({"x": [0, 2]}).select(v.last()).collect().item()   # polars skips row 0
    2
    >>> try:
    ...     pl.LazyFrame({"x": [0, 2]}).select(every_row(v, v.last())).collect()
    ... except pl.exceptions.PolarsError as exc:
    ...     raised(exc)
    'zero'
    """
    if not may_raise(value):
        return pick
    return pl.when(value.count() >= 0).then(pick)   # a count evaluates every row


# -- time helpers -------------------------------------------------------------------------------
_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "min": 60 * 10**9,
          "h": 3600 * 10**9, "d": 86400 * 10**9}
_EVERY = re.compile(r"^\s*(\d+)\s*(ns|us|ms|s|min|m|h|d)\s*$")


def parse_every(every: str | dt.timedelta) -> int:
    """``"30s"``, ``"1m"`` (minute), ``"5min"``, ``"1h"``, ``"1d"``, a timedelta -> ns."""
    if isinstance(every, dt.timedelta):
        ns = round(every.total_seconds() * 10**9)
    else:
        m = _EVERY.match(str(every))
        if not m:
            raise QueryError(f"bucket width {every!r}: use a number and one of ns, us, ms, s, "
                             "m (minutes), h, d, e.g. '30s', '1m', '5m', '1h', '1d'")
        ns = int(m.group(1)) * _UNITS[m.group(2)]
    if ns <= 0:
        raise QueryError(f"bucket width {every!r} must be positive")
    return ns


def _anchor_ns(anchor: str | dt.time | None) -> int:
    if anchor is None:
        return 0
    if isinstance(anchor, str):
        try:
            anchor = dt.time.fromisoformat(anchor)
        except ValueError:
            raise QueryError(f"anchor {anchor!r} is not a time of day such as '09:30'") \
                from None
    return ((anchor.hour * 60 + anchor.minute) * 60 + anchor.second) * 10**9 + \
        anchor.microsecond * 1000


_UNIT_NS = {"ns": 1, "us": 10**3, "ms": 10**6}


def bucket_expr(column: str | pl.Expr, every_ns: int, anchor_ns: int,
                dtype: pl.DataType) -> pl.Expr:
    """The start of the ``every_ns`` bucket holding each value, buckets starting at
    ``anchor_ns`` after midnight (UTC for timestamps); same type as the column."""
    col = pl.col(column) if isinstance(column, str) else column
    if isinstance(dtype, pl.Time):
        ns, anchor = col.to_physical(), anchor_ns % every_ns
        # a time before the day's first anchored bucket is in the last bucket of the day
        # before (as in DuckDB): wrap around midnight
        start = (((ns - anchor) // every_ns) * every_ns + anchor) % _UNITS["d"]
        return start.cast(pl.Time)
    if isinstance(dtype, pl.Datetime):
        unit = _UNIT_NS[dtype.time_unit or "us"]
        if every_ns % unit or anchor_ns % unit:
            raise QueryError(f"bucket width or anchor finer than the column's unit "
                             f"({dtype.time_unit})")
        e, a = every_ns // unit, (anchor_ns // unit) % (every_ns // unit)
        phys = col.to_physical()
        return (((phys - a) // e) * e + a).cast(pl.Datetime(dtype.time_unit, dtype.time_zone))
    if isinstance(dtype, pl.Date):
        day = _UNITS["d"]
        if every_ns % day:
            raise QueryError("a DATE column is bucketed by whole days ('1d', '7d')")
        e = every_ns // day
        return ((col.to_physical() // e) * e).cast(pl.Date)
    raise QueryError(f"time buckets need a TIME, SECOND, DATE, DATETIME or TIMESTAMP column, "
                     f"not {dtype}")


@dataclass(frozen=True)
class Bucket:
    """A time bucket of a column, resolved against the query's schema (see :func:`bucket`)."""

    column: str
    every: str | dt.timedelta
    anchor: str | dt.time | None = None
    name: str | None = None

    def alias(self, name: str) -> Bucket:
        return Bucket(self.column, self.every, self.anchor, name)

    def resolve(self, schema: pl.Schema) -> pl.Expr:
        if self.column not in schema:
            raise QueryError(f"bucket: no column {self.column!r}; columns: "
                             f"{', '.join(schema.names())}")
        expr = bucket_expr(self.column, parse_every(self.every), _anchor_ns(self.anchor),
                           schema[self.column])
        return expr.alias(self.name or self.column)


def bucket(column: str, every: str | dt.timedelta, *, anchor: str | dt.time | None = None
           ) -> Bucket:
    """The start of the time bucket of width ``every`` holding each value of ``column``.

    Works on TIME/SECOND (times of day), DATETIME/TIMESTAMP and DATE columns; the result has
    the column's type and, unless renamed with ``.alias()``, its name.  ``every`` is a number
    and a unit -- ``ns``, ``us``, ``ms``, ``s``, ``m`` or ``min`` (minutes, not months),
    ``h``, ``d``.  Buckets start at midnight (UTC for timestamps) unless ``anchor`` names a
    time of day: ``anchor="09:30"`` aligns them with the trading session.

    Examples
    --------
    >>> import datetime as dt, polars as pl, hfq
    >>> df = pl.DataFrame({"time": [dt.time(9, 31, 5), dt.time(9, 36)]})
    >>> q = hfq.bucket("time", "5m", anchor="09:32").resolve(df.schema)
    >>> df.select(q)["time"].to_list()
    [datetime.time(9, 27), datetime.time(9, 32)]
    """
    parse_every(every)
    _anchor_ns(anchor)
    return Bucket(column, every, anchor)


def minute_of_day(column: str) -> pl.Expr:
    """Minutes since midnight as Int64 (``hour * 60 + minute``, never wrapping), named
    ``minute_of_day``: a grouping key for intraday profiles across days.

    Examples
    --------
    >>> import datetime as dt, polars as pl, hfq
    >>> df = pl.DataFrame({"time": [dt.time(9, 30, 59), dt.time(16, 0), dt.time(23, 59)]})
    >>> df.select(hfq.minute_of_day("time"))["minute_of_day"].to_list()
    [570, 960, 1439]
    >>> busiest = quotes.query().group_by(hfq.minute_of_day("time")).len()
    >>> busiest.sort("len", "minute_of_day", descending=[True, False]).head(1).collect().rows()
    [(575, 55)]
    """
    col = pl.col(column)
    return (col.dt.hour().cast(pl.Int64) * 60 + col.dt.minute().cast(pl.Int64)).alias(
        "minute_of_day")
