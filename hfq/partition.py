"""Partition schemes: which partition each row belongs to, where it lives, and pruning.

A scheme maps every row to a *key*: a tuple with one JSON-safe value per level (an ISO date or
a string for VALUE, a bucket number for HASH and RANGE).  :func:`key_path` turns a key into a
relative directory whose every component is escaped, so no data value can name a path outside
the table directory.

Examples
--------
>>> import pyarrow as pa, datetime as dt
>>> s = Compo(Value("date"), Hash("symbol", 4))
>>> t = pa.table({"date": pa.array([dt.date(2007, 8, 1)] * 2),
...               "symbol": pa.array(["IBM", "../../etc"]).dictionary_encode()})
>>> codes, keys = s.route(t)
>>> [key_path(s, k) for k in keys]  # doctest: +SKIP
['date=2007-08-01/symbol=h2', 'date=2007-08-01/symbol=h0']
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hfq.errors import InvalidNameError, SchemaMismatchError

__all__ = ["Compo", "Hash", "Range", "Scheme", "Value", "encode_component", "key_path",
           "scheme_from_json"]

Key = tuple


class Scheme:
    """Base of the single-level schemes.  ``column`` names the column the level reads."""

    column: str

    def levels(self) -> list[Scheme]:
        return [self]

    def route(self, table: pa.Table) -> tuple[np.ndarray, list[Key]]:
        """Return a partition code per row (int64) and the key of each code."""
        codes, values = self._codes(table.column(self.column))
        return codes, [(v,) for v in values]

    def to_json(self) -> dict:
        raise NotImplementedError

    # per-level hooks --------------------------------------------------------------------------
    def _codes(self, column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
        raise NotImplementedError

    def _component(self, value: Any) -> str:
        raise NotImplementedError

    def _may_match(self, value: Any, lo: Any, hi: Any, members: Collection[Any] | None) -> bool:
        raise NotImplementedError

    def _matcher(self, lo: Any, hi: Any, members: Collection[Any] | None
                 ) -> Callable[[Any], bool] | None:
        """``_may_match`` with the bounds fixed (None: every value may match)."""
        return functools.partial(self._may_match, lo=lo, hi=hi, members=members)


@dataclass(frozen=True)
class Value(Scheme):
    """One partition per distinct value (dates, or symbols when there are few).

    ``by="day"`` partitions a DATETIME/TIMESTAMP column by its UTC calendar day.

    Examples
    --------
    >>> import hfq
    >>> rows = hfq.synth.taq_table(dates=["2007-08-01", "2007-08-02"], rows_per_day=10)
    >>> hfq.Value("date").route(rows)[1]          # the partition keys of these rows
    [('2007-08-01',), ('2007-08-02',)]
    """

    column: str
    by: str | None = None

    def __post_init__(self) -> None:
        if self.by not in (None, "day"):
            raise ValueError(f"Value(by=...) takes None or 'day', not {self.by!r}")

    def to_json(self) -> dict:
        """The scheme as the catalog stores it (:func:`scheme_from_json` reads it back).

        Examples
        --------
        >>> import hfq
        >>> from hfq.partition import scheme_from_json
        >>> hfq.Value("time", by="day").to_json()
        {'kind': 'value', 'column': 'time', 'by': 'day'}
        >>> scheme_from_json(hfq.Value("date").to_json()) == hfq.Value("date")
        True
        """
        return {"kind": "value", "column": self.column, "by": self.by}

    def _codes(self, column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
        if column.null_count:
            raise SchemaMismatchError(
                f"partition column {self.column!r} has {column.null_count} null values")
        if self.by == "day":   # the UTC calendar day, whatever the unit
            ticks = column.cast(pa.timestamp(column.type.unit)).cast(pa.int64())
            per_day = 86400 * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[column.type.unit]
            days = np.floor_divide(ticks.to_numpy(), per_day).astype(np.int32)
            column = pa.chunked_array([pa.array(days, pa.int32()).cast(pa.date32())])
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        enc = pc.dictionary_encode(column).combine_chunks()
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        return codes, [_jsonable(v) for v in enc.dictionary.to_pylist()]

    def _component(self, value: Any) -> str:
        return f"{self.column}={encode_component(str(value))}"

    def _may_match(self, value: Any, lo: Any, hi: Any, members: Collection[Any] | None
                   ) -> bool:
        if members is not None and value not in members:
            return False
        day = str(value)[:10]   # date bounds against a date or an ISO (UTC) timestamp key
        if lo is not None and day < lo:
            return False
        return hi is None or day <= hi


@dataclass(frozen=True)
class Hash(Scheme):
    """``buckets`` partitions by a stable hash (BLAKE2b) of the value's text.

    Examples
    --------
    >>> import hfq
    >>> h = hfq.Hash("symbol", 8)
    >>> h.bucket("IBM"), h.bucket("MSFT")       # the same in every process and on every machine
    (2, 4)
    """

    column: str
    buckets: int

    def __post_init__(self) -> None:
        if not 1 <= self.buckets <= 1_000_000:
            raise ValueError(f"Hash buckets must be 1..1000000, not {self.buckets}")

    def to_json(self) -> dict:
        """The scheme as the catalog stores it (:func:`scheme_from_json` reads it back).

        Examples
        --------
        >>> import hfq
        >>> hfq.Hash("symbol", 8).to_json()
        {'kind': 'hash', 'column': 'symbol', 'buckets': 8}
        """
        return {"kind": "hash", "column": self.column, "buckets": self.buckets}

    def bucket(self, value: Any) -> int:
        """The bucket of one value; the same in every process and on every machine.

        Examples
        --------
        >>> import hfq
        >>> h = hfq.Hash("symbol", 16)
        >>> h.bucket("IBM"), h.bucket("MSFT")     # which partition of a day holds the symbol
        (10, 4)
        """
        return _bucket(str(_jsonable(value)), self.buckets)

    def _codes(self, column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
        return _map_distinct(column, self.bucket, self.column), list(range(self.buckets))

    def _component(self, value: Any) -> str:
        return f"{self.column}=h{int(value)}"

    def _matcher(self, lo: Any, hi: Any, members: Collection[Any] | None
                 ) -> Callable[[Any], bool] | None:
        if members is None:
            return None
        return frozenset(self.bucket(m) for m in members).__contains__   # hashed once a plan


@functools.lru_cache(maxsize=1 << 16)
def _bucket(text: str, buckets: int) -> int:
    """Remembered: planning asks for the bucket of a scan's symbols once per partition."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % buckets


@dataclass(frozen=True)
class Range(Scheme):
    """Buckets between sorted ``boundaries``: bucket i holds b[i-1] <= v < b[i].

    Examples
    --------
    >>> import hfq
    >>> r = hfq.Range("bid", (10.0, 100.0))
    >>> r.bucket(5.0), r.bucket(10.0), r.bucket(500.0)
    (0, 1, 2)
    """

    column: str
    boundaries: tuple

    def __post_init__(self) -> None:
        b = tuple(_jsonable(x) for x in self.boundaries)
        if not b or any(x >= y for x, y in zip(b, b[1:])):
            raise ValueError("Range boundaries must be a non-empty strictly increasing sequence")
        object.__setattr__(self, "boundaries", b)

    def to_json(self) -> dict:
        """The scheme as the catalog stores it (:func:`scheme_from_json` reads it back).

        Examples
        --------
        >>> import hfq
        >>> hfq.Range("bid", (10.0, 100.0)).to_json()
        {'kind': 'range', 'column': 'bid', 'boundaries': [10.0, 100.0]}
        """
        return {"kind": "range", "column": self.column, "boundaries": list(self.boundaries)}

    def bucket(self, value: Any) -> int:
        """The bucket of one value: the number of boundaries at or below it.  Dates and
        times compare as their ISO text, as the boundaries are kept.

        Examples
        --------
        >>> import datetime as dt, hfq
        >>> r = hfq.Range("date", (dt.date(2007, 8, 2), dt.date(2007, 8, 6)))
        >>> r.boundaries
        ('2007-08-02', '2007-08-06')
        >>> r.bucket(dt.date(2007, 8, 1)), r.bucket(dt.date(2007, 8, 2)), r.bucket("2007-09-01")
        (0, 1, 2)
        """
        import bisect
        return bisect.bisect_right(self.boundaries, _jsonable(value))

    def _codes(self, column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
        return (_map_distinct(column, self.bucket, self.column),
                list(range(len(self.boundaries) + 1)))

    def _component(self, value: Any) -> str:
        return f"{self.column}=r{int(value)}"

    def _may_match(self, value: Any, lo: Any, hi: Any, members: Collection[Any] | None
                   ) -> bool:
        if members is not None:
            return value in {self.bucket(m) for m in members}
        if lo is not None and value < self.bucket(lo):
            return False
        # "2024-01-02" sorts before every instant of that day: bound the day's end instead
        return hi is None or value <= self.bucket(f"{hi}\uffff")


@dataclass(frozen=True)
class Compo:
    """Two levels, e.g. ``Compo(Value("date"), Hash("symbol", 100))``.

    Examples
    --------
    >>> import hfq
    >>> from hfq.partition import key_path
    >>> scheme = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 8))
    >>> keys = scheme.route(hfq.synth.taq_table(rows_per_day=10, symbols=3))[1]
    >>> keys
    [('2007-08-01', 2), ('2007-08-01', 4)]
    >>> key_path(scheme, keys[0])                # the partition's directory in the table
    'date=v2007-08-01/symbol=h2'
    """

    first: Scheme
    second: Scheme

    def __post_init__(self) -> None:
        if isinstance(self.first, Compo) or isinstance(self.second, Compo):
            raise ValueError("Compo takes two single-level schemes")

    def levels(self) -> list[Scheme]:
        """The two single-level schemes, outer first.

        Examples
        --------
        >>> import hfq
        >>> hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 8)).levels()
        [Value(column='date', by=None), Hash(column='symbol', buckets=8)]
        """
        return [self.first, self.second]

    def route(self, table: pa.Table) -> tuple[np.ndarray, list[Key]]:
        """The partition of each row of ``table``: a code per row (int64, an index into the
        keys) and the key of each code, only keys that have rows.

        Examples
        --------
        >>> import datetime as dt, pyarrow as pa, hfq
        >>> rows = pa.table({"date": [dt.date(2007, 8, 1)] * 3 + [dt.date(2007, 8, 2)],
        ...                  "symbol": ["IBM", "MSFT", "IBM", "IBM"]})
        >>> codes, keys = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 16)).route(rows)
        >>> codes.tolist()
        [1, 0, 1, 2]
        >>> keys
        [('2007-08-01', 4), ('2007-08-01', 10), ('2007-08-02', 10)]
        """
        c1, v1 = self.first._codes(table.column(self.first.column))
        c2, v2 = self.second._codes(table.column(self.second.column))
        codes = c1 * len(v2) + c2
        used = np.flatnonzero(np.bincount(codes, minlength=len(v1) * len(v2)))
        remap = np.full(len(v1) * len(v2), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        keys = [(v1[c // len(v2)], v2[c % len(v2)]) for c in used.tolist()]
        return remap[codes], keys

    def to_json(self) -> dict:
        """The scheme as the catalog stores it (:func:`scheme_from_json` reads it back).

        Examples
        --------
        >>> import hfq
        >>> scheme = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 8))
        >>> scheme.to_json()   # doctest: +NORMALIZE_WHITESPACE
        {'kind': 'compo', 'levels': [{'kind': 'value', 'column': 'date', 'by': None},
                                     {'kind': 'hash', 'column': 'symbol', 'buckets': 8}]}
        """
        return {"kind": "compo", "levels": [self.first.to_json(), self.second.to_json()]}


def scheme_from_json(data: dict) -> Scheme | Compo:
    kind = data["kind"]
    if kind == "compo":
        a, b = (scheme_from_json(x) for x in data["levels"])
        return Compo(cast(Scheme, a), cast(Scheme, b))   # __post_init__ rejects a nested Compo
    if kind == "value":
        return Value(data["column"], by=data.get("by"))
    if kind == "hash":
        return Hash(data["column"], data["buckets"])
    if kind == "range":
        return Range(data["column"], tuple(data["boundaries"]))
    raise ValueError(f"unknown partition scheme {kind!r}")


def check_scheme(scheme: Scheme | Compo, columns: Iterable[str]) -> None:
    names = set(columns)
    for level in scheme.levels():
        if level.column not in names:
            raise InvalidNameError(f"partition column {level.column!r} is not in the schema "
                                   f"({', '.join(sorted(names))})")


def key_path(scheme: Scheme | Compo, key: Key) -> str:
    """Relative directory of a partition: escaped ``column=value`` components."""
    return "/".join(level._component(v) for level, v in zip(scheme.levels(), key))


def matcher(scheme: Scheme | Compo, bounds: dict[str, tuple]) -> Callable[[Key], bool]:
    """A test of partition keys: False when no row of the partition can satisfy ``bounds``
    (a column -> ``(lo, hi, members)``, any of them None).  The work that depends on the
    bounds alone (hashing the symbols asked for) is done here once, not once per key."""
    tests = []
    for i, level in enumerate(scheme.levels()):
        if level.column in bounds:
            test = level._matcher(*bounds[level.column])
            if test is not None:
                tests.append((i, test))
    if not tests:
        return lambda key: True
    if len(tests) == 1:
        (i, test), = tests
        return lambda key: test(key[i])
    return lambda key: all(test(key[i]) for i, test in tests)


_SAFE = re.compile(r"[A-Za-z0-9_\-]")
_MAX_COMPONENT = 96


def encode_component(text: str) -> str:
    """Escape any text into one safe, injective path component.

    Letters, digits, ``_`` and ``-`` stay; every other UTF-8 byte becomes ``%XX`` (so ``.``,
    ``/``, ``\\``, NUL cannot appear).  The result starts with ``v``, so it is never empty, ``.``
    or ``..``.  Text whose escape would be longer than 96 characters becomes ``h`` + a SHA-256
    digest (the real value stays in the catalog).

    >>> encode_component("../x")
    'v%2E%2E%2Fx'
    >>> encode_component("")
    'v'
    """
    out = []
    for ch in text:
        if _SAFE.fullmatch(ch):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    encoded = "v" + "".join(out)
    if len(encoded) > _MAX_COMPONENT:
        return "h" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return encoded


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:   # one spelling per instant, so text order is time order
            value = value.astimezone(dt.timezone.utc)
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _map_distinct(column: pa.ChunkedArray, fn: Callable[[Any], int], name: str) -> np.ndarray:
    """Apply ``fn`` to each distinct value and spread the results over the rows."""
    if column.null_count:
        raise SchemaMismatchError(f"partition column {name!r} has {column.null_count} nulls")
    parts = []
    for chunk in column.chunks:
        if not pa.types.is_dictionary(chunk.type):
            chunk = pc.dictionary_encode(chunk)
        table = np.array([fn(v) for v in chunk.dictionary.to_pylist()], dtype=np.int64)
        parts.append(table[chunk.indices.to_numpy(zero_copy_only=False)])
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(parts)
