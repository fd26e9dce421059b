"""Dedup keys: no two stored rows share a key.

A table declared with ``unique=(...)`` (:mod:`hfq.catalog.keys`) keeps it on every write that
adds rows -- ``append``, ``load_csv``, a live publish's write-down, ``upsert`` -- through
:class:`Dedup`, a :class:`~hfq.change.rewrite.Change` run on each partition the write staged
rows for (the key holds the partition columns, so that is every partition a duplicate can be
in):

* ``keep="first"``: a staged row whose key is stored already, or comes earlier in the staged
  rows, is dropped; the stored rows are not touched (only the staged file is rewritten, and
  only when something was dropped);
* ``keep="last"``: of the staged rows of one key the last stays, and it replaces the stored row
  of that key (the partition is rewritten; without a clash the staged rows are simply added);
* ``keep="error"``: any clash is a :class:`DuplicateKeyError` naming the partition and a key,
  and nothing is committed.

"Earlier" and "last" are the order the rows are stored in: sorted by the table's sort
columns, rows that sort equal in the order they came.  Key values compare as polars compares
them: NULL equals NULL (a NULL key is one key), NaN equals NaN, -0.0 equals 0.0.  On a table
with a ``known_at`` column, that column is part of the key (a correction is a new row of a
later knowledge time, never an overwrite of what was known; see :mod:`hfq.change.knowledge`).

:func:`settle` is what :meth:`hfq.write.Write.commit` calls for a keyed table: the one
function every writer's commit goes through (the live engine's write-down included).

Examples
--------
>>> import pyarrow as pa
>>> old = pa.table({"k": [1, 2], "v": ["a", "b"]})
>>> new = pa.table({"k": [2, 3, 3], "v": ["B", "c", "C"]})
>>> Dedup(("k",), "last")("p", old, new).rows.to_pydict()
{'k': [1, 2, 3], 'v': ['a', 'B', 'C']}
>>> Dedup(("k",), "first")("p", old, new).new.to_pydict()
{'k': [3], 'v': ['c']}
>>> Dedup(("k",), "error")("p", old, new)                  # doctest: +ELLIPSIS
Traceback (most recent call last):
hfq.errors.DuplicateKeyError: partition p: 2 rows share their key with another row ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa

from hfq.catalog.keys import keep_policy, known_at_column, unique_key
from hfq.catalog.records import Manifest
from hfq.change.rewrite import Change, Outcome, commit_changed
from hfq.errors import DuplicateKeyError, HfqError

if TYPE_CHECKING:
    from hfq.write import Write

__all__ = ["NO_DEDUP", "Dedup", "DuplicateKeyError", "dedup_key", "key_frame", "settle"]

NO_DEDUP = frozenset({"compact", "rebalance", "migrate", "delete", "update"})
"""Operations that add no row a key could clash with (they rewrite stored rows, or move
files)."""


def dedup_key(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The columns a keyed table's rows are unique on: its ``unique`` key, plus its
    ``known_at`` column when it has one (empty: not keyed)."""
    key = unique_key(options)
    known = known_at_column(options)
    if key and known and known not in key:
        key = (*key, known)
    return key


def key_frame(table: pa.Table, key: Sequence[str]) -> pl.DataFrame:
    """The key columns of ``table`` as polars, dictionary columns as text (so that two
    tables' keys compare by value, whatever their dictionaries)."""
    cols = {}
    for name in key:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        cols[name] = col
    frame = pl.from_arrow(pa.table(cols))
    assert isinstance(frame, pl.DataFrame)
    return frame


def _take(table: pa.Table, keep: np.ndarray) -> pa.Table:
    return table.filter(pa.array(keep, type=pa.bool_()))


def _clash(partition: str, rows: pl.DataFrame, key: Sequence[str], why: str) -> HfqError:
    example = rows.row(0, named=True) if rows.height else {}
    shown = ", ".join(f"{k}={example.get(k)!r}" for k in key)
    return DuplicateKeyError(f"partition {partition}: {rows.height} rows share their key with "
                             f"another row ({why}), e.g. {shown}; the table's dedup key is "
                             f"({', '.join(key)}) with keep='error': nothing was committed")


@dataclass(frozen=True)
class Dedup(Change):
    """The dedup of one partition's staged rows against its stored rows (see the module)."""

    key: tuple[str, ...]
    keep: str

    def __call__(self, partition: str, old: pa.Table, new: pa.Table) -> Outcome:
        if not new.num_rows:
            return Outcome()
        nk = key_frame(new, self.key).with_row_index("__i")
        ok = key_frame(old, self.key)
        last = self.keep == "last"
        kept = nk.unique(subset=list(self.key), keep="last" if last else "first",
                         maintain_order=True)
        if self.keep == "error":
            dup = nk.filter(pl.struct(self.key).is_duplicated())
            if dup.height:
                raise _clash(partition, dup, self.key, "in the rows written")
            hit = nk.join(ok, on=list(self.key), how="semi", nulls_equal=True)
            if hit.height:
                raise _clash(partition, hit, self.key, "stored already")
            return Outcome(added=new.num_rows)
        keep_new = np.zeros(new.num_rows, dtype=bool)
        keep_new[kept["__i"].to_numpy()] = True
        if last:
            drop_old = ok.with_row_index("__i").join(kept, on=list(self.key), how="semi",
                                                     nulls_equal=True)["__i"].to_numpy()
            if len(drop_old):
                keep_old = np.ones(old.num_rows, dtype=bool)
                keep_old[drop_old] = False
                rows = pa.concat_tables([_take(old, keep_old), _take(new, keep_new)])
                return Outcome(rows=rows, added=int(keep_new.sum()), removed=len(drop_old))
        else:
            clash = kept.join(ok, on=list(self.key), how="semi", nulls_equal=True)["__i"]
            keep_new[clash.to_numpy()] = False
        if keep_new.all():
            return Outcome(added=new.num_rows)
        return Outcome(new=_take(new, keep_new), added=int(keep_new.sum()))


def _nothing(head: Manifest) -> dict[str, Any]:
    return {}


def settle(write: Write, op: str, *, args: Any = None, message: str | None = None,
           key: Sequence[str] | None = None, keep: str | None = None) -> Manifest:
    """Commit ``write`` (whose rows are staged) keeping a dedup key: ``key``/``keep``, by
    default the table's (:func:`dedup_key`, :func:`~hfq.catalog.keys.keep_policy`).  What
    :meth:`hfq.write.Write.commit` does for a keyed table, and ``upsert`` with its own key;
    a write-down of live data committed through ``Write.commit`` gets it too.  Returns the
    new version."""
    options = write.base.options
    columns = tuple(key) if key is not None else dedup_key(options)
    policy = keep if keep is not None else keep_policy(options)
    committed, _ = commit_changed(write, op, Dedup(columns, policy), _nothing, args=args,
                                  message=message, commit_unchanged=True)
    assert committed is not None
    return committed

