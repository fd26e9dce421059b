"""Routing a publisher's batches to partitions, with what earlier batches taught remembered.

A feed sends the same few thousand symbols all day, batch after batch.  :meth:`Scheme.route
<hfq.partition.Compo.route>` hashes each distinct value of a batch again (a Python call per
symbol per batch); a :class:`Router` keeps, per hashed level, the values it has seen and
their buckets -- an Arrow array and a numpy array beside it -- so a batch is routed by one
vectorised lookup (``pyarrow.compute.index_in``) of its dictionary, and only a value never
seen before (a symbol first traded at 14:00) is hashed, once, by the scheme itself.  The
partition paths of the keys are remembered too.  The answer is always the scheme's own
(``Router(s).route(t)`` equals ``s.route(t)``): the memo only caches ``level.bucket``.

Only string, binary and integer columns are remembered: for them Arrow's equality (what
``index_in`` matches) is Python's.  Floating point is not (``-0.0`` and ``0.0`` hash to
different buckets but may match each other), so float levels are routed by the scheme.

Examples
--------
>>> import pyarrow as pa, hfq
>>> scheme = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 16))
>>> r = Router(scheme)
>>> rows = hfq.synth.taq_table(rows_per_day=50, symbols=5)
>>> codes, keys = r.route(rows)
>>> got = scheme.route(rows)
>>> bool((codes == got[0]).all()) and keys == got[1]
True
>>> r.path(keys[0]) == hfq.partition.key_path(scheme, keys[0])
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hfq.errors import SchemaMismatchError
from hfq.partition import Compo, Hash, Range, Scheme, Value, key_path

__all__ = ["Router"]

MAX_REMEMBERED = 1 << 20
"""Distinct values a level remembers; past that it forgets them all and starts again (a
feed of ever new values costs memory only up to this)."""

_PATHS = 1 << 16
"""Partition paths remembered."""


class _Memo:
    """One hashed level's buckets of the values seen so far."""

    def __init__(self, level: Hash | Range) -> None:
        self.level = level
        self.type: pa.DataType | None = None
        self.values = pa.array([], pa.null())
        self.codes = np.zeros(0, np.int64)
        self.last: tuple[pa.Array, np.ndarray] | None = None
        """The last dictionary looked up and its buckets: a feed's batches often carry the
        same dictionary (slices of one table, a handler's fixed symbol list), and comparing
        it (one memcmp) costs far less than a lookup, which hashes the remembered values."""

    def buckets(self, dictionary: pa.Array) -> np.ndarray:
        """The bucket of each value of ``dictionary`` (distinct, no nulls)."""
        last = self.last
        if last is not None and dictionary.equals(last[0]):
            return last[1]
        got = self._buckets(dictionary)
        got.flags.writeable = False   # handed out again: nobody changes it
        self.last = (dictionary, got)
        return got

    def _buckets(self, dictionary: pa.Array) -> np.ndarray:
        if self.type is None or not dictionary.type.equals(self.type) \
                or len(self.values) > MAX_REMEMBERED:
            self.type = dictionary.type
            self.values = pa.array([], dictionary.type)
            self.codes = np.zeros(0, np.int64)
        pos = pc.index_in(dictionary, value_set=self.values)
        if pos.null_count:   # values never seen: hashed once, by the scheme
            new = dictionary.filter(pc.is_null(pos))
            codes = np.array([self.level.bucket(v) for v in new.to_pylist()], np.int64)
            self.values = pa.concat_arrays([self.values, new])
            self.codes = np.concatenate([self.codes, codes])
            pos = pc.index_in(dictionary, value_set=self.values)
        return self.codes[pos.to_numpy(zero_copy_only=False)]

    def route(self, column: pa.ChunkedArray) -> np.ndarray:
        """The bucket of every value of ``column``."""
        if column.null_count:
            raise SchemaMismatchError(f"partition column {self.level.column!r} has "
                                      f"{column.null_count} nulls")
        parts = []
        for chunk in column.chunks:
            if not pa.types.is_dictionary(chunk.type):
                chunk = pc.dictionary_encode(chunk)
            table = self.buckets(chunk.dictionary)
            parts.append(table[chunk.indices.to_numpy(zero_copy_only=False)])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _remembered(level: Scheme, column_type: pa.DataType) -> bool:
    if not isinstance(level, (Hash, Range)):
        return False
    t = column_type.value_type if pa.types.is_dictionary(column_type) else column_type
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t) or pa.types.is_integer(t)


class _Level:
    """A level of the scheme whose ``_codes`` remembers buckets (what the scheme's ``route``
    calls on its levels), or, for a date column's values, reads the day numbers once."""

    def __init__(self, level: Scheme) -> None:
        self.level = level
        self.column = level.column
        self.memo = _Memo(level) if isinstance(level, (Hash, Range)) else None
        self.dated = isinstance(level, Value) and level.by is None
        self.names: dict[int, Any] = {}
        self.days: np.ndarray | None = None
        """The day numbers of the last batch routed (a date column's value level)."""

    def _codes(self, column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
        level = self.level
        self.days = None
        if self.dated and pa.types.is_date32(column.type) and not column.null_count:
            return self._day_codes(column)
        if self.memo is None or not _remembered(level, column.type):
            return level._codes(column)
        width = level.buckets if isinstance(level, Hash) else \
            len(cast(Range, level).boundaries) + 1
        return self.memo.route(column), list(range(width))


    def _day_codes(self, column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
        """What ``Value._codes`` answers of a date32 column (codes in order of first
        appearance, each day's key as the scheme spells it), from the day numbers."""
        days = column.combine_chunks().view(pa.int32()).to_numpy(zero_copy_only=False)
        self.days = days
        if not len(days):
            return np.zeros(0, np.int64), []
        lo, hi = int(days.min()), int(days.max())
        if lo == hi:   # the usual batch: one day
            return np.zeros(len(days), np.int64), [self._name(lo)]
        uniq, first, inverse = np.unique(days, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return rank[inverse.reshape(-1)], [self._name(int(d)) for d in uniq[order].tolist()]

    def _name(self, day: int) -> Any:
        name = self.names.get(day)
        if name is None:
            if len(self.names) >= _PATHS:
                self.names.clear()
            one = pa.chunked_array([pa.array([day], pa.int32()).cast(pa.date32())])
            name = self.names[day] = self.level._codes(one)[1][0]
        return name


@dataclass(frozen=True)
class _Levels:
    first: _Level
    second: _Level


class Router:
    """``scheme.route`` and ``key_path(scheme, key)``, remembering buckets and paths (see the
    module).  Not thread-safe: a publisher routes one batch at a time."""

    def __init__(self, scheme: Scheme | Compo) -> None:
        self.scheme = scheme
        levels = [_Level(level) for level in scheme.levels()]
        self.levels = _Levels(levels[0], levels[-1])
        self.paths: dict[tuple[Any, ...], str] = {}

    def route(self, table: pa.Table) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
        """What ``scheme.route(table)`` answers: a code per row and the key of each code --
        computed by the scheme's own ``route``, its levels' ``_codes`` remembered."""
        if isinstance(self.scheme, Compo):
            return Compo.route(self.levels, table)   # type: ignore[arg-type]
        return type(self.scheme).route(self.levels.first, table)   # type: ignore[arg-type]

    def days(self, column: str) -> np.ndarray | None:
        """The day numbers (int32, days since 1970-01-01) of ``column`` in the last batch
        routed, when a value level of the scheme read them (None: not known)."""
        for level in (self.levels.first, self.levels.second):
            if level.column == column and level.days is not None:
                return level.days
        return None

    def path(self, key: tuple[Any, ...]) -> str:
        """``key_path(scheme, key)``."""
        path = self.paths.get(key)
        if path is None:
            if len(self.paths) >= _PATHS:
                self.paths.clear()
            path = self.paths[key] = key_path(self.scheme, key)
        return path
