"""One SQL statement: parsed by sqlglot (dialect ``duckdb``), compiled to a
:class:`~hfq.engine.query.Query`, and cached while the tables it reads are unchanged."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, cast

import sqlglot
from sqlglot import exp

from hfq.engine.query import Query, reuse
from hfq.engine.sql import named_windows
from hfq.engine.sql.check import check
from hfq.engine.sql.dml import Changes, run_change
from hfq.engine.sql.errors import unsupported
from hfq.engine.sql.literals import bind
from hfq.engine.sql.scope import Catalog
from hfq.engine.sql.select import Compiler
from hfq.errors import QueryError, SqlError

__all__ = ["SqlCache", "compile_sql", "parse"]


class SqlCache:
    """Compiled statements of one database, reused while every table they read is at the
    version it was compiled against (a repeated query skips parsing and planning)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.entries: OrderedDict[str, tuple[Query, dict[str, Any]]] = OrderedDict()

    def get(self, text: str, version: Callable[[str], Any]) -> Query | None:
        hit = self.entries.get(text)
        if hit is None:
            return None
        query, seen = hit
        try:
            if any(version(name) != token for name, token in seen.items()):
                return None
        except QueryError:   # a table gone since
            return None
        self.entries.move_to_end(text)
        return reuse(query)

    def put(self, text: str, query: Query, seen: dict[str, Any]) -> None:
        self.entries[text] = (query, seen)
        self.entries.move_to_end(text)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


def compile_sql(text: str, catalog: Catalog, *, params: Sequence[Any] | None = None,
                cache: SqlCache | None = None,
                version: Callable[[str], Any] | None = None,
                changes: Changes | None = None) -> Query:
    """The query of one SQL ``SELECT`` statement; tables come from ``catalog(name)`` (or
    ``catalog(name, version=n)`` for ``FROM t AT (VERSION => n)``, ``catalog(name,
    as_of=text)`` for ``AT (TIMESTAMP => ...)`` / ``FOR SYSTEM_TIME AS OF``).  With
    ``changes`` (``changes(name)``: the table to change), ``DELETE``, ``UPDATE``, ``INSERT``
    and ``ALTER TABLE`` run now (:mod:`hfq.engine.sql.dml`) and give their row count.

    ``params``: the values of the statement's ``?`` or ``$1``, ``$2``... placeholders, put in
    the parsed tree as typed literals (never into the text).  With a ``cache`` and
    ``version(name)`` (the table's current ``(table_id, version)``), a statement compiled
    before with the same parameters against the same versions is reused."""
    first = _first_word(text)
    if changes is not None and first is not None and first[0].upper() in _CHANGES:
        return run_change(bind(parse(text), params), catalog, changes)   # runs now
    key = text if params is None else f"{text}\0{params!r}"
    if cache is None or version is None:
        return _compile(text, catalog, params)
    hit = cache.get(key, version)
    if hit is not None:
        return hit
    seen: dict[str, Any] = {}

    def tracked(name: str, **kw: Any) -> Query:
        q = catalog(name, **kw)
        m = getattr(q.source, "manifest", None)
        # a table read at a pinned version never matches its head: compiled again
        pinned = kw.get("version") is not None
        seen[name] = (m.table_id, -1 if pinned else m.version) if m is not None else None
        return q

    query = _compile(text, tracked, params)
    cache.put(key, query, seen)
    return reuse(query)


_CHANGES = {"DELETE", "UPDATE", "INSERT", "ALTER"}
"""Statements that change data (:mod:`hfq.engine.sql.dml`): run when compiled, never cached."""

_STARTS = {"SELECT", "WITH", "FROM", "PIVOT", "VALUES", "(", "INSERT", "UPDATE", "DELETE",
           "CREATE", "DROP", "ALTER", "COPY", "ATTACH", "DETACH", "SET", "PRAGMA", "EXPLAIN",
           "DESCRIBE", "SHOW", "SUMMARIZE", "CALL", "LOAD", "INSTALL", "USE", "TABLE",
           "UNPIVOT", "BEGIN", "COMMIT", "ROLLBACK", "EXPORT", "IMPORT", "CHECKPOINT", "RESET",
           "VACUUM", "ANALYZE", "MERGE", "TRUNCATE", "UPSERT", "REPLACE", "COMMENT"}


def _first_word(text: str) -> tuple[str, int, int] | None:
    """The statement's first word and where it is (line, column), skipping comments."""
    m = re.match(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", text, re.S)
    start = m.end() if m else 0
    word = re.match(r"[A-Za-z_]+|\(", text[start:])
    if not word:
        return None
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    return word.group(0), line, col


def parse(text: str) -> exp.Expression:
    """The one statement of ``text`` as sqlglot's tree, or a syntax error with its place."""
    first = _first_word(text)
    if first is not None and first[0].upper() not in _STARTS:
        word, line, col = first
        raise SqlError(f"SQL syntax error: {word!r} does not start a statement (expected "
                       "SELECT, WITH, FROM or PIVOT)", line=line, column=col)
    try:
        trees = sqlglot.parse(text, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise SqlError(f"SQL syntax error: {err.get('description', exc)}",
                       line=err.get("line"), column=err.get("col")) from exc
    except sqlglot.errors.TokenError as exc:
        raise SqlError(f"SQL syntax error: {exc}") from exc
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise SqlError(f"expected one SQL statement, got {len(trees)}")
    return named_windows.inline(cast(exp.Expression, trees[0]), text)


def _compile(text: str, catalog: Catalog, params: Sequence[Any] | None) -> Query:
    tree = bind(parse(text), params)
    check(tree)
    if not isinstance(tree, (exp.Select, exp.Subquery, exp.SetOperation, exp.Pivot)):
        raise unsupported(tree, f"{tree.key.upper()} statements (only SELECT is supported)")
    return Compiler(catalog, {}).select(tree)
