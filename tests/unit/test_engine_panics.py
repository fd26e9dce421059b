"""A polars panic (a bug of polars' own) reaches the user as a QueryError that says so and
names where, never as a raw PanicException (F122: a grouped ``count(*) FILTER (WHERE DATE
'...' BETWEEN x AND x)`` panicked until F136's fix kept constants off the left of a
comparison; the panic is planted here, as polars raises it from inside a plan)."""
from __future__ import annotations

import polars as pl
import pytest

from hfq.engine.execute import run_rows
from hfq.engine.ops import Select
from hfq.errors import QueryError


def _panics(s: pl.Series) -> pl.Series:
    raise pl.exceptions.PanicException("index: 1 out of bounds for len: 1")


def test_a_polars_panic_is_a_query_error_naming_it():
    op = Select((pl.col("a").map_batches(_panics, return_dtype=pl.Int64).alias("b"),))
    with pytest.raises(QueryError, match=r"query without a table: .*a polars panic: index: 1 "
                                         r"out of bounds") as got:
        run_rows(pl.DataFrame({"a": [1, 2]}), [op])
    assert not isinstance(got.value, pl.exceptions.PanicException)
