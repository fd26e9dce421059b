"""Named windows' names against DuckDB's parser: its reserved words, unquoted, name no window
(a syntax error in both); quoted, each names one. The rest of named windows' rules are corpus
records (``windows.test``)."""

from __future__ import annotations

import duckdb
import pytest

from hfq.engine.sql.named_windows import RESERVED
from hfq.engine.sql.statement import parse
from hfq.errors import SqlError


@pytest.fixture(scope="module")
def con():
    con = duckdb.connect()
    con.execute("CREATE TABLE m AS SELECT range AS i FROM range(3)")
    return con


def test_the_reserved_words_are_duckdbs():
    rows = duckdb.sql("SELECT keyword_name FROM duckdb_keywords() "
                      "WHERE keyword_category = 'reserved'").fetchall()
    assert RESERVED == {r[0] for r in rows}


@pytest.mark.parametrize("word", sorted(RESERVED))
def test_a_reserved_word_names_a_window_only_quoted(con, word):
    bare = f"SELECT sum(i) OVER {word} FROM m WINDOW {word} AS (ORDER BY i)"
    with pytest.raises(duckdb.ParserException):
        con.execute(bare)
    with pytest.raises(SqlError, match="syntax error"):
        parse(bare)
    quoted = f'SELECT sum(i) OVER "{word.upper()}" FROM m WINDOW "{word}" AS (ORDER BY i)'
    assert con.execute(quoted).fetchall() == [(0,), (1,), (3,)]
    assert parse(quoted).sql("duckdb") == "SELECT SUM(i) OVER (ORDER BY i) FROM m"
