"""The reactive state engine: per-symbol running state, updated row by row as ticks arrive.

State is defined the way the batch API defines it -- a polars expression per symbol:
``cumsum(pl.col("size"))`` is ``pl.col("size").cum_sum().over("symbol")``,
``ema(mid, alpha=0.1)`` is ``mid.ewm_mean(alpha=0.1, adjust=False).over("symbol")``,
``zscore(mid, 20)`` is ``(mid - mid.rolling_mean(20)) / mid.rolling_std(20)`` over the symbol.
Each batch is evaluated with those very expressions over the batch's rows *after a carry*: for
a running value (cumulative sum, EMA) one row holding each symbol's last output, in its own
type (and for an EMA the null inputs after it, up to where they can no longer move a result: it
decays over them), for a window (rolling mean, std, z-score) each symbol's last ``n - 1``
inputs. So the state after any split of a stream into batches is the expression over the whole
stream -- over the stored rows of a day, in their order
(:meth:`ReactiveStateEngine.batch_exprs` gives the expressions to check it with). A running sum
continues exactly (it adds in the same order); EMAs and rolling windows agree to floating-point
rounding (polars' rolling sums depend on where they start).

Examples
--------
>>> import hfq
>>> ticks = pl.DataFrame({"symbol": ["A", "B", "A", "A"], "size": [1, 5, 2, 3]})
>>> engine = ReactiveStateEngine(state={"cum": cumsum(pl.col("size"))})
>>> pl.concat([engine.feed(ticks[:2]), engine.feed(ticks[2:])])["cum"].to_list()
[1, 5, 3, 6]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from hfq.errors import ArgumentError
from hfq.live.bars import as_frame

__all__ = ["ReactiveStateEngine", "State", "cumsum", "ema", "rolling_mean", "rolling_std",
           "zscore"]

_ROW = "__hfq_row"
_IN = "__hfq_in"


@dataclass(frozen=True)
class State:
    """One running state: its input expression, how it is computed over a series of one
    symbol (``fn(pl.col(...)) -> expr``), and what carries over between batches:
    ``"output"`` (its last value, and up to ``gap`` null inputs after it) or ``n`` (its last
    ``n`` inputs)."""

    input: pl.Expr
    fn: Callable[[pl.Expr], pl.Expr]
    carry: str | int
    gap: int = 0

    def batch(self, by: Sequence[str]) -> pl.Expr:
        """The expression over stored rows (every row of a symbol, in order)."""
        return self.fn(self.input).over(list(by))


def cumsum(x: pl.Expr) -> State:
    """The running sum of ``x`` per symbol (``x.cum_sum().over(symbol)``).

    Examples
    --------
    >>> e = ReactiveStateEngine(state={"vol": cumsum(pl.col("size"))})
    >>> e.feed(pl.DataFrame({"symbol": ["A", "A"], "size": [3, 4]}))["vol"].to_list()
    [3, 7]
    """
    return State(x, lambda e: e.cum_sum(), "output")


def ema(x: pl.Expr, *, alpha: float) -> State:
    """The exponential moving average ``y = alpha x + (1 - alpha) y_prev`` per symbol
    (``x.ewm_mean(alpha=alpha, adjust=False).over(symbol)``).

    Examples
    --------
    >>> e = ReactiveStateEngine(state={"m": ema(pl.col("x"), alpha=0.5)})
    >>> e.feed(pl.DataFrame({"symbol": ["A", "A"], "x": [2.0, 4.0]}))["m"].to_list()
    [2.0, 3.0]
    """
    if not 0 < alpha <= 1:
        raise ArgumentError(f"alpha=: in (0, 1], not {alpha!r}", argument="alpha")
    # after g nulls the last value weighs (1 - alpha)^(g + 1) against alpha: the nulls past
    # the g where that is below 1e-18 of alpha move no result by a rounding, and are not kept
    gap = 0 if alpha == 1 else math.ceil(math.log(1e-18 * alpha) / math.log1p(-alpha))
    return State(x, lambda e: e.ewm_mean(alpha=alpha, adjust=False), "output", gap)


def rolling_mean(x: pl.Expr, n: int) -> State:
    """The mean of the last ``n`` values per symbol (null until there are ``n``).

    Examples
    --------
    >>> e = ReactiveStateEngine(state={"m": rolling_mean(pl.col("x"), 2)})
    >>> e.feed(pl.DataFrame({"symbol": ["A"] * 3, "x": [1.0, 3.0, 5.0]}))["m"].to_list()
    [None, 2.0, 4.0]
    """
    return State(x, lambda e: e.rolling_mean(n), _window(n) - 1)


def rolling_std(x: pl.Expr, n: int) -> State:
    """The sample standard deviation of the last ``n`` values per symbol.

    Examples
    --------
    >>> e = ReactiveStateEngine(state={"s": rolling_std(pl.col("x"), 2)})
    >>> e.feed(pl.DataFrame({"symbol": ["A"] * 3, "x": [1.0, 3.0, 3.0]}))["s"].to_list()
    [None, 1.4142135623730951, 0.0]
    """
    return State(x, lambda e: e.rolling_std(n), _window(n) - 1)


def zscore(x: pl.Expr, n: int) -> State:
    """``(x - rolling_mean(n)) / rolling_std(n)`` per symbol: how unusual the newest value
    is against the last ``n``.

    Examples
    --------
    >>> e = ReactiveStateEngine(state={"z": zscore(pl.col("x"), 3)})
    >>> e.feed(pl.DataFrame({"symbol": ["A"] * 4, "x": [1.0, 2.0, 3.0, 10.0]}))["z"].round(3) \\
    ...     .to_list()
    [None, None, 1.0, 1.147]
    """
    return State(x, lambda e: (e - e.rolling_mean(n)) / e.rolling_std(n), _window(n) - 1)


def _window(n: int) -> int:
    if not isinstance(n, int) or n < 2:
        raise ArgumentError(f"a window of 2 or more values, not {n!r}", argument="n")
    return n


class ReactiveStateEngine:
    """Per-``by`` running state as rows arrive (see the module).

    ``compute``: row-wise columns made first (``{"mid": (pl.col("bid") + pl.col("ofr")) /
    2}``), which states may use; ``state``: name -> :class:`State`; ``keep``: the input
    columns each output row repeats (default: ``by`` and ``time`` when there is one).
    ``out``: called with each output frame.

    Examples
    --------
    >>> engine = ReactiveStateEngine(state={"ema": ema(pl.col("mid"), alpha=0.5)},
    ...                              compute={"mid": (pl.col("bid") + pl.col("ofr")) / 2})
    >>> ticks = quotes.to_polars(symbols="IBM", dates="2007-08-01")
    >>> out = pl.concat([engine.feed(ticks[:5]), engine.feed(ticks[5:])])
    >>> out.columns, out.height
    (['symbol', 'time', 'mid', 'ema'], 32)
    """

    def __init__(self, *, state: Mapping[str, State], by: str | Sequence[str] = "symbol",
                 compute: Mapping[str, pl.Expr] | None = None,
                 keep: Sequence[str] | None = None,
                 out: Callable[[pl.DataFrame], Any] | None = None) -> None:
        if not state:
            raise ArgumentError("state= needs at least one State", argument="state")
        self.by = [by] if isinstance(by, str) else list(by)
        self.compute = dict(compute or {})
        self.state = dict(state)
        self.keep = list(keep) if keep is not None else None
        self.out = out
        self.carry: dict[str, pl.DataFrame] = {}

    def batch_exprs(self) -> tuple[list[pl.Expr], list[pl.Expr]]:
        """``(computed columns, states)`` as the batch expressions over stored rows:
        ``frame.with_columns(a).with_columns(b)`` is what the engine streams.

        Examples
        --------
        >>> e = ReactiveStateEngine(state={"vol": cumsum(pl.col("size"))})
        >>> e.batch_exprs()[1][0].meta.output_name()
        'vol'
        """
        return ([e.alias(n) for n, e in self.compute.items()],
                [s.batch(self.by).alias(n) for n, s in self.state.items()])

    def feed(self, batch: Any) -> pl.DataFrame:
        """Take one batch of rows; the same rows (``keep`` and computed columns) with every
        state as it stands after each row.

        Examples
        --------
        >>> e = ReactiveStateEngine(state={"vol": cumsum(pl.col("size"))},
        ...                         compute={"big": pl.col("size") > 3})
        >>> e.feed(pl.DataFrame({"symbol": ["A", "B"], "size": [5, 1]})).rows()
        [('A', True, 5), ('B', False, 1)]
        """
        frame = as_frame(batch)
        if self.compute:
            frame = frame.with_columns([e.alias(n) for n, e in self.compute.items()])
        keep = self.keep if self.keep is not None else \
            [*self.by, *(["time"] if "time" in frame.columns and "time" not in self.by
                         else [])]
        out = frame.select([*keep, *self.compute])
        if frame.height == 0:
            return out.with_columns(
                [pl.lit(None).alias(n) for n in self.state])
        keys = frame.select(self.by)
        for name, st in self.state.items():
            out = out.with_columns(self._one(name, st, keys, frame.select(
                st.input.alias(_IN))[_IN]).alias(name))
        if self.out is not None:
            self.out(out)
        return out

    def _one(self, name: str, st: State, keys: pl.DataFrame, values: pl.Series) -> pl.Series:
        """State ``name`` after each of the batch's rows: the carry's rows first, then the
        batch's, the expression over symbol groups, the carry's rows dropped; the carry for
        the next batch kept."""
        rows = keys.with_columns(values.alias(_IN), pl.int_range(pl.len()).alias(_ROW))
        carry = self.carry.get(name)
        if carry is not None:
            # the keys as the batch's; the carried outputs keep their type (an EMA of
            # integers is a float, a cumulative sum of Int8 an Int64): concat finds the
            # common one
            carry = carry.with_columns(
                [pl.col(k).cast(rows.schema[k]) for k in self.by]
                + ([pl.col(_IN).cast(rows.schema[_IN])]
                   if carry.schema[_IN] == pl.Null else []))
            both = pl.concat([carry.with_columns(pl.lit(-1).cast(pl.Int64).alias(_ROW)),
                              rows.with_columns(pl.col(_ROW).cast(pl.Int64))],
                             how="vertical_relaxed")
        else:
            both = rows.with_columns(pl.col(_ROW).cast(pl.Int64))
        both = both.with_columns(st.fn(pl.col(_IN)).over(self.by).alias(name))
        mine = both.filter(pl.col(_ROW) >= 0).sort(_ROW)
        if st.carry == "output":
            # each group's last output, and up to st.gap rows after it (null inputs): an
            # EMA's next value depends on how many nulls came since (polars' ewm_mean
            # counts the gap)
            at = pl.int_range(pl.len()).over(self.by)
            last = at.filter(pl.col(name).is_not_null()).max().over(self.by)
            self.carry[name] = both.filter((at >= last) & (at <= last + st.gap)).select(
                [*self.by, pl.col(name).alias(_IN)])
        else:
            n = int(st.carry)
            self.carry[name] = both.select([*self.by, _IN]).group_by(
                self.by, maintain_order=True).tail(n)
        return mine[name]

    def run(self, batches: Any, *, limit: int | None = None) -> int:
        """Feed every batch of ``batches`` (a subscription, say); the rows output.

        Examples
        --------
        >>> e = ReactiveStateEngine(state={"vol": cumsum(pl.col("size"))})
        >>> e.run([pl.DataFrame({"symbol": ["A"], "size": [1]})] * 3), e.carry["vol"].rows()
        (3, [('A', 3)])
        """
        rows = 0
        for i, batch in enumerate(batches):
            rows += self.feed(batch).height
            if limit is not None and i + 1 >= limit:
                break
        return rows
