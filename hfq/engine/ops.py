"""The operations of a logical plan: each one turns a polars LazyFrame into another, the same
code on the node and on the driver, so moving an operation between them never changes what it
computes.  Each says which columns it reads and whether it can run on one partition alone.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import polars as pl

from hfq.engine.aggs import (
    HEAVY,
    AggPlan,
    lighten,
    lighten_looks_at_rows,
    may_lighten,
    sums_light_over,
    widen,
)
from hfq.engine.exprs import (
    CHOICE,
    LARGE_CHOICE,
    ByIdentity,
    columns_of,
    from_tree,
    is_choice,
    local_over,
    may_raise,
    never_fails,
    node_kind,
    to_tree,
)
from hfq.engine.runagg import RUN_ROWS, by_runs, run_plan

__all__ = ["CHOICE", "STREAM_ROWS", "Aggregate", "Filter", "MergeAgg", "Op", "PartialAgg",
           "Select", "Slice", "Sort", "TopN", "Unique", "WithColumns", "choice", "collect",
           "collect_step", "input_rows", "plain_name"]

STREAM_ROWS = 200_000
"""Rows from which a plan may run on polars' default engine (its streaming engine): over a
batch of partitions its grouping is up to twice as fast as the in-memory engine's (same
answers), but it costs 0.15-0.6 ms to start a plan (polars 2.1, measured on 100 rows: a
select 0.15 ms against 0.02 ms, a top-1 by two keys 0.67 ms against 0.28 ms) -- most of a
one-symbol query's time -- so smaller plans run in memory."""


SHARED_ROWS = 10_000
"""Rows from which a choice's test (:func:`choice`) runs as a lazy plan, whose common
subexpressions polars computes once (an eager ``select`` computes each again: a window's
tests over 1 M prices 31 ms against 12); under it, eagerly (the lazy plan costs ~40 us
more)."""


def collect(lf: pl.LazyFrame, rows: int, ops: Sequence[Op] = ()) -> pl.DataFrame:
    """``lf``, a plan of ``ops`` over ``rows`` input rows, run by polars' in-memory engine
    when ``rows`` is under :data:`STREAM_ROWS` or ``ops`` take a median or a quantile, else
    by its default engine.  (Its streaming engine runs those outside its stream: the
    busiest symbol's median and 0.9-quantile over 1 M quotes took 75 ms there, 40 ms in
    memory; its windows and groupings take the same time either way.)"""
    if rows < STREAM_ROWS or any(_ranks(op) for op in ops):
        return lf.collect(engine="in-memory")
    return lf.collect()


_INPUT_ROWS: ContextVar[int | None] = ContextVar("hfq_plan_input_rows", default=None)


@contextlib.contextmanager
def input_rows(rows: int) -> Iterator[None]:
    """Within it (in this thread), the plan being applied reads ``rows`` input rows: the
    steps that collect part of it themselves (:func:`collect_step`) choose their engine by
    it, as :func:`collect` chooses the plan's."""
    token = _INPUT_ROWS.set(rows)
    try:
        yield
    finally:
        _INPUT_ROWS.reset(token)


def collect_step(lf: pl.LazyFrame) -> pl.DataFrame:
    """A step's own collect inside a plan (a partial or merged aggregate's states), by
    :func:`collect`'s rule over the plan's input rows (:func:`input_rows`); outside any, on
    polars' default engine (whose start-up took the driver's merge of a whole-table
    aggregate's two partial rows from 0.8 to 1.2 ms)."""
    rows = _INPUT_ROWS.get()
    return lf.collect() if rows is None else collect(lf, rows)


def _ranks(op: Op) -> bool:
    """Does ``op`` compute a median or a quantile?"""
    exprs = getattr(op, "aggs", None) or getattr(op, "exprs", None) or ()
    if isinstance(op, PartialAgg):
        exprs = op.plan.partial
    return any(".quantile(" in text or ".median(" in text for text in map(str, exprs))

GROUP = "__g"
"""The constant key of an aggregate without keys, in partial and merged frames."""


class Op:
    """One step of a plan."""

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        """This step on ``lf``; ``at``: the node and unit when run on a node."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def reads(self) -> set[str] | None:
        """Input columns read (None: possibly all)."""
        return set()

    def projects(self) -> bool:
        """True when the output has only the columns this step names (select, aggregate)."""
        return False

    def local(self, keys: frozenset[str]) -> bool:
        """Can run on each partition alone, the partition columns being ``keys``."""
        return False

    def needs(self, downstream: set[str] | None) -> set[str] | None:
        """Input columns needed when ``downstream`` columns of the output are (None: all)."""
        reads = self.reads()
        if self.projects():
            return reads
        if downstream is None or reads is None:
            return None
        return downstream | reads

    def keeps(self, name: str) -> bool:
        """Column ``name`` passes through unchanged."""
        return True

    def per_partition(self) -> bool:
        """True when what this step does to a partition's rows depends on which partition
        they are (it reads the unit), so the node stage must run on each partition alone
        rather than once over several partitions' rows concatenated."""
        return False


def _reads(exprs: Sequence[pl.Expr]) -> set[str] | None:
    out: set[str] = set()
    for e in exprs:
        got = columns_of(to_tree(e))
        if got is None:
            return None
        out |= got
    return out


def _show(exprs: Sequence[pl.Expr]) -> str:
    return ", ".join(str(e) for e in exprs)


def plain_name(expr: pl.Expr) -> str | None:
    """The column an expression just passes through under its own name, or None."""
    kind, body = node_kind(to_tree(expr))
    if kind == "Column":
        return body
    if kind == "Alias" and node_kind(body[0]) == ("Column", body[1]):
        return body[1]
    return None


@dataclass(frozen=True)
class Filter(Op):
    predicate: pl.Expr

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        return lf.filter(self.predicate)

    def describe(self) -> str:
        return f"filter {self.predicate}"

    def reads(self) -> set[str] | None:
        return _reads([self.predicate])

    def local(self, keys: frozenset[str]) -> bool:
        return local_over(to_tree(self.predicate), keys)


def choice(test: pl.Expr, light: pl.Expr, full: pl.Expr, *, large: bool = False) -> pl.Expr:
    """``light`` where ``test`` (one boolean) holds, else ``full`` -- both exact there; a
    Select, WithColumns or Aggregate evaluates ``test`` over its whole input frame first and
    computes only the one it picks (``full`` unless ``test`` holds over the frame).  So
    ``test`` must hold over the frame only if it holds wherever it is evaluated (in each
    window partition, each group): "no NULL key" does.  ``large``: a frame of fewer than
    :data:`SHARED_ROWS` rows takes ``full`` without the test (where ``light`` saves little
    on few rows and the test would cost more)."""
    return pl.when(test.alias(LARGE_CHOICE if large else CHOICE)).then(light).otherwise(full)


@functools.lru_cache(maxsize=16)
def _tree(text: str) -> Any:
    """An expression's tree from its JSON, parsed once for all the batches of a query (the
    parse was a third of a window query's driver time over 16 batches; the walk below only
    reads it, never changes it).  A few entries: a statement's trees can be large (an IN
    list of 100,000 literals)."""
    return json.loads(text)


def _chosen(lf: pl.LazyFrame, exprs: tuple[pl.Expr, ...], op: Op | None = None
            ) -> tuple[pl.LazyFrame, tuple[pl.Expr, ...]]:
    """``exprs`` (``op``'s) with each :func:`choice` replaced by the form it picks over
    ``lf``'s frame (then collected), or as they are.  A plan reading fewer than
    :data:`SHARED_ROWS` input rows (:func:`input_rows`) takes every large choice's full
    form without collecting or walking anything (the forms kept once per ``op``: an 11-row
    window paid 0.7 ms more for a walk that could only pick the full form)."""
    forms = None if op is None else _FORMS.get(op)
    if forms is None:
        forms = _forms(exprs)
        if op is not None:
            _FORMS.put(op, forms)
    rows = _INPUT_ROWS.get()
    exprs, walked = forms.small if rows is not None and rows < SHARED_ROWS else forms.big
    if not any(walked):
        return lf, exprs
    frame = lf.collect()
    tests: dict[str, bool] = {}

    def pick(test: Any, name: str) -> bool:
        if name == LARGE_CHOICE and frame.height < SHARED_ROWS:
            return False
        key = json.dumps(test, sort_keys=True, default=str)
        if key not in tests:   # (its own choices picked first)
            e = from_tree(_picked(test, pick))
            value = (frame.lazy().select(e).collect(engine="in-memory")
                     if frame.height >= SHARED_ROWS else frame.select(e)).to_series()
            tests[key] = len(value) == 1 and value[0] is True
        return tests[key]

    try:
        return frame.lazy(), tuple(
            from_tree(_picked(_tree(e.meta.serialize(format="json")), pick)) if w else e
            for e, w in zip(exprs, walked))
    except pl.exceptions.PolarsError:   # a tree polars cannot read back (an inf literal):
        return frame.lazy(), exprs       # both forms, as written


def _picked(t: Any, pick: Callable[[Any, str], bool | None]) -> Any:
    """The tree ``t`` with each choice replaced by the form ``pick(test, name)`` names
    (True: the light one, False: the full one, None: kept, its parts picked)."""
    kind, body = node_kind(t)
    if kind == "Ternary" and is_choice(body["predicate"]):
        light = pick(*body["predicate"]["Alias"])
        if light is not None:
            return _picked(body["truthy"] if light else body["falsy"], pick)
    if isinstance(t, dict):
        out = {k: _picked(v, pick) for k, v in t.items()}
        kept = never_fails(out)   # (a check chosen away leaves no test behind)
        return out if kept is None else kept
    if isinstance(t, list):
        return [_picked(v, pick) for v in t]
    return t


@dataclass(frozen=True)
class _Forms:
    """An op's expressions as :func:`_chosen` takes them over frames of :data:`SHARED_ROWS`
    rows or more (``big``: as written) and fewer (``small``: every large choice its full
    form), each with whether each expression has choices to pick (walked, rebuilt from its
    tree)."""

    big: tuple[tuple[pl.Expr, ...], tuple[bool, ...]]
    small: tuple[tuple[pl.Expr, ...], tuple[bool, ...]]


_FORMS = ByIdentity(4096)
"""Per op, :func:`_forms` of its expressions."""


def _forms(exprs: tuple[pl.Expr, ...]) -> _Forms:
    """Only expressions holding a choice are rebuilt from their trees, and only those
    polars reads back as written: its JSON reader took 123456789.12345679 back as
    123456789.1234568 (those keep every choice as written: both forms computed, the test
    picking between them in place)."""
    walked = tuple(CHOICE in str(e) and _reads_back(e) for e in exprs)
    small = list(exprs)
    small_walked = list(walked)
    for i, e in enumerate(exprs):
        if walked[i] and LARGE_CHOICE in str(e):
            try:
                small[i] = from_tree(_picked(to_tree(e), lambda _, name: False
                                             if name == LARGE_CHOICE else None))
            except pl.exceptions.PolarsError:   # (as in _chosen: both forms, as written)
                small_walked[i] = False
                continue
            small_walked[i] = CHOICE in str(small[i])
    return _Forms((exprs, walked), (tuple(small), tuple(small_walked)))


def _reads_back(e: pl.Expr) -> bool:
    """Whether polars reads every float in ``e``'s JSON tree back as written."""
    def floats(t: Any) -> Iterator[float]:
        if isinstance(t, float):
            yield t
        elif isinstance(t, dict):
            for v in t.values():
                yield from floats(v)
        elif isinstance(t, list):
            for v in t:
                yield from floats(v)
    return all(_float_reads_back(v) for v in floats(to_tree(e)))


@functools.lru_cache(maxsize=4096)
def _float_reads_back(v: float) -> bool:
    text = json.dumps({"Literal": {"Dyn": {"Float": v}}})
    try:
        got = pl.select(pl.Expr.deserialize(io.StringIO(text), format="json")).item()
    except pl.exceptions.PolarsError:
        return False
    return isinstance(got, float) and repr(got) == repr(v)   # (-0.0 too)


@dataclass(frozen=True)
class WithColumns(Op):
    exprs: tuple[pl.Expr, ...]

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        lf, exprs = _chosen(lf, self.exprs, self)
        return lf.with_columns(exprs)

    def describe(self) -> str:
        return f"with columns {_show(self.exprs)}"

    def reads(self) -> set[str] | None:
        return _reads(self.exprs)

    def local(self, keys: frozenset[str]) -> bool:
        return all(local_over(to_tree(e), keys) for e in self.exprs)

    def keeps(self, name: str) -> bool:
        return all(e.meta.output_name(raise_if_undetermined=False) != name
                   or plain_name(e) == name for e in self.exprs)

    def needs(self, downstream: set[str] | None) -> set[str] | None:
        reads = self.reads()
        if downstream is None or reads is None:
            return None
        made = {e.meta.output_name(raise_if_undetermined=False) for e in self.exprs}
        return (downstream - made) | reads


@dataclass(frozen=True)
class Select(Op):
    exprs: tuple[pl.Expr, ...]

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        lf, exprs = _chosen(lf, self.exprs, self)
        return lf.select(exprs)

    def describe(self) -> str:
        return f"select {_show(self.exprs)}"

    def reads(self) -> set[str] | None:
        return _reads(self.exprs)

    def projects(self) -> bool:
        return True

    def local(self, keys: frozenset[str]) -> bool:
        return all(local_over(to_tree(e), keys) for e in self.exprs)

    def keeps(self, name: str) -> bool:
        return any(plain_name(e) == name for e in self.exprs)


_PREPARED = ByIdentity(4096)
"""Per aggregate, input schema and kept form of its expressions (:func:`_chosen`'s small or
big): [whether lighten may change them, whether it needs no look at the rows for that, the
forms prepared once] (``Aggregate._prepared``)."""


@dataclass(frozen=True)
class Aggregate(Op):
    """``group_by(keys).agg(aggs)`` (groups in order of first appearance; in any order when
    not ``ordered``); with no keys, ``select(aggs)``: one row."""

    keys: tuple[pl.Expr, ...]
    aggs: tuple[pl.Expr, ...]
    ordered: bool = True
    """Groups in order of first appearance; False when nothing after depends on the rows'
    order (SQL without ORDER BY, as polars' default): polars groups faster."""

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        lf, chosen = _chosen(lf, self.aggs, self)   # (each choice's form, picked over the frame)
        rows = _INPUT_ROWS.get()
        # groups lying in runs? (keys that are columns: a computed key, a time bucket, costs
        # a pass of its own -- 1 M quotes by symbol and 10 minutes: 30-34 ms, polars 24-25)
        if self.keys and rows is not None and rows >= RUN_ROWS and \
                all(plain_name(k) is not None for k in self.keys):
            plan = run_plan(self, chosen, lf.collect_schema())
            read = _reads(self.keys + chosen)
            if plan is not None and read:   # (only the columns read: others may fail)
                frame = collect(lf.select(sorted(read)), rows)
                got = by_runs(plan, frame, self.ordered) if frame.height >= RUN_ROWS else None
                if got is not None:
                    return got.lazy()
                lf = frame.lazy()
        lf, aggs = self._prepared(lf, chosen)
        if not self.keys:
            return lf.select(aggs)
        return lf.group_by(self.keys, maintain_order=self.ordered).agg(aggs)

    def _prepared(self, lf: pl.LazyFrame, chosen: tuple[pl.Expr, ...]
                  ) -> tuple[pl.LazyFrame, list[pl.Expr]]:
        """``chosen`` in the cheaper forms exact over ``lf``'s frame (:func:`lighten`, the
        frame collected for it) and widened.  Where they depend on the frame's schema alone
        -- no filter for lighten to test, and sums light over its rows
        (:func:`sums_light_over`) -- they are kept once per op, schema and choice: their
        tree walks took ~4 of a 50-symbol VWAP's 12 ms, run on each batch of rows."""
        schema = lf.collect_schema()
        forms = _FORMS.get(self)   # (which of the op's two kept forms: any other is new)
        which = None if forms is None else 0 if chosen is forms.small[0] else \
            1 if chosen is forms.big[0] else None
        key = (tuple(schema.items()), which)
        kept = None if which is None else _PREPARED.get(self, *key)
        if kept is None:
            kept = [any(may_lighten(a) for a in chosen),
                    not any(lighten_looks_at_rows(a) for a in chosen), None]
            if which is not None:
                _PREPARED.put(self, kept, *key)
        light, static, prepared = kept
        frame = lf.collect() if light else None
        if frame is not None and not (static and sums_light_over(frame.height)):
            return frame.lazy(), [widen(a, schema) for a in lighten(chosen, frame)]
        if prepared is None:
            prepared = kept[2] = [widen(a, schema) for a in
                                  (chosen if frame is None else lighten(chosen, frame))]
        return lf if frame is None else frame.lazy(), prepared

    def describe(self) -> str:
        by = f" by {_show(self.keys)}" if self.keys else ""
        return f"aggregate{by}: {_show(self.aggs)}"

    def reads(self) -> set[str] | None:
        return _reads(self.keys + self.aggs)

    def projects(self) -> bool:
        return True

    def key_names(self) -> list[str]:
        return [k.meta.output_name() for k in self.keys]

    def plain_keys(self) -> set[str]:
        return {n for n in (plain_name(k) for k in self.keys) if n is not None}

    def keeps(self, name: str) -> bool:
        return name in self.plain_keys()


@dataclass(frozen=True)
class PartialAgg(Op):
    """The node's half of a split aggregate: partial states per group of one partition."""

    keys: tuple[pl.Expr, ...]
    plan: AggPlan
    ordered: bool = True   # as Aggregate.ordered (a group's states merge in partition order)

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        keys = self.keys or (pl.lit(0).alias(GROUP),)
        if not self.plan.light:
            return lf.group_by(keys, maintain_order=self.ordered).agg(self.plan.partial)
        # the light forms and, per group, whether they may be inexact, in one pass; computed
        # again in full where they may: a value past LIGHT or a group too long (rare), a
        # group of both signs under a join's order check (common: its input is collected
        # first, so the join does not run twice)
        if self.plan.reread:
            lf = collect_step(lf).lazy()
        states = collect_step(lf.group_by(keys, maintain_order=self.ordered).agg(
            self.plan.light_partial()))
        if self.plan.needs_full(states):
            return lf.group_by(keys, maintain_order=self.ordered).agg(self.plan.partial)
        return states.drop(HEAVY).lazy()

    def describe(self) -> str:
        by = f" by {_show(self.keys)}" if self.keys else ""
        return f"partial aggregate{by}: {self.plan.describe()}"

    def reads(self) -> set[str] | None:
        return _reads(self.keys + tuple(self.plan.partial))

    def projects(self) -> bool:
        return True


@dataclass(frozen=True)
class MergeAgg(Op):
    """The driver's half: merge the partial states per group exactly, then the outputs.

    ``empty`` makes the answer of an aggregate without keys over no rows (one row, polars'
    semantics), used when no partition had a row (None: the aggregate has keys)."""

    plan: AggPlan
    empty: Callable[[], pl.DataFrame] | None
    ordered: bool = True   # as Aggregate.ordered

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        names = self.plan.key_names or [GROUP]
        merged = lf.group_by(names, maintain_order=self.ordered).agg(self.plan.merge) \
            .with_columns(self.plan.final) \
            .select([*self.plan.key_names, *self.plan.outputs])
        if self.empty is None:
            # an error the outputs raise (a constant that cannot be cast, F128) is raised
            # for every group: polars would push a later filter (HAVING) below them
            return collect_step(merged).lazy() if self.raises else merged
        frame = collect_step(merged)
        return (self.empty() if frame.height == 0 else frame).lazy()

    @functools.cached_property
    def raises(self) -> bool:
        """Can the merge's outputs raise an error of the data (:func:`may_raise`)?"""
        return any(may_raise(e) for e in (*self.plan.merge, *self.plan.final,
                                          *self.plan.outputs))

    def describe(self) -> str:
        by = f" by {', '.join(self.plan.key_names)}" if self.plan.key_names else ""
        return f"merge partial states{by}: {_show(self.plan.outputs)}"


@dataclass(frozen=True)
class Sort(Op):
    by: tuple[pl.Expr, ...]
    descending: tuple[bool, ...]
    nulls_last: tuple[bool, ...]

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        return lf.sort(list(self.by), descending=list(self.descending),
                       nulls_last=list(self.nulls_last), maintain_order=True)

    def describe(self) -> str:
        parts = [f"{e}{' desc' if d else ''}" for e, d in zip(self.by, self.descending)]
        return f"sort by {', '.join(parts)}"

    def reads(self) -> set[str] | None:
        return _reads(self.by)


@dataclass(frozen=True)
class Slice(Op):
    offset: int
    length: int | None

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        return lf.slice(self.offset, self.length)

    def describe(self) -> str:
        return f"rows {self.offset}..{'' if self.length is None else self.offset + self.length}"


@dataclass(frozen=True)
class TopN(Op):
    """The first ``n`` rows of a stable sort, for one partition: rows whose first sort key
    cannot reach the first ``n`` are dropped before sorting (the ``n``-th best value of that
    key is found in one pass; every row tied with it is kept, and null keys whenever they
    could count), so the answer is exactly the sort's first ``n`` rows."""

    sort: Sort
    n: int

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        key, desc = self.sort.by[0], self.sort.descending[0]
        dtype = lf.select(key.alias("_")).collect_schema()["_"]
        if self.n <= 0 or not (dtype.is_numeric() or dtype.is_temporal()):
            return self.sort.apply(lf).slice(0, self.n)
        plain = key.filter(key.is_not_nan()) if dtype.is_float() else key.drop_nulls()
        bound = (plain.top_k(self.n).min() if desc else plain.bottom_k(self.n).max())
        # polars orders NaN above every number, in sorts and comparisons alike
        keep = (plain.count() < self.n) | (key >= bound if desc else key <= bound)
        if not self.sort.nulls_last[0]:
            keep = keep | key.is_null()
        return self.sort.apply(lf.filter(keep.fill_null(False))).slice(0, self.n)

    def describe(self) -> str:
        return f"top {self.n} by {self.sort.describe()[len('sort by '):]}"

    def reads(self) -> set[str] | None:
        return self.sort.reads()


@dataclass(frozen=True)
class Unique(Op):
    subset: tuple[str, ...] | None

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        return lf.unique(list(self.subset) if self.subset else None, keep="first",
                         maintain_order=True)

    def describe(self) -> str:
        return "distinct" + (f" on {', '.join(self.subset)}" if self.subset else "")

    def reads(self) -> set[str] | None:
        return set(self.subset) if self.subset else None

    def needs(self, downstream: set[str] | None) -> set[str] | None:
        if downstream is None or not self.subset:
            return None   # distinct rows over every column present
        return downstream | set(self.subset)


@dataclass(frozen=True)
class Rename(Op):
    mapping: tuple[tuple[str, str], ...]

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        return lf.rename(dict(self.mapping))

    def describe(self) -> str:
        return "rename " + ", ".join(f"{a} -> {b}" for a, b in self.mapping)

    def local(self, keys: frozenset[str]) -> bool:
        return True

    def keeps(self, name: str) -> bool:
        return all(name not in pair for pair in self.mapping)

    def needs(self, downstream: set[str] | None) -> set[str] | None:
        if downstream is None:
            return None
        back = {new: old for old, new in self.mapping}
        return {back.get(n, n) for n in downstream}
