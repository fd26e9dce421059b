"""Errors of the SQL compiler: what was wrong and where in the text (line, column).

Every refusal and every error of planning a statement goes through :func:`error`, so the
user sees the construct, its position and (for tables) the valid choices -- never a bare
polars or pyarrow message.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.errors import QueryError, SqlError
from hfq.query.read import polars_message

__all__ = ["at", "construct", "error", "in_hfq_words", "position", "unsupported"]


def position(node: Any) -> tuple[int | None, int | None]:
    """Where ``node`` starts in the text: the first token under it that sqlglot placed."""
    if not isinstance(node, exp.Expression):
        return None, None
    found = []
    for n in node.walk():
        meta = getattr(n, "meta", None) or {}
        if "line" in meta:   # sqlglot records where a token ends
            width = len(str(n.this or "")) if isinstance(n, (exp.Identifier, exp.Literal)) \
                else len(n.name or "")
            found.append((meta["line"], max(1, meta["col"] - width + 1)))
    if found:
        return min(found)
    parent = node.parent
    return position(parent) if parent is not None and parent is not node else (None, None)


def error(node: Any, message: str) -> SqlError:
    """A :class:`SqlError` with ``message`` at the position of ``node``."""
    line, col = position(node)
    return SqlError(message, line=line, column=col)


def unsupported(node: Any, what: str | None = None) -> SqlError:
    """``unsupported SQL: <construct>`` at ``node``."""
    return error(node, f"unsupported SQL: {what or construct(node)}")


def construct(node: Any) -> str:
    """How a node is named to the user: ``function f()``, ``ORDER``, ``TABLESAMPLE``..."""
    if isinstance(node, exp.Anonymous):
        return f"function {node.name}()"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name().lower()}()"
    return str(getattr(node, "key", "?")).upper().replace("_", " ")


@contextlib.contextmanager
def at(node: exp.Expression | None) -> Iterator[None]:
    """Errors of building the plan (unknown columns, type errors) point at ``node``."""
    try:
        yield
    except SqlError:
        raise
    except QueryError as exc:
        cause = exc.__cause__
        if isinstance(cause, pl.exceptions.PolarsError) and node is not None:
            # the step's polars plan means nothing to the SQL user: the clause instead
            raise error(node, f"{_clause(node)}: {in_hfq_words(polars_message(cause))}") \
                from exc
        raise error(node, str(exc)) from exc


#: polars' words for a type error of the plan -> hfq's (the same facts, no polars jargon)
_WORDS = [
    (re.compile(r"failed to determine supertype of (.+?) and (.+)$"),
     r"type mismatch: \1 and \2 values do not mix (CAST one of them)"),
    (re.compile(r"`(\w+)` operation not supported for dtype `([^`]+)`.*$"),
     r"\1 does not take \2 values"),
    (re.compile(r"dtype (\w+) not supported in '(\w+)' operation.*$"),
     r"\2 does not take \1 values"),
]


def in_hfq_words(message: str) -> str:
    """A polars type error of the plan said in hfq's words (others unchanged).

    >>> in_hfq_words("failed to determine supertype of time and duration[μs]")
    'type mismatch: time and duration[μs] values do not mix (CAST one of them)'
    """
    for pattern, words in _WORDS:
        if pattern.search(message):
            return pattern.sub(words, message)
    return message


def _clause(node: exp.Expression) -> str:
    text = node.sql("duckdb")
    return text if len(text) <= 120 else text[:117] + "..."
