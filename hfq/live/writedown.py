"""End of day: a day's live rows become partition files, through the one write operator.

``t.write_down("2024-01-02")`` pins a snapshot of the table's live rows (:mod:`hfq.live.snapshot`),
and each partition's rows of that day are sorted, encoded and put on the partition's replica
nodes *by a node holding them* (the rows never travel to the driver), through the write's
:class:`~hfq.write.FileWriter`; the driver stages the fragments and commits them as one
version together with the *cut* -- what of the live rows the files now hold
(:class:`~hfq.live.cut.CutTransaction`).  That commit is the one moment rows move from live to
stored: a query pinned before it reads them live, one pinned after reads them from the files
and not live.  Only then are the nodes told (they drop the rows ``live_grace_s`` later, and
truncate the log segments that held nothing else): the log is truncated only after the
commit.  A crash anywhere before the commit leaves the live rows as they were (and the
write's files are cleaned up as any failed write's); after it, the cut in the version keeps
every reader -- and a node replaying its log after a restart -- from counting them twice.

Rows published for that day after the snapshot stay live (a later write-down of the same day
takes them).  Two write-downs of one day at once: the second to commit is a conflict.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, cast

import polars as pl
import pyarrow as pa

from hfq import faults
from hfq.catalog.records import Fragment
from hfq.errors import ArgumentError
from hfq.live.cut import CutTransaction, cut_of, is_live, live_spec
from hfq.live.node import apply_cut
from hfq.live.snapshot import LiveFragment, take
from hfq.query.plan import Filters, Unit, filter_columns, normalize_dates
from hfq.query.read import ReadSpec
from hfq.runtime.task import NodeContext
from hfq.session import TableLike
from hfq.write import FileWriter, Write

__all__ = ["WriteDown", "live_days", "write_down", "write_down_due"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WriteDown:
    """What a write-down did: the day, rows and partitions written, the version committed
    (None: there was nothing to write), seconds taken."""

    date: str
    rows: int
    partitions: int
    version: int | None
    seconds: float


@dataclass(frozen=True)
class _WriteDownTask:
    """On a node holding a partition's live rows: that day's rows as a fragment file on the
    partition's replica nodes (picklable)."""

    spec: ReadSpec
    files: FileWriter
    date_column: str
    day: str

    def __call__(self, node: NodeContext, unit: Unit) -> dict[str, Any] | None:
        live = cast(LiveFragment, unit.fragments[0])
        rows = live.read_rows(node, self.spec)
        column = rows.column(self.date_column)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.date32())
        day = dt.date.fromisoformat(self.day)
        frame = pl.from_arrow(rows)
        assert isinstance(frame, pl.DataFrame)
        keep = pl.from_arrow(column)
        assert isinstance(keep, pl.Series)
        rows = frame.filter((keep == day).to_numpy()).to_arrow().cast(rows.schema)
        if rows.num_rows == 0:
            return None
        nodes = node.nodes()
        here = [node.name] if node.name else []
        fragment = self.files.write(nodes, unit.partition, unit.key, rows,
                                    near=[*here, *live.nodes])
        return {"partition": unit.partition, "key": unit.key, "fragment": fragment,
                "rows": rows.num_rows}


def write_down(table: TableLike, date: Any, *, progress: bool | None = None) -> WriteDown:
    """Write the live rows of ``date`` (every batch visible now) into ``table``'s files in one
    commit (see the module); returns a :class:`WriteDown`."""
    started = time.perf_counter()
    session = table.session
    base = session.snapshot(table.name)
    try:
        lo, hi = normalize_dates(date)
    except ValueError as exc:
        raise ArgumentError(f"date=: {exc}", argument="date") from None
    if lo is None or lo != hi:
        raise ArgumentError(f"date=: one day, not {date!r}", argument="date")
    day = lo
    date_column, _ = filter_columns(base)
    if date_column is None:
        raise ArgumentError(f"table {table.name!r} has no date column: its live rows cannot "
                            "be written down by day", argument="date")
    if not is_live(base):
        return WriteDown(day, 0, 0, None, time.perf_counter() - started)
    spec = live_spec(session, base)
    before = cut_of(base)
    filters = Filters(date_column, day, day, None, None)
    snap = take(session, spec, before, base.version, filters.bounds())
    cut = {day: dict(snap.seqs)}
    units = [Unit(path, tuple(key), cast(Any, (frag,)), (None,), frag.rows, 0, False, 0)
             for path, (key, frag) in sorted(snap.fragments.items())]
    read = ReadSpec(base.schema, base.sort_by, base.schema.names, None, [],
                    Filters(date_column, day, day, None, None))
    with Write(session, base, transaction=lambda c, b: CutTransaction(
            c, b, cut=cut, expect={day: before.get(day, {})})) as w:
        task = _WriteDownTask(read, w.files, date_column, day)
        done: list[dict[str, Any]] = []
        if units:
            session.run_units(task, units, lambda i, value: done.append(value) if value else None,
                              progress=progress, label=f"write down {table.name} {day}")
        rows = 0
        for out in done:
            w.stage(out["partition"], out["key"], cast(Fragment, out["fragment"]))
            rows += out["rows"]
        faults.point("live.writedown.before_commit")
        committed = w.commit(f"write_down {day}")
    faults.point("live.writedown.after_commit")
    tell_nodes(table, committed)
    return WriteDown(day, rows, len(done), committed.version, time.perf_counter() - started)


def tell_nodes(table: TableLike, manifest: Any) -> None:
    """Tell every live node the cut of ``manifest`` (best effort: a node that misses it
    learns it from the next query that reads it)."""
    session = table.session
    try:
        session.nodes.call_each(apply_cut, live_spec(session, manifest), cut_of(manifest),
                                manifest.version)
    except Exception as exc:  # noqa: BLE001 - the commit stands; the nodes learn it later
        log.warning("table %s: telling the nodes of write-down version %d failed (%s); they "
                    "learn it from the next read", manifest.table, manifest.version, exc)


def live_days(table: TableLike) -> list[str]:
    """The days of which ``table``'s nodes hold live rows not written down (sorted).

    Examples
    --------
    >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
    ...                                   partition_by=hfq.Value("date"))
    >>> _ = t.publisher(name="feed").publish(quotes.to_arrow(symbols="IBM"))
    >>> live_days(t)
    ['2007-08-01', '2007-08-02']
    """
    session = table.session
    base = session.snapshot(table.name)
    if not is_live(base):
        return []
    snap = take(session, live_spec(session, base), cut_of(base), base.version)
    return sorted({d for _, f in snap.fragments.values() for d in f.days})


def write_down_due(table: TableLike, *, keep: int = 1) -> list[WriteDown]:
    """The automatic policy: write down every day with live rows except the newest
    ``keep`` (the day being published).  A publisher made with ``write_down=True`` runs it
    (in a thread of its own) whenever a batch of a new day is acknowledged.

    Examples
    --------
    >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
    ...                                   partition_by=hfq.Value("date"))
    >>> _ = t.publisher(name="feed").publish(quotes.to_arrow(symbols="IBM"))
    >>> [(d.date, d.rows) for d in write_down_due(t)], live_days(t)
    ([('2007-08-01', 32)], ['2007-08-02'])
    """
    days = live_days(table)
    return [write_down(table, d) for d in days[:max(0, len(days) - keep)]]


class AutoWriteDown:
    """Runs :func:`write_down_due` in a background thread when asked (one run at a time;
    asks during a run make one more run after it)."""

    def __init__(self, table: TableLike) -> None:
        self.table = table
        self._lock = threading.Lock()
        self._again = False
        self._thread: threading.Thread | None = None
        self.done: list[WriteDown] = []
        self.error: BaseException | None = None

    def poke(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self._again = True
                return
            self._thread = threading.Thread(target=self._run, name="hfq-write-down",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self.done += write_down_due(self.table)
            except Exception as exc:  # noqa: BLE001 - kept for the publisher to report
                log.warning("automatic write-down of %s failed: %s", self.table.name, exc)
                self.error = exc
            with self._lock:
                if not self._again:
                    return
                self._again = False

    def wait(self) -> None:
        thread = self._thread
        if thread is not None:
            thread.join()
