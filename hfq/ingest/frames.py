"""DataFrames of every kind -> a stream of Arrow tables.

Missing values: a float NaN stays NaN, from every source.  pandas uses NaN for "missing" in
float columns, but it is also a value a computation can produce, and pyarrow's
``Table.from_pandas`` would silently turn it into null; hfq keeps what the frame holds, so a
pandas frame and the same data as Arrow or polars store the same bits, and ``to_pandas()`` gives
NaN back either way.  Nulls come from ``None``/``pd.NA``/``NaT`` (object, nullable and
datetime columns), from Arrow nulls and from polars nulls.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from hfq.errors import SchemaMismatchError

__all__ = ["iter_arrow_batches"]

_SLICE_ROWS = 4_000_000


def iter_arrow_batches(data: Any) -> Iterator[pa.Table]:
    """Yield Arrow tables from a pyarrow Table / RecordBatch / RecordBatchReader, a polars
    DataFrame or LazyFrame, a pandas DataFrame, or an iterable of any of those."""
    if isinstance(data, pa.Table):
        for start in range(0, data.num_rows, _SLICE_ROWS):
            yield data.slice(start, _SLICE_ROWS)
        return
    if isinstance(data, pa.RecordBatch):
        yield pa.Table.from_batches([data])
        return
    if isinstance(data, pa.RecordBatchReader):
        for batch in data:
            yield pa.Table.from_batches([batch])
        return
    module = type(data).__module__.split(".")[0]
    if module == "polars":
        import polars as pl
        if isinstance(data, pl.LazyFrame):
            data = data.collect()
        if isinstance(data, pl.DataFrame):
            yield from iter_arrow_batches(data.to_arrow())
            return
    if module == "pandas":
        import pandas as pd
        if isinstance(data, pd.DataFrame):
            yield _from_pandas(data)
            return
    if hasattr(data, "__iter__") and not isinstance(data, (str, bytes, dict)):
        for item in data:
            yield from iter_arrow_batches(item)
        return
    raise SchemaMismatchError(
        f"cannot append a {type(data).__name__}: pass a pandas or polars DataFrame, a pyarrow "
        "Table, RecordBatch or RecordBatchReader, or an iterable of those")


def _from_pandas(frame: Any) -> pa.Table:
    """A pandas frame as Arrow, float NaN kept as NaN (``from_pandas`` would make it null)."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for i, dtype in enumerate(frame.dtypes):
        if getattr(dtype, "kind", None) == "f" and not hasattr(dtype, "na_value"):
            values = frame.iloc[:, i].to_numpy()
            table = table.set_column(i, table.schema.field(i),
                                     pa.array(values, type=table.schema.field(i).type,
                                              from_pandas=False))
    return table
