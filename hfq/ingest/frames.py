"""DataFrames of every kind -> a stream of Arrow tables."""

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
            yield pa.Table.from_pandas(data, preserve_index=False)
            return
    if hasattr(data, "__iter__") and not isinstance(data, (str, bytes, dict)):
        for item in data:
            yield from iter_arrow_batches(item)
        return
    raise SchemaMismatchError(
        f"cannot append a {type(data).__name__}: pass a pandas or polars DataFrame, a pyarrow "
        "Table, RecordBatch or RecordBatchReader, or an iterable of those")
