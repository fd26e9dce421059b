"""``compile_where``: one SQL condition on its own (``hfq scan --where``) compiled by the SQL
compiler, against DuckDB running ``SELECT id FROM t WHERE <the same text>`` on rows with the
nasty values (NULL, NaN, +-inf, -0.0, int32 extremes, empty and non-ASCII strings, midnight and
the last microsecond of the day); refusals and syntax errors with their positions; hostile text
is parsed, never run.  No Ray.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import duckdb
import polars as pl
import pytest

from hfq.engine.sql.where import compile_where
from hfq.errors import SqlError

NAN, INF = math.nan, math.inf
ROWS = pl.DataFrame({
    "id": list(range(8)),
    "symbol": ["IBM", "MSFT", "", "Zürich", "O'Neil", None, "a%b", "ibm"],
    "bid": [1.5, None, NAN, INF, -INF, -0.0, 0.0, 50.25],
    "ofr": [2.0, 3.0, NAN, 1.0, None, 0.0, -0.0, 60.0],
    "bidsiz": [0, -2**31, 2**31 - 1, None, 7, -7, 1, 100],
    "date": [dt.date(2007, 8, 1), None, dt.date(1970, 1, 1), dt.date(2007, 8, 2),
             dt.date(2007, 8, 1), dt.date(9999, 12, 31), dt.date(2007, 7, 31),
             dt.date(2007, 8, 3)],
    "time": [dt.time(0), dt.time(23, 59, 59, 999999), None, dt.time(9, 30),
             dt.time(9, 29, 59, 999999), dt.time(16), dt.time(12), dt.time(9, 30, 0, 1)],
}, schema_overrides={"symbol": pl.Categorical, "bidsiz": pl.Int32})   # as a TAQ table reads

FILTERS = [
    # floats: NaN is the largest double and equals itself (DuckDB), -0.0 = 0.0, NULL unknown
    "bid > 0", "bid = 0", "bid < 0", "bid >= 0", "bid > ofr", "bid <> bid", "bid = bid",
    "bid IS NULL", "bid IS NOT NULL", "isnan(bid)", "bid BETWEEN -1 AND 1", "bid > 1e308",
    "bid + ofr > 0", "bid - ofr = 0", "greatest(bid, ofr) > 1", "round(bid, 1) = 1.5",
    "coalesce(bid, 0) = 0", "NOT (bid > 1)", "bid > 1 OR ofr > 1",
    # integers at their extremes: % and // truncate toward zero; no wrap-around
    "bidsiz % 2 = 1", "bidsiz % 2 = -1", "bidsiz // 2 = -3", "bidsiz / 2 > 0",
    "bidsiz * 2 > 0", "-bidsiz > 0", "CAST(bidsiz AS DOUBLE) > 1e9",
    "bidsiz::BIGINT * 3 > 6000000000", "bidsiz",
    # text: empty, quotes, non-ASCII, NULL in NOT IN (three-valued: no row)
    "symbol IN ('IBM', 'Zürich', '')", "symbol NOT IN ('IBM', NULL)",
    "symbol NOT IN ('IBM', 'MSFT')", "symbol LIKE '%b'", "symbol ILIKE 'ibm'",
    "symbol = 'O''Neil'", "symbol = ''", "symbol <> ''", "symbol > 'M'",
    "upper(symbol) = 'IBM'", "length(symbol) = 0", "symbol IS NULL OR bid IS NULL",
    # dates and times of day given as strings, the day's edges
    "date >= '2007-08-01'", "date = DATE '2007-08-02'",
    "date BETWEEN '2007-08-01' AND '2007-08-02'", "date > '9000-01-01'",
    "time >= '09:30'", "time < '09:30:00.000001'", "time = '00:00:00'", "time > '23:59:59'",
    # conditions that are constants or CASE
    "CASE WHEN bid > ofr THEN true ELSE false END", "NULL", "true", "1 = 1",
]


@pytest.fixture(scope="module")
def duck() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("t", ROWS.with_columns(pl.col("symbol").cast(pl.String)).to_arrow())
    return con


@pytest.mark.parametrize("text", FILTERS)
def test_a_filter_keeps_the_rows_duckdb_keeps(duck: duckdb.DuckDBPyConnection,
                                              text: str) -> None:
    want = [r[0] for r in duck.execute(f"SELECT id FROM t WHERE {text} ORDER BY id").fetchall()]
    got = ROWS.filter(compile_where(text, ROWS.schema))["id"].sort().to_list()
    assert got == want


REFUSED = [
    ("px > 0", "unknown column 'px'; columns: id, symbol, bid, ofr, bidsiz, date, time "
               "(line 1, column 1)"),
    ("bid > 0 AND ofr < px", "unknown column 'px'", (1, 19)),
    ("bid >", "SQL syntax error: Required keyword: 'expression' missing", (1, 5)),
    ("bid > 0 AND", "SQL syntax error", (1, 11)),
    ("bid > 0,\n ofr > 0", "SQL syntax error: Invalid expression / Unexpected token", (1, 8)),
    ("bid > (SELECT max(bid) FROM t)", "a subquery is not allowed in a row filter"),
    ("bid IN (SELECT 1)", "a subquery is not allowed in a row filter"),
    ("EXISTS (SELECT 1)", "EXISTS (a subquery) is not allowed in a row filter"),
    ("sum(bid) > 0", "an aggregate is not allowed in a row filter"),
    ("count(*) > 0", "not allowed in a row filter"),
    ("row_number() OVER () > 1", "a window function (OVER ...) is not allowed"),
    ("*", "* is not allowed in a row filter"),
    ("bid + 1", "a row filter needs a boolean condition, not bid + 1 (a number)"),
    ("symbol > 3", "type mismatch in 'symbol > 3': symbol is text, 3 is a number"),
    ("date > '2007-13-01'", "'2007-13-01' is not a valid DATE literal"),
    ("$1 > 0", "unsupported SQL: PLACEHOLDER"),
    ("", "SQL syntax error: the filter is empty"),
    ("   \n ", "SQL syntax error: the filter is empty"),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] or "(empty)" for c in REFUSED])
def test_what_is_refused_says_what_and_where(case: tuple) -> None:
    text, message, *where = case
    with pytest.raises(SqlError) as caught:
        compile_where(text, ROWS.schema)
    assert message in str(caught.value)
    if where:
        assert (caught.value.line, caught.value.column) == where[0]


HOSTILE = [
    "__import__('os').system('touch PWNED')",
    "__import__('os')",
    "eval('1') = 1",
    "exec(\"open('PWNED', 'w')\") IS NULL",
    "1; COPY t TO 'PWNED'",
    "bid > 0; DROP TABLE t; --",
    "bid > 0 UNION SELECT * FROM t",
    "read_csv('PWNED') IS NULL",
    "'x' = 'x' OR getenv('HOME') IS NULL",
    "symbol = ‘IBM’",                 # typographic quotes: an unknown name, not a string
    "(" * 60 + "bid > 0" + ")" * 60,   # deeper than the parser recurses: refused, no crash
    "bid > 0" + " AND bid > 0" * 2000,
    "\u202e bid > 0",
]


@pytest.mark.parametrize("text", HOSTILE, ids=[h[:40] for h in HOSTILE])
def test_hostile_text_is_refused_never_run(text: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SqlError) as caught:
        compile_where(text, ROWS.schema)
    assert "\n" not in str(caught.value) and str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_strings_are_data_whatever_they_hold() -> None:
    """Quotes, SQL, NUL and right-to-left marks inside a string literal are its text."""
    frame = pl.DataFrame({"s": ["O'Neil", "x'; DROP TABLE t; --", "a\x00b", "\u202eabc", None]})
    for value in frame["s"].drop_nulls():
        literal = "'" + value.replace("'", "''") + "'"
        kept = frame.filter(compile_where(f"s = {literal}", frame.schema))["s"].to_list()
        assert kept == [value]
    assert frame.filter(compile_where("s IS NULL", frame.schema)).height == 1


def test_identifiers_quoted_or_not() -> None:
    frame = pl.DataFrame({"bid": [1.0, -1.0], "two words": [1, 2]})
    assert frame.filter(compile_where('"bid" > 0', frame.schema)).height == 1
    assert frame.filter(compile_where('"two words" = 2', frame.schema)).height == 1
    with pytest.raises(SqlError, match=r"SQL syntax error: .* \(line 1, column 9\)"):
        compile_where("two words = 2", frame.schema)


def test_a_filter_of_the_wrong_length_is_an_error_never_a_guess():
    """A mask of one value is a constant for every row; any other length but the frame's is
    refused by name (polars 2.1 once gave one value per chunk for `constant OP when(...)`:
    F72 -- a mask like that must never filter rows by position)."""
    from hfq.errors import QueryError
    from hfq.query.read import where_mask
    frame = pl.DataFrame({"x": [1, -2, 3, 4, -5]})
    assert where_mask(frame, pl.col("x") > 0, 5).to_list() == [True, False, True, True, False]
    assert where_mask(frame, pl.lit(True), 5) is True
    with pytest.raises(QueryError, match="gave 2 values for 5 rows"):
        where_mask(frame, pl.col("x").head(2) > 0, 5)
