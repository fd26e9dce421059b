"""The live rows a node holds of one partition, and which of them a snapshot reads.

Rows arrive as slices (:class:`~hfq.live.log.Slice`: one published batch's rows of this
partition and one day).  Each row carries its slice's publisher, sequence number, slice number
(``pseq``) and day in numpy arrays beside the Arrow rows, so a snapshot's choice -- "these
publishers up to these sequence numbers, these slice numbers, not what the written-down cut
holds" -- is one vectorised mask per run of the partition, not a loop over its slices.  A
node's new batches wait (:class:`Pending`) and are given to their partitions together every
:data:`TAIL` batches (by a thread of the node, off the acknowledgement path), or when a query
reads.

Examples
--------
>>> import pyarrow as pa
>>> p = PartRows(["2024-01-02", 0])
>>> p.add("feed", 1, 1, "2024-01-02", 2)
>>> p.add("feed", 2, 2, "2024-01-02", 1)
>>> p.extend(pa.table({"x": [1, 2, 3]}))
>>> p.take({"feed": 1}, {"feed": (1, 9)}, {}, ["x"]).column("x").to_pylist()
[1, 2]
>>> p.take({"feed": 9}, {"feed": (1, 9)}, {"2024-01-02": {"feed": 1}}, ["x"]).num_rows
1
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["PartRows", "Pending", "Runs", "columns_of", "prepare", "same_rows"]

TAIL = 128
"""Batches a node holds before their rows are given to their partitions."""

_CHUNKS = 32
"""Chunks a run's table or kept polars column may have before it is made one again."""

RUN_ROWS = 1 << 16
"""Rows past which runs are no longer joined: a join copies at most this many rows (no
stall of a publish or a read while a whole partition is copied), and a partition of ``n``
rows has about ``n / RUN_ROWS + log2(RUN_ROWS)`` runs."""

Stat = tuple[int, int, int, int]
"""Least and greatest sequence number, least and greatest slice number."""


class Runs:
    """Sorted, disjoint runs of slice numbers ``[lo, hi]``."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []

    def add(self, n: int) -> None:
        runs = self.runs
        if runs and runs[-1][1] + 1 == n:
            runs[-1][1] = n
        elif not runs or runs[-1][1] < n:
            runs.append([n, n])
        else:   # out of order (a replayed or repaired slice): insert and merge
            runs.append([n, n])
            runs.sort()
            merged = [runs[0]]
            for lo, hi in runs[1:]:
                if lo <= merged[-1][1] + 1:
                    merged[-1][1] = max(merged[-1][1], hi)
                else:
                    merged.append([lo, hi])
            self.runs = merged

    def covers(self, lo: int, hi: int) -> bool:
        return any(a <= lo and hi <= b for a, b in self.runs)

    def to_list(self) -> list[list[int]]:
        return [list(r) for r in self.runs]


@dataclass
class _Run:
    """Consecutive slices merged: one chunk per column, each row's publisher code, sequence
    number, slice number and day code beside it."""

    table: pa.Table
    pub: np.ndarray
    seq: np.ndarray
    pseq: np.ndarray
    day: np.ndarray
    stats: dict[tuple[int, int], Stat] | None = None
    """(day code, publisher code) -> the run's least and greatest sequence number and
    slice number of them (None: not known yet, :meth:`stat`)."""
    frames: dict[str, pl.Series] = field(default_factory=dict)
    """The run's columns a query read, as polars (each row converted once: a joined run
    gets its parts' series)."""
    source: tuple[_Batch, int] | None = None
    """A run of one slice of a published batch: the batch and the slice's first row (a
    read converts the batch's column once for all its slices, :class:`_Batch`)."""

    def series(self, name: str) -> pl.Series:
        got = self.frames.get(name)
        if got is None:
            if self.source is not None:
                batch, offset = self.source
                got = batch.series(name).slice(offset, self.rows)
            else:
                got = _series(name, self.table.column(name))
            self.frames[name] = got = got.rechunk() if got.n_chunks() > 1 else got
        return got

    @property
    def rows(self) -> int:
        return self.table.num_rows

    def stat(self) -> dict[tuple[int, int], Stat]:
        """:attr:`stats`, found once: a run's rows never change, so a snapshot looks at a
        few numbers per run -- which days are live, whether it takes all of the run or none
        -- not at every row."""
        if self.stats is None:
            self.stats = _stats(self.day, self.pub, self.seq, self.pseq)
        return self.stats


class _Batch:
    """One published batch's rows, whose columns a read converts to polars once for all the
    batch's slices (a batch of 100 rows has slices in 16 partitions: one conversion of a
    column, not 16, each of which costs about as much whatever its rows)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.frames: dict[str, pl.Series] = {}

    def series(self, name: str) -> pl.Series:
        got = self.frames.get(name)
        if got is None:   # two readers at once convert twice: the same rows
            got = _series(name, self.table.column(name))
            self.frames[name] = got
        return got


def _joined(a: _Run, b: _Run) -> _Run:
    """Two neighbouring runs as one (their Arrow chunks made one only past
    :data:`_CHUNKS`; the polars columns kept, which a read uses, always)."""
    table = _concat([a.table, b.table])
    if table.column(0).num_chunks > _CHUNKS:
        table = table.combine_chunks()
    # a read: a chunk a run (``extend`` of a clone: a's series is not changed, and it
    # copies into one chunk for a third of ``pl.concat``'s overhead)
    frames = {name: a.series(name).clone().extend(b.series(name))
              for name in a.frames.keys() | b.frames.keys()}
    stats = dict(a.stat())
    for k, st in b.stat().items():
        stats[k] = _spanning(stats.get(k, st), st)
    return _Run(table, np.concatenate([a.pub, b.pub]), np.concatenate([a.seq, b.seq]),
                np.concatenate([a.pseq, b.pseq]), np.concatenate([a.day, b.day]), stats,
                frames)


def _stats(day: np.ndarray, pub: np.ndarray, seq: np.ndarray, pseq: np.ndarray
           ) -> dict[tuple[int, int], Stat]:
    """(day code, publisher code) -> the least and greatest ``seq`` and ``pseq`` of them."""
    if not len(day):
        return {}
    key = day * (int(pub.max()) + 1) + pub
    order = np.argsort(key, kind="stable")
    starts = np.flatnonzero(np.diff(key[order], prepend=-1))
    first = order[starts]
    seq, pseq = seq[order], pseq[order]
    return {(int(d), int(p)): (int(a), int(b), int(c), int(e)) for d, p, a, b, c, e in zip(
        day[first], pub[first], np.minimum.reduceat(seq, starts),
        np.maximum.reduceat(seq, starts), np.minimum.reduceat(pseq, starts),
        np.maximum.reduceat(pseq, starts))}


def _spanning(a: Stat, b: Stat) -> Stat:
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])


def _series(name: str, column: pa.ChunkedArray | pa.Array) -> pl.Series:
    got = pl.from_arrow(column)
    assert isinstance(got, pl.Series)
    return got.alias(name)


class PartRows:
    """One partition's live rows on one node (the caller holds the lock)."""

    def __init__(self, key: Sequence[Any]) -> None:
        self.key = list(key)
        self.pubs: list[str] = []            # publisher codes
        self.days: list[str | None] = []     # day codes
        self.tail: list[tuple[int, int, int, int, int]] = []
        """Slices added, their rows not given yet: (pub code, seq, pseq, day code, rows)."""
        self.body: list[_Run] = []
        """The rows in arrival order, in runs of falling sizes (see :meth:`extend`)."""
        self.rows = 0
        self.runs: dict[str, Runs] = {}
        self.last: dict[str, tuple[int, int, int]] = {}
        """pub -> (seq of its last slice here, that slice's pseq, the pseq before it)."""
        self.dropped: dict[str, tuple[int, int]] = {}
        """pub -> (pseq up to which every slice was written down and dropped, the version)."""

    def _code(self, table: list[Any], value: Any) -> int:
        try:
            return table.index(value)
        except ValueError:
            table.append(value)
            return len(table) - 1

    def add(self, pub: str, seq: int, pseq: int, day: str | None, rows: int) -> None:
        """A slice of ``rows`` rows arrived: its rows follow by :meth:`extend` (a node
        gathers them for all its partitions at once, :class:`Pending`)."""
        self.tail.append((self._code(self.pubs, pub), seq, pseq, self._code(self.days, day),
                          rows))
        self.rows += rows
        self.runs.setdefault(pub, Runs()).add(pseq)
        last = self.last.get(pub)
        if last is None:
            self.last[pub] = (seq, pseq, pseq - 1)
        elif seq > last[0]:
            self.last[pub] = (seq, pseq, last[1])
        elif seq == last[0]:   # a second slice of the same batch (another day)
            self.last[pub] = (seq, max(pseq, last[1]), last[2])

    def extend(self, table: pa.Table, slices: int | None = None,
               source: tuple[_Batch, int] | None = None) -> None:
        """The rows of the first ``slices`` slices added and not extended yet (None: all
        of them), in their order, as a new run of the body (``source``: ``table`` is one
        slice, the rows of that batch from that row, :attr:`_Run.source`); then, as a
        binary counter, two neighbouring runs of like size become one up to
        :data:`RUN_ROWS` rows (a row is moved O(log RUN_ROWS) times over the day), the
        polars columns a query kept of them too (only a new run's rows are converted at the
        next read)."""
        given = self.tail if slices is None else self.tail[:slices]
        if not given:
            return
        tail = np.array(given, dtype=np.int64)   # a slice a row: pub, seq, pseq, day, rows
        sizes = tail[:, 4]
        if int(sizes.sum()) != table.num_rows:
            raise ValueError(f"live rows of partition {self.key}: {table.num_rows} rows for "
                             f"slices of {int(sizes.sum())}")
        cols = [np.repeat(tail[:, i], sizes) for i in range(4)]
        if len(given) <= 8:   # a batch or a few (a read after each): no numpy calls
            stats: dict[tuple[int, int], Stat] = {}
            for pub, seq, pseq, day, n in given:
                if n:
                    one = (seq, seq, pseq, pseq)
                    stats[day, pub] = _spanning(stats.get((day, pub), one), one)
        else:
            used = tail[sizes > 0]
            stats = _stats(used[:, 3], used[:, 0], used[:, 1], used[:, 2])
        del self.tail[:len(given)]
        if not table.num_rows:
            return
        if any(c.num_chunks != 1 for c in table.columns):
            table = _combine([table])
            source = None
        runs = self.body
        runs.append(_Run(table, cols[0], cols[1], cols[2], cols[3], stats, source=source))
        while len(runs) > 1 and runs[-2].rows <= 2 * runs[-1].rows and \
                runs[-2].rows + runs[-1].rows <= RUN_ROWS:
            last = runs.pop()
            runs[-1] = _joined(runs[-1], last)

    def _settled(self) -> None:
        if self.tail:
            raise RuntimeError(f"live rows of partition {self.key}: {len(self.tail)} slice(s) "
                               "added and not extended (Pending.flush first)")

    def _limits(self, seqs: Mapping[str, int], picks: Mapping[str, tuple[int, int]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        codes = len(self.pubs)
        top = np.full(codes, -1, np.int64)
        lo = np.zeros(codes, np.int64)
        hi = np.full(codes, -1, np.int64)
        for i, pub in enumerate(self.pubs):
            if pub in picks and pub in seqs:
                top[i] = seqs[pub]
                lo[i], hi[i] = picks[pub]
        return top, lo, hi

    def _cut_limits(self, cut: Mapping[str, Mapping[str, int]]) -> np.ndarray:
        """day code x publisher code -> the last sequence number ``cut`` holds (-1: none)."""
        limit = np.full((max(1, len(self.days)), max(1, len(self.pubs))), -1, np.int64)
        for d, day in enumerate(self.days):
            for i, pub in enumerate(self.pubs):
                limit[d, i] = cut.get(str(day), {}).get(pub, -1) if day is not None else -1
        return limit

    def masks(self, seqs: Mapping[str, int], picks: Mapping[str, tuple[int, int]],
              cut: Mapping[str, Mapping[str, int]]) -> list[tuple[_Run, np.ndarray]]:
        """Each run with its rows of slices of a publisher in ``picks`` with ``lo <= pseq
        <= hi`` and ``seq <= seqs[pub]``, that no ``cut[day][pub] >= seq`` holds."""
        self._settled()
        top, lo, hi = self._limits(seqs, picks)
        limit = self._cut_limits(cut) if cut else None
        out = []
        for run in self.body:
            every, none = True, True
            for (d, p), (s0, s1, p0, p1) in run.stat().items():
                cut_to = limit[d, p] if limit is not None else -1
                every = every and s1 <= top[p] and lo[p] <= p0 and p1 <= hi[p] and s0 > cut_to
                none = none and (s0 > top[p] or p1 < lo[p] or p0 > hi[p] or s1 <= cut_to)
            if every or none:   # the whole run or none of it: no row looked at
                out.append((run, np.full(run.rows, every)))
                continue
            keep = (run.seq <= top[run.pub]) & (run.pseq >= lo[run.pub]) \
                & (run.pseq <= hi[run.pub])
            if limit is not None:
                keep &= run.seq > limit[run.day, run.pub]
            out.append((run, keep))
        return out

    def live_days(self, cut: Mapping[str, Mapping[str, int]]) -> list[str]:
        """The days of the rows held that ``cut`` does not hold (the tail is not merged for
        this: a snapshot asks it of every partition)."""
        limit = self._cut_limits(cut)
        codes: set[int] = set()
        for run in self.body:
            codes.update(d for (d, p), st in run.stat().items() if st[1] > limit[d, p])
        for pub, seq, _, day, _ in self.tail:
            text = self.days[day]
            if text is not None and seq > cut.get(str(text), {}).get(self.pubs[pub], -1):
                codes.add(day)
        return sorted(str(self.days[c]) for c in codes if self.days[c] is not None)

    def take(self, seqs: Mapping[str, int], picks: Mapping[str, tuple[int, int]],
             cut: Mapping[str, Mapping[str, int]], columns: Sequence[str]) -> pa.Table:
        """The rows :meth:`masks` keeps, ``columns`` of them, in arrival order."""
        parts = [run.table.select(list(columns)) if keep.all() else
                 run.table.select(list(columns)).filter(pa.array(keep))
                 for run, keep in self.masks(seqs, picks, cut) if keep.any()]
        if not parts:
            return self._empty(columns)
        return parts[0] if len(parts) == 1 else _concat(parts)

    def take_frame(self, seqs: Mapping[str, int], picks: Mapping[str, tuple[int, int]],
                   cut: Mapping[str, Mapping[str, int]], columns: Sequence[str]
                   ) -> pl.DataFrame | None:
        """:meth:`take` as a polars frame (None: no rows), of the runs it keeps rows of,
        each column converted once and kept by its run (:attr:`_Run.frames`)."""
        masks = [(run, keep) for run, keep in self.masks(seqs, picks, cut) if keep.any()]
        if not masks:
            return None
        frame = pl.DataFrame([
            masks[0][0].series(name) if len(masks) == 1 else
            pl.concat([run.series(name) for run, _ in masks], rechunk=False)
            for name in columns])
        if all(keep.all() for _, keep in masks):
            return frame
        return frame.filter(pl.Series(np.concatenate([keep for _, keep in masks])))

    def _empty(self, columns: Sequence[str]) -> pa.Table:
        if self.body:
            return self.body[0].table.select(list(columns)).slice(0, 0)
        return pa.table({})

    def drop(self, cut: Mapping[str, Mapping[str, int]], version: int) -> int:
        """Forget the rows ``cut`` holds that form a prefix of each publisher's slices;
        returns the rows dropped.  The prefix is remembered in :attr:`dropped`."""
        self._settled()
        if not self.body:
            return 0
        cols = [np.concatenate([getattr(r, f) for r in self.body])
                for f in ("pub", "seq", "pseq", "day")]
        m = _Run(pa.table({}), cols[0], cols[1], cols[2], cols[3])
        if not len(m.seq):
            return 0
        covered = np.zeros(len(m.seq), bool)
        for d, day in enumerate(self.days):
            for i, pub in enumerate(self.pubs):
                limit = cut.get(str(day), {}).get(pub) if day is not None else None
                if limit is not None:
                    covered |= (m.day == d) & (m.pub == i) & (m.seq <= limit)
        gone = np.zeros(len(m.seq), bool)
        for i, pub in enumerate(self.pubs):
            mine = m.pub == i
            if not mine.any():
                continue
            order = np.sort(np.unique(m.pseq[mine]))
            held = {int(q): bool(covered[mine & (m.pseq == q)].all()) for q in order}
            upto = self.dropped.get(pub, (0, version))[0]
            for q in order.tolist():
                if q != upto + 1 or not held[q]:
                    break
                upto = q
            if upto > self.dropped.get(pub, (0, 0))[0]:
                self.dropped[pub] = (upto, version)
                gone |= mine & (m.pseq <= upto)
        if not gone.any():
            return 0
        keep = ~gone
        table = _concat([r.table for r in self.body]).filter(pa.array(keep))
        self.body = [_Run(_combine([table]), m.pub[keep], m.seq[keep], m.pseq[keep],
                          m.day[keep])]
        dropped = int(gone.sum())
        self.rows -= dropped
        return dropped


def columns_of(frame: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """``frame.select(columns)`` of column names, without a lazy plan."""
    if list(columns) == frame.columns:
        return frame
    return frame[list(columns)] if columns else frame.select([])


class Pending:
    """A node's batches held whose rows are not yet in their partitions' runs.  They are
    handed over together -- one concatenation of the batches, one compaction, one take that
    orders the rows partition after partition, and each partition gets its rows as one
    slice of that (not 16 small concatenations of slices a batch) -- in three steps, so that
    a node does the costly middle one off its acknowledgement path, without its lock
    (:class:`hfq.live.node.LiveTable` hands over every :data:`TAIL` batches in a thread of
    its own): :meth:`take` the batches (under the lock), :func:`prepare` their rows (no
    lock: Arrow tables never change), :meth:`install` them in their partitions (under the
    lock).  While batches are out, their slices stay in their partitions' tails, and a
    read's :meth:`flush` waits for them to be installed before it hands over the rest: a
    read sees every batch held, in order (read-your-writes).

    ``cond``'s lock (by default one of its own, reentrant) is the node's: the caller of
    :meth:`add` and :meth:`flush` holds it.
    """

    def __init__(self, cond: threading.Condition | None = None) -> None:
        self.batches: list[tuple[list[tuple[PartRows, int]], pa.Table]] = []
        self.cond = cond if cond is not None else threading.Condition(threading.RLock())
        self.moving = False
        """Batches were taken by a handover and are not installed yet."""

    def __len__(self) -> int:
        return len(self.batches)

    def add(self, slices: list[tuple[PartRows, int]], rows: pa.Table) -> None:
        """A batch's ``rows``, slice after slice: each slice's partition (that has had it
        :meth:`PartRows.add`-ed) and its rows.  Nothing is handed over here (see
        :meth:`due`)."""
        self.batches.append((slices, rows))

    def due(self) -> bool:
        """Are :data:`TAIL` batches or more held, and none out?"""
        return len(self.batches) >= TAIL and not self.moving

    def take(self) -> list[tuple[list[tuple[PartRows, int]], pa.Table]]:
        """Every batch held, for a handover that :meth:`install` s them (or
        :meth:`give_back` s); waits while another handover's batches are out."""
        with self.cond:
            while self.moving:
                self.cond.wait()
            batches, self.batches = self.batches, []
            self.moving = bool(batches)
            return batches

    def install(self, ready: list[Ready]) -> None:
        """Give each partition its rows :func:`prepare` made of the batches taken."""
        with self.cond:
            try:
                for part, table, count, source in ready:
                    part.extend(table, count, source)
            finally:
                self.moving = False
                self.cond.notify_all()

    def give_back(self, batches: list[tuple[list[tuple[PartRows, int]], pa.Table]]) -> None:
        """Batches taken whose handover failed: held again, first."""
        with self.cond:
            self.batches[:0] = batches
            self.moving = False
            self.cond.notify_all()

    def flush(self) -> None:
        """Hand over every batch held, here (a read; the caller holds the lock)."""
        batches = self.take()
        if not batches:
            return
        try:
            ready = prepare(batches)
        except BaseException:
            self.give_back(batches)
            raise
        self.install(ready)


Ready = tuple[PartRows, pa.Table, int, tuple[_Batch, int] | None]
"""A partition, its rows handed over, how many slices they are, and (one slice of one
batch) the batch and the slice's first row."""


def prepare(batches: list[tuple[list[tuple[PartRows, int]], pa.Table]]) -> list[Ready]:
    """Each partition the ``batches`` have slices of, with their rows in order and how many
    slices they are (for :meth:`PartRows.extend`).  Reads no state that changes: runs
    without the node's lock."""
    if len(batches) == 1:   # a read after each batch: its slices as they are (a
        # partition with two slices of it, of two days, gets them one after the other),
        # the batch converted once for all of them when a read needs its columns
        slices, rows = batches[0]
        batch = _Batch(rows)
        out: list[Ready] = []
        offset = 0
        for part, n in slices:
            out.append((part, rows.slice(offset, n), 1, (batch, offset)))
            offset += n
        return out
    table = _combine([rows for _, rows in batches])
    index: dict[int, int] = {}
    parts: list[PartRows] = []
    codes, sizes = [], []
    for slices, _ in batches:
        for part, n in slices:
            code = index.get(id(part))
            if code is None:
                code = index[id(part)] = len(parts)
                parts.append(part)
            codes.append(code)
            sizes.append(n)
    of_row = np.repeat(np.array(codes, np.int64), np.array(sizes, np.int64))
    counts = np.bincount(of_row, minlength=len(parts))
    slices_of = np.bincount(np.array(codes, np.int64), minlength=len(parts))
    ordered = table.take(pa.array(np.argsort(of_row, kind="stable")))
    out, offset = [], 0
    for part, n, k in zip(parts, counts.tolist(), slices_of.tolist()):
        out.append((part, ordered.slice(offset, n), k, None))
        offset += n
    return out


def _concat(tables: list[pa.Table]) -> pa.Table:
    """``tables`` as one table: of one schema (every slice is conformed to the table's) the
    chunks are only referenced; else the types are unified."""
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables)
    except pa.ArrowInvalid:
        return pa.concat_tables(tables, promote_options="permissive")


def _combine(tables: list[pa.Table]) -> pa.Table:
    """``tables`` as one table of one chunk per column whose dictionaries hold only the
    values its rows use: a slice of a published batch carries the batch's whole dictionary
    (every symbol of the batch), and a reader converting the rows (polars) pays for every
    entry.  Two compact tables combined (``combine_chunks`` unifies the dictionaries) stay
    compact."""
    table = _concat(tables).combine_chunks()
    columns = list(table.columns)
    changed = False
    for i, column in enumerate(columns):
        if not pa.types.is_dictionary(column.type) or column.num_chunks != 1:
            continue
        chunk = column.chunk(0)
        encoded = pc.dictionary_encode(chunk.dictionary_decode())
        if not encoded.type.equals(column.type):
            encoded = encoded.cast(column.type)
        columns[i] = pa.chunked_array([encoded], column.type)
        changed = True
    return pa.Table.from_arrays(columns, schema=table.schema) if changed else table


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """Do ``a`` and ``b`` hold the same rows, in the same order (values compared: whatever
    their dictionaries or chunks; NaN equals NaN, null equals null)?"""
    if a is b:
        return True
    if a.num_rows != b.num_rows or a.schema.names != b.schema.names:
        return False
    left, right = pl.from_arrow(a), pl.from_arrow(b)
    assert isinstance(left, pl.DataFrame) and isinstance(right, pl.DataFrame)
    plain = pl.col(pl.Categorical).cast(pl.String)
    return left.with_columns(plain).equals(right.with_columns(plain))
