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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from sqlglot import exp

from hfq.engine.sql.errors import error, unsupported

__all__ = ["inline"]


@dataclass(frozen=True)
class _Parts:
    """What a window clause says: PARTITION BY keys, ORDER BY, frame (each possibly absent)."""

    partition: list[exp.Expression]
    order: exp.Order | None
    frame: exp.WindowSpec | None


def inline(tree: exp.Expression, text: str) -> exp.Expression:
    """``tree`` with every reference to a named window replaced by the window it names and
    every WINDOW clause removed; an error at the reference for one DuckDB refuses too."""
    for select in list(tree.find_all(exp.Select)):
        definitions = select.args.get("windows") or []
        if definitions:
            _inline_select(select, definitions, text)
    for window in tree.find_all(exp.Window):
        name = window.args.get("alias")
        if isinstance(name, exp.Identifier):   # a reference no WINDOW clause could resolve
            raise error(name, f'window "{name.name}" does not exist')
    return tree


def _inline_select(select: exp.Select, definitions: list[Any], text: str) -> None:
    named: dict[str, _Parts] = {}
    for definition in definitions:
        name = definition.this
        key = name.name.lower()
        if key in named:
            raise error(name, f'window "{name.name}" is already defined')
        named[key] = _derive(named, definition, bare=False)
    select.set("windows", None)
    for window in list(select.find_all(exp.Window)):
        if not isinstance(window.args.get("alias"), exp.Identifier) or \
                window.find_ancestor(exp.Select) is not select or \
                _clause_of(window, select) != "expressions":
            continue   # another SELECT's, or outside the select list: left to fail by name
        parts = _derive(named, window, bare=_bare(window.args["alias"], text))
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
    base = named.get(base_name.name.lower())
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


def _bare(name: exp.Identifier, text: str) -> bool:
    """Whether a reference is ``OVER w`` (the window whole) rather than ``OVER (w ...)``:
    sqlglot parses both alike, DuckDB does not, so the text says."""
    start = name.meta.get("start")
    if not isinstance(start, int) or not 0 <= start <= len(text):
        raise unsupported(name, "a named window whose place in the text is not known")
    before = text[:start]
    if "--" in before:   # a line comment could hide "OVER" or "(" before the name
        raise unsupported(name, f'a reference to window "{name.name}" after a -- comment '
                                "(write /* ... */ comments, or none)")
    if name.args.get("quoted") and before.endswith('"'):
        before = before[:-1]
    before = before.rstrip()
    while before.endswith("*/") and (opened := before.rfind("/*", 0, len(before) - 2)) >= 0:
        before = before[:opened].rstrip()   # block comments between OVER and the name
    if before.endswith("("):
        return False
    if before.upper().endswith("OVER"):
        return True
    raise unsupported(name, f'the reference to window "{name.name}"')
