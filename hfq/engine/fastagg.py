"""One-row aggregates of a fast query's rows without a polars plan: the compiled polars
expressions of an aggregate with no GROUP BY (and the SELECT over it) evaluated by a small
interpreter whose reductions are numba kernels.

The interpreter reads the expression trees the SQL compiler emits (``count``, ``sum`` with its
128-bit and overflow guards, ``avg``, ``min``, ``max`` with NaN the largest, ``first``,
``last``, row-wise ``+ - *`` of doubles, the output arithmetic) and implements *the polars
meaning of each node*: so its answer is the one polars gives for the same plan over the same
rows, but for the order in which doubles are added.  It knows a few node kinds only; anything
else -- another node, a column that is not an integer or a double, integer arithmetic, a FILTER
clause -- is refused when the plan is recognised (:func:`kernel_of` returns None) and the query
runs as one polars plan.  Some answers are refused when the rows are seen (:class:`Refused`, the
same fallback): a float sum or mean of 0 (the sign of a zero sum is polars'), a min or max of 0
among both zeros (which one polars keeps is its order), an integer sum past BIGINT (polars' own
overflow rules and the compiler's error), a string cast (the compiler's way of raising an
error).  Sums of doubles are added in row order, DuckDB's order on one thread, where polars adds
128 at a time and each batch apart: the two can differ in the last bits, and on values that
cancel (1e308 and -1e308 alternating) polars' may be NaN where row order and DuckDB give 1e308
-- the class of differences ``docs/sql.md`` describes for the general engine's partial sums.

Examples
--------
>>> import polars as pl
>>> from hfq.engine.ops import Aggregate
>>> schema = pl.Schema({"x": pl.Float64, "n": pl.Int64})
>>> agg = Aggregate((), (pl.col("x").nan_max().alias("hi"), pl.len().cast(pl.Int64)
...                      .alias("rows")), True)
>>> k = kernel_of([agg], schema)
>>> k.run(pl.DataFrame({"x": [1.0, float("nan"), None], "n": [1, 2, 3]}))
shape: (1, 2)
┌─────┬──────┐
│ hi  ┆ rows │
│ --- ┆ ---  │
│ f64 ┆ i64  │
╞═════╪══════╡
│ NaN ┆ 3    │
└─────┴──────┘
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl

from hfq.engine.aggs import widen
from hfq.engine.exprs import Tree, empty_lazy, node_kind, to_tree
from hfq.engine.ops import Aggregate, Op, Select
from hfq.storage.jit import njit

__all__ = ["Kernel", "Refused", "kernel_of"]

_INTS = (pl.Int8, pl.Int16, pl.Int32, pl.Int64)
_I64_MIN, _I64_MAX = -(2 ** 63), 2 ** 63 - 1
_DEC = pl.Decimal(38, 0)
_DYN: pl.DataType = pl.Unknown()   # a dynamic integer literal's (compared only)


class Refused(Exception):
    """The rows (or a node) are outside what this module computes exactly."""


@dataclass
class _Vec:
    """A column of values in chunks (one per part of the rows: views of the batches, never
    concatenated): ``(values, valid)``, ``valid`` None where there is no NULL."""

    chunks: list[tuple[np.ndarray, np.ndarray | None]]


Parts = Sequence[pl.DataFrame]
"""The rows as consecutive frames (slices of cached batches: never concatenated)."""
_Rows = Callable[[Parts, dict[Any, Any]], _Vec]
_Value = Callable[[Parts, dict[Any, Any]], Any]


# -- numba kernels -------------------------------------------------------------------------------
@njit(cache=True)
def _float_stats(x: np.ndarray, valid: np.ndarray, checked: bool, n: int, total: float,
                 lo: float, hi: float, nans: int, pos0: bool, neg0: bool
                 ) -> tuple[int, float, float, float, int, bool, bool]:  # pragma: no cover
    """(non-NULL count, sum in row order, min and max of the non-NaN, NaN count, a +0.0
    seen, a -0.0 seen) of the non-NULL ``x`` (``valid`` read when ``checked``), carried on
    from those of the rows before (the arguments of the same names)."""
    for i in range(len(x)):
        if checked and not valid[i]:
            continue
        v = x[i]
        n += 1
        total += v
        if v != v:
            nans += 1
            continue
        if v < lo:
            lo = v
        if v > hi:
            hi = v
        if v == 0.0:
            if np.signbit(v):
                neg0 = True
            else:
                pos0 = True
    return n, total, lo, hi, nans, pos0, neg0


@njit(cache=True)
def _int_stats(x: np.ndarray, valid: np.ndarray, checked: bool, n: int, high: Any, low: Any,
               lo: Any, hi: Any) -> tuple[int, Any, Any, Any, Any]:  # pragma: no cover
    """(non-NULL count, sum of the high 32 bits, sum of the low 32 bits, min, max) of the
    non-NULL ``x``, carried on from the rows before: each partial sum exact in 64 bits below
    2^31 rows."""
    for i in range(len(x)):
        if checked and not valid[i]:
            continue
        v = np.int64(x[i])
        if n == 0 or v < lo:
            lo = v
        if n == 0 or v > hi:
            hi = v
        n += 1
        high += v >> 32
        low += v & 0xFFFFFFFF
    return n, high, low, lo, hi


@njit(cache=True)
def _arg_extreme(x_valid: np.ndarray, x_checked: bool, key: np.ndarray,
                 key_valid: np.ndarray, key_checked: bool, want_max: bool, found: bool,
                 best_key: Any, ties: bool
                 ) -> tuple[int, bool, int, bool]:  # pragma: no cover - compiled
    """The row of the least (greatest) ``key`` among the rows where neither ``x`` nor
    ``key`` is NULL, carried on from the rows before (``found`` a key there, ``best_key``,
    ``ties``: that key in two rows or more): (the row here, -1 when the best is before;
    found, best_key, ties)."""
    best = -1
    for i in range(len(key)):
        if (x_checked and not x_valid[i]) or (key_checked and not key_valid[i]):
            continue
        k = np.int64(key[i])
        if not found or (k > best_key if want_max else k < best_key):
            best = i
            best_key = k
            found = True
            ties = False
        elif k == best_key:
            ties = True
    return best, found, best_key, ties


_NO_MASK = np.zeros(0, np.bool_)


def _stats(vec: _Vec, is_float: bool) -> tuple[Any, ...]:
    state: tuple[Any, ...] = (0, 0.0, np.inf, -np.inf, 0, False, False) if is_float else \
        (0, 0, 0, 0, 0)
    kernel = _float_stats if is_float else _int_stats
    for values, valid in vec.chunks:
        state = tuple(kernel(values, _NO_MASK if valid is None else valid, valid is not None,
                             *state))
    return state


# -- compiling trees ---------------------------------------------------------------------------
def _unsupported(what: object) -> Refused:
    return Refused(f"not computed here: {str(what)[:80]}")


def _dtype(tree: Tree) -> pl.DataType:
    """A Cast node's target (the few the interpreter knows)."""
    kind, body = node_kind(tree)
    if kind == "Literal" and body in ("Int64", "Float64", "Int8"):
        return {"Int64": pl.Int64(), "Float64": pl.Float64(), "Int8": pl.Int8()}[body]
    if kind == "Literal" and node_kind(body) == ("Decimal", [38, 0]):
        return _DEC
    raise _unsupported(tree)


def _is_int(dtype: pl.DataType) -> bool:
    return isinstance(dtype, _INTS)


class _Compiler:
    """Trees to closures over the rows (``rows``) and over the aggregates' values (``value``),
    with the polars dtype of each: every node's kind is checked here, once per plan."""

    def __init__(self, schema: pl.Schema) -> None:
        self.schema = schema

    # row-wise: a column of values (each node evaluated once per run: memoised by its tree)
    def rows(self, tree: Tree) -> tuple[_Rows, pl.DataType]:
        fn, dtype = self._rows(tree)
        key = ("rows", json.dumps(tree, sort_keys=True))

        def once(frame: Parts, memo: dict[Any, Any]) -> _Vec:
            got = memo.get(key)
            if got is None:
                got = memo[key] = fn(frame, memo)
            return cast(_Vec, got)
        return once, dtype

    def _rows(self, tree: Tree) -> tuple[_Rows, pl.DataType]:
        kind, body = node_kind(tree)
        if kind == "Column":
            dtype = self.schema.get(body)
            if dtype is None or not (_is_int(dtype) or dtype == pl.Float64):
                raise _unsupported(tree)
            return _column(body), dtype
        if kind == "Cast" and body.get("options") == "Strict":
            inner, source = self.rows(body["expr"])
            target = _dtype(body["dtype"])
            if target == source:
                return inner, source
            if _is_int(source) and target in (pl.Int64, _DEC):   # lossless: the same
                return inner, target                         # integers (read as int64)
            if _is_int(source) and target == pl.Float64:
                return _astype(inner, np.float64), target
            raise _unsupported(tree)
        if kind == "BinaryExpr" and body["op"] in ("Plus", "Minus", "Multiply"):
            (left, lt), (right, rt) = self.rows(body["left"]), self.rows(body["right"])
            if pl.Float64 not in (lt, rt) or _DEC in (lt, rt):
                raise _unsupported(tree)   # integer arithmetic: polars' overflow rules
            return _arith(left, right, body["op"]), pl.Float64()
        raise _unsupported(tree)

    # one value per aggregate: over the rows (Agg, Len) or over other values
    def value(self, tree: Tree, outputs: dict[str, pl.DataType] | None = None
              ) -> tuple[_Value, pl.DataType]:
        kind, body = node_kind(tree)
        if kind == "Len":
            return (lambda parts, _: sum(p.height for p in parts)), pl.UInt32()
        if kind == "Agg" and outputs is None:
            return self._agg(body)
        if kind == "Function" and outputs is None and body["function"] in ("MinBy", "MaxBy"):
            return self._arg(tree, body)
        if kind == "Column" and outputs is not None and body in outputs:
            name = body
            return (lambda _, got: got[name]), outputs[name]
        if kind == "Literal":
            return _literal(body)
        if kind == "Cast":
            inner, source = self.value(body["expr"], outputs)
            return _cast(inner, source, _dtype(body["dtype"]), body.get("options") == "Strict")
        if kind == "Ternary":
            pred, pt = self.value(body["predicate"], outputs)
            yes, yt = self.value(body["truthy"], outputs)
            no, nt = self.value(body["falsy"], outputs)
            if pt != pl.Boolean or not (yt == nt or nt == pl.Null or yt == pl.Null):
                raise _unsupported(tree)
            return (lambda f, g: yes(f, g) if pred(f, g) else no(f, g)), \
                (nt if yt == pl.Null else yt)
        if kind == "Function" and len(body["input"]) == 1 and \
                body["function"] in ({"Boolean": "IsNull"}, {"Boolean": "IsNotNull"}):
            inner, _ = self.value(body["input"][0], outputs)
            null = body["function"] == {"Boolean": "IsNull"}
            return (lambda f, g: (inner(f, g) is None) == null), pl.Boolean()
        if kind == "BinaryExpr":
            return self._binary(tree, body, outputs)
        raise _unsupported(tree)

    def _binary(self, tree: Tree, body: dict[str, Any],
                outputs: dict[str, pl.DataType] | None) -> tuple[_Value, pl.DataType]:
        (left, lt), (right, rt) = self.value(body["left"], outputs), \
            self.value(body["right"], outputs)
        op = body["op"]
        numbers = all(t == _DYN or _is_int(t) or t in (pl.UInt32, pl.Float64) for t in (lt, rt))
        if op in _COMPARE and numbers and pl.Float64 not in (lt, rt):   # integers: exact
            test = _COMPARE[op]
            return (lambda f, g: _compared(test, left(f, g), right(f, g))), pl.Boolean()
        if op == "TrueDivide" and numbers and _DYN not in (lt, rt):
            return (lambda f, g: _divided(left(f, g), right(f, g))), pl.Float64()
        if op in _FLOAT_ARITH and lt == rt == pl.Float64:
            arith = _FLOAT_ARITH[op]
            return (lambda f, g: _floats(arith, left(f, g), right(f, g))), pl.Float64()
        if op in ("And", "LogicalAnd", "Or", "LogicalOr") and lt == rt == pl.Boolean:
            both = op in ("And", "LogicalAnd")
            return (lambda f, g: _kleene(both, left(f, g), right(f, g))), pl.Boolean()
        raise _unsupported(tree)

    def _arg(self, tree: Tree, body: dict[str, Any]) -> tuple[_Value, pl.DataType]:
        """``x.filter(both).min_by(key.filter(both))`` (or max_by), ``both`` the rows where
        neither is NULL: the compiler's arg_min/arg_max of a key that is not a float."""
        x_filter, key_filter = (node_kind(t) for t in body["input"])
        if x_filter[0] != "Filter" or key_filter[0] != "Filter":
            raise _unsupported(tree)
        x, key = x_filter[1]["input"], key_filter[1]["input"]
        both = {"BinaryExpr": {"left": _not_null(x), "op": "And", "right": _not_null(key)}}
        if x_filter[1]["by"] != both or key_filter[1]["by"] != both:
            raise _unsupported(tree)
        inner, dtype = self.rows(x)
        kind, name = node_kind(key)
        key_type = self.schema.get(name) if kind == "Column" else None
        if key_type is None or not (_is_int(key_type) or key_type.is_temporal()):
            raise _unsupported(tree)
        keys, want_max = _column(name, physical=True), body["function"] == "MaxBy"

        def value(frame: Parts, memo: dict[Any, Any]) -> Any:
            v, k = inner(frame, memo), keys(frame, memo)
            found, best, ties, at = False, 0, False, None
            for (values, valid), (key, key_valid) in zip(v.chunks, k.chunks):
                row, found, best, ties = _arg_extreme(
                    _NO_MASK if valid is None else valid, valid is not None, key,
                    _NO_MASK if key_valid is None else key_valid, key_valid is not None,
                    want_max, found, best, ties)
                if row >= 0:
                    at = values[row]
            if ties:
                raise Refused("ties at the extreme key (which row polars takes)")
            return None if at is None else at.item()
        return value, dtype

    def _agg(self, body: Tree) -> tuple[_Value, pl.DataType]:
        kind, arg = node_kind(body)
        if kind == "Count" and not arg["include_nulls"]:
            inner, dtype = self.rows(arg["input"])
            return _reduce(inner, dtype, "count"), pl.UInt32()
        if kind in ("Min", "Max"):
            inner, dtype = self.rows(arg["input"])
            how = kind.lower() + ("_nan" if arg["propagate_nans"] and dtype == pl.Float64
                                  else "")
            return _reduce(inner, dtype, how), dtype
        if kind in ("Sum", "Mean", "First", "Last"):
            inner, dtype = self.rows(arg)
            if kind == "Mean" and dtype != pl.Float64:
                raise _unsupported(body)   # (the compiler averages integers exactly)
            out = {"Sum": pl.Int64() if _is_int(dtype) else dtype}.get(kind, dtype)
            return _reduce(inner, dtype, kind.lower()), out
        raise _unsupported(body)


# -- the closures ------------------------------------------------------------------------------
def _not_null(tree: Tree) -> Tree:
    return {"Function": {"input": [tree], "function": {"Boolean": "IsNotNull"}}}


def _column(name: str, *, physical: bool = False) -> _Rows:
    def rows(parts: Parts, memo: dict[Any, Any]) -> _Vec:
        return _Vec([_values(p.get_column(name), physical) for p in parts])
    return rows


def _values(s: pl.Series, physical: bool) -> tuple[np.ndarray, np.ndarray | None]:
    s = s.cast(pl.Int64) if physical and s.dtype.is_temporal() else s   # (to_physical
    #   runs a polars plan, ~0.1 ms: a cast gives the same integers without one)
    if s.null_count():
        return s.fill_null(0).to_numpy(), s.is_not_null().to_numpy()
    return s.to_numpy(), None


def _astype(inner: _Rows, dtype: type) -> _Rows:
    return lambda f, m: _Vec([(v.astype(dtype), ok) for v, ok in inner(f, m).chunks])


def _arith(left: _Rows, right: _Rows, op: str) -> _Rows:
    def rows(frame: Parts, memo: dict[Any, Any]) -> _Vec:
        out = []
        for (x, xv), (y, yv) in zip(left(frame, memo).chunks, right(frame, memo).chunks):
            x, y = x.astype(np.float64, copy=False), y.astype(np.float64, copy=False)
            with np.errstate(all="ignore"):
                got = x + y if op == "Plus" else x - y if op == "Minus" else x * y
            out.append((got, xv if yv is None else yv if xv is None else xv & yv))
        return _Vec(out)
    return rows


def _reduce(inner: _Rows, dtype: pl.DataType, how: str) -> _Value:
    is_float = dtype == pl.Float64

    def value(frame: Parts, memo: dict[Any, Any]) -> Any:
        vec = inner(frame, memo)
        if how in ("first", "last"):
            chunks = [c for c in vec.chunks if len(c[0])]
            if not chunks:
                return None
            values, valid = chunks[0] if how == "first" else chunks[-1]
            at = 0 if how == "first" else len(values) - 1
            if valid is not None and not valid[at]:
                return None
            return values[at].item()
        key = ("stats", id(vec))   # (the memo holds vec: its id is not reused meanwhile)
        stats = memo.get(key)
        if stats is None:
            stats = memo[key] = _stats(vec, is_float)
        return _finish(stats, how, is_float)
    return value


def _finish(stats: tuple[Any, ...], how: str, is_float: bool) -> Any:
    n = int(stats[0])
    if how == "count":
        return n
    if not is_float:
        exact = int(stats[1]) * 2 ** 32 + int(stats[2])
        if how == "sum":
            if not _I64_MIN <= exact <= _I64_MAX:
                raise Refused("an integer sum past BIGINT")
            return exact
        return None if n == 0 else int(stats[3] if how == "min" else stats[4])
    total, lo, hi, nans, pos0, neg0 = (float(stats[1]), float(stats[2]), float(stats[3]),
                                       int(stats[4]), bool(stats[5]), bool(stats[6]))
    if how in ("sum", "mean"):
        if n and total == 0.0:
            raise Refused("a sum of doubles of 0 (its sign)")
        return total if how == "sum" else (total / n if n else None)
    if n == 0:
        return None
    if nans == n or (nans and how.endswith("_nan")):
        return float("nan")
    got = lo if how.startswith("min") else hi
    if got == 0.0 and pos0 and neg0:
        raise Refused("a min or max of 0.0 among both zeros")
    return got


def _literal(body: Tree) -> tuple[_Value, pl.DataType]:
    kind, inner = node_kind(body)
    if kind == "Dyn" and node_kind(inner)[0] == "Int":
        v = int(node_kind(inner)[1])
        return (lambda f, g: v), _DYN
    if kind == "Scalar" and inner == {"Null": "Null"}:
        return (lambda f, g: None), pl.Null()
    if kind == "Scalar" and node_kind(inner)[0] == "String":
        text = node_kind(inner)[1]
        return (lambda f, g: text), pl.String()
    raise _unsupported(body)


def _cast(inner: _Value, source: pl.DataType, target: pl.DataType, strict: bool
          ) -> tuple[_Value, pl.DataType]:
    if source == pl.String and target == pl.Int8:   # the compiler's error: refused if it fires
        def fails(f: Parts, g: dict[str, Any]) -> Any:
            if inner(f, g) is not None:
                raise Refused("an error the query raises")
            return None
        return fails, target
    if source == pl.Null:
        return inner, target
    if target == pl.Float64 and (source in (pl.Float64, pl.UInt32, _DEC) or _is_int(source)):
        return (lambda f, g: None if (v := inner(f, g)) is None else float(v)), target
    if target == pl.Int64 and (source in (pl.UInt32, _DEC) or _is_int(source)):
        def narrowed(f: Parts, g: dict[str, Any]) -> Any:
            v = inner(f, g)
            if v is None or _I64_MIN <= v <= _I64_MAX:
                return v
            if strict:
                raise Refused("a strict cast out of BIGINT")
            return None
        return narrowed, target
    raise _unsupported((source, target))


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "Gt": lambda a, b: a > b, "GtEq": lambda a, b: a >= b, "Lt": lambda a, b: a < b,
    "LtEq": lambda a, b: a <= b, "Eq": lambda a, b: a == b, "NotEq": lambda a, b: a != b}


def _compared(test: Callable[[Any, Any], bool], a: Any, b: Any) -> Any:
    return None if a is None or b is None else test(a, b)


_FLOAT_ARITH: dict[str, Callable[[np.float64, np.float64], np.float64]] = {
    "Plus": lambda a, b: a + b, "Minus": lambda a, b: a - b, "Multiply": lambda a, b: a * b}


def _floats(arith: Callable[[np.float64, np.float64], np.float64], a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    with np.errstate(all="ignore"):
        return float(arith(np.float64(a), np.float64(b)))


def _kleene(both: bool, a: Any, b: Any) -> Any:
    """SQL's (and polars') AND / OR of values that may be NULL."""
    if both:
        return False if a is False or b is False else None if a is None or b is None else True
    return True if a is True or b is True else None if a is None or b is None else False


def _divided(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    with np.errstate(all="ignore"):
        return float(np.float64(float(a)) / np.float64(float(b)))


# -- the plan ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kernel:
    """An aggregate with no keys (and the selects after it) as closures; :meth:`run` gives its
    one-row answer over a frame of the input schema, or raises :class:`Refused`."""

    aggs: tuple[tuple[str, _Value], ...]
    selects: tuple[tuple[tuple[str, _Value], ...], ...]
    schema: pl.Schema

    def run(self, frame: pl.DataFrame | Parts) -> pl.DataFrame:
        """The answer over ``frame`` (the rows the query's filters keep; or its parts, in
        order)."""
        memo: dict[Any, Any] = {}
        frame = [frame] if isinstance(frame, pl.DataFrame) else frame
        got = {name: fn(frame, memo) for name, fn in self.aggs}
        for stage in self.selects:
            got = {name: fn(frame, got) for name, fn in stage}
        return pl.from_dicts([got], schema=self.schema)   # (the fastest of one row, ~20 us)


def kernel_of(ops: Sequence[Op], schema: pl.Schema) -> Kernel | None:
    """The :class:`Kernel` of ``ops`` -- an :class:`~hfq.engine.ops.Aggregate` with no keys
    then any :class:`~hfq.engine.ops.Select` -- over rows of ``schema``, or None when a node
    is outside what is computed here or a dtype differs from polars' (the schema of the plan
    over no rows)."""
    if not ops or not isinstance(ops[0], Aggregate) or ops[0].keys or \
            not all(type(op) is Select for op in ops[1:]):
        return None
    compiler = _Compiler(schema)
    lf = empty_lazy(schema)
    try:
        widened = [widen(a, schema) for a in ops[0].aggs]   # what polars runs (see _steps)
        aggs, types = _stage(compiler, widened, None)
        lf = ops[0].apply(lf)
        if dict(lf.collect_schema()) != types:
            return None
        selects = []
        for op in ops[1:]:
            assert isinstance(op, Select)
            stage, types = _stage(compiler, op.exprs, types)
            lf = op.apply(lf)
            if dict(lf.collect_schema()) != types:
                return None
            selects.append(stage)
    except Exception:   # noqa: BLE001 -- any plan it cannot read is polars' to run
        return None
    return Kernel(aggs, tuple(selects), lf.collect_schema())


def _stage(compiler: _Compiler, exprs: Sequence[pl.Expr],
           inputs: dict[str, pl.DataType] | None
           ) -> tuple[tuple[tuple[str, _Value], ...], dict[str, pl.DataType]]:
    out: list[tuple[str, _Value]] = []
    types: dict[str, pl.DataType] = {}
    for e in exprs:
        kind, body = node_kind(to_tree(e))
        if kind != "Alias":
            raise _unsupported(kind)
        fn, dtype = compiler.value(body[0], inputs)
        out.append((body[1], fn))
        types[body[1]] = dtype
    return tuple(out), types
