"""``hfq scan --where``: a small filter language, parsed with :mod:`ast` and never ``eval``."""

from __future__ import annotations

import argparse
import ast
import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import polars as pl
import pyarrow as pa

from hfq.cli.args import UsageError, date

__all__ = ["WhereError", "parse_where"]


class WhereError(UsageError):
    """A ``--where`` expression outside the small language :func:`parse_where` accepts."""


_COMPARE: dict[type[ast.cmpop], Callable[[pl.Expr, pl.Expr], pl.Expr]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}
_ARITH: dict[type[ast.operator], Callable[[pl.Expr, pl.Expr], pl.Expr]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
}
_REFUSED: dict[type[ast.AST], str] = {
    ast.Call: "a function call", ast.Attribute: "attribute access", ast.Subscript: "indexing",
    ast.Lambda: "a lambda", ast.IfExp: "an if-else expression", ast.NamedExpr: "an assignment",
    ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.GeneratorExp: "a comprehension",
    ast.Dict: "a dict", ast.Starred: "a starred expression", ast.JoinedStr: "an f-string",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield", ast.Slice: "a slice",
}


def parse_where(text: str, columns: Mapping[str, pa.DataType]) -> pl.Expr:
    """A polars expression from a small, safe filter language (never ``eval``).

    ``columns`` maps the table's column names to their Arrow types.  Accepted: comparisons
    (chained too), ``and``/``or``/``not``, ``+ - * / // %`` and unary minus, column names,
    numbers, strings, ``True``/``False``, ``COL in (...)`` / ``not in``, ``COL is None`` /
    ``is not None``.  A string compared with a date, time or timestamp column is read as one
    (``date >= '2007-08-02'``, ``time < '09:30'``).  Anything else raises :class:`WhereError`
    naming it.

    Examples
    --------
    >>> import pyarrow as pa
    >>> cols = {"bid": pa.float64(), "ofr": pa.float64(), "symbol": pa.string()}
    >>> parse_where("bid > 0 and ofr > bid", cols)  # doctest: +ELLIPSIS
    <Expr [...] at ...>
    >>> parse_where("__import__('os')", cols)
    Traceback (most recent call last):
    ...
    hfq.cli.where.WhereError: --where: a function call is not allowed: __import__('os')
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        where = f" at character {exc.offset}" if exc.offset else ""
        raise WhereError(f"--where: invalid syntax{where}: {text.strip()!r}") from None
    expr, kind = _Where(text.strip(), columns).convert(tree.body)
    if kind != "bool":
        raise WhereError(f"--where must be a condition (e.g. a comparison), not a value: "
                         f"{text.strip()!r}")
    return expr


class _Where:
    """Converts one parsed ``--where`` expression; each node gives (expression, kind), kind
    one of ``bool``, ``value`` or ``null`` (only valid in ``is None``)."""

    def __init__(self, text: str, columns: Mapping[str, pa.DataType]) -> None:
        self.text = text
        self.columns = columns

    def fail(self, node: ast.AST, what: str) -> NoReturn:
        segment = ast.get_source_segment(self.text, node) or self.text
        raise WhereError(f"--where: {what} is not allowed: {segment}")

    def convert(self, node: ast.expr) -> tuple[pl.Expr, str]:
        if isinstance(node, ast.BoolOp):
            parts = [self.condition(v) for v in node.values]
            out = parts[0]
            for part in parts[1:]:
                out = out & part if isinstance(node.op, ast.And) else out | part
            return out, "bool"
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return ~self.condition(node.operand), "bool"
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                value = self.value(node.operand)
                return (-value if isinstance(node.op, ast.USub) else value), "value"
            self.fail(node, "'~' (use 'not')")
        if isinstance(node, ast.BinOp):
            op = _ARITH.get(type(node.op))
            if op is None:
                hint = {ast.BitAnd: "'&' (use 'and')", ast.BitOr: "'|' (use 'or')"}
                self.fail(node, hint.get(type(node.op), f"the operator {type(node.op).__name__}"))
            return op(self.value(node.left), self.value(node.right)), "value"
        if isinstance(node, ast.Compare):
            return self.compare(node), "bool"
        if isinstance(node, ast.Name):
            return pl.col(self.column(node)), ("bool" if pa.types.is_boolean(
                self.columns[node.id]) else "value")
        if isinstance(node, ast.Constant):
            if node.value is None:
                return pl.lit(None), "null"
            if isinstance(node.value, bool):
                return pl.lit(node.value), "bool"
            if isinstance(node.value, (int, float, str)):
                return pl.lit(node.value), "value"
            self.fail(node, f"a {type(node.value).__name__} literal")
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            self.fail(node, "a list of values outside 'COL in (...)'")
        self.fail(node, _REFUSED.get(type(node), f"the construct {type(node).__name__}"))

    def column(self, node: ast.Name) -> str:
        if node.id not in self.columns:
            raise WhereError(f"--where: unknown column {node.id!r}; the columns are "
                             f"{', '.join(self.columns)}")
        return node.id

    def condition(self, node: ast.expr) -> pl.Expr:
        expr, kind = self.convert(node)
        if kind != "bool":
            self.fail(node, "a value where a condition is needed")
        return expr

    def value(self, node: ast.expr) -> pl.Expr:
        expr, kind = self.convert(node)
        if kind == "null":
            self.fail(node, "None outside 'is None'")
        return expr

    def compare(self, node: ast.Compare) -> pl.Expr:
        out: pl.Expr | None = None
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                term = self.membership(left, right)
                term = ~term if isinstance(op, ast.NotIn) else term
            elif isinstance(op, (ast.Is, ast.IsNot)):
                if not (isinstance(right, ast.Constant) and right.value is None):
                    self.fail(node, "'is' with anything but None")
                term = self.value(left).is_null() if isinstance(op, ast.Is) \
                    else self.value(left).is_not_null()
            else:
                if any(isinstance(x, ast.Constant) and x.value is None for x in (left, right)):
                    self.fail(node, "comparing with None (use 'is None' / 'is not None')")
                term = _COMPARE[type(op)](self.operand(left, right), self.operand(right, left))
            out = term if out is None else out & term
            left = right
        assert out is not None
        return out

    def operand(self, node: ast.expr, other: ast.expr) -> pl.Expr:
        """``node`` as a comparison operand: a string literal against a temporal column
        becomes that column's type."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                isinstance(other, ast.Name) and other.id in self.columns:
            return pl.lit(self.literal(node, self.columns[other.id]))
        return self.value(node)

    def literal(self, node: ast.Constant, dtype: pa.DataType) -> Any:
        text = str(node.value)
        try:
            if pa.types.is_date(dtype):
                return dt.date.fromisoformat(date(text))
            if pa.types.is_time(dtype):
                return dt.time.fromisoformat(text)
            if pa.types.is_timestamp(dtype):
                return dt.datetime.fromisoformat(text)
        except (ValueError, argparse.ArgumentTypeError):
            raise WhereError(f"--where: {text!r} is not a {dtype} value") from None
        return node.value

    def membership(self, left: ast.expr, right: ast.expr) -> pl.Expr:
        if not isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            self.fail(right, "'in' without a list of values such as ('IBM', 'MSFT')")
        values = []
        for element in right.elts:
            if not (isinstance(element, ast.Constant) and
                    isinstance(element.value, (int, float, str, bool))):
                self.fail(element, "anything but a number or a string inside 'in (...)'")
            values.append(self.literal(element, self.columns[left.id])
                          if isinstance(left, ast.Name) and left.id in self.columns
                          else element.value)
        return self.value(left).is_in(values)
