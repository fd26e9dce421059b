"""Knowledge time: the rows as they were known at an instant.

A table may declare a ``known_at`` column (``create_table(..., known_at="received")``, a
TIMESTAMP or DATETIME): when each row became available -- its receipt or publication time.
A correction is stored as a new row of the same key with a later ``known_at``; nothing that
was known is overwritten (:mod:`hfq.change.dedup` keys such a table on its key *and*
``known_at``).

``t.scan(known_at=T)`` gives the rows known at ``T``: those whose ``known_at`` is at or before
``T`` (a row whose ``known_at`` is NULL was never known) and, when the table has a dedup key,
of each key only the row known last by then -- the value a backtest running at ``T`` would
have used.  ``T`` follows ``as_of``'s rules (:func:`hfq.catalog.timeline.instant`: UTC, a
naive time *is* UTC).  ``known_at`` is about the rows, ``as_of`` about the table's versions;
the two combine.

The joins (``Query.join_asof(..., known_at=True)``, ``window_join(..., known_at=True)``,
:mod:`hfq.engine.joins`) use the right table's column the same way: a left row at time ``t``
sees only right rows with ``known_at + latency <= t``.

Examples
--------
>>> import polars as pl
>>> rows = pl.DataFrame({"id": [1, 1, 2], "px": [10.0, 10.5, 20.0],
...                      "k": pl.Series(["2024-01-02 09:00", "2024-01-02 11:00",
...                                      "2024-01-02 09:30"]).str.to_datetime()})
>>> options = {"unique": ["id"], "known_at": "k"}
>>> for f in known_filters(options, "TIMESTAMP", "2024-01-02T10:00Z"):
...     rows = rows.filter(f)
>>> rows["px"].to_list()                 # the correction of id 1 came at 11:00
[10.0, 20.0]
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import polars as pl

from hfq.catalog.keys import known_at_column, unique_key
from hfq.catalog.timeline import instant
from hfq.errors import ArgumentError

__all__ = ["known_filters", "knowledge_instant"]


def knowledge_instant(value: Any) -> dt.datetime:
    """``known_at=``'s instant, an aware UTC datetime (or an
    :class:`~hfq.errors.ArgumentError`)."""
    moment = instant(value)
    if moment is None or isinstance(value, bool):
        raise ArgumentError(f"known_at={value!r}: a datetime or ISO 8601 text (UTC; a naive "
                            "time is UTC), e.g. 2026-11-20T10:00Z", argument="known_at")
    return moment


def known_filters(options: Mapping[str, Any], column_type: str, value: Any
                  ) -> list[pl.Expr]:
    """The filters, in order, that leave the rows known at ``value`` of a table with these
    ``options`` whose ``known_at`` column has hfq type ``column_type``."""
    column = known_at_column(options)
    if column is None:
        raise ArgumentError("known_at=: this table declares no known_at column "
                            "(create_table(..., known_at='column'))", argument="known_at")
    moment = knowledge_instant(value)
    literal: Any = moment if column_type == "DATETIME" else moment.replace(tzinfo=None)
    known = pl.col(column) <= pl.lit(literal)
    key = unique_key(options)
    if not key:
        return [known]
    # one expression: the latest known of each key among the rows known by then (two filters
    # could be merged into one by a planner, taking the max over rows not yet known)
    latest = pl.when(known).then(pl.col(column)).otherwise(None).max().over(list(key))
    return [known & (pl.col(column) == latest)]
