"""A unit's rows: those of its files, and those of fragments that read themselves.

Most fragments of a unit are files (read by :func:`hfq.query.read.read_frame`).  A fragment
with a ``read_rows(node, spec)`` method holds rows that are not in a file -- the live rows of
a partition (:class:`hfq.live.snapshot.LiveFragment`) -- and reads them itself, on the node
the unit runs on (as a polars frame when it has ``read_frame(node, spec)``); the engine knows
nothing else of them.  Both kinds of rows of one unit
become one frame, files first, so the node stage runs once over all of them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import polars as pl
import pyarrow as pa

from hfq.query.read import ReadSpec, read_frame, read_unit
from hfq.storage.cache import PartitionCache

__all__ = ["read_rows", "self_reading"]


def self_reading(fragment: Any) -> bool:
    """Does ``fragment`` read its own rows (it is not a file)?"""
    return hasattr(fragment, "read_rows")


def read_rows(node: Any, spec: ReadSpec, unit: Any, *,
              batches: PartitionCache | None = None) -> pl.DataFrame:
    """Every row of ``unit`` (``spec.columns``, rows passing ``spec.where``) as one frame:
    its files' through ``batches`` (decoded record batches of this process) when given and
    ``spec`` has no ``where``, else :func:`~hfq.query.read.read_frame`; then its
    self-reading fragments'."""
    own = [f for f in unit.fragments if self_reading(f)]
    files = unit
    if own:
        kept = [(f, b) for f, b in zip(unit.fragments, unit.batches) if not self_reading(f)]
        files = dataclasses.replace(unit, fragments=tuple(f for f, _ in kept),
                                    batches=tuple(b for _, b in kept))
    frames = []
    if files.fragments or not own:
        if batches is not None and spec.where is None:
            frames.append(cast(pl.DataFrame, pl.from_arrow(
                read_unit(node.store, spec, files, node.name, cache=batches))))
        else:
            frames.append(read_frame(node, spec, files))
    for fragment in own:
        if hasattr(fragment, "read_frame"):   # converted where it is kept (once)
            frames.append(fragment.read_frame(node, spec))
            continue
        table: pa.Table = fragment.read_rows(node, spec)
        frames.append(cast(pl.DataFrame, pl.from_arrow(table)))
    if len(frames) == 1:
        return frames[0]
    return pl.concat(frames, how="vertical_relaxed", rechunk=False)
