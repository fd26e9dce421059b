"""Adding, dropping, renaming and widening columns: one commit each, no file rewritten.

Each change is a new version whose record holds the new schema and the table's column
layouts (:mod:`hfq.catalog.evolution`): files written before are read with the new names and
types, an added column with its default.  The change is made on the head when it commits
(two schema changes at once both land); a write that staged rows in the old columns and
commits after it is refused (:class:`~hfq.errors.CommitConflictError`), never misread.

Examples
--------
>>> import hfq, tempfile, polars as pl
>>> from hfq import schema as s
>>> t = hfq.connect(tempfile.mkdtemp()).create_table(
...     "t", s.Schema({"sym": s.SYMBOL, "qty": s.INT}), partition_by=hfq.Hash("sym", 2))
>>> _ = t.append(pl.DataFrame({"sym": ["A"], "qty": [1]}))
>>> _ = t.add_column("venue", "SYMBOL", default="XNYS")
>>> _ = t.widen_column("qty", "LONG")
>>> t.to_polars().rows(), t.scan(version=1).to_polars().rows()
([('A', 1, 'XNYS')], [('A', 1)])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hfq.catalog import evolution
from hfq.catalog.records import Manifest
from hfq.schema import Schema
from hfq.write import Write

if TYPE_CHECKING:
    from hfq.session import TableLike

__all__ = ["add_column", "drop_column", "rename_column", "widen_column"]

Reshape = Callable[[Manifest], tuple[Schema, dict[str, Any], Sequence[str]]]


def _alter(table: TableLike, op: str, reshape: Reshape, args: dict[str, Any],
           message: str | None) -> Manifest:
    session = table.session
    base = session.snapshot(table.name)
    reshape(base)   # refuse now what the head would refuse
    with Write(session, base) as write:
        write.txn.reshape = reshape
        write.settled = True
        return write.commit(op, args=args, message=message)


def add_column(table: TableLike, name: str, type: str, *, default: Any = None,
               message: str | None = None) -> Manifest:
    """Add column ``name`` (an hfq type name: ``"LONG"``, ``"SYMBOL"``...); stored rows read
    it as ``default``."""
    def reshape(m: Manifest) -> tuple[Schema, dict[str, Any], Sequence[str]]:
        return (*evolution.add_column(m.schema, m.options, m.partition_by, m.sort_by, name,
                                      type, default), m.sort_by)
    return _alter(table, "add_column", reshape,
                  {"name": name, "type": type, "default": default}, message)


def drop_column(table: TableLike, name: str, *, message: str | None = None) -> Manifest:
    """Drop column ``name`` (older versions keep it)."""
    def reshape(m: Manifest) -> tuple[Schema, dict[str, Any], Sequence[str]]:
        return (*evolution.drop_column(m.schema, m.options, m.partition_by, m.sort_by, name),
                m.sort_by)
    return _alter(table, "drop_column", reshape, {"name": name}, message)


def rename_column(table: TableLike, name: str, new: str, *,
                  message: str | None = None) -> Manifest:
    """Rename column ``name`` to ``new``."""
    def reshape(m: Manifest) -> tuple[Schema, dict[str, Any], Sequence[str]]:
        schema, options = evolution.rename_column(m.schema, m.options, m.partition_by,
                                                  m.sort_by, name, new)
        return schema, options, tuple(new if c == name else c for c in m.sort_by)
    return _alter(table, "rename_column", reshape, {"name": name, "new": new}, message)


def widen_column(table: TableLike, name: str, type: str, *,
                 message: str | None = None) -> Manifest:
    """Widen column ``name`` to ``type`` (INT -> LONG, FLOAT -> DOUBLE, ...)."""
    def reshape(m: Manifest) -> tuple[Schema, dict[str, Any], Sequence[str]]:
        return (*evolution.widen_column(m.schema, m.options, m.partition_by, m.sort_by, name,
                                        type), m.sort_by)
    return _alter(table, "widen_column", reshape, {"name": name, "type": type}, message)
