"""Replay for backtests: stored days published again, in time order, as if live.

``hfq.replay([quotes, trades], "2024-01-02", speed=10)`` reads each table's rows of each day,
merges the tables by event time (date, then time of day; rows of equal time keep their stored
order, and the tables' order given), and publishes them in that order -- batches of at most
``batch_rows`` rows, each into the replay table of its source (``into``: live tables with the
same schema; by default ``<name>_replay``, created like the source) -- so a strategy
subscribed to the replay tables sees quotes and trades interleaved as they happened
(DolphinDB's ``replay``).  ``speed``: times real time (10: ten times as fast; the replay
sleeps between batches to keep the pace), None: as fast as it can.

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> q = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
...                     sort_by=("symbol", "time"))
>>> _ = q.append(hfq.synth.taq_table(rows_per_day=300, symbols=3))
>>> replay([q], "2007-08-01").rows
{'q': 300}
>>> db["q_replay"].scan().count()
300
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from hfq.engine.query import plain_query
from hfq.errors import ArgumentError
from hfq.live.publisher import Publisher
from hfq.query.plan import filter_columns, normalize_dates
from hfq.session import TableLike

__all__ = ["Replay", "replay"]

_SOURCE = "__hfq_source"
_EVENT = "__hfq_event"


@dataclass
class Replay:
    """What a replay published: rows per source table, batches, seconds, days."""

    rows: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    seconds: float = 0.0
    days: list[str] = field(default_factory=list)


def replay(tables: Sequence[TableLike], dates: Any, *, into: Sequence[TableLike] | None = None,
           speed: float | None = None, batch_rows: int = 1000, symbols: Any = None,
           make_table: Callable[[TableLike, str], TableLike] | None = None,
           sleep: Callable[[float], None] = time.sleep) -> Replay:
    """Publish the rows of ``tables`` on ``dates`` (a day or an inclusive pair) in time
    order, merged across the tables (see the module); returns a :class:`Replay`.

    ``into``: the live tables to publish into, one per source (default: each source's
    ``<name>_replay``, made by ``make_table(source, name)`` -- by default a table with the
    source's schema, partitioning and sort order).  ``symbols``: only these.

    Examples
    --------
    >>> mydb = hfq.connect(tmp)
    >>> q = mydb.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    >>> _ = q.append(quotes.to_arrow(symbols=["IBM", "MSFT"]))
    >>> done = replay([q], ("2007-08-01", "2007-08-02"), batch_rows=50)
    >>> done.rows, done.days
    ({'q': 237}, ['2007-08-01', '2007-08-02'])
    """
    if not tables:
        raise ArgumentError("tables=: at least one table to replay", argument="tables")
    if speed is not None and speed <= 0:
        raise ArgumentError(f"speed=: a positive factor or None, not {speed!r}",
                            argument="speed")
    if batch_rows < 1:
        raise ArgumentError(f"batch_rows=: at least 1, not {batch_rows!r}",
                            argument="batch_rows")
    lo, hi = normalize_dates(dates)
    if lo is None or hi is None:
        raise ArgumentError(f"dates=: a day or a (first, last) pair, not {dates!r}",
                            argument="dates")
    targets = list(into) if into is not None else \
        [(make_table or _replay_table)(t, f"{t.name}_replay") for t in tables]
    if len(targets) != len(tables):
        raise ArgumentError(f"into=: one table per source ({len(tables)}), not {len(targets)}",
                            argument="into")
    pubs = [Publisher(t, name=f"replay-{s.name}") for s, t in zip(tables, targets)]
    out = Replay(rows={t.name: 0 for t in tables})
    started = time.perf_counter()
    first_event: int | None = None
    columns = [t.snapshot().schema.names for t in tables]
    for day in _days(lo, hi):
        merged = _merged(tables, day, symbols)
        if merged is None:
            continue
        out.days.append(day)
        events = merged[_EVENT].to_numpy()
        sources = merged[_SOURCE].to_numpy()
        for start in range(0, merged.height, batch_rows):
            stop = min(start + batch_rows, merged.height)
            if speed is not None:
                if first_event is None:
                    first_event = int(events[start])
                due = (int(events[start]) - first_event) / 1e9 / speed
                wait = due - (time.perf_counter() - started)
                if wait > 0:
                    sleep(wait)
            chunk = merged.slice(start, stop - start)
            for i in np.unique(sources[start:stop]).tolist():
                rows = chunk.filter(pl.col(_SOURCE) == i).select(columns[i])
                pubs[i].publish(rows.to_arrow())
                out.rows[tables[i].name] += rows.height
                out.batches += 1
    out.seconds = time.perf_counter() - started
    return out


def _days(lo: str, hi: str) -> list[str]:
    first, last = np.datetime64(lo, "D"), np.datetime64(hi, "D")
    return [str(d) for d in np.arange(first, last + 1)]


def _merged(tables: Sequence[TableLike], day: str, symbols: Any) -> pl.DataFrame | None:
    """Every source's rows of ``day``, in event-time order across sources."""
    frames = []
    for i, t in enumerate(tables):
        m = t.snapshot()
        date_col, _ = filter_columns(m)
        time_col = "time" if "time" in m.schema else None
        if date_col is None or time_col is None:
            raise ArgumentError(f"table {t.name!r} needs a date and a time column to be "
                                "replayed", argument="tables")
        frame = plain_query(t.session, t.name, m, dates=day, symbols=symbols).collect()
        if frame.height == 0:
            continue
        tod = pl.col(time_col).cast(pl.Time).to_physical().cast(pl.Int64)
        day_ns = pl.col(date_col).cast(pl.Date).to_physical().cast(pl.Int64) * 86_400 * 10**9
        frames.append(frame.with_columns((day_ns + tod).alias(_EVENT),
                                         pl.lit(i, pl.Int64).alias(_SOURCE)))
    if not frames:
        return None
    merged = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    return merged.sort([_EVENT, _SOURCE], maintain_order=True)


def _replay_table(source: TableLike, name: str) -> TableLike:
    """``name``, made like ``source`` when missing (schema, partitioning, sort order)."""
    session = source.session
    m = source.snapshot()
    if not session.exists(name):
        session.create_table(name, m.schema, partition_by=m.partition_by, sort_by=m.sort_by,
                             replicas=m.options.get("replicas"))
    return _Handle(session, name)


class _Handle:
    """A table handle below the facade (:class:`~hfq.session.TableLike`)."""

    def __init__(self, session: Any, name: str) -> None:
        self.session = session
        self.name = name

    def snapshot(self, version: int | None = None) -> Any:
        return self.session.snapshot(self.name, version)
