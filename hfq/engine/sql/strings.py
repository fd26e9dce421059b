"""DuckDB's text functions that polars computes exactly: ``reverse``, ``replace``,
``starts_with``, ``ends_with``, ``contains``, ``strpos`` (``instr``, ``position(x IN s)``),
``left``, ``right`` and ``trim``/``ltrim``/``rtrim`` (DuckDB's spaces: Unicode's space
separators, not tabs or newlines).

Characters are Unicode code points, as DuckDB counts them (``left(s, 1)`` of an ``é`` spelt
``e`` + U+0301 is the ``e`` alone; ``reverse`` keeps a letter with its combining marks, as
DuckDB's does); a NULL argument gives NULL; SYMBOL/CHAR columns are read as their text.
Where DuckDB and polars could part -- a pattern that is not a literal in ``replace`` and
``strpos`` -- the call is refused by name.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
from sqlglot import exp

from hfq.engine.sql.errors import error
from hfq.engine.sql.literals import kind
from hfq.engine.sql.scope import Compiles

__all__ = ["RULES"]


_MAX_LENGTH = 2**32 - 1   # DuckDB's longest substring


def _text(c: Compiles, arg: exp.Expression, name: str) -> pl.Expr:
    """``arg`` as text (a NULL literal is a NULL text), or refused as DuckDB's binder does."""
    e = c.expr(arg)
    dtype = c.dtype(e)
    if dtype == pl.String:
        return e
    if isinstance(dtype, (pl.Categorical, pl.Enum, pl.Null)):
        return e.cast(pl.String)
    raise error(arg, f"{name}() takes text, not {arg.sql('duckdb')} ({kind(dtype) or dtype})")


def _integer(c: Compiles, arg: exp.Expression, name: str) -> pl.Expr:
    e = c.expr(arg)
    dtype = c.dtype(e)
    if dtype.is_integer() or isinstance(dtype, pl.Null):
        return e.cast(pl.Int64)
    raise error(arg, f"{name}() takes an integer count, not {arg.sql('duckdb')} "
                     f"({kind(dtype) or dtype})")


def _literal(arg: exp.Expression, name: str, what: str) -> str | None:
    """The text of a string literal argument (None for NULL), or refused by name."""
    if isinstance(arg, exp.Null):
        return None
    if isinstance(arg, exp.Literal) and arg.is_string:
        return str(arg.this)
    raise error(arg, f"{name}() takes a string literal {what}, not {arg.sql('duckdb')}")


def _arity(node: exp.Expression, args: list[exp.Expression], n: int, name: str) -> None:
    if len(args) != n:
        raise error(node, f"{name}() takes {n} argument{'s' if n > 1 else ''}, not {len(args)}")


def _reverse(c: Compiles, node: exp.Expression, args: list[exp.Expression]) -> pl.Expr:
    _arity(node, args, 1, "reverse")
    return _text(c, args[0], "reverse").str.reverse()


def _affix(test: str) -> Callable[[Compiles, exp.Expression, list[exp.Expression]], pl.Expr]:
    def rule(c: Compiles, node: exp.Expression, args: list[exp.Expression]) -> pl.Expr:
        _arity(node, args, 2, test)
        s, other = _text(c, args[0], test), _text(c, args[1], test)
        if test == "starts_with":
            return s.str.starts_with(other)
        if test == "ends_with":
            return s.str.ends_with(other)
        return s.str.contains(other, literal=True)   # contains: '' is in every text
    return rule


def _strpos(c: Compiles, node: exp.Expression, args: list[exp.Expression]) -> pl.Expr:
    """The position (from 1, in characters) of the first occurrence, 0 when there is none;
    1 for an empty needle (DuckDB's)."""
    _arity(node, args, 2, "strpos")
    s = _text(c, args[0], "strpos")
    needle = _literal(args[1], "strpos", "to find")
    if needle is None:
        return pl.lit(None, dtype=pl.Int64)
    if needle == "":
        return pl.when(s.is_not_null()).then(pl.lit(1, dtype=pl.Int64))
    before = s.str.splitn(needle, 2).struct.field("field_0").str.len_chars().cast(pl.Int64)
    return pl.when(s.str.contains(needle, literal=True)).then(before + 1) \
        .when(s.is_not_null()).then(pl.lit(0, dtype=pl.Int64))


def _replace(c: Compiles, node: exp.Expression, args: list[exp.Expression]) -> pl.Expr:
    """Every occurrence replaced, as literal text; an empty text to find changes nothing."""
    _arity(node, args, 3, "replace")
    s = _text(c, args[0], "replace")
    old = _literal(args[1], "replace", "to find")
    new = _literal(args[2], "replace", "to put in")
    if old is None or new is None:
        return pl.lit(None, dtype=pl.String)
    return s if old == "" else s.str.replace_all(old, new, literal=True)


def _side(name: str) -> Callable[[Compiles, exp.Expression, list[exp.Expression]], pl.Expr]:
    def rule(c: Compiles, node: exp.Expression, args: list[exp.Expression]) -> pl.Expr:
        """The first (left) or last (right) n characters; a negative n: all but the last
        (first) |n|; ``left`` of a text longer than 2^32 - 1 raises, as DuckDB's."""
        _arity(node, args, 2, name)
        s, n = _text(c, args[0], name), _integer(c, args[1], name)
        if name == "right":
            return s.str.tail(n)
        bad = (s.is_not_null() & (n > _MAX_LENGTH)).fill_null(False)
        return c.fail(s.str.head(n), bad, node, f"left(): a length past {_MAX_LENGTH} is out "
                                                "of range")
    return rule


#: what DuckDB's trim removes: the Unicode space separators (category Zs; checked against
#: DuckDB for U+0001-U+30FF: tabs and newlines stay)
_SPACES = "\u0020\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + \
    "\u202f\u205f\u3000"


def _trim(c: Compiles, node: exp.Expression, args: list[exp.Expression]) -> pl.Expr:
    """``trim``/``ltrim``/``rtrim`` (``trim(LEADING|TRAILING|BOTH [chars] FROM s)``): spaces
    as DuckDB's (:data:`_SPACES`), or any of the characters of a string literal."""
    s = _text(c, args[0], "trim")
    chars: str | None = _SPACES
    if len(args) > 1:
        chars = _literal(args[1], "trim", "of characters to remove")
    if chars is None:
        return pl.lit(None, dtype=pl.String)
    if chars == "":
        return s
    side = str(node.args.get("position") or "BOTH").upper()
    if side == "LEADING":
        return s.str.strip_chars_start(chars)
    if side == "TRAILING":
        return s.str.strip_chars_end(chars)
    return s.str.strip_chars(chars)


#: function name (sqlglot's, lower case) -> rule(compiler, call node, arguments)
RULES: dict[str, Callable[[Compiles, exp.Expression, list[exp.Expression]], pl.Expr]] = {
    "reverse": _reverse, "replace": _replace, "starts_with": _affix("starts_with"),
    "ends_with": _affix("ends_with"), "contains": _affix("contains"),
    "str_position": _strpos, "strpos": _strpos, "instr": _strpos,
    "left": _side("left"), "right": _side("right"), "trim": _trim,
}
