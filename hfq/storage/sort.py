"""Sorting rows by the table's sort columns, skipped when they already are in order.

Tick data nearly always arrives sorted (TAQ files are ordered by symbol then time), so the
check -- one vectorised pass -- saves the sort in the common case.  SYMBOL columns sort by their
text, not by dictionary code: each dictionary is ranked once and the ranks sort as integers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["is_sorted", "sort_keys", "sort_rows"]


def sort_keys(table: pa.Table, sort_by: Sequence[str]) -> list[np.ndarray]:
    """One numeric array per sort column whose order is the column's order (nulls first)."""
    keys = []
    for name in sort_by:
        column = table.column(name)
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        keys.append(_numeric_key(column))
    return keys


def is_sorted(keys: Sequence[np.ndarray]) -> bool:
    if not keys or len(keys[0]) < 2:
        return True
    bad = np.zeros(len(keys[0]) - 1, dtype=bool)
    tied = np.ones(len(keys[0]) - 1, dtype=bool)
    for key in keys:
        after, before = key[1:], key[:-1]
        bad |= tied & (after < before)
        tied &= after == before
    return not bad.any()


def sort_rows(table: pa.Table, sort_by: Sequence[str]) -> pa.Table:
    """``table`` ordered by ``sort_by`` (stable); returned as is when already ordered."""
    if not sort_by or table.num_rows < 2:
        return table
    keys = sort_keys(table, sort_by)
    if is_sorted(keys):
        return table
    frame = pl.DataFrame({f"k{i}": k for i, k in enumerate(keys)})
    order = frame.select(pl.arg_sort_by(frame.columns, maintain_order=True)).to_series()
    return table.take(order.to_arrow())


def _numeric_key(array: pa.Array) -> np.ndarray:
    if pa.types.is_dictionary(array.type):
        rank = np.empty(len(array.dictionary), dtype=np.int64)
        rank[pc.sort_indices(array.dictionary).to_numpy()] = np.arange(len(array.dictionary))
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False)
        key = rank[indices] if len(rank) else np.zeros(len(array), dtype=np.int64)
        if array.null_count:
            key[array.is_null().to_numpy(zero_copy_only=False)] = -1
        return key
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return _numeric_key(pc.dictionary_encode(array))
    if pa.types.is_boolean(array.type):
        array = array.cast(pa.int8())
    elif not (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)):
        array = array.view(pa.int64() if array.type.bit_width == 64 else pa.int32())
    if array.null_count:
        if pa.types.is_floating(array.type):
            return array.fill_null(-np.inf).to_numpy(zero_copy_only=False)
        low = np.iinfo(array.type.to_pandas_dtype()).min
        return array.fill_null(low).to_numpy(zero_copy_only=False)
    return array.to_numpy(zero_copy_only=False)
