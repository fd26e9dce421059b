"""Column types and the built-in table schemas.

A :class:`Schema` is an ordered list of named :class:`ColumnType` columns.  Each column type maps
to one Arrow type; :meth:`Schema.conform` turns user data (pyarrow, polars, pandas) into exactly
that Arrow schema, or raises :class:`~hfq.errors.SchemaMismatchError` listing every difference.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from hfq.errors import InvalidNameError, SchemaMismatchError

__all__ = [
    "BOOL", "CHAR", "DATE", "DATETIME", "DOUBLE", "FLOAT", "INT", "LONG", "SECOND", "SHORT",
    "STRING", "SYMBOL", "TIME", "TIME_NS", "TIMESTAMP", "TYPES", "ColumnType", "Schema",
    "DEVICE_INFO", "L2", "NYSE_QUOTES", "NYSE_TRADES", "READINGS", "TAQ", "TRADES",
]


@dataclass(frozen=True)
class ColumnType:
    """A storage type: its hfq name and the Arrow type it is stored and returned as.

    The types are the module's constants (:data:`SYMBOL`, :data:`DOUBLE`, ...); ``TYPES``
    finds one by name.

    Examples
    --------
    >>> from hfq import schema as s
    >>> s.DOUBLE.name, s.DOUBLE.arrow
    ('DOUBLE', DataType(double))
    >>> s.SYMBOL.arrow              # symbols are stored dictionary-encoded
    DictionaryType(dictionary<values=string, indices=int32, ordered=0>)
    >>> s.TYPES["SECOND"].arrow
    Time32Type(time32[s])
    """

    name: str
    arrow: pa.DataType

    def __repr__(self) -> str:
        return self.name


SYMBOL = ColumnType("SYMBOL", pa.dictionary(pa.int32(), pa.string()))
CHAR = ColumnType("CHAR", pa.dictionary(pa.int32(), pa.string()))
STRING = ColumnType("STRING", pa.string())
DATE = ColumnType("DATE", pa.date32())
SECOND = ColumnType("SECOND", pa.time32("s"))
TIME = ColumnType("TIME", pa.time32("ms"))
TIME_NS = ColumnType("TIME_NS", pa.time64("ns"))
DATETIME = ColumnType("DATETIME", pa.timestamp("s", tz="UTC"))
TIMESTAMP = ColumnType("TIMESTAMP", pa.timestamp("ns"))
BOOL = ColumnType("BOOL", pa.bool_())
SHORT = ColumnType("SHORT", pa.int16())
INT = ColumnType("INT", pa.int32())
LONG = ColumnType("LONG", pa.int64())
FLOAT = ColumnType("FLOAT", pa.float32())
DOUBLE = ColumnType("DOUBLE", pa.float64())

TYPES: dict[str, ColumnType] = {
    t.name: t for t in (SYMBOL, CHAR, STRING, DATE, SECOND, TIME, TIME_NS, DATETIME, TIMESTAMP,
                        BOOL, SHORT, INT, LONG, FLOAT, DOUBLE)
}

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def check_name(name: str, what: str) -> str:
    """Return ``name`` if it is a safe identifier, else raise :class:`InvalidNameError`."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidNameError(
            f"invalid {what} name {name!r}: use 1-128 letters, digits or '_', "
            "not starting with a digit")
    return name


class Schema:
    """An ordered mapping of column name -> :class:`ColumnType`.

    Examples
    --------
    >>> from hfq import schema as s
    >>> sch = s.Schema({"symbol": s.SYMBOL, "price": s.DOUBLE})
    >>> sch.names
    ['symbol', 'price']
    >>> sch["price"]
    DOUBLE
    """

    def __init__(self, columns: Mapping[str, ColumnType] | Iterable[tuple[str, ColumnType]]):
        items = list(columns.items() if isinstance(columns, Mapping) else columns)
        self._columns: dict[str, ColumnType] = {}
        for name, ctype in items:
            check_name(name, "column")
            if name in self._columns:
                raise InvalidNameError(f"column {name!r} appears twice in the schema")
            if isinstance(ctype, str):
                ctype = _type_by_name(ctype)
            self._columns[name] = ctype
        if not self._columns:
            raise InvalidNameError("a schema needs at least one column")

    # -- mapping-like -------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """The column names, in order.

        Examples
        --------
        >>> from hfq import schema as s
        >>> s.TAQ.names[:4]
        ['symbol', 'date', 'time', 'bid']
        """
        return list(self._columns)

    def __getitem__(self, name: str) -> ColumnType:
        try:
            return self._columns[name]
        except KeyError:
            raise SchemaMismatchError(
                f"no column {name!r}; the columns are {', '.join(self._columns)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __iter__(self) -> Iterator[tuple[str, ColumnType]]:
        return iter(self._columns.items())

    def __len__(self) -> int:
        return len(self._columns)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and list(self) == list(other)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}: {t.name}" for n, t in self)
        return f"Schema({inner})"

    # -- conversions --------------------------------------------------------------------------
    @functools.cached_property
    def _exact(self) -> tuple[pa.Schema, list[tuple[str, ColumnType]]]:
        """:attr:`arrow`, and the CHAR columns: what :meth:`conform` still checks of a table
        already in this schema."""
        return self.arrow, [(n, t) for n, t in self if t.name == "CHAR"]

    @property
    def arrow(self) -> pa.Schema:
        """The Arrow schema the table's data is stored and returned in.

        Examples
        --------
        >>> from hfq import schema as s
        >>> s.Schema({"symbol": s.SYMBOL, "time": s.SECOND, "bid": s.DOUBLE}).arrow
        symbol: dictionary<values=string, indices=int32, ordered=0>
        time: time32[s]
        bid: double
        """
        return pa.schema([pa.field(n, t.arrow) for n, t in self])

    def select(self, names: Iterable[str]) -> Schema:
        """The schema of some columns, in the order given.

        Examples
        --------
        >>> from hfq import schema as s
        >>> s.TAQ.select(["bid", "symbol"])
        Schema(bid: DOUBLE, symbol: SYMBOL)
        """
        return Schema([(n, self[n]) for n in names])

    def to_json(self) -> list[list[str]]:
        """``[[name, type name], ...]``, as the catalog stores it (see :meth:`from_json`).

        Examples
        --------
        >>> from hfq import schema as s
        >>> s.Schema({"symbol": s.SYMBOL, "price": s.DOUBLE}).to_json()
        [['symbol', 'SYMBOL'], ['price', 'DOUBLE']]
        """
        return [[n, t.name] for n, t in self]

    @classmethod
    def from_json(cls, data: list[list[str]]) -> Schema:
        """The schema :meth:`to_json` wrote (type names in any case).

        Examples
        --------
        >>> from hfq import schema as s
        >>> s.Schema.from_json([["symbol", "SYMBOL"], ["price", "double"]])
        Schema(symbol: SYMBOL, price: DOUBLE)
        >>> s.Schema.from_json(s.TAQ.to_json()) == s.TAQ
        True
        """
        return cls([(n, _type_by_name(t)) for n, t in data])

    def conform(self, table: pa.Table, *, where: str = "") -> pa.Table:
        """Cast ``table`` to this schema, or raise listing every difference.

        Columns are matched by name (order does not matter).  Casts that cannot lose information
        (int32 -> int64, string -> dictionary, timestamp units...) are applied; anything else is a
        :class:`SchemaMismatchError`.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from hfq import schema as s
        >>> sch = s.Schema({"symbol": s.SYMBOL, "size": s.LONG})
        >>> data = pa.table({"size": pa.array([100, 200], pa.int32()), "symbol": ["IBM", "GE"]})
        >>> sch.conform(data).schema == sch.arrow
        True
        >>> floats = pa.table({"symbol": ["IBM"], "size": [1.5]})
        >>> sch.conform(floats, where="batch 3")   # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
            ...
        hfq.errors.SchemaMismatchError: batch 3: data does not match the table schema;
        column 'size': got double, expected LONG (int64): floats are not converted to integers
        implicitly
        """
        exact, chars = self._exact
        if table.schema.equals(exact, check_metadata=True):   # as stored: only CHAR limits
            problems = [_mismatch(name, exact.field(name).type, ctype, exc)
                        for name, ctype in chars
                        for exc in _char_errors(table.column(name))]
            if not problems:
                return table
            raise SchemaMismatchError((f"{where}: " if where else "")
                                      + "data does not match the table schema; "
                                      + "; ".join(problems))
        problems = []
        have = {f.name: f.type for f in table.schema}
        missing = [n for n in self.names if n not in have]
        extra = [n for n in have if n not in self._columns]
        if missing:
            problems.append(f"missing columns: {', '.join(missing)}")
        if extra:
            problems.append(f"unexpected columns: {', '.join(extra)}")
        arrays = []
        for name, ctype in self:
            if name not in have:
                continue
            try:
                arrays.append(_cast(table.column(name), ctype))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
                    ValueError) as exc:
                problems.append(_mismatch(name, have[name], ctype, exc))
        if problems:
            prefix = f"{where}: " if where else ""
            raise SchemaMismatchError(prefix + "data does not match the table schema; "
                                      + "; ".join(problems))
        return pa.Table.from_arrays(arrays, schema=self.arrow)


def _mismatch(name: str, have: pa.DataType, ctype: ColumnType, exc: Exception) -> str:
    return f"column {name!r}: got {have}, expected {ctype.name} ({ctype.arrow}): {_short(exc)}"


def _char_errors(col: pa.ChunkedArray) -> list[ValueError]:
    try:
        _check_chars(col)
    except ValueError as exc:
        return [exc]
    return []


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200]


def _type_by_name(name: str) -> ColumnType:
    try:
        return TYPES[name.upper()]
    except KeyError:
        raise InvalidNameError(
            f"unknown column type {name!r}; choose one of {', '.join(TYPES)}") from None


def _cast(col: pa.ChunkedArray, ctype: ColumnType) -> pa.ChunkedArray:
    target = ctype.arrow
    typ = col.type
    if typ == target:
        if ctype.name == "CHAR":
            _check_chars(col)
        return col
    if pa.types.is_dictionary(target):
        if pa.types.is_dictionary(typ):
            col = col.cast(pa.dictionary(typ.index_type, pa.string()))
            col = col.cast(pa.dictionary(pa.int32(), pa.string()))
        elif pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_null(typ):
            col = pc.dictionary_encode(col.cast(pa.string()))
            col = col.cast(target)
        else:
            raise ValueError("expected strings")
        if ctype.name == "CHAR":
            _check_chars(col)
        return col
    if pa.types.is_string(target):
        if pa.types.is_dictionary(typ) or pa.types.is_large_string(typ) or pa.types.is_null(typ):
            return col.cast(target)
        raise ValueError("expected strings")
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_dictionary(typ):
        raise ValueError("strings are not converted implicitly")
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(typ):
        if (typ.tz is None) != (target.tz is None):
            if target.tz is not None:   # naive -> UTC: declare it
                col = col.cast(pa.timestamp(typ.unit, tz=target.tz))
            else:
                raise ValueError("time-zone aware timestamps need a TIMESTAMP/DATETIME with tz")
    if pa.types.is_floating(typ) and pa.types.is_integer(target):
        raise ValueError("floats are not converted to integers implicitly")
    if pa.types.is_floating(typ) and pa.types.is_floating(target) \
            and target.bit_width < typ.bit_width:
        raise ValueError("floats are not narrowed implicitly (precision would be lost)")
    if pa.types.is_timestamp(typ) and pa.types.is_date(target):
        return _timestamps_to_dates(col, target)
    if pa.types.is_duration(typ) and pa.types.is_time(target):
        return _durations_to_times(col, target)
    return col.cast(target, safe=True)


def _timestamps_to_dates(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """Timestamps at midnight as dates (what ``to_pandas`` makes of a DATE column); any other
    time of day is refused rather than cut."""
    naive = col.cast(pa.timestamp(col.type.unit)) if col.type.tz is not None else col
    dates = naive.cast(pa.date32(), safe=False)
    if pc.all(pc.equal(dates.cast(naive.type), naive)).as_py() not in (True, None):
        raise ValueError("timestamps with a time of day are not cut to dates implicitly "
                         "(the time of day would be lost)")
    return dates.cast(target)


def _durations_to_times(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """Durations since midnight (``to_pandas``' ``timedelta64`` for SECOND and TIME columns) as
    times of day: each must lie in [0, 24 h) and be exact in the column's unit."""
    unit = target.unit
    exact = col.cast(pa.duration(unit), safe=True)
    ticks = exact.cast(pa.int64())
    day = 86_400 * {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    low, high = pc.min(ticks).as_py(), pc.max(ticks).as_py()
    if low is not None and (low < 0 or high >= day):
        raise ValueError("durations must lie in [0, 24 h) to be times of day")
    integer = pa.int32() if target.bit_width == 32 else pa.int64()
    return ticks.cast(integer).cast(target)


_CHARS_OK: list[pa.Array] = []
"""The last CHAR dictionary found within the limit: a feed's batches (``publish``) often
carry the same one, and comparing it costs less than measuring it again."""


def _check_chars(col: pa.ChunkedArray) -> None:
    """CHAR holds at most one character; checks each chunk's dictionary, not every row."""
    for chunk in col.chunks:
        dictionary = chunk.dictionary
        known = _CHARS_OK[:1]
        if known and dictionary.equals(known[0]):
            continue
        longest = pc.max(pc.utf8_length(dictionary)).as_py() if len(dictionary) else None
        if longest is not None and longest > 1:
            raise ValueError("CHAR values must be at most one character")
        _CHARS_OK[:] = [dictionary]


def _columns(*pairs: tuple[str, ColumnType]) -> list[tuple[str, ColumnType]]:
    return list(pairs)


TAQ = Schema(_columns(
    ("symbol", SYMBOL), ("date", DATE), ("time", SECOND), ("bid", DOUBLE), ("ofr", DOUBLE),
    ("bidsiz", INT), ("ofrsiz", INT), ("mode", INT), ("ex", CHAR), ("mmid", SYMBOL),
))
"""NYSE TAQ level-1 quotes (table ``quotes``)."""

TRADES = Schema(_columns(
    ("symbol", SYMBOL), ("date", DATE), ("time", TIME), ("price", DOUBLE), ("size", INT),
    ("ex", CHAR), ("cond", SYMBOL),
))
"""Trades: one row per print."""


NYSE_QUOTES = Schema(_columns(
    ("symbol", SYMBOL), ("date", DATE), ("time", TIME_NS), ("ex", CHAR), ("bid", DOUBLE),
    ("bidsiz", INT), ("ofr", DOUBLE), ("ofrsiz", INT), ("cond", CHAR), ("seq", LONG),
    ("nbbo_ind", CHAR), ("finra_bbo_ind", CHAR), ("ssr", CHAR), ("participant_time", TIME_NS),
    ("finra_adf_time", TIME_NS),
))
"""NYSE Daily TAQ quotes (``EQY_US_ALL_BBO_YYYYMMDD``, 2026 format): times of day to the
nanosecond, the participant's and FINRA ADF's timestamps; the offer is named ``ofr`` like
:data:`TAQ`'s, so every quote analytic applies (:mod:`hfq.ingest.taq` maps the file's
columns)."""

NYSE_TRADES = Schema(_columns(
    ("symbol", SYMBOL), ("date", DATE), ("time", TIME_NS), ("ex", CHAR), ("cond", SYMBOL),
    ("size", INT), ("price", DOUBLE), ("stop", CHAR), ("corr", SHORT), ("seq", LONG),
    ("trade_id", LONG), ("source", CHAR), ("trf", CHAR), ("participant_time", TIME_NS),
    ("trf_time", TIME_NS),
))
"""NYSE Daily TAQ trades (``EQY_US_ALL_TRADE_YYYYMMDD``, 2026 format)."""


def _l2_columns() -> list[tuple[str, ColumnType]]:
    cols = [("UpdateTime", TIME), ("TradeDate", DATE), ("Market", SYMBOL), ("SecurityID", SYMBOL),
            ("PreCloPrice", DOUBLE), ("OpenPrice", DOUBLE), ("HighPrice", DOUBLE),
            ("LowPrice", DOUBLE), ("LastPrice", DOUBLE), ("TradNumber", INT),
            ("TradVolume", INT), ("Turnover", DOUBLE), ("TotalBidVol", INT),
            ("WAvgBidPri", DOUBLE), ("TotalAskVol", INT), ("WAvgAskPri", DOUBLE),
            ("IOPV", DOUBLE)]
    for prefix, ctype in (("AskPrice", DOUBLE), ("AskVolume", INT), ("BidPrice", DOUBLE),
                          ("BidVolume", INT), ("NumOrdersB", INT), ("NumOrdersS", INT)):
        cols += [(f"{prefix}{i}", ctype) for i in range(1, 11)]
    cols.append(("LocalTime", TIME))
    return cols


L2 = Schema(_l2_columns())
"""China level-2 snapshots (table ``tick``), 78 columns."""

READINGS = Schema(_columns(
    ("time", DATETIME), ("device_id", SYMBOL), ("battery_level", INT),
    ("battery_status", SYMBOL), ("battery_temperature", DOUBLE), ("bssid", SYMBOL),
    ("cpu_avg_1min", DOUBLE), ("cpu_avg_5min", DOUBLE), ("cpu_avg_15min", DOUBLE),
    ("mem_free", LONG), ("mem_used", LONG), ("rssi", SHORT), ("ssid", SYMBOL),
))
"""Device sensor readings (TimescaleDB ``devices`` sample, table ``readings``)."""

DEVICE_INFO = Schema(_columns(
    ("device_id", SYMBOL), ("api_version", SYMBOL), ("manufacturer", SYMBOL),
    ("model", SYMBOL), ("os_name", SYMBOL),
))
"""One row per device (table ``device_info``)."""
