"""The select list expanded: ``*`` and ``t.*`` with DuckDB's ``EXCLUDE (...)``,
``REPLACE (expr AS name, ...)`` and ``RENAME (name AS new, ...)``, and ``COLUMNS('regex')``
(alone or inside an expression: one item per matching column)."""

from __future__ import annotations

import re

from sqlglot import exp

from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.scope import Scope

__all__ = ["items_of"]

Item = tuple[str, exp.Expression]


def items_of(select: exp.Select, scope: Scope) -> list[Item]:
    """(output name, expression) for every item of the select list."""
    items: list[Item] = []
    for e in select.expressions:
        star = e if isinstance(e, exp.Star) else \
            e.this if isinstance(e, exp.Column) and isinstance(e.this, exp.Star) else None
        if star is not None:
            items += _star(e, star, scope)
            continue
        columns = list(e.find_all(exp.Columns))
        if columns:
            items += _columns(e, columns, scope)
            continue
        items.append(_item(e))
    return items


def _item(e: exp.Expression) -> Item:
    if isinstance(e, exp.Alias):
        return e.alias_or_name, e.this
    return (e.name if isinstance(e, exp.Column) else e.sql("duckdb")), e


def _star(e: exp.Expression, star: exp.Star, scope: Scope) -> list[Item]:
    table = e.table if isinstance(e, exp.Column) else ""
    if table:
        cols = scope.qualifiers.get(table)
        if cols is None:
            raise error(e, f"unknown table or alias {table!r}")
        items: list[Item] = [(c, exp.column(c, table)) for c in cols if not c.startswith("__")]
    else:
        items = [(c, exp.column(c)) for c in scope.columns()]
    names = [n for n, _ in items]
    drop = [_name(x) for x in star.args.get("except_") or []]
    for x, name in zip(star.args.get("except_") or [], drop):
        if name not in names:
            raise error(x, f"column {name!r} in EXCLUDE is not in *; columns: "
                           f"{', '.join(names)}")
    items = [(n, x) for n, x in items if n not in drop]
    for r in star.args.get("replace") or []:
        if not isinstance(r, exp.Alias):
            raise error(r, "REPLACE takes expr AS name")
        at = [i for i, (n, _) in enumerate(items) if n == r.alias]
        if not at:
            raise error(r, f"column {r.alias!r} in REPLACE is not in *")
        items[at[0]] = (r.alias, r.this)
    for r in star.args.get("rename") or []:
        if not isinstance(r, exp.Alias):
            raise error(r, "RENAME takes name AS new_name")
        old = _name(r.this)
        at = [i for i, (n, _) in enumerate(items) if n == old]
        if not at:
            raise error(r, f"column {old!r} in RENAME is not in *")
        items[at[0]] = (r.alias, items[at[0]][1])
    return items


def _name(node: exp.Expression) -> str:
    if isinstance(node, exp.Column) and not node.table:
        return node.name
    if isinstance(node, exp.Identifier):
        return node.name
    raise error(node, f"expected a column name, got {node.sql('duckdb')}")


def _columns(e: exp.Expression, found: list[exp.Columns], scope: Scope) -> list[Item]:
    """``COLUMNS('regex')`` or ``COLUMNS(*)``: the item once per matching column."""
    if len(found) != 1:
        raise unsupported(found[1], "several COLUMNS(...) in one item")
    node = found[0]
    arg = node.this
    names = scope.columns()
    if isinstance(arg, exp.Star):
        star = _star(arg, arg, scope)
        matched = [n for n, _ in star]
    elif isinstance(arg, exp.Literal) and arg.is_string:
        try:
            pattern = re.compile(arg.this)
        except re.error as exc:
            raise error(arg, f"COLUMNS: bad regular expression {arg.this!r}: {exc}") from None
        matched = [n for n in names if pattern.search(n)]
    else:
        raise unsupported(node, "COLUMNS(...) other than COLUMNS('regex') or COLUMNS(*)")
    if not matched:
        raise error(node, "COLUMNS(...) matches no column")
    out: list[Item] = []
    for name in matched:
        copy = e.copy()
        target = next(copy.find_all(exp.Columns))
        if target is copy:
            copy = exp.column(name)
        else:
            target.replace(exp.column(name))
        if isinstance(copy, exp.Alias):
            out.append((copy.alias, copy.this))
        elif isinstance(copy, exp.Column):
            out.append((name, copy))
        else:
            out.append((copy.sql("duckdb"), copy))
    return out
