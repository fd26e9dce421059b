"""The allow-list check (issue 24, "What to build" 2): every node of the parsed SQL is of a
class the compiler handles, with only the arguments it consumes -- or the statement is
refused, naming the construct and its position.

The grammar sample: the query suite's SQL, the trust and dialect suites' SQL, and the 621
statements of sqlglot's own DuckDB dialect tests (``data/sqlglot_duckdb.json``).
"""

from __future__ import annotations

import json
import pathlib

import pytest
import sqlglot
from cases import CASES
from nasty import load
from sqlglot import exp
from test_dialect import DIALECT
from test_trust import SAME

import hfq
from hfq.engine.sql import check as allow
from hfq.errors import HfqError, SqlError

HERE = pathlib.Path(__file__).resolve().parent
SQLGLOT = json.loads((HERE / "data" / "sqlglot_duckdb.json").read_text())["statements"]
SUPPORTED = [c.sql for c in CASES] + [text.format(t="m") for _, text, _ in SAME] + \
    [text for _, text, _ in DIALECT] + ["SELECT count(*) AS n FROM m AT (VERSION => 1)",
                                        # issue 27: reading as of an instant
                                        "SELECT count(*) AS n FROM m AT (TIMESTAMP => "
                                        "'2100-01-01')",
                                        "SELECT count(*) AS n FROM m FOR SYSTEM_TIME AS OF "
                                        "'2100-01-01'",
                                        # the text functions and boolean aggregates (their
                                        # answers: tests/sql/strings.test)
                                        "SELECT reverse(name) AS a, replace(name, 'a', 'b') AS "
                                        "b, starts_with(name, 'a') AS c, ends_with(symbol, 'A') "
                                        "AS d, contains(name, 'x') AS e, strpos(name, 'y') AS f, "
                                        "left(name, 2) AS g, right(name, -1) AS h, ltrim(name) "
                                        "AS i, trim(BOTH 'x' FROM name) AS j FROM m",
                                        "SELECT bool_and(flag) AS a, bool_or(flag) AS o, "
                                        "count_if(flag) AS n FROM m"]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from oracle import load as load_quotes
    d = hfq.connect(str(tmp_path_factory.mktemp("allowdb")))
    load_quotes(d)
    load(d)
    return d


def _tree(text: str) -> exp.Expression:
    return sqlglot.parse_one(text, read="duckdb")


def _set_args(node: exp.Expression) -> set[str]:
    return {k for k, v in node.args.items() if v is not None and v is not False and v != []
            and v != ""}


def test_every_statement_of_the_sample_compiles_or_is_refused_by_name(db):
    """Nothing but hfq's own errors comes out of the compiler, whatever sqlglot parses."""
    outcomes = {"compiled": 0, "refused": 0}
    for text in SQLGLOT + SUPPORTED:
        try:
            db.sql(text)
            outcomes["compiled"] += 1
        except HfqError as exc:
            assert str(exc), text
            outcomes["refused"] += 1
    assert outcomes["compiled"] >= len(SUPPORTED) and outcomes["refused"] >= 300, outcomes


def test_a_class_off_the_list_is_refused_with_its_name_and_place():
    for text in SQLGLOT:
        try:
            tree = _tree(text)
        except sqlglot.errors.ParseError:
            continue
        bad = [n for n in tree.walk() if isinstance(n, exp.Expression) and
               type(n) not in allow.ALLOWED]
        if not bad:
            continue
        with pytest.raises(SqlError) as info:
            allow.check(tree)
        assert str(info.value).startswith("unsupported SQL: "), text


def test_every_listed_class_is_used_by_a_supported_statement(db):
    """The list holds nothing the suites do not compile and run against DuckDB."""
    seen: set[type] = set()
    for text in SUPPORTED:
        seen |= {type(n) for n in _tree(text).walk()}
    unused = sorted(c.__name__ for c in set(allow.ALLOWED) - seen)
    assert not unused, f"on the allow-list but in no supported statement: {unused}"


def _uses() -> dict[tuple[type, str], str]:
    """For each (class, argument) the supported statements set: one such statement."""
    found: dict[tuple[type, str], str] = {}
    for text in SUPPORTED:
        for n in _tree(text).walk():
            for key in _set_args(n):
                found.setdefault((type(n), key), text)
    return found


USES = _uses()


@pytest.mark.parametrize("use", sorted(USES, key=lambda u: (u[0].__name__, u[1])),
                         ids=[f"{c.__name__}.{a}" for c, a in
                              sorted(USES, key=lambda u: (u[0].__name__, u[1]))])
def test_an_argument_dropped_from_the_list_refuses_the_statement(db, monkeypatch, use):
    """Plant the bug "the compiler no longer handles this argument" by taking it off the
    list: the statement that sets it is refused, naming it -- never answered."""
    cls, arg = use
    text = USES[use]
    monkeypatch.setitem(allow.ALLOWED, cls, allow.ALLOWED[cls] - {arg})
    with pytest.raises(SqlError, match="unsupported SQL: "):
        db.sql(text + " ")   # (not the cached statement)


def test_an_argument_the_compiler_does_not_know_is_refused():
    """A new sqlglot argument set on a node (here on a column and on a star) is refused."""
    tree = _tree("SELECT bid, count(*) FROM m GROUP BY bid")
    column = tree.find(exp.Column)
    column.set("collation", exp.Literal.string("nocase"))   # an argument hfq never reads
    with pytest.raises(SqlError, match="COLLATION on COLUMN"):
        allow.check(tree)


def test_exclude_ignored_would_be_refused(db, monkeypatch):
    """The bug issue 24 found: ``* EXCLUDE`` answered as ``*``.  With EXCLUDE taken off the
    allow-list (the compiler "forgetting" it), the query is refused, not answered."""
    text = "SELECT * EXCLUDE (bid) FROM m"
    assert "bid" not in db.sql(text).collect().columns
    monkeypatch.setitem(allow.ALLOWED, exp.Star, allow.ALLOWED[exp.Star] - {"except_"})
    with pytest.raises(SqlError, match=r"SELECT \* EXCLUDE \(\.\.\.\) \(line 1, column 8\)"):
        db.sql(text + " ")


def test_refusals_name_the_construct_and_where_it_is(db):
    expected = {
        "SELECT * FROM m TABLESAMPLE 10%": "TABLESAMPLE (line 1, column 15)",
        "SELECT * FROM m FOR SYSTEM_TIME AS OF 2020":
            "FOR SYSTEM_TIME AS OF takes a timestamp literal",
        "SELECT *\nFROM m\nWHERE x IN (SELECT unnest([1, 2]))": "line 3",
        "SELECT sum(bid) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW "
        "EXCLUDE CURRENT ROW) FROM m": "EXCLUDE in a window frame",
        "SELECT * FROM m, LATERAL (SELECT 1)": "LATERAL",
        "SELECT DISTINCT ON (symbol) * FROM m": "DISTINCT ON",
        "SELECT bid FROM m GROUP BY ROLLUP (bid)": "ROLLUP",
    }
    for text, where in expected.items():
        with pytest.raises(SqlError) as info:
            db.sql(text)
        assert where in str(info.value), (text, str(info.value))
