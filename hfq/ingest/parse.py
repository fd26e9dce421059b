"""Turning CSV text fields into hfq column types: vectorised fast paths and exact validators.

The fast paths (:func:`compact_dates`, :func:`hms_seconds`) convert whole Arrow string/int
columns with numpy and raise ``ValueError`` at the first doubt; the caller then falls back to
:func:`check_field`, the slow, exact, per-field validator that names the bad value.
"""

from __future__ import annotations

import datetime as dt
import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hfq.schema import ColumnType

__all__ = ["check_field", "compact_dates", "hms_seconds"]

_INT_RANGE = {"SHORT": (-(2 ** 15), 2 ** 15 - 1), "INT": (-(2 ** 31), 2 ** 31 - 1),
              "LONG": (-(2 ** 63), 2 ** 63 - 1)}
_HMS = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(\.\d{1,9})?$")
_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)


def compact_dates(array: pa.Array) -> pa.Array:
    """YYYYMMDD integers -> date32; ValueError on an impossible date.

    A file holds few distinct dates, so each distinct value is converted once.
    """
    encoded = pc.dictionary_encode(array)
    days = _compact_days(encoded.dictionary.to_numpy(zero_copy_only=False))
    return pa.array(days, pa.int32()).cast(pa.date32()).take(encoded.indices)


def _compact_days(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64, copy=False)
    y, m, d = v // 10000, v // 100 % 100, v % 100
    if len(v) and ((m < 1).any() or (m > 12).any() or (d < 1).any() or (y < 1).any()):
        raise ValueError("not a YYYYMMDD date")
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    limit = _MONTH_DAYS[m] + ((m == 2) & leap)
    if len(v) and (d > limit).any():
        raise ValueError("day out of range for month")
    y = y - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return (era * 146097 + doe - 719468).astype(np.int32)


def hms_seconds(array: pa.Array) -> np.ndarray:
    """``H:MM:SS`` / ``HH:MM:SS`` strings -> seconds since midnight (int32)."""
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

    def digit(i):
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


def check_field(text: str, ctype: ColumnType, nulls: frozenset[str]) -> str | None:
    """Why ``text`` is not a valid ``ctype`` value, or None when it is."""
    name = ctype.name
    if name in ("SYMBOL", "STRING"):
        return None
    if name == "CHAR":
        return None if len(text) <= 1 else f"CHAR value {text!r} is longer than one character"
    if text in nulls:
        return None
    try:
        if name in _INT_RANGE:
            lo, hi = _INT_RANGE[name]
            if not lo <= int(text) <= hi:
                return f"{text!r} is out of range for {name} ({lo}..{hi})"
        elif name in ("DOUBLE", "FLOAT"):
            float(text)
        elif name == "BOOL":
            if text.lower() not in ("true", "false", "0", "1"):
                return f"{text!r} is not a boolean (true/false/1/0)"
        elif name == "DATE":
            parse_date(text)
        elif name in ("SECOND", "TIME"):
            match = _HMS.match(text)
            if not match or int(match[1]) > 23 or int(match[2]) > 59 or int(match[3]) > 59:
                return f"{text!r} is not a time of day (H:MM:SS or HH:MM:SS[.fff])"
        elif name in ("DATETIME", "TIMESTAMP"):
            dt.datetime.fromisoformat(text)
    except ValueError:
        return f"{text!r} is not a valid {name}"
    if name in ("DOUBLE", "FLOAT") and math.isnan(float(text)) and text.lower() != "nan":
        return f"{text!r} is not a valid {name}"
    return None


def parse_date(text: str) -> dt.date:
    if len(text) == 8 and text.isdigit():
        return dt.datetime.strptime(text, "%Y%m%d").date()
    return dt.date.fromisoformat(text)
