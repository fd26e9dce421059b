"""SQL that changes data: ``DELETE``, ``UPDATE``, ``INSERT INTO ... VALUES | SELECT`` (with
DuckDB's ``INSERT OR REPLACE`` / ``OR IGNORE`` and ``ON CONFLICT DO NOTHING`` as upserts on the
table's dedup key) and ``ALTER TABLE`` (``ADD COLUMN``, ``DROP COLUMN``, ``RENAME COLUMN``,
``ALTER COLUMN ... TYPE`` widening).

Each statement runs when ``db.sql`` is called -- one commit through the one write operator, as
``t.delete``/``t.update``/``t.append``/``t.upsert``/``t.add_column``... do -- and returns a
one-row query of the rows it changed (``count``), as DuckDB does.  Conditions and values are
compiled by the same rules as a ``SELECT``'s (:mod:`hfq.engine.sql.expressions`, DuckDB's
semantics: a row whose ``WHERE`` is NULL is not changed); every clause the statement has is
consumed or refused by name (``RETURNING``, ``USING``, ``DEFAULT VALUES``...).  Values are
stored when their type converts without loss (else :class:`~hfq.errors.SchemaMismatchError`).

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("px", hfq.schema.Schema({"sym": hfq.schema.SYMBOL,
...                     "px": hfq.schema.DOUBLE}), partition_by=hfq.Hash("sym", 2))
>>> db.sql("INSERT INTO px VALUES ('A', 1.5), ('B', 2.0), ('C', NULL)").collect()["count"][0]
3
>>> db.sql("UPDATE px SET px = px * 2 WHERE sym <> 'A'").collect()["count"][0]
2
>>> db.sql("DELETE FROM px WHERE px IS NULL").collect()["count"][0]
1
>>> db.sql("SELECT sym, px FROM px ORDER BY sym").collect().rows()
[('A', 1.5), ('B', 4.0)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import polars as pl
from sqlglot import exp

from hfq.engine.query import FrameSource, Query
from hfq.engine.sql.check import check
from hfq.engine.sql.errors import at, error, unsupported
from hfq.engine.sql.expressions import Plain
from hfq.engine.sql.scope import Catalog, Scope
from hfq.engine.sql.select import Compiler

__all__ = ["CHANGES", "Changes", "Mutable", "run_change"]

CHANGES = (exp.Delete, exp.Update, exp.Insert, exp.Alter)
"""The statements this module runs."""

_TYPES = {exp.DataType.Type.BIGINT: "LONG", exp.DataType.Type.INT: "INT",
          exp.DataType.Type.SMALLINT: "SHORT", exp.DataType.Type.DOUBLE: "DOUBLE",
          exp.DataType.Type.FLOAT: "FLOAT", exp.DataType.Type.VARCHAR: "STRING",
          exp.DataType.Type.TEXT: "STRING", exp.DataType.Type.BOOLEAN: "BOOL",
          exp.DataType.Type.DATE: "DATE", exp.DataType.Type.TIMESTAMP: "TIMESTAMP"}
"""SQL types a column can be added or widened to, and the hfq type each one is."""


class Mutable(Protocol):
    """What a statement needs of a table (an :class:`hfq.Table`)."""

    def query(self) -> Query: ...

    def delete(self, *, where: pl.Expr | None = None) -> Any: ...

    def update(self, *, set: dict[str, pl.Expr], where: pl.Expr | None = None) -> Any: ...

    def append(self, data: Any) -> int: ...

    def upsert(self, data: Any, *, keep: str = "last") -> Any: ...

    def add_column(self, name: str, type: str, *, default: Any = None) -> int: ...

    def drop_column(self, name: str) -> int: ...

    def rename_column(self, name: str, new: str) -> int: ...

    def widen_column(self, name: str, type: str) -> int: ...


Changes = Callable[[str], Mutable]
"""``changes(name)``: the table a statement changes (raises for an unknown one)."""


def _allowed(node: exp.Expression, args: set[str], what: str) -> None:
    """Refuse any clause of ``node`` outside ``args`` (by its name)."""
    for name, value in node.args.items():
        if name not in args and value not in (None, False, [], ""):
            raise unsupported(node, f"{what} ... {name.upper().replace('_', ' ')}")


def _table_name(node: exp.Expression) -> str:
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table) or table.args.get("db") or table.args.get("catalog"):
        raise unsupported(node, "a qualified or computed table name")
    _allowed(table, {"this"}, "a table")
    return str(table.name)


def _compiler(table: Mutable, catalog: Catalog) -> tuple[Plain, Query]:
    q = table.query()
    frame = pl.DataFrame(schema=q.schema)
    return Plain(Scope(Query(FrameSource(frame, name="(change)")), {}),
                 Compiler(catalog, {})), q


def _expr(compiler: Plain, node: exp.Expression) -> pl.Expr:
    check(node)
    with at(node):
        return compiler.expr(node)


def _condition(compiler: Plain, node: exp.Expression | None) -> pl.Expr | None:
    if node is None:
        return None
    check(node)
    with at(node):
        return compiler.predicate(node, "WHERE")


def _count(n: int) -> Query:
    return Query(FrameSource(pl.DataFrame({"count": [n]}, schema={"count": pl.Int64}),
                             name="(changed)"))


def run_change(tree: exp.Expression, catalog: Catalog, changes: Changes) -> Query:
    """Run one ``DELETE``/``UPDATE``/``INSERT``/``ALTER TABLE`` (see the module)."""
    if isinstance(tree, exp.Delete):
        _allowed(tree, {"this", "where"}, "DELETE")
        table = changes(_table_name(tree.this))
        compiler, _ = _compiler(table, catalog)
        where = tree.args.get("where")
        report = table.delete(where=_condition(compiler, where.this) if where else pl.lit(True))
        return _count(report.rows_removed)
    if isinstance(tree, exp.Update):
        _allowed(tree, {"this", "expressions", "where"}, "UPDATE")
        table = changes(_table_name(tree.this))
        compiler, _ = _compiler(table, catalog)
        sets: dict[str, pl.Expr] = {}
        for item in tree.expressions:
            if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
                raise error(item, "SET takes column = expression")
            sets[item.this.name] = _expr(compiler, item.expression)
        where = tree.args.get("where")
        report = table.update(set=sets, where=_condition(compiler, where.this) if where
                              else None)
        return _count(report.rows_added)
    if isinstance(tree, exp.Insert):
        return _insert(tree, catalog, changes)
    return _alter(tree, changes)


def _insert(tree: exp.Insert, catalog: Catalog, changes: Changes) -> Query:
    _allowed(tree, {"this", "expression", "alternative", "conflict"}, "INSERT")
    target = tree.this
    table = changes(_table_name(target))
    compiler, q = _compiler(table, catalog)
    names = q.columns
    listed = [str(i.name) for i in target.expressions] if isinstance(target, exp.Schema) \
        else names
    for name in listed:
        if name not in names:
            raise error(target, f"INSERT: table has no column {name!r}; columns: "
                                f"{', '.join(names)}")
    source = tree.expression
    if isinstance(source, exp.Values):
        frames = []
        for row in source.expressions:
            values = row.expressions if isinstance(row, exp.Tuple) else [row]
            if len(values) != len(listed):
                raise error(row, f"INSERT: {len(values)} values for {len(listed)} columns")
            frames.append(pl.select([_expr(compiler, v).alias(n)
                                     for v, n in zip(values, listed)]))
        frame = pl.concat(frames, how="diagonal_relaxed")
    elif isinstance(source, (exp.Select, exp.SetOperation, exp.Subquery)):
        check(source)
        got = Compiler(catalog, {}).select(source).collect()
        if got.width != len(listed):
            raise error(source, f"INSERT: the SELECT gives {got.width} columns for "
                                f"{len(listed)}")
        frame = got.rename(dict(zip(got.columns, listed)))
    else:
        raise unsupported(source if source is not None else tree, "INSERT without VALUES "
                          "or SELECT")
    frame = frame.with_columns(pl.lit(None).alias(n) for n in names if n not in listed)
    frame = frame.select(names)
    keep = _conflict(tree)
    if keep is None:
        table.append(frame)
    else:
        table.upsert(frame, keep=keep)
    return _count(frame.height)


def _conflict(tree: exp.Insert) -> str | None:
    """``INSERT OR REPLACE`` / ``ON CONFLICT DO UPDATE``: ``last``; ``INSERT OR IGNORE`` /
    ``ON CONFLICT DO NOTHING``: ``first``; a plain INSERT: None."""
    alt = str(tree.args.get("alternative") or "").upper()
    if alt:
        if alt not in ("REPLACE", "IGNORE"):
            raise unsupported(tree, f"INSERT OR {alt}")
        return "last" if alt == "REPLACE" else "first"
    conflict = tree.args.get("conflict")
    if conflict is None:
        return None
    action = str(conflict.args.get("action") or "").upper()
    if conflict.args.get("conflict_keys") or conflict.args.get("expressions") or \
            action not in ("DO NOTHING",):
        raise unsupported(conflict, "ON CONFLICT other than DO NOTHING (use INSERT OR "
                                    "REPLACE for the table's dedup key)")
    return "first"


def _alter(tree: exp.Expression, changes: Changes) -> Query:
    if not isinstance(tree, exp.Alter) or str(tree.args.get("kind") or "").upper() != "TABLE":
        raise unsupported(tree, "this ALTER (ALTER TABLE only)")
    _allowed(tree, {"this", "kind", "actions"}, "ALTER TABLE")
    table = changes(_table_name(tree.this))
    for action in tree.args["actions"]:
        if isinstance(action, exp.ColumnDef):
            _allowed(action, {"this", "kind", "constraints"}, "ADD COLUMN")
            default = None
            for c in action.args.get("constraints") or []:
                kind = c.args.get("kind")
                if not isinstance(kind, exp.DefaultColumnConstraint):
                    raise unsupported(c, "column constraints other than DEFAULT")
                default = pl.select(_constant(kind.this)).item()
            table.add_column(action.name, _type(action.args["kind"]), default=default)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "COLUMN":
            _allowed(action, {"tables", "kind"}, "DROP COLUMN")
            for column in action.args["tables"]:
                table.drop_column(column.name)
        elif isinstance(action, exp.RenameColumn):
            _allowed(action, {"this", "to"}, "RENAME COLUMN")
            table.rename_column(action.this.name, action.args["to"].name)
        elif isinstance(action, exp.AlterColumn):
            _allowed(action, {"this", "dtype"}, "ALTER COLUMN")
            if action.args.get("dtype") is None:
                raise unsupported(action, "ALTER COLUMN other than TYPE (a widening)")
            table.widen_column(action.name, _type(action.args["dtype"]))
        else:
            raise unsupported(action, f"ALTER TABLE ... {action.key.upper()}")
    return _count(0)


def _type(node: exp.DataType) -> str:
    kind = _TYPES.get(node.this)
    if kind is None or node.expressions:
        raise unsupported(node, f"column type {node.sql('duckdb')} (types: BIGINT, INTEGER, "
                                "SMALLINT, DOUBLE, FLOAT, VARCHAR, BOOLEAN, DATE, TIMESTAMP)")
    return kind


def _constant(node: exp.Expression) -> pl.Expr:
    check(node)
    compiler = Plain(Scope(Query(FrameSource(pl.DataFrame(), name="(default)")), {}),
                     Compiler(_no_table, {}))
    with at(node):
        return compiler.expr(node)


def _no_table(name: str, **_: Any) -> Query:
    raise error(exp.Table(this=exp.to_identifier(name)), "a DEFAULT reads no table")
