"""Named windows -- ``WINDOW w AS (...)`` with ``OVER w`` or ``OVER (w ORDER BY ... ROWS ...)``
-- written out in place before a statement is checked, with DuckDB's rules.

A SELECT's WINDOW clause defines names in order; a definition may build on an earlier one
(``v AS (w ORDER BY t)``). A window naming another takes its PARTITION BY and ORDER BY and may
add an ORDER BY (only where the named window has none) and a frame (only where the named window
has none: DuckDB cannot copy a window that has a frame). ``OVER w`` without parentheses is the
named window whole, frame included. Names match without regard to case and are seen only in
the select list of their own SELECT: DuckDB finds no window of that name in ORDER BY, in a
subquery, or in another SELECT of a UNION, and neither does hfq. Everything else (a name
defined twice, an unknown name, ``OVER (w PARTITION BY ...)``) is an error that says where.
As in DuckDB, names fold only ASCII letters (``"Ä"`` is not ``"ä"``), an empty quoted name is
an error, and so is an unquoted name that is one of DuckDB's reserved words.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any, cast

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from hfq.engine.sql.errors import error, unsupported

__all__ = ["RESERVED", "inline"]

RESERVED = frozenset("""
    all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create default deferrable desc describe distinct do else end except false fetch
    for foreign from group having in initially intersect into lambda lateral leading limit not
    null offset on only or order pivot pivot_longer pivot_wider placing primary qualify
    references returning select show some summarize symmetric table then to trailing true union
    unique unpivot using variadic when where window with""".split())
"""DuckDB's reserved words (``duckdb_keywords()``, category ``reserved``): unquoted, none
names a window (sqlglot takes most of them as names)."""

_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


@dataclass(frozen=True)
class _Parts:
    """What a window clause says: PARTITION BY keys, ORDER BY, frame (each possibly absent)."""

    partition: list[exp.Expression]
    order: exp.Order | None
    frame: exp.WindowSpec | None


def inline(tree: exp.Expression, text: str) -> exp.Expression:
    """``tree`` with every reference to a named window replaced by the window it names and
    every WINDOW clause removed; an error at the reference for one DuckDB refuses too."""
    selects = [s for s in tree.find_all(exp.Select) if s.args.get("windows")]
    if selects:
        before = _token_before(text)
        for select in reversed(selects):   # deepest first: a subquery in a definition is
            _inline_select(select, select.args["windows"], before)   # written out when copied
    for window in tree.find_all(exp.Window):
        name = window.args.get("alias")
        if isinstance(name, exp.Identifier):   # a reference no WINDOW clause could resolve
            raise error(name, f'window "{name.name}" does not exist')
    return tree


def _inline_select(select: exp.Select, definitions: list[Any],
                   before: dict[int, TokenType]) -> None:
    named: dict[str, _Parts] = {}
    for definition in definitions:
        name = definition.this
        key = _key(name)
        if key in named:
            raise error(name, f'window "{name.name}" is already defined')
        named[key] = _derive(named, definition, bare=False)
    select.set("windows", None)
    for window in list(select.find_all(exp.Window)):
        if not isinstance(window.args.get("alias"), exp.Identifier) or \
                window.find_ancestor(exp.Select) is not select or \
                _clause_of(window, select) != "expressions":
            continue   # another SELECT's, or outside the select list: left to fail by name
        parts = _derive(named, window, bare=_bare(window.args["alias"], before))
        window.set("alias", None)
        window.set("partition_by", [p.copy() for p in parts.partition] or None)
        window.set("order", parts.order.copy() if parts.order is not None else None)
        window.set("spec", parts.frame.copy() if parts.frame is not None else None)


def _derive(named: dict[str, _Parts], window: exp.Window, bare: bool) -> _Parts:
    """The parts of ``window`` (a definition or a reference) once the window it names, if
    any, is folded in."""
    own = _Parts(list(window.args.get("partition_by") or []), window.args.get("order"),
                 window.args.get("spec"))
    base_name = window.args.get("alias")
    if not isinstance(base_name, exp.Identifier):
        return own
    base = named.get(_key(base_name))
    if base is None:
        raise error(base_name, f'window "{base_name.name}" does not exist')
    if bare:
        return base
    if own.partition:
        raise unsupported(own.partition[0], "PARTITION BY beside the name of a window "
                                            f'("{base_name.name}"): write the window out')
    if base.frame is not None:
        raise error(base_name, f'cannot copy window "{base_name.name}" because it has a '
                               "frame clause (write OVER " f"{base_name.name} without "
                               "parentheses to use it whole)")
    if own.order is not None and base.order is not None:
        raise error(own.order, f'cannot override ORDER BY clause of window "{base_name.name}"')
    return _Parts(base.partition, own.order if own.order is not None else base.order,
                  own.frame)


def _clause_of(node: exp.Expression, select: exp.Select) -> str | None:
    """The argument of ``select`` (``expressions``, ``order``, ``where``...) holding ``node``."""
    while node.parent is not None and node.parent is not select:
        node = cast(exp.Expression, node.parent)
    return node.arg_key if node.parent is select else None


def _key(name: exp.Identifier) -> str:
    """The name a window is known by: ASCII letters folded to lower case (DuckDB's rule), or
    a syntax error for an empty quoted name or an unquoted reserved word."""
    quoted = bool(name.args.get("quoted"))
    if not name.name:
        raise error(name, "SQL syntax error: zero-length delimited identifier")
    key = name.name.translate(_FOLD)
    if not quoted and key in RESERVED:
        raise error(name, f'SQL syntax error at or near "{name.name}" (a reserved word: '
                          "quote it to name a window)")
    return key


def _token_before(text: str) -> dict[int, TokenType]:
    """The type of the token before each token of ``text``, by the token's first character
    (comments are not tokens: sqlglot keeps them beside the tokens)."""
    tokens = Dialect.get_or_raise("duckdb").tokenize(text)
    return {token.start: prev.token_type for prev, token in zip(tokens, tokens[1:])}


def _bare(name: exp.Identifier, before: dict[int, TokenType]) -> bool:
    """Whether a reference is ``OVER w`` (the window whole) rather than ``OVER (w ...)``:
    sqlglot parses both alike, DuckDB does not, so the token before the name says."""
    kind = before.get(name.meta.get("start", -1))
    if kind is TokenType.L_PAREN:
        return False
    if kind is TokenType.OVER:
        return True
    raise unsupported(name, f'the reference to window "{name.name}"')
