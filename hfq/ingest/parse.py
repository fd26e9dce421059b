"""Turning CSV text fields into hfq column types: vectorised fast paths and exact validators.

What a CSV field may hold, by column type (anything else is rejected with the file, line,
column and value; spaces or tabs around a number are ignored, as Arrow's parser does):

========================  ===========================================================
DATE                      exactly ``YYYYMMDD`` (8 digits) or ISO ``YYYY-MM-DD``
SECOND                    ``H:MM:SS`` or ``HH:MM:SS``, 00:00:00 to 23:59:59, optionally
                          with a fraction of zeros (``09:30:00.000000000``)
TIME                      as SECOND, optionally with ``.f`` to ``.fff`` (milliseconds),
                          further digits only zeros
SHORT, INT, LONG          decimal digits with an optional leading ``-``, in range (no ``+``,
                          no hex ``0x``, no ``_``)
DOUBLE, FLOAT             a decimal number (``1``, ``-1.5``, ``.5``, ``2.``, ``1e-3``),
                          ``inf``/``infinity``/``nan`` in any case, with an optional sign
BOOL                      ``true``/``false``/``1``/``0`` (also ``True``, ``TRUE``...)
DATETIME, TIMESTAMP       ``YYYY-MM-DD[( |T)hh[:mm[:ss[.f]]]][Z|+hh[[:]mm]]``: ISO 8601
                          (Arrow's parser); without an offset the time is UTC; DATETIME
                          (seconds) takes no fraction, TIMESTAMP (ns) up to 9 digits and
                          1677-09-21 to 2262-04-11 only
SYMBOL, STRING            any text; CHAR at most one character
========================  ===========================================================

An empty field (or one of the load's ``null_values``) is null, for every type -- text
included, as DuckDB, pandas and polars read the same file -- except in a partition column,
where it is rejected; ``load_csv(..., empty_text="empty")`` keeps empty text as ``''``.

The fast paths (:func:`dates_of`, :func:`hms_seconds`, :func:`times_of`) convert whole Arrow
columns and raise ``ValueError`` at the first doubt; the caller then falls back to
:func:`check_field`, the slow, exact, per-field validator whose message names the bad value.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import cast

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from hfq.schema import ColumnType

__all__ = ["check_field", "dates_of", "hms_seconds", "invalid", "parse_date",
           "times_of", "timestamps_of"]

_INT_RANGE = {"SHORT": (-(2 ** 15), 2 ** 15 - 1), "INT": (-(2 ** 31), 2 ** 31 - 1),
              "LONG": (-(2 ** 63), 2 ** 63 - 1)}
_INT = re.compile(r"[ \t]*-?[0-9]+[ \t]*")
_FLOAT = re.compile(r"[ \t]*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                    r"|(?i:inf|infinity|nan))[ \t]*")
_BOOL = frozenset(("true", "True", "TRUE", "1", "false", "False", "FALSE", "0"))
_HOURS = r"(?:[01]?[0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
#: a fraction finer than the type's unit is accepted when its extra digits are zeros (what
#: hfq itself writes: ``09:00:00.000000000`` for a SECOND held in nanoseconds)
_TIME_RE = {"SECOND": _HOURS + r"(?:\.0{1,9})?",
            "TIME": _HOURS + r"(?:\.[0-9]{1,3}0{0,6})?"}
_TIME_HELP = {"SECOND": "H:MM:SS or HH:MM:SS; a fraction only of zeros",
              "TIME": "H:MM:SS or HH:MM:SS, optionally .fff; further digits only zeros"}
_STAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[ T]([0-9]{2})(?::([0-9]{2})"
                    r"(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?)?)?(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?")
#: an offset after a time of day (the "-02" that ends the date "2024-01-02" is not one)
_ZONE = r"[ T][0-9:.]+(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?)$"
_STAMP_HELP = "YYYY-MM-DD[ hh:mm:ss[.f]][Z|+hh:mm]"
_EPOCH = dt.datetime(1970, 1, 1)
_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)


def invalid(text: str, type_name: str, why: str = "") -> str:
    """The one form of every rejected value: ``value 'v' is not a valid DATE (why)``."""
    return f"value {text!r} is not a valid {type_name}" + (f" ({why})" if why else "")


# -- DATE -------------------------------------------------------------------------------------
def parse_date(text: str) -> dt.date:
    """``YYYYMMDD`` or ``YYYY-MM-DD`` (ASCII digits, nothing around them) -> a date;
    ValueError otherwise."""
    if len(text) == 8 and text.isascii() and text.isdigit():
        return dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
    if len(text) == 10 and text[4] == text[7] == "-" and text.isascii() and \
            (text[:4] + text[5:7] + text[8:]).isdigit():
        return dt.date(int(text[:4]), int(text[5:7]), int(text[8:]))
    raise ValueError(f"{text!r} is not YYYYMMDD or YYYY-MM-DD")


def dates_of(array: pa.Array, nulls: frozenset[str]) -> pa.Array:
    """Date texts (read as a dictionary: a file holds few distinct dates) -> date32.

    Each distinct text is checked once, exactly (:func:`parse_date`, vectorised); texts in
    ``nulls`` become null.  ValueError on the first text that is not a date.
    """
    if not pa.types.is_dictionary(array.type):
        array = pc.dictionary_encode(array)
    array = cast(pa.DictionaryArray, array)
    words = array.dictionary.cast(pa.string())
    # (a boolean array's to_numpy would import pandas: go through uint8)
    is_null = pc.is_in(words, value_set=pa.array(sorted(nulls), pa.string())).cast(
        pa.uint8()).to_numpy().astype(bool) if nulls else np.zeros(len(words), dtype=bool)
    days = _text_days(words, is_null)
    dictionary = pa.array(days, pa.int32(), mask=is_null)
    return dictionary.cast(pa.date32()).take(array.indices)


def _text_days(words: pa.Array, skip: np.ndarray) -> np.ndarray:
    """Days since the epoch of ``YYYYMMDD``/``YYYY-MM-DD`` strings (0 where ``skip``)."""
    n = len(words)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    offsets = np.frombuffer(words.buffers()[1], dtype=np.int32)[words.offset:words.offset + n + 1]
    data = np.frombuffer(words.buffers()[2], dtype=np.uint8) if words.buffers()[2] else \
        np.zeros(1, dtype=np.uint8)
    start = offsets[:-1].astype(np.int64)
    length = (offsets[1:] - offsets[:-1]).astype(np.int64)
    iso = length == 10
    ok = ~skip & ((length == 8) | iso)
    if (~ok & ~skip).any():
        _first_bad(words, ~ok & ~skip)
    where = np.where(ok, start, 0)
    # digit positions: compact 0-7; ISO 0-3, 5-6, 8-9 with '-' at 4 and 7
    pos_c = np.array([0, 1, 2, 3, 4, 5, 6, 7])
    pos_i = np.array([0, 1, 2, 3, 5, 6, 8, 9])
    index = where[:, None] + np.where(iso[:, None], pos_i[None, :], pos_c[None, :])
    index = np.minimum(index, len(data) - 1)
    digits = data[index].astype(np.int64) - 48
    nondigit = ((digits < 0) | (digits > 9)).any(axis=1)
    dashes = np.minimum(where[:, None] + np.array([4, 7])[None, :], len(data) - 1)
    nodash = iso & (data[dashes] != 45).any(axis=1)
    bad = ok & (nondigit | nodash)
    if bad.any():
        _first_bad(words, bad)
    digits = np.where(ok[:, None], digits, np.array([1, 9, 7, 0, 0, 1, 0, 1])[None, :])
    y = digits[:, 0] * 1000 + digits[:, 1] * 100 + digits[:, 2] * 10 + digits[:, 3]
    m = digits[:, 4] * 10 + digits[:, 5]
    d = digits[:, 6] * 10 + digits[:, 7]
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    limit = _MONTH_DAYS[np.clip(m, 0, 12)] + ((m == 2) & leap)
    bad = ok & ((y < 1) | (m < 1) | (m > 12) | (d < 1) | (d > limit))
    if bad.any():
        _first_bad(words, bad)
    return _civil_days(y, m, d)


def _first_bad(words: pa.Array, bad: np.ndarray) -> None:
    text = words[int(np.flatnonzero(bad)[0])].as_py()
    raise ValueError(invalid(text, "DATE"))


def _civil_days(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian (y, m, d) (valid dates only)."""
    y = y - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return (era * 146097 + doe - 719468).astype(np.int32)


# -- SECOND / TIME ----------------------------------------------------------------------------
def hms_seconds(array: pa.Array) -> np.ndarray:
    """``H:MM:SS`` / ``HH:MM:SS`` strings (no nulls) -> seconds since midnight (int32);
    ValueError at the first doubt."""
    if array.null_count:
        raise ValueError("null times")
    if len(array) == 0:
        return np.zeros(0, dtype=np.int32)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[
        array.offset: array.offset + len(array) + 1]
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8)
    start, end = offsets[:-1].astype(np.int64), offsets[1:].astype(np.int64)
    length = end - start
    if length.min() < 7 or length.max() > 8:
        raise ValueError("not H:MM:SS")

    def digit(i: np.ndarray) -> np.ndarray:
        out = data[i].astype(np.int32) - 48
        if ((out < 0) | (out > 9)).any():
            raise ValueError("not a digit")
        return out

    if ((data[end - 3] != 58) | (data[end - 6] != 58)).any():
        raise ValueError("missing ':'")
    seconds = digit(end - 2) * 10 + digit(end - 1)
    minutes = digit(end - 5) * 10 + digit(end - 4)
    hours = digit(end - 7)
    two = length == 8
    if two.any():
        hours = np.where(two, digit(np.where(two, start, end - 7)) * 10 + hours, hours)
    if (seconds > 59).any() or (minutes > 59).any() or (hours > 23).any():
        raise ValueError("time out of range")
    return (hours * 3600 + minutes * 60 + seconds).astype(np.int32)


def times_of(array: pa.Array, ctype: ColumnType) -> pa.Array:
    """SECOND / TIME texts (nulls allowed) -> time32 of ``ctype``; ValueError naming the first
    text that is not one (see the table at the top of this module).  A dictionary (a day has
    at most 86,400 distinct seconds) is converted value by distinct value."""
    if pa.types.is_dictionary(array.type):
        array = cast(pa.DictionaryArray, array)
        return times_of(array.dictionary, ctype).take(array.indices)
    target = ctype.arrow
    unit = 1 if target.unit == "s" else 1000
    try:
        return pa.array(hms_seconds(array) * unit, type=pa.int32()).view(target)
    except ValueError:
        pass
    ok = pc.match_substring_regex(array, f"^(?:{_TIME_RE[ctype.name]})$")
    if not pc.all(ok).as_py():   # nulls are skipped
        bad = pc.invert(ok.fill_null(True))
        text = pc.filter(array, bad)[0].as_py()
        raise ValueError(invalid(text, ctype.name, _TIME_HELP[ctype.name]))
    parts = cast(pl.Series, pl.from_arrow(array)).str.extract_groups(
        r"^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,3})\d*)?$").struct.unnest()
    h, m, s = (parts[c].cast(pl.Int32) for c in ("1", "2", "3"))
    ms = parts["4"].fill_null("0").str.pad_end(3, "0").cast(pl.Int32)
    value = (h * 3600 + m * 60 + s) * unit + (ms if unit == 1000 else 0)
    return value.to_arrow().cast(pa.int32()).view(target)


# -- DATETIME / TIMESTAMP ----------------------------------------------------------------------
def timestamps_of(array: pa.Array, ctype: ColumnType) -> pa.Array:
    """ISO 8601 texts (nulls allowed) -> the timestamp type of ``ctype``, by Arrow's own
    parser (exact, overflow-checked).  A text with an offset is converted to UTC; one without
    is taken as UTC.  ValueError on the first text that does not parse."""
    target = ctype.arrow
    naive, utc = pa.timestamp(target.unit), pa.timestamp(target.unit, "UTC")
    zoned = pc.match_substring_regex(array, _ZONE)
    if not pc.any(zoned).as_py():
        ticks = _cast_stamps(array, naive, ctype)
    elif pc.all(zoned).as_py():
        ticks = _cast_stamps(array, utc, ctype)
    else:
        none = pa.scalar(None, pa.string())
        ticks = pc.if_else(zoned, _cast_stamps(pc.if_else(zoned, array, none), utc, ctype),
                           _cast_stamps(pc.if_else(zoned, none, array), naive, ctype))
    return ticks.cast(pa.int64()).view(target)


def _cast_stamps(array: pa.Array, typ: pa.DataType, ctype: ColumnType) -> pa.Array:
    try:
        return pc.cast(array, typ).cast(pa.int64())
    except pa.ArrowInvalid:
        for text in array.to_pylist():   # the first one Arrow refuses
            reason = text is not None and check_field(text, ctype, frozenset())
            if reason:
                raise ValueError(reason) from None
        raise


def _stamp_problem(text: str, name: str) -> str | None:
    """Why ``text`` is not a DATETIME (seconds) / TIMESTAMP (ns) Arrow parses, or None."""
    match = _STAMP.fullmatch(text)
    if not match:
        return _STAMP_HELP
    y, mo, d, h, mi, s, frac, zone = match.groups()
    if frac is not None and name == "DATETIME":
        return "finer than a second"
    try:
        when = dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
    except ValueError as exc:
        return str(exc)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        off = dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[-2:]) if len(zone) > 3 else 0)
        when -= sign * off
    if name == "TIMESTAMP":
        ns = (when - _EPOCH) // dt.timedelta(microseconds=1) * 1000 + \
            int((frac or "").ljust(9, "0") or 0)
        if not -(2 ** 63) <= ns < 2 ** 63:
            return "outside 1677-09-21..2262-04-11, the range of nanoseconds in 64 bits"
    return None


# -- the exact validator ------------------------------------------------------------------------
def check_field(text: str, ctype: ColumnType, nulls: frozenset[str], *,
                required: bool = False, text_nulls: bool = True) -> str | None:
    """Why ``text`` is not a valid ``ctype`` value (``value 'v' is not a valid T (why)``),
    or None when it is.  ``required``: a partition column, where a null is refused;
    ``text_nulls``: the ``nulls`` are null in text columns too (else text as it is)."""
    name = ctype.name
    if name in ("SYMBOL", "STRING", "CHAR"):
        if text in nulls and text_nulls:
            return invalid(text, name, "a partition column cannot be empty") if required \
                else None
        if name == "CHAR" and len(text) > 1:
            return invalid(text, name, "longer than one character")
        return None
    if text in nulls:
        return invalid(text, name, "a partition column cannot be empty") if required else None
    if name in _INT_RANGE:
        if not _INT.fullmatch(text):
            return invalid(text, name, "decimal digits with an optional leading '-' only")
        lo, hi = _INT_RANGE[name]
        if not lo <= int(text) <= hi:
            return invalid(text, name, f"out of range {lo}..{hi}")
    elif name in ("DOUBLE", "FLOAT"):
        if not _FLOAT.fullmatch(text):
            return invalid(text, name)
    elif name == "BOOL":
        if text not in _BOOL:
            return invalid(text, name, "true/false/1/0")
    elif name == "DATE":
        try:
            parse_date(text)
        except ValueError:
            return invalid(text, name, "YYYYMMDD or YYYY-MM-DD")
    elif name in _TIME_RE:
        if not re.fullmatch(_TIME_RE[name], text):
            return invalid(text, name, _TIME_HELP[name])
    elif name in ("DATETIME", "TIMESTAMP"):
        problem = _stamp_problem(text, name)
        if problem:
            return invalid(text, name, problem)
    return None
