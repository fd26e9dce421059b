"""Whole answers compared: hfq's against DuckDB's.

The comparison, documented once here and used by the fuzzer, the regression tests and the
conformance corpus:

* **Shape**: the same number of columns and rows.  Column names are not compared (DuckDB
  names an unaliased expression by its own spelling).
* **Types by kind**: each column's kind -- integer (any width, DECIMAL of scale 0), float
  (FLOAT, DOUBLE, DECIMAL with a scale), text (VARCHAR, hfq's SYMBOL/CHAR dictionaries), bool,
  date, time, timestamp (with or without a time zone: compared as UTC instants), interval --
  must agree; an all-NULL column of either side matches any kind.
* **Rows**: in order when the query's ORDER BY makes the order total, else as multisets.
* **Order**: when the ORDER BY's output columns are known (``keys``), two rows may stand in
  either order when the first ORDER BY column on which they are not exactly equal is a float
  column whose two values agree to the tolerance below (on either side): an ulp of rounding
  in a sort key (DuckDB's sum of 0.1s against hfq's) decides nothing.  Every other pair must
  stand as in DuckDB's answer.
* **Cells**: NULL equals NULL only; NaN equals NaN; +inf and -inf equal themselves; -0.0
  equals 0.0; other floats agree to 1e-9 relative (1e-6 when either side's column is a 32-bit
  FLOAT: DuckDB computes FLOAT arithmetic in 32 bits, and a 32-bit +-inf equals a double
  beyond FLOAT's range of the same sign), with 1e-12 absolute slack near zero;
  temporal values to the nanosecond; everything else exactly.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import polars as pl
import pyarrow as pa

__all__ = ["Answer", "answer_from_arrow", "answer_from_polars", "differ", "render", "unmatched"]

_EPOCH = dt.datetime(1970, 1, 1)
_FLOAT32_MAX = 3.4028234663852886e38
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class Answer:
    """A result reduced to comparable Python values: ``kinds`` per column, ``rows`` of cells
    (ints, floats, strings, bools, None; temporal values as integer nanoseconds), and which
    columns were 32-bit floats."""

    def __init__(self, names: list[str], kinds: list[str], rows: list[tuple[Any, ...]],
                 narrow: list[bool]) -> None:
        self.names, self.kinds, self.rows, self.narrow = names, kinds, rows, narrow

    def __repr__(self) -> str:
        return f"Answer({self.names}, {self.kinds}, {render(self.rows)})"


def _kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _kind(t.value_type)
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_decimal(t):
        return "int" if t.scale == 0 else "float"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "text"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_duration(t) or pa.types.is_interval(t):
        return "interval"
    return str(t)


_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _cells(col: pa.ChunkedArray | pa.Array, kind: str) -> list[Any]:
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    if kind in ("time", "timestamp", "date") or pa.types.is_duration(t):
        if kind == "date":
            return [None if v is None else v for v in col.cast(pa.int32()).to_pylist()]
        width = pa.int32() if t.bit_width == 32 else pa.int64()
        scale = _NS[t.unit]
        return [None if v is None else v * scale for v in col.cast(width).to_pylist()]
    if pa.types.is_interval(t):   # DuckDB's INTERVAL: as nanoseconds unless it has months
        return [None if v is None else (v.days * 86_400 * 10**9 + v.nanoseconds)
                if not v.months else (v.months, v.days, v.nanoseconds) for v in col.to_pylist()]
    values = col.to_pylist()
    if kind == "int":
        return [None if v is None else int(v) for v in values]
    if kind == "float":
        return [None if v is None else float(v) if not isinstance(v, decimal.Decimal)
                else float(v) for v in values]
    return values


def answer_from_arrow(table: pa.Table) -> Answer:
    kinds = [_kind(f.type) for f in table.schema]
    narrow = [pa.types.is_float32(f.type) for f in table.schema]
    cols = [_cells(c, k) for c, k in zip(table.columns, kinds)]
    rows = list(zip(*cols)) if cols else []
    if not cols:
        rows = [()] * table.num_rows
    return Answer(table.column_names, kinds, rows, narrow)


def answer_from_polars(df: pl.DataFrame) -> Answer:
    return answer_from_arrow(df.to_arrow())


def _close(u: Any, v: Any, narrow: bool) -> bool:
    if u is None or v is None:
        return u is None and v is None
    if isinstance(u, float) or isinstance(v, float):
        if not isinstance(u, (int, float)) or not isinstance(v, (int, float)) or \
                isinstance(u, bool) or isinstance(v, bool):
            return False
        u, v = float(u), float(v)
        if math.isnan(u) or math.isnan(v):
            return math.isnan(u) and math.isnan(v)
        if math.isinf(u) or math.isinf(v):
            if narrow and (u > 0) == (v > 0) and min(abs(u), abs(v)) > _FLOAT32_MAX:
                return True   # a 32-bit result overflowed where the double did not
            return u == v
        rel = 1e-6 if narrow else 1e-9
        return abs(u - v) <= rel * max(abs(u), abs(v)) + 1e-12
    return bool(u == v and type(u) is type(v)) or (
        isinstance(u, int) and isinstance(v, int) and not isinstance(u, bool)
        and not isinstance(v, bool) and u == v)


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for v in row:
        if v is None:
            out.append((3, 0))
        elif isinstance(v, float):
            out.append((2, 0) if math.isnan(v) else (1, round(v, 6) if abs(v) < 1e15 else v))
        elif isinstance(v, bool):
            out.append((0, int(v)))
        elif isinstance(v, (int, float)):
            out.append((1, v))
        else:
            out.append((0, str(v)))
    return tuple(out)


def _rows_equal(a: tuple[Any, ...], b: tuple[Any, ...], narrow: list[bool]) -> bool:
    return all(_close(x, y, n) for x, y, n in zip(a, b, narrow))


def differ(got: Answer, want: Answer, *, ordered: bool, keys: list[int] | None = None
           ) -> str | None:
    """Why ``got`` (hfq) is not ``want`` (DuckDB), or None when they agree (see the module
    docstring for the rules; ``keys``: the output columns of the ORDER BY, in its order)."""
    if len(got.kinds) != len(want.kinds):
        return f"{len(got.kinds)} columns, DuckDB {len(want.kinds)}"
    if len(got.rows) != len(want.rows):
        return f"{len(got.rows)} rows, DuckDB {len(want.rows)}"
    for i, (a, b) in enumerate(zip(got.kinds, want.kinds)):
        if a != b and "null" not in (a, b) and not _all_null(got, i) and \
                not _all_null(want, i):
            return f"column {i + 1} is {a}, DuckDB's is {b}"
    narrow = [x or y for x, y in zip(got.narrow, want.narrow)]
    if ordered:
        for i, (a, b) in enumerate(zip(got.rows, want.rows)):
            if not _rows_equal(a, b, narrow):
                if keys and _near_ties(got, want, keys, narrow):
                    return None
                return f"row {i + 1}: {render([a])} vs DuckDB {render([b])}"
        return None
    extra = unmatched(got.rows, want.rows, narrow)
    return None if extra is None else f"row {render([extra])} of hfq is not in DuckDB's answer"


def unmatched(left: list[tuple[Any, ...]], right: list[tuple[Any, ...]], narrow: list[bool]
              ) -> tuple[Any, ...] | None:
    """A row of ``left`` that no row of ``right`` matches (as multisets of equally many
    rows, cells compared as :func:`differ` does), or None."""
    left, right = sorted(left, key=_sort_key), sorted(right, key=_sort_key)
    if all(_rows_equal(a, b, narrow) for a, b in zip(left, right)):
        return None
    # sorting by rounded floats can split near-equal rows (-2.3e-10 and 0.0 both round to
    # 0.0, and stay in their input order): match greedily before failing
    pending = list(right)
    for a in left:
        for j, b in enumerate(pending):
            if _rows_equal(a, b, narrow):
                del pending[j]
                break
        else:
            return a
    return None


def _same(u: Any, v: Any) -> bool:
    return (u is None and v is None) or (u is not None and v is not None and (
        u == v or (isinstance(u, float) and isinstance(v, float) and math.isnan(u)
                   and math.isnan(v))))


def _near_ties(got: Answer, want: Answer, keys: list[int], narrow: list[bool]) -> bool:
    """Whether ``got``'s rows are ``want``'s, each pair in DuckDB's order unless the first
    ORDER BY column where the pair is not exactly equal is a float column whose values
    agree to the tolerance (in either answer)."""
    pending = list(range(len(want.rows)))
    pos = []
    for i, row in enumerate(got.rows):
        match = [j for j in pending if _rows_equal(row, want.rows[j], narrow)]
        if not match:
            return False
        j = i if i in match else match[0]
        pending.remove(j)
        pos.append(j)
    for i in range(len(pos)):
        for k in range(i + 1, len(pos)):
            if pos[i] < pos[k]:
                continue
            a, b = got.rows[i], got.rows[k]
            x, y = want.rows[pos[i]], want.rows[pos[k]]
            for c in keys:
                if _same(a[c], b[c]) and _same(x[c], y[c]):
                    continue
                if got.kinds[c] == "float" and (_close(a[c], b[c], narrow[c]) or
                                                _close(x[c], y[c], narrow[c])):
                    break   # an ulp apart: either order
                return False   # decided by an exact key or past the tolerance
    return True


def _all_null(ans: Answer, i: int) -> bool:
    return all(r[i] is None for r in ans.rows)


def render(rows: list[tuple[Any, ...]], limit: int = 12) -> str:
    text = ", ".join("(" + ", ".join(_cell(v) for v in r) + ")" for r in rows[:limit])
    return "[" + text + (f", ... {len(rows) - limit} more" if len(rows) > limit else "") + "]"


def _cell(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return repr(v)
    return repr(v)
