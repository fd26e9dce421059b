"""Splitting aggregates into a partial state per partition and an exact merge on the driver.

Each aggregate expression is a tree whose leaves are aggregates (``sum``, ``mean``, ``std``,
``first``, ``n_unique``, ``median``...) under a row-wise expression (``(...).mean() * 2``).
Every leaf becomes partial columns computed per group on the node, merge expressions run per
group over the concatenated partials on the driver, and one final column; the row-wise rest is
evaluated on the merged frame.  The states are exact: sums and counts add, averages are
(sum, count), variances merge by Chan's rule, first/last keep the row earliest in order (ties:
the earlier partition), distinct counts ship the group's distinct values and medians/quantiles
the group's values.  A leaf the engine does not know makes :func:`decompose` return None: the
caller then ships the rows and lets polars aggregate them on the driver, which is exact too.

Integer sums are widened to Int64 first (polars sums Int32 as Int32 and wraps).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from hfq.engine.exprs import (
    Tree,
    columns_of,
    empty_lazy,
    from_tree,
    is_rowwise,
    node_kind,
    signature,
    to_tree,
)

__all__ = ["HEAVY", "LIGHT", "LIGHTER", "SCALED", "SPAN", "AggPlan", "decompose", "light_sums",
           "lighten", "lighten_looks_at_rows", "lighter", "may_lighten", "sums_light_over",
           "widen"]

F64 = pl.Float64
SCALED = 2.0 ** -600
"""The factor a variance's values are scaled by when their squares would leave DOUBLE's range
(an exact power of two: values past 2^-422 stay normal); see ``AggPlan.light``."""
LIGHT = 2.0 ** 480
"""Values at most this in magnitude: their squares, their sums and the merges of their
variance states stay far inside DOUBLE's range."""
LIGHTER = "__hfq_lighter"
"""The name marking the test of a :func:`lighter` aggregate."""
HEAVY = "__hfq_heavy"
"""The column of :meth:`AggPlan.light_partial` saying a group's light forms may be inexact."""
SPAN = 2**63
"""BIGINT's span on either side of 0: fewer than ``SPAN // B`` integers at most B in magnitude
sum inside BIGINT (see ``AggPlan.light``; a test may make it smaller)."""


@dataclass
class AggPlan:
    """Partial (node), merge (driver, per group over partials) and final expressions."""

    key_names: list[str]
    partial: list[pl.Expr] = field(default_factory=list)
    merge: list[pl.Expr] = field(default_factory=list)
    final: list[pl.Expr] = field(default_factory=list)
    outputs: list[pl.Expr] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    light: dict[str, pl.Expr] = field(default_factory=dict)
    heavy: list[pl.Expr] = field(default_factory=list)
    reread: bool = False
    """Whether the full states are likely on real data (a :func:`lighter` test fails on a
    group of values of both signs) and costly to compute again (a join before them): the
    node collects its input once, so that the full pass does not run the join again."""

    def describe(self) -> str:
        return ", ".join(self.kinds)

    def light_partial(self) -> list[pl.Expr]:
        """The partial states with their light forms (:data:`light`: the scaled variances'
        states from the unscaled ones, the BIGINT sums of narrow integers), and beside them,
        per group, whether a light form may be inexact there (:data:`heavy`: a value past
        ``LIGHT`` in magnitude or an inf, a group too long for a narrow sum to stay in
        BIGINT) as column :data:`HEAVY`: one pass over the frame, whose states are
        computed again in full (:attr:`partial`) where that column holds in any group
        (:meth:`needs_full`)."""
        return [*(self.light[name].alias(name) if (name := e.meta.output_name()) in self.light
                  else e for e in self.partial),
                pl.any_horizontal(self.heavy).fill_null(False).alias(HEAVY)]

    @staticmethod
    def needs_full(states: pl.DataFrame) -> bool:
        """Whether ``states`` (of :meth:`light_partial`) must be computed in full."""
        return bool(states[HEAVY].any())


def lighter(full: pl.Expr, light: pl.Expr, heavy: pl.Expr) -> pl.Expr:
    """The aggregate ``full`` (a sum or a count), which a split aggregation computes as the
    cheaper aggregate ``light`` in each group of a partition where the aggregate ``heavy``
    does not hold (:attr:`AggPlan.light`): there ``light`` must stand for ``full`` wherever
    the merged answer reads it -- equal, or a bound on the safe side of the test that reads
    it.  Evaluated as it is (unsplit), it is that choice per group."""
    return pl.when(heavy.alias(LIGHTER)).then(full).otherwise(light)


def _dtype(expr: pl.Expr, schema: pl.Schema) -> pl.DataType:
    return empty_lazy(schema).select(expr.alias("_")).collect_schema()["_"]


def _widened(expr: pl.Expr, schema: pl.Schema) -> pl.Expr:
    dtype = _dtype(expr, schema)
    if dtype == pl.Boolean or (dtype.is_integer() and
                               dtype not in (pl.Int64, pl.UInt64, pl.Int128, pl.UInt128)):
        return expr.cast(pl.Int64)
    return expr


def widen(expr: pl.Expr, schema: pl.Schema) -> pl.Expr:
    """``expr`` with every integer ``sum`` widened to Int64 (for polars' own aggregation)."""
    tree = to_tree(expr)
    changed = [False]

    def walk(t: Tree) -> Tree:
        kind, body = node_kind(t)
        if kind == "Agg" and node_kind(body)[0] == "Sum":
            inner = node_kind(body)[1]
            try:
                original = from_tree(inner)
            except pl.exceptions.ComputeError:   # an inf/NaN literal: polars' JSON holds
                return t                         # null for it; left as it is
            widened = _widened(original, schema)
            if widened is not original:
                changed[0] = True
                return {"Agg": {"Sum": to_tree(widened)}}
        if isinstance(t, dict):
            return {k: walk(v) for k, v in t.items()}
        if isinstance(t, list):
            return [walk(v) for v in t]
        return t

    out = walk(tree)
    return from_tree(out) if changed[0] else expr


def _group_input_ok(tree: Tree) -> bool:
    """An aggregate's input that evaluates the same per group on any split of the rows."""
    kind, body = node_kind(tree)
    if kind == "Filter":
        return _group_input_ok(body["input"]) and is_rowwise(body["by"])
    if kind == "Function" and signature(body["function"]) == "DropNulls":
        return _group_input_ok(body["input"][0])
    return is_rowwise(tree)


class _Builder:
    def __init__(self, schema: pl.Schema, key_names: list[str]) -> None:
        self.schema = schema
        self.plan = AggPlan(key_names)
        self.count = itertools.count()
        self.seen: dict[str, str] = {}     # a leaf's tree -> its final column
        self.values: dict[str, str] = {}   # an input's tree -> its partial column of values
        self.partials: dict[str, str] = {}   # a partial state's tree -> its column

    def leaf(self, kind: str, body: Any, tree: Tree) -> Tree | None:
        """Register one aggregate leaf; the tree that reads its final column, or None.

        The same leaf twice (the compiler writes ``count(x)`` into several formulas, a
        continuous quantile reads the values below and above its rank) is computed once, and
        the non-decomposable leaves over one input (medians, quantiles) share one list of its
        values: each would otherwise send every value to the driver again."""
        key = json.dumps(tree, sort_keys=True, default=str)
        if key in self.seen:
            return {"Column": self.seen[key]}
        i = next(self.count)
        name = f"__a{i}"
        p = f"__p{i}_"
        made = self._states(kind, body, tree, p)
        if made is None:
            return None
        partial, merge, final = made
        partial, merge = self._shared(partial, merge)
        self.plan.partial += partial
        self.plan.merge += merge
        self.plan.final.append(final.alias(name))
        self.seen[key] = name
        what = node_kind(body)[0] if kind == "Agg" else \
            signature(body["function"]) if kind == "Function" else kind
        self.plan.kinds.append(what.lower())
        return {"Column": name}

    def lighter(self, full: Tree, light: Tree, heavy: Tree, tree: Tree) -> Tree | None:
        """Register a :func:`lighter` aggregate: the one partial state of ``full`` (a sum or
        a count), with ``light`` as its light form (cast to the state's type) and ``heavy``
        its test.  Its state is shared with no other leaf, which must read the full value."""
        key = json.dumps(tree, sort_keys=True, default=str)
        if key in self.seen:
            return {"Column": self.seen[key]}
        kind, body = node_kind(full)
        if kind != "Agg" or node_kind(body)[0] not in ("Sum", "Count"):
            return _rewrite(full, self)   # (no light form: the full aggregate, as written)
        i = next(self.count)
        name = f"__a{i}"
        made = self._states(kind, body, full, f"__p{i}_")
        if made is None or len(made[0]) != 1:
            return None
        partial, merge, final = made
        state = partial[0].meta.output_name()
        self.plan.light[state] = from_tree(light).cast(_dtype(partial[0], self.schema))
        test = from_tree(heavy)
        if not any(test.meta.eq(h) for h in self.plan.heavy):
            self.plan.heavy.append(test)
        self.plan.reread = True
        self.plan.partial += partial
        self.plan.merge += merge
        self.plan.final.append(final.alias(name))
        self.seen[key] = name
        self.plan.kinds.append(node_kind(body)[0].lower())
        return {"Column": name}

    def _shared(self, partial: list[pl.Expr], merge: list[pl.Expr]
                ) -> tuple[list[pl.Expr], list[pl.Expr]]:
        """A leaf's partial states without those another leaf computes already (a variance's
        count and a count, a min of the same input): its merge reads that column instead --
        each partial state is one more pass over the group's rows."""
        renames: dict[str, str] = {}
        kept = []
        for e in partial:
            key = json.dumps(to_tree(e.meta.undo_aliases()), sort_keys=True, default=str)
            if key in self.partials:
                renames[e.meta.output_name()] = self.partials[key]
            else:
                self.partials[key] = e.meta.output_name()
                kept.append(e)
        if not renames:
            return partial, merge
        return kept, [from_tree(_renamed(to_tree(m), renames)).alias(m.meta.output_name())
                      for m in merge]

    def _values(self, e: pl.Expr, tree: Tree, p: str) -> tuple[list[pl.Expr], pl.Expr]:
        """The partial state holding every value of ``e`` (one list per group), shared by
        the leaves over the same input: (the partial to add, the column to read at merge)."""
        key = json.dumps(tree, sort_keys=True, default=str)
        if key in self.values:
            return [], pl.col(self.values[key])
        self.values[key] = p + "v"
        return [e.implode().alias(p + "v")], pl.col(p + "v")

    def _scaled(self, tree: Tree) -> pl.Expr | None:
        """``x`` when ``tree`` is the DOUBLE ``x * SCALED`` (the values of a variance scaled
        down so that their squares stay in DOUBLE's range), else None."""
        kind, body = node_kind(tree)
        if kind != "BinaryExpr" or body["op"] != "Multiply" or \
                body["right"] != to_tree(pl.lit(SCALED)) or not _group_input_ok(body["left"]):
            return None
        x = from_tree(body["left"])
        return x if _dtype(x, self.schema) == F64 else None

    def _light(self, x: pl.Expr, states: list[pl.Expr], p: str) -> None:
        """Register the light forms of the mean and centred second moment of ``x * SCALED``:
        the unscaled ones (the same partial states as the variance of ``x``, computed once)
        scaled exactly, used on a frame whose values are all at most ``LIGHT`` in magnitude.

        Exact enough: there the unscaled states are finite, as is any merge of such states, so
        the scaled variance is read (where the unscaled one is NaN) only for a group with a
        value above ``LIGHT`` in another partition -- and whose second moment, unless the group
        is constant, is at least 2^855 (two distinct doubles there are 2^428 apart), against
        which what the scaling rounds away (below 2^-1074 in scaled units, 2^126 in real
        units) is nothing."""
        mean, moment = states
        self.plan.light[mean.meta.output_name()] = x.mean() * SCALED
        self.plan.light[moment.meta.output_name()] = x.var(ddof=0) * x.count() * SCALED * SCALED
        # (from the max and the min: a column of magnitudes cost 4x the test)
        self.plan.heavy.append((x.max() > LIGHT) | (x.min() < -LIGHT))

    def _narrow_sum(self, tree: Tree, name: str) -> None:
        """Register the light form of the 128-bit sum (``x.cast(Decimal(38, 0)).sum()``) of
        BIGINT values ``x`` at most B <= 2^40 in magnitude (narrow columns widened, their
        sums, differences, negations and small multiples): their BIGINT sum, which wraps
        modulo 2^64 and so is exact where the total fits -- as it does for any group of
        fewer than ``SPAN // B`` rows.  A partition with a group that long computes the
        128-bit sum: no row count fails, only a true total past BIGINT (where the merge
        narrows it)."""
        light = _light_sum(tree, self.schema)
        if light is not None:
            self.plan.light[name], rows = light
            self.plan.heavy.append(pl.len() >= rows)

    def _input(self, tree: Tree) -> pl.Expr | None:
        cols = columns_of(tree)
        if not cols or not _group_input_ok(tree):   # a literal alone aggregates differently
            return None
        return from_tree(tree)

    def _states(self, kind: str, body: Any, tree: Tree, p: str
                ) -> tuple[list[pl.Expr], list[pl.Expr], pl.Expr] | None:
        col = pl.col
        if kind == "Len":
            return [pl.len().cast(pl.Int64).alias(p + "n")], [col(p + "n").sum()], col(p + "n")
        if kind == "Function":
            return self._function(body, p)
        agg, inner = node_kind(body)
        if agg in ("Var", "Std"):
            e, ddof = self._input(inner[0]), inner[1]
            if e is None:
                return None
            if _dtype(e, self.schema) != F64:
                e = e.cast(F64)
            n, m, q = col(p + "n"), col(p + "m"), col(p + "q")
            big_n = n.sum()
            mean = (n * m).sum() / big_n
            merged_q = q.sum() + (n * (m - mean) ** 2).sum()
            var = pl.when(col(p + "N") > ddof).then(col(p + "Q") / (col(p + "N") - ddof))
            states = [e.count().cast(pl.Int64).alias(p + "n"), e.mean().alias(p + "m"),
                      (e.var(ddof=0) * e.count()).alias(p + "q")]
            scaled = self._scaled(inner[0])
            if scaled is not None:   # the unscaled input's count is the same (and shared)
                states[0] = scaled.count().cast(pl.Int64).alias(p + "n")
                self._light(scaled, states[1:], p)
            return (states, [big_n.alias(p + "N"), merged_q.alias(p + "Q")],
                    var.sqrt() if agg == "Std" else var)
        if agg in ("Min", "Max"):
            e = self._input(inner["input"])
            if e is None:
                return None
            nan = inner.get("propagate_nans", False)
            fn: Callable[[pl.Expr], pl.Expr] = {
                ("Min", False): pl.Expr.min, ("Max", False): pl.Expr.max,
                ("Min", True): pl.Expr.nan_min, ("Max", True): pl.Expr.nan_max}[(agg, nan)]
            return [fn(e).alias(p + "v")], [fn(col(p + "v")).alias(p + "v")], col(p + "v")
        if agg == "Count":
            e = self._input(inner["input"])
            if e is None:
                return None
            c = e.len() if inner.get("include_nulls") else e.count()
            return [c.cast(pl.Int64).alias(p + "n")], [col(p + "n").sum()], col(p + "n")
        if agg == "Sum":
            e = self._input(inner)
            if e is None:
                return None
            self._narrow_sum(inner, p + "s")
            return ([_widened(e, self.schema).sum().alias(p + "s")], [col(p + "s").sum()],
                    col(p + "s"))
        if agg == "Mean":
            e = self._input(inner)
            if e is None or not _numeric(_dtype(e, self.schema)):
                return None
            return ([e.cast(F64).sum().alias(p + "s"), e.count().cast(pl.Int64).alias(p + "n")],
                    [col(p + "s").sum(), col(p + "n").sum()],
                    pl.when(col(p + "n") > 0).then(col(p + "s") / col(p + "n")))
        if agg in ("First", "Last"):
            return self._first_last(agg, inner, p)
        if agg == "NUnique":
            e = self._input(inner)
            if e is None:
                return None
            return ([e.unique().alias(p + "u")],
                    [col(p + "u").explode().n_unique().cast(pl.Int64).alias(p + "u")],
                    col(p + "u"))
        if agg == "Median":
            e = self._input(inner)
            if e is None:
                return None
            partial, values = self._values(e, inner, p)
            return partial, [values.explode().median().alias(p + "m")], col(p + "m")
        return None

    def _function(self, body: Any, p: str
                  ) -> tuple[list[pl.Expr], list[pl.Expr], pl.Expr] | None:
        col = pl.col
        sig = signature(body["function"])
        args = body["input"]
        if sig == "Quantile":
            e = self._input(args[0])
            if e is None or columns_of(args[1]):
                return None
            q = from_tree(args[1])
            method = body["function"]["Quantile"]["method"].lower()
            partial, values = self._values(e, args[0], p)
            return (partial, [values.explode().quantile(q, method).alias(p + "m")],
                    col(p + "m"))
        if sig in ("MaxBy", "MinBy"):
            x, y = self._input(args[0]), self._input(args[1])
            if x is None or y is None:
                return None
            desc = sig == "MaxBy"
            best = (y.max() if desc else y.min()).alias(p + "b")
            pick = x.sort_by(y, descending=desc, nulls_last=True, maintain_order=True).first()
            merged = col(p + "v").sort_by(col(p + "b"), descending=desc, nulls_last=True,
                                          maintain_order=True).first()
            return [pick.alias(p + "v"), best], [merged, col(p + "b").max() if desc else
                                                  col(p + "b").min()], col(p + "v")
        if sig == "Correlation":
            return self._comoments(body["function"]["Correlation"]["method"], args, p)
        if sig == "NullCount":
            e = self._input(args[0])
            if e is None:
                return None
            return ([e.null_count().cast(pl.Int64).alias(p + "n")], [col(p + "n").sum()],
                    col(p + "n"))
        return None

    def _comoments(self, method: Any, args: list[Tree], p: str
                   ) -> tuple[list[pl.Expr], list[pl.Expr], pl.Expr] | None:
        """Covariance (``{"Covariance": ddof}``) or Pearson correlation of two inputs: per
        partition (n, means, centred second moments), merged by Chan's rule."""
        x, y = self._input(args[0]), self._input(args[1])
        if x is None or y is None or not (method == "Pearson" or (
                isinstance(method, dict) and "Covariance" in method)):
            return None
        col = pl.col
        x, y = x.cast(F64), y.cast(F64)
        dx, dy = x - x.mean(), y - y.mean()
        partial = [x.count().cast(pl.Int64).alias(p + "n"), x.mean().alias(p + "mx"),
                   y.mean().alias(p + "my"), (dx * dx).sum().alias(p + "sxx"),
                   (dy * dy).sum().alias(p + "syy"), (dx * dy).sum().alias(p + "sxy")]
        n, mx, my = col(p + "n"), col(p + "mx"), col(p + "my")
        big_n = n.sum()
        cx = (n * mx).sum() / big_n
        cy = (n * my).sum() / big_n
        merge = [big_n.alias(p + "N"),
                 (col(p + "sxx").sum() + (n * (mx - cx) ** 2).sum()).alias(p + "SXX"),
                 (col(p + "syy").sum() + (n * (my - cy) ** 2).sum()).alias(p + "SYY"),
                 (col(p + "sxy").sum() + (n * (mx - cx) * (my - cy)).sum()).alias(p + "SXY")]
        big = col(p + "N")
        if method == "Pearson":
            final = pl.when(big > 0).then(
                col(p + "SXY") / (col(p + "SXX") * col(p + "SYY")).sqrt())
        else:
            ddof = method["Covariance"]
            final = pl.when(big > ddof).then(col(p + "SXY") / (big - ddof))
        return partial, merge, final

    def _first_last(self, agg: str, inner: Tree, p: str
                    ) -> tuple[list[pl.Expr], list[pl.Expr], pl.Expr] | None:
        col = pl.col
        pick: Callable[[pl.Expr], pl.Expr] = pl.Expr.first if agg == "First" else pl.Expr.last
        kind, body = node_kind(inner)
        if kind != "SortBy":
            e = self._input(inner)
            if e is None:
                return None
            # in table order: partials arrive in partition order, rows in stored order; a
            # partition whose input kept no row (a drop_nulls, a filter) gives no value --
            # not a null that would win the merge
            return ([pick(e).alias(p + "v"), e.len().alias(p + "c")],
                    [pick(col(p + "v").filter(col(p + "c") > 0)).alias(p + "v")],
                    col(p + "v"))
        v = self._input(body["expr"])
        by = [self._input(b) for b in body["by"]]
        if v is None or any(b is None for b in by):
            return None
        opts = body["sort_options"]
        kw: dict[str, Any] = {"descending": opts["descending"], "nulls_last": opts["nulls_last"],
                              "maintain_order": True}
        keys = [b for b in by if b is not None]
        names = [p + f"k{j}" for j in range(len(keys))]
        # a partition whose input kept no row gives no value and no keys (as above): its
        # nulls would sort last and win a last() (F50)
        partial = [pick(v.sort_by(keys, **kw)).alias(p + "v"), v.len().alias(p + "c")] + \
            [pick(k.sort_by(keys, **kw)).alias(n) for k, n in zip(keys, names)]
        kept = col(p + "c") > 0
        by_cols = [col(n).filter(kept) for n in names]
        merge = [pick(col(p + "v").filter(kept).sort_by(by_cols, **kw)).alias(p + "v")] + \
            [pick(col(n).filter(kept).sort_by(by_cols, **kw)).alias(n) for n in names] + \
            [col(p + "c").sum().alias(p + "c")]
        return partial, merge, col(p + "v")


def _renamed(tree: Tree, names: dict[str, str]) -> Tree:
    """``tree`` reading column ``names[c]`` wherever it read a column ``c`` of ``names``."""
    if isinstance(tree, dict):
        if set(tree) == {"Column"} and tree["Column"] in names:
            return {"Column": names[tree["Column"]]}
        return {k: _renamed(v, names) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_renamed(v, names) for v in tree]
    return tree


_NARROW = {pl.Int8: 2**7, pl.Int16: 2**15, pl.Int32: 2**31, pl.UInt8: 2**8 - 1,
           pl.UInt16: 2**16 - 1, pl.UInt32: 2**32 - 1}


def _bound(tree: Tree, schema: pl.Schema) -> int | None:
    """A bound of the magnitude of the integer values of ``tree`` over frames of ``schema``:
    a column of 32 bits or fewer, a cast of it to a wider integer, integer literals, sums,
    differences, negations of such and their products with literals; None otherwise."""
    kind, body = node_kind(tree)
    if kind == "Column":
        return _NARROW.get(schema.get(body))   # type: ignore[call-overload]
    if kind == "Cast":
        inner = _bound(body["expr"], schema)
        target = body["dtype"].get("Literal") if isinstance(body["dtype"], dict) else None
        return inner if target in ("Int64", "Int128") else None
    if kind == "Literal":
        try:
            value = pl.select(from_tree(tree)).to_series()
        except pl.exceptions.PolarsError:   # an inf/NaN literal (see widen)
            return None
        return abs(int(value[0])) if value.dtype.is_integer() and len(value) == 1 and \
            value[0] is not None else None
    if kind == "Function" and body["function"] == "Negate":
        return _bound(body["input"][0], schema)
    if kind == "BinaryExpr" and body["op"] in ("Plus", "Minus", "Multiply"):
        a, b = _bound(body["left"], schema), _bound(body["right"], schema)
        if a is None or b is None:
            return None
        if body["op"] != "Multiply":
            return a + b
        literal = node_kind(body["left"])[0] == "Literal" or \
            node_kind(body["right"])[0] == "Literal"
        return a * b if literal else None
    return None


def may_lighten(expr: pl.Expr) -> bool:
    """Whether :func:`lighten` could change ``expr`` (a filter, a 128-bit sum)."""
    return lighten_looks_at_rows(expr) or "Decimal(38, 0)" in str(expr)


def lighten_looks_at_rows(expr: pl.Expr) -> bool:
    """Whether :func:`lighten`'s form of ``expr`` depends on a frame's values, not only its
    schema and height: a filter, dropped where it keeps every row."""
    return ".filter(" in str(expr)


def _light_sum(tree: Tree, schema: pl.Schema) -> tuple[pl.Expr, int] | None:
    """For the input ``x.cast(Decimal(38, 0))`` of a 128-bit sum of BIGINT values ``x`` at
    most B <= 2^40 in magnitude: their BIGINT sum (cast), and the row count from which a
    group could wrap it (``SPAN // B``); None for any other input."""
    kind, body = node_kind(tree)
    if kind != "Cast" or body["dtype"] != {"Literal": {"Decimal": [38, 0]}} or \
            not _group_input_ok(body["expr"]):
        return None
    bound = _bound(body["expr"], schema)
    x = from_tree(body["expr"])
    if bound is None or bound > 2**40 or _dtype(x, schema) != pl.Int64:
        return None
    return x.sum().cast(pl.Decimal(38, 0)), SPAN // max(bound, 2)


def lighten(exprs: Sequence[pl.Expr], frame: pl.DataFrame) -> list[pl.Expr]:
    """Aggregates ``exprs``, to run over ``frame`` (grouped or not), in cheaper forms exact on
    it: a row-wise filter that keeps every row of the frame is dropped (``arg_min``'s
    "value and key not NULL" on a frame without NULLs: polars' fast ``min_by``), and the
    128-bit sum of BIGINT values at most B in magnitude (narrow columns widened, as
    :meth:`_Builder._narrow_sum`) is their BIGINT sum, cast, on a frame of fewer than
    ``SPAN // B`` rows (no group's sum can wrap there).  Each holds in every group of the
    frame because it holds over all of its rows."""
    keeps: dict[str, bool] = {}

    def keeps_all(by: Tree) -> bool:
        key = json.dumps(by, sort_keys=True, default=str)
        if key not in keeps:
            try:
                mask = frame.select(from_tree(by).alias("m")).to_series()
            except pl.exceptions.PolarsError:
                mask = pl.Series([False])
            keeps[key] = mask.dtype == pl.Boolean and mask.null_count() == 0 and \
                len(mask) in (1, frame.height) and bool(mask.all())
        return keeps[key]

    return _lightened(exprs, frame.schema, frame.height, keeps_all)


def sums_light_over(rows: int) -> bool:
    """Whether :func:`lighten` takes every 128-bit sum it can in BIGINT over frames of
    ``rows`` rows: fewer than ``SPAN // 2^40``, the fewest rows any of its bounds allows
    (then its sums depend on the frame's schema alone)."""
    return rows < SPAN >> 40


def light_sums(exprs: Sequence[pl.Expr], schema: pl.Schema, rows: int) -> list[pl.Expr]:
    """Aggregates ``exprs`` over frames of ``schema`` of at most ``rows`` rows with each
    128-bit sum in :func:`lighten`'s BIGINT form where no such frame can wrap it (decided
    once for the bound, where :func:`lighten` looks at a frame)."""
    return _lightened(exprs, schema, rows, None)


def _lightened(exprs: Sequence[pl.Expr], schema: pl.Schema, rows: int,
               keeps_all: Callable[[Tree], bool] | None) -> list[pl.Expr]:
    """:func:`lighten` over ``rows`` rows of ``schema``; a filter dropped only where
    ``keeps_all`` (None: none)."""
    def walk(t: Tree) -> Tree:
        kind, body = node_kind(t)
        if kind == "Filter" and keeps_all is not None and is_rowwise(body["by"]) and \
                keeps_all(body["by"]):
            return walk(body["input"])
        if kind == "Agg" and node_kind(body)[0] == "Sum":
            light = _light_sum(node_kind(body)[1], schema)
            if light is not None and rows < light[1]:
                return to_tree(light[0])
        if isinstance(t, dict):
            return {k: walk(v) for k, v in t.items()}
        if isinstance(t, list):
            return [walk(v) for v in t]
        return t

    out = []
    for e in exprs:
        try:
            out.append(from_tree(walk(to_tree(e))))
        except pl.exceptions.PolarsError:   # a tree polars cannot read back (an inf literal)
            out.append(e)
    return out


def _numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.Boolean


_LEAF_AGGS = ("Min", "Max", "Sum", "Mean", "Var", "Std", "Count", "First", "Last", "NUnique",
              "Median")
_LEAF_FUNCTIONS = ("Quantile", "MaxBy", "MinBy", "NullCount", "Correlation")


def decompose(aggs: Sequence[pl.Expr], key_names: list[str], schema: pl.Schema
              ) -> AggPlan | None:
    """The partial/merge/final plan of ``aggs`` grouped by ``key_names`` over frames of
    ``schema``, or None when some aggregate cannot be split exactly."""
    b = _Builder(schema, key_names)
    for expr in aggs:
        name = expr.meta.output_name()
        out = _rewrite(to_tree(expr), b)
        if out is None:
            return None
        if not is_rowwise(out) or not (columns_of(out) or set()) <= \
                {f"__a{i}" for i in range(len(b.plan.final))}:
            return None
        b.plan.outputs.append(from_tree(out).alias(name))
    return b.plan


def _rewrite(tree: Tree, b: _Builder) -> Tree | None:
    kind, body = node_kind(tree)
    if kind == "Len":
        return b.leaf("Len", None, tree)
    if kind == "Agg":
        agg = node_kind(body)[0]
        return b.leaf("Agg", body, tree) if agg in _LEAF_AGGS else None
    if kind == "Function" and signature(body["function"]) in _LEAF_FUNCTIONS:
        return b.leaf("Function", body, tree)
    if kind == "Alias":
        inner = _rewrite(body[0], b)
        return None if inner is None else {"Alias": [inner, body[1]]}
    if kind == "Ternary":
        test_kind, test = node_kind(body["predicate"])
        if test_kind == "Alias" and test[1] == LIGHTER:
            return b.lighter(body["truthy"], body["falsy"], test[0], tree)
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for k, v in tree.items():
            got = _rewrite_any(v, b)
            if got is _FAIL:
                return None
            out[k] = got
        return out
    return tree


_FAIL = object()


def _rewrite_any(value: Any, b: _Builder) -> Any:
    if isinstance(value, dict):
        got = _rewrite(value, b)
        return _FAIL if got is None else got
    if isinstance(value, list):
        items = [_rewrite_any(v, b) for v in value]
        return _FAIL if any(i is _FAIL for i in items) else items
    if value == "Len":
        got = _rewrite(value, b)
        return _FAIL if got is None else got
    return value
