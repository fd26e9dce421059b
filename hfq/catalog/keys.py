"""A table's keys: the dedup key with its policy, and the knowledge-time column.

``create_table(..., unique=("symbol", "date", "time", "seq"), keep="last")`` declares that no
two rows share those columns' values: appends, CSV loads and publishes keep the first or the
last row of a key, or refuse the write (``keep="error"``) -- see :mod:`hfq.change.dedup`.  The
key must hold every partition column, so rows of one key always fall in one partition and the
check reads only the partitions a write touches.

``known_at="received"`` names the column saying when each row became known (a TIMESTAMP or
DATETIME): ``scan(known_at=...)`` and the ``known_at=True`` joins use it (see
:mod:`hfq.change.knowledge`).  With a dedup key as well, a row's key and its knowledge time
together identify it: a correction is a new row of the same key with a later ``known_at``,
and never overwrites what was known before.

Both live in the table's options, in every version's record.

Examples
--------
>>> import hfq
>>> from hfq import schema as s
>>> sch = s.Schema({"symbol": s.SYMBOL, "time": s.TIMESTAMP, "px": s.DOUBLE,
...                 "known": s.TIMESTAMP})
>>> key_options(sch, hfq.Hash("symbol", 4), unique=("symbol", "time"), keep="last",
...             known_at="known")
{'unique': ['symbol', 'time'], 'keep': 'last', 'known_at': 'known'}
>>> key_options(sch, hfq.Hash("symbol", 4), unique=("time",))   # doctest: +ELLIPSIS
Traceback (most recent call last):
hfq.errors.SchemaMismatchError: unique=('time',): the key must hold every partition column ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hfq.errors import SchemaMismatchError
from hfq.partition import Compo, Scheme
from hfq.schema import Schema

__all__ = ["KEEP", "key_options", "keep_policy", "known_at_column", "unique_key"]

KEEP = ("first", "last", "error")
"""What a write keeping a dedup key does with a row whose key is there already: keep the
row stored (``first``), the new one (``last``), or refuse the write (``error``)."""

_TIMES = ("TIMESTAMP", "DATETIME")


def key_options(schema: Schema, partition_by: Scheme | Compo, *,
                unique: Sequence[str] | str | None = None, keep: str | None = None,
                known_at: str | None = None) -> dict[str, Any]:
    """The table options for a dedup key ``unique`` (with its policy ``keep``, default
    ``"first"``) and a knowledge-time column ``known_at``; a
    :class:`~hfq.errors.SchemaMismatchError` says what is wrong with them."""
    out: dict[str, Any] = {}
    if unique is not None:
        key = [unique] if isinstance(unique, str) else list(unique)
        if not key or len(set(key)) != len(key):
            raise SchemaMismatchError(f"unique={tuple(key)!r}: a dedup key is one or more "
                                      "distinct columns")
        for column in key:
            if column not in schema:
                raise SchemaMismatchError(f"unique=: no column {column!r}; the columns are "
                                          f"{', '.join(schema.names)}")
        levels = [lvl.column for lvl in partition_by.levels()]
        missing = [c for c in levels if c not in key]
        if missing:
            raise SchemaMismatchError(
                f"unique={tuple(key)!r}: the key must hold every partition column (missing "
                f"{', '.join(missing)}), so that rows of one key always fall in one "
                "partition and a write checks only the partitions it touches")
        out["unique"] = key
        out["keep"] = keep or "first"
    if keep is not None and unique is None:
        raise SchemaMismatchError("keep= is the policy of a dedup key: declare unique= too")
    if keep is not None and keep not in KEEP:
        raise SchemaMismatchError(f"keep={keep!r}: use 'first', 'last' or 'error'")
    if known_at is not None:
        if known_at not in schema:
            raise SchemaMismatchError(f"known_at=: no column {known_at!r}; the columns are "
                                      f"{', '.join(schema.names)}")
        if schema[known_at].name not in _TIMES:
            raise SchemaMismatchError(f"known_at={known_at!r} is a {schema[known_at].name} "
                                      "column; knowledge time needs a TIMESTAMP or DATETIME")
        out["known_at"] = known_at
    return out


def unique_key(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The table's dedup key (empty: none)."""
    return tuple(options.get("unique") or ())


def keep_policy(options: Mapping[str, Any]) -> str:
    """The table's dedup policy (``first`` when it declares none)."""
    return str(options.get("keep") or "first")


def known_at_column(options: Mapping[str, Any]) -> str | None:
    """The table's knowledge-time column, or None."""
    value = options.get("known_at")
    return str(value) if value else None
