"""The live rows a node holds of one partition, and which of them a snapshot reads.

Rows arrive as slices (:class:`~hfq.live.log.Slice`: one published batch's rows of this
partition and one day).  Each row carries its slice's publisher, sequence number, slice number
(``pseq``) and day in numpy arrays beside the Arrow rows, so a snapshot's choice -- "these
publishers up to these sequence numbers, these slice numbers, not what the written-down cut
holds" -- is one vectorised mask over the partition, not a loop over its slices.  New slices
wait in a short tail that is merged into the body every :data:`TAIL` slices.

Examples
--------
>>> import pyarrow as pa
>>> p = PartRows(["2024-01-02", 0])
>>> p.add("feed", 1, 1, "2024-01-02", pa.table({"x": [1, 2]}))
>>> p.add("feed", 2, 2, "2024-01-02", pa.table({"x": [3]}))
>>> p.take({"feed": 1}, {"feed": (1, 9)}, {}, ["x"]).column("x").to_pylist()
[1, 2]
>>> p.take({"feed": 9}, {"feed": (1, 9)}, {"2024-01-02": {"feed": 1}}, ["x"]).num_rows
1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["PartRows", "Runs", "same_rows"]

TAIL = 128
"""Slices kept apart before they are merged into the body."""


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
class _Meta:
    pub: np.ndarray
    seq: np.ndarray
    pseq: np.ndarray
    day: np.ndarray


class PartRows:
    """One partition's live rows on one node (the caller holds the lock)."""

    def __init__(self, key: Sequence[Any]) -> None:
        self.key = list(key)
        self.pubs: list[str] = []            # publisher codes
        self.days: list[str | None] = []     # day codes
        self.body: pa.Table | None = None
        self.meta = _Meta(*(np.empty(0, np.int64) for _ in range(4)))
        self.tail: list[tuple[int, int, int, int, pa.Table]] = []
        self.runs_of_body: list[pa.Table] = []
        """The body's pieces, each one chunk, sizes falling (see :meth:`_merge`)."""
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

    def add(self, pub: str, seq: int, pseq: int, day: str | None, rows: pa.Table) -> None:
        self.tail.append((self._code(self.pubs, pub), seq, pseq, self._code(self.days, day),
                          rows))
        self.rows += rows.num_rows
        self.runs.setdefault(pub, Runs()).add(pseq)
        last = self.last.get(pub)
        if last is None:
            self.last[pub] = (seq, pseq, pseq - 1)
        elif seq > last[0]:
            self.last[pub] = (seq, pseq, last[1])
        elif seq == last[0]:   # a second slice of the same batch (another day)
            self.last[pub] = (seq, max(pseq, last[1]), last[2])
        if len(self.tail) >= TAIL:
            self._merge()

    def _merge(self) -> None:
        if not self.tail:
            return
        tables = [t for *_, t in self.tail]
        sizes = np.array([t.num_rows for t in tables], dtype=np.int64)
        cols = [np.repeat(np.array([s[i] for s in self.tail], dtype=np.int64), sizes)
                for i in range(4)]
        self.tail = []
        runs = self.runs_of_body
        runs.append(_compact(_concat(tables).combine_chunks()))
        # a binary counter of runs: two neighbours of like size become one, so a row is
        # copied O(log n) times over the day, not at every merge (a query merges the tail)
        while len(runs) > 1 and runs[-2].num_rows <= 2 * runs[-1].num_rows:
            last = runs.pop()
            runs[-1] = _concat([runs[-1], last]).combine_chunks()   # compact: a union
        self.body = runs[0] if len(runs) == 1 else _concat(runs)
        m = self.meta
        self.meta = _Meta(*(np.concatenate([old, c]) for old, c in
                            zip((m.pub, m.seq, m.pseq, m.day), cols)))

    def mask(self, seqs: Mapping[str, int], picks: Mapping[str, tuple[int, int]],
             cut: Mapping[str, Mapping[str, int]]) -> np.ndarray:
        """The rows of slices of a publisher in ``picks`` with ``lo <= pseq <= hi`` and
        ``seq <= seqs[pub]``, that no ``cut[day][pub] >= seq`` holds (body rows only)."""
        self._merge()
        m = self.meta
        n = len(m.seq)
        codes = len(self.pubs)
        top = np.full(codes, -1, np.int64)
        lo = np.zeros(codes, np.int64)
        hi = np.full(codes, -1, np.int64)
        for i, pub in enumerate(self.pubs):
            if pub in picks and pub in seqs:
                top[i] = seqs[pub]
                lo[i], hi[i] = picks[pub]
        keep = (m.seq <= top[m.pub]) & (m.pseq >= lo[m.pub]) & (m.pseq <= hi[m.pub]) \
            if n else np.zeros(0, bool)
        if cut and n:
            keep &= self._uncut(cut)
        return keep

    def _uncut(self, cut: Mapping[str, Mapping[str, int]]) -> np.ndarray:
        """The body rows ``cut`` does not hold."""
        m = self.meta
        limit = np.full((max(1, len(self.days)), max(1, len(self.pubs))), -1, np.int64)
        for d, day in enumerate(self.days):
            for i, pub in enumerate(self.pubs):
                limit[d, i] = cut.get(str(day), {}).get(pub, -1) if day is not None else -1
        return m.seq > limit[m.day, m.pub]

    def live_days(self, cut: Mapping[str, Mapping[str, int]]) -> list[str]:
        """The days of the rows held that ``cut`` does not hold (the tail is not merged for
        this: a snapshot asks it of every partition)."""
        m = self.meta
        codes = set(np.unique(m.day[self._uncut(cut)]).tolist()) if len(m.day) else set()
        for pub, seq, _, day, _ in self.tail:
            text = self.days[day]
            if text is not None and seq > cut.get(str(text), {}).get(self.pubs[pub], -1):
                codes.add(day)
        return sorted(str(self.days[c]) for c in codes if self.days[c] is not None)

    def take(self, seqs: Mapping[str, int], picks: Mapping[str, tuple[int, int]],
             cut: Mapping[str, Mapping[str, int]], columns: Sequence[str]) -> pa.Table:
        """The rows :meth:`mask` keeps, ``columns`` of them, in arrival order."""
        keep = self.mask(seqs, picks, cut)
        if self.body is None or not keep.any():
            return self._empty(columns)
        body = self.body.select(list(columns))
        return body if keep.all() else body.filter(pa.array(keep))

    def _empty(self, columns: Sequence[str]) -> pa.Table:
        if self.body is not None:
            return self.body.select(list(columns)).slice(0, 0)
        return pa.table({})

    def drop(self, cut: Mapping[str, Mapping[str, int]], version: int) -> int:
        """Forget the rows ``cut`` holds that form a prefix of each publisher's slices;
        returns the rows dropped.  The prefix is remembered in :attr:`dropped`."""
        self._merge()
        m = self.meta
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
        assert self.body is not None
        self.body = _compact(self.body.filter(pa.array(keep)).combine_chunks())
        self.runs_of_body = [self.body]
        self.meta = _Meta(m.pub[keep], m.seq[keep], m.pseq[keep], m.day[keep])
        dropped = int(gone.sum())
        self.rows -= dropped
        return dropped


def _concat(tables: list[pa.Table]) -> pa.Table:
    """``tables`` as one table: of one schema (every slice is conformed to the table's) the
    chunks are only referenced; else the types are unified."""
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables)
    except pa.ArrowInvalid:
        return pa.concat_tables(tables, promote_options="permissive")


def _compact(table: pa.Table) -> pa.Table:
    """``table`` (one chunk) with each dictionary holding only the values its rows use: a
    slice of a published batch carries the batch's whole dictionary (every symbol of the
    batch), and a reader converting the rows (polars) pays for every entry.  Two compact
    tables combined (``combine_chunks`` unifies the dictionaries) stay compact."""
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
