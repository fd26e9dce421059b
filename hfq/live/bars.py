"""The time-series engine: bars of any window per symbol, emitted as each window closes.

Bars are defined as the batch API defines them -- polars aggregations (by default those of
:func:`hfq.analytics.minute_bars`: average bid/offer and OHLC of the mid and the count for
quotes; OHLCV, VWAP and the count for trades) -- and split by the engine's exact partial /
merge plans (:func:`hfq.engine.aggs.decompose`): each batch adds one partial row per (key,
window) it touches; a window's partials are merged when it closes.  So for any split of a
tick stream into batches the bars equal the batch computation over the same ticks
(``minute_bars`` over the stored rows) -- first/last in arrival order, sums and counts exact,
averages as (sum, count).

**When a window closes.**  The engine's clock is event time: the largest (date, time) seen
in any row, minus ``lateness``.  A window ``[start, start + window)`` of a day closes -- its
bars are emitted -- once that clock reaches its end (rows at exactly the end belong to the
next window).  :meth:`TimeSeriesEngine.flush` closes every open window (end of day).

**Late rows** (of a window already closed): ``late="drop"`` (default) leaves them out and
counts them (``engine.late_rows``); ``late="update"`` keeps every closed window's state and
emits the window's bar again, corrected (the newest bar of a window replaces earlier ones).
A stream whose disorder stays within ``lateness`` has no late rows.

Examples
--------
>>> import hfq
>>> ticks = hfq.synth.taq_table(rows_per_day=400, symbols=3).sort_by("time")
>>> engine = TimeSeriesEngine(window="5m", kind="quotes")
>>> closed = [engine.feed(b) for b in ticks.to_batches(max_chunksize=50)]
>>> bars = pl.concat([*closed, engine.flush()])
>>> int(bars["count"].sum()) == ticks.num_rows
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from hfq.analytics.bars import bar_aggs, bar_seconds, bar_start
from hfq.engine.aggs import AggPlan, decompose
from hfq.errors import ArgumentError

__all__ = ["TimeSeriesEngine", "as_frame"]

_WHEN = "__hfq_end"
_NS_DAY = 86_400 * 10**9


def as_frame(batch: Any) -> pl.DataFrame:
    """A record batch, Arrow table or polars frame as a polars frame."""
    if isinstance(batch, pl.DataFrame):
        return batch
    if isinstance(batch, pa.RecordBatch):
        batch = pa.Table.from_batches([batch])
    frame = pl.from_arrow(batch)
    if not isinstance(frame, pl.DataFrame):
        raise ArgumentError(f"a batch of rows, not {type(batch).__name__}", argument="batch")
    return frame


class TimeSeriesEngine:
    """Bars of ``window`` per ``by`` key as ticks arrive (see the module).

    ``kind``: ``"quotes"`` or ``"trades"`` for ``minute_bars``' columns; or ``aggs``: the
    bars' columns as polars aggregations (``{"vwap": (pl.col("price") * pl.col("size")).sum()
    / pl.col("size").sum(), ...}``).  ``by``: the key columns (default: symbol and date);
    ``time``: a time-of-day column; ``date``: the date column (None: one day).
    ``lateness`` (e.g. ``"2s"``): how far behind the newest row a row may come and still
    count.  ``out``: called with each frame of closed bars (to publish them into a table, or
    hand them to anything else) besides being returned.

    Examples
    --------
    >>> engine = TimeSeriesEngine(window="1h", kind="quotes")
    >>> ticks = quotes.to_arrow(symbols="IBM", dates="2007-08-01")
    >>> bars = pl.concat([engine.feed(ticks), engine.flush()])
    >>> bars.select("time", "count").rows()[:2]
    [(datetime.time(9, 0), 5), (datetime.time(10, 0), 6)]
    """

    def __init__(self, *, window: str = "1m", kind: str | None = None,
                 aggs: Mapping[str, pl.Expr] | Sequence[pl.Expr] | None = None,
                 by: Sequence[str] = ("symbol", "date"), time: str = "time",
                 date: str | None = "date", lateness: str | None = None, late: str = "drop",
                 out: Callable[[pl.DataFrame], Any] | None = None) -> None:
        self.bar_ns = bar_seconds(window) * 10**9
        self.lateness_ns = bar_seconds(lateness) * 10**9 if lateness else 0
        if late not in ("drop", "update"):
            raise ArgumentError(f"late=: 'drop' or 'update', not {late!r}", argument="late")
        if (kind is None) == (aggs is None):
            raise ArgumentError("give kind= ('quotes' or 'trades') or aggs=, one of them",
                                argument="kind")
        if kind is not None:
            if kind not in ("quotes", "trades"):
                raise ArgumentError(f"kind=: 'quotes' or 'trades', not {kind!r}",
                                    argument="kind")
            self.aggs = bar_aggs(kind)
        elif isinstance(aggs, Mapping):
            self.aggs = [e.alias(n) for n, e in aggs.items()]
        else:
            self.aggs = list(aggs or [])
        self.by = list(by)
        self.time = time
        self.date = date
        self.late = late
        self.out = out
        self.keys = [*self.by, time]
        self.plan: AggPlan | None = None
        self.template: pl.DataFrame | None = None   # the bars' columns, no rows
        self.state: pl.DataFrame | None = None   # partial rows of open windows
        self.closed: pl.DataFrame | None = None  # merged partials of closed ones (update)
        self.clock = -1 << 62                    # newest event time seen (ns)
        self.closed_to = -1 << 62                # windows ending here or before are closed
        self.late_rows = 0

    def _plan(self, schema: pl.Schema) -> AggPlan:
        if self.plan is None:
            missing = [c for c in self.keys if c not in schema]
            if missing:
                raise ArgumentError(f"the ticks have no column {missing[0]!r}; columns: "
                                    f"{', '.join(schema.names())}", argument="by")
            plan = decompose(self.aggs, self.keys, schema)
            if plan is None:
                raise ArgumentError("an aggregation of the bars cannot be merged exactly "
                                    "batch by batch (use sum, mean, min, max, first, last, "
                                    "count, var, std...)", argument="aggs")
            self.plan = plan
        return self.plan

    def _times(self) -> tuple[pl.Expr, pl.Expr]:
        """Each row's event time and its window's end, in ns since the epoch (date + time
        of day)."""
        tod = pl.col(self.time).cast(pl.Time).to_physical().cast(pl.Int64)
        day = pl.col(self.date).cast(pl.Date).to_physical().cast(pl.Int64) * _NS_DAY \
            if self.date is not None else pl.lit(0, pl.Int64)
        return day + tod, day + (tod // self.bar_ns) * self.bar_ns + self.bar_ns

    def feed(self, batch: Any) -> pl.DataFrame:
        """Take one batch of ticks; the bars of the windows it closed (maybe none).

        Examples
        --------
        >>> engine = TimeSeriesEngine(window="1m", kind="quotes")
        >>> ibm = quotes.to_arrow(symbols="IBM", dates="2007-08-01")
        >>> engine.feed(ibm.slice(0, 2)).height, engine.feed(ibm.slice(2)).height
        (1, 30)
        """
        frame = as_frame(batch)
        plan = self._plan(frame.schema)
        if frame.height == 0:
            return self._empty()
        event, end = self._times()
        frame = frame.with_columns(end.alias(_WHEN))
        newest = frame.select(event.max()).item()
        late = frame[_WHEN] <= self.closed_to
        updated = None
        if late.any():
            if self.late == "drop":
                self.late_rows += int(late.sum())
            else:
                updated = self._partials(frame.filter(late), plan)
            frame = frame.filter(~late)
        if frame.height:
            parts = self._partials(frame, plan)
            self.state = parts if self.state is None else pl.concat([self.state, parts])
        if newest is not None:
            self.clock = max(self.clock, int(newest))
        emitted = self._close(self.clock - self.lateness_ns)
        if updated is not None:
            assert self.closed is not None
            self.closed = pl.concat([self.closed, updated])
            redo = updated.select([*self.keys, _WHEN]).unique()
            fixed = self._merge(self.closed.join(redo, on=[*self.keys, _WHEN], how="semi",
                                                 nulls_equal=True))
            emitted = pl.concat([emitted, fixed])
        if self.out is not None and emitted.height:
            self.out(emitted)
        return emitted

    def _partials(self, frame: pl.DataFrame, plan: AggPlan) -> pl.DataFrame:
        parts = frame.group_by([*self.by, bar_start(self.time, self.bar_ns), _WHEN],
                               maintain_order=True).agg(plan.partial)
        if self.template is None:
            self.template = self._merge(parts.clear())
        return parts

    def _close(self, to: int) -> pl.DataFrame:
        """Emit the windows ending at ``to`` or before."""
        if self.state is None or to <= self.closed_to:
            return self._empty()
        self.closed_to = to
        done = self.state[_WHEN] <= to
        if not done.any():
            return self._empty()
        closing = self.state.filter(done)
        self.state = self.state.filter(~done)
        if self.late == "update":
            self.closed = closing if self.closed is None else pl.concat([self.closed, closing])
        return self._merge(closing)

    def _merge(self, partials: pl.DataFrame) -> pl.DataFrame:
        assert self.plan is not None
        merged = partials.group_by([*self.keys, _WHEN], maintain_order=True) \
            .agg(self.plan.merge).with_columns(self.plan.final) \
            .select([*self.keys, *self.plan.outputs, _WHEN])
        return merged.sort([_WHEN, *self.by]).drop(_WHEN)

    def _empty(self) -> pl.DataFrame:
        return self.template.clear() if self.template is not None else pl.DataFrame()

    def flush(self) -> pl.DataFrame:
        """Close every open window (the end of the stream or of the day); their bars.

        Examples
        --------
        >>> engine = TimeSeriesEngine(window="5m", kind="quotes")
        >>> _ = engine.feed(quotes.to_arrow(symbols="IBM", dates="2007-08-01"))
        >>> engine.flush().select("time", "count").rows()
        [(datetime.time(15, 55), 1)]
        """
        emitted = self._close(1 << 62)
        if self.out is not None and emitted.height:
            self.out(emitted)
        return emitted

    def run(self, batches: Any, *, limit: int | None = None) -> int:
        """Feed every batch of ``batches`` (a subscription, say), up to ``limit`` batches;
        the bars emitted (each also handed to ``out``).

        Examples
        --------
        >>> got = []
        >>> engine = TimeSeriesEngine(window="1h", kind="quotes", out=got.append)
        >>> day = quotes.to_arrow(symbols="IBM", dates="2007-08-01")
        >>> engine.run(day.to_batches(max_chunksize=10)), len(got)
        (6, 3)
        """
        emitted = 0
        for i, batch in enumerate(batches):
            emitted += self.feed(batch).height
            if limit is not None and i + 1 >= limit:
                break
        return emitted
