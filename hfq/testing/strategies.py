"""Hypothesis strategies for tick frames (``pip install hypothesis``).

Timestamps are drawn as integer offsets, symbols include the hostile ones (path separators,
``..``, empty, NUL, long unicode), prices are drawn as exact decimals *and* as arbitrary floats,
so encodings and partition paths are exercised on their edges.

Generating hostile data is slow on a loaded machine: a test that uses these strategies should
not fail for that, so give it ``deadline=None`` and suppress the timing and size health checks
(the repository's ``conftest.py`` loads such a profile for every test and doctest).

Examples
--------
>>> from hypothesis import HealthCheck, given, settings
>>> from hfq.testing.strategies import taq_tables
>>> @settings(max_examples=5, deadline=None,
...           suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
...                                  HealthCheck.filter_too_much])
... @given(taq_tables(max_rows=10))
... def test(table):
...     assert table.schema == schema.TAQ.arrow
>>> test()
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from hfq import schema

__all__ = ["HOSTILE_SYMBOLS", "merge_trees", "partitioned", "prices", "reducer_values",
           "symbols", "taq_tables"]

HOSTILE_SYMBOLS = ("../../x", "/", "..", ".", "", "a/b", "\x00", "NUL\x00X", "é" * 300,
                   "C:\\win", "%2E%2E", "v", "h0", "~tmp", " ", "日本株")

_EPOCH = dt.date(2007, 8, 1)


def symbols() -> st.SearchStrategy[str]:
    """Ordinary tickers mixed with hostile strings (no lone surrogates: Arrow is UTF-8).

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from hfq.partition import encode_component
    >>> from hfq.testing.strategies import symbols
    >>> @settings(max_examples=50)
    ... @given(symbols())
    ... def test_a_symbol_never_names_a_path_outside_its_directory(symbol):
    ...     component = encode_component(symbol)
    ...     assert "/" not in component and component not in ("", ".", "..")
    >>> test_a_symbol_never_names_a_path_outside_its_directory()
    """
    plain = st.text(alphabet=st.characters(min_codepoint=65, max_codepoint=90), min_size=1,
                    max_size=5)
    anything = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
    return st.one_of(plain, st.sampled_from(HOSTILE_SYMBOLS), anything)


def prices(*, allow_nan: bool = True) -> st.SearchStrategy[float | None]:
    """Four-decimal prices (what TAQ holds), arbitrary floats, zeros, sentinels and nulls.

    Examples
    --------
    >>> import polars as pl
    >>> from hypothesis import given, settings
    >>> from hfq.quality import clean_quotes
    >>> from hfq.testing.strategies import prices
    >>> @settings(max_examples=50)
    ... @given(prices(), prices())
    ... def test_a_clean_quote_has_finite_positive_prices(bid, ofr):
    ...     df = pl.DataFrame({"bid": [bid], "ofr": [ofr]}, schema=dict.fromkeys(
    ...         ["bid", "ofr"], pl.Float64))
    ...     if df.select(clean_quotes()).item():
    ...         assert 0 < bid < ofr < float("inf")
    >>> test_a_clean_quote_has_finite_positive_prices()
    """
    decimal = st.integers(0, 2_147_483_647).map(lambda k: k / 10_000)
    wild = st.floats(allow_nan=allow_nan, allow_infinity=True)
    return st.one_of(decimal, st.sampled_from([0.0, -0.0, 214748.3647, 1e-300, 1e300]),
                     wild, st.none())


def taq_tables(*, max_rows: int = 200, max_days: int = 3) -> st.SearchStrategy[pa.Table]:
    """Arrow tables in :data:`hfq.schema.TAQ` with nulls, empty strings and hostile symbols.

    Examples
    --------
    >>> from hypothesis import assume, given, settings
    >>> import hfq
    >>> from hfq.partition import key_path
    >>> from hfq.testing.strategies import taq_tables
    >>> scheme = hfq.Compo(hfq.Value("date"), hfq.Value("symbol"))   # paths from the symbols
    >>> @settings(max_examples=20)
    ... @given(taq_tables(max_rows=30))
    ... def test_partition_directories_stay_inside_the_table(table):
    ...     assume(table.num_rows > 0)                  # route() takes at least one row
    ...     for key in scheme.route(table)[1]:
    ...         parts = key_path(scheme, key).split("/")
    ...         assert len(parts) == 2 and not {"", ".", ".."} & set(parts)
    >>> test_partition_directories_stay_inside_the_table()
    """
    return _taq_tables(max_rows=max_rows, max_days=max_days)


@st.composite
def _taq_tables(draw: st.DrawFn, *, max_rows: int, max_days: int) -> pa.Table:
    n = draw(st.integers(0, max_rows))
    pool = draw(st.lists(symbols(), min_size=1, max_size=8, unique=True))
    ints = st.one_of(st.integers(-(2 ** 31), 2 ** 31 - 1), st.none())
    rows = draw(st.lists(st.tuples(
        st.sampled_from(pool),
        st.integers(0, max_days - 1),
        st.integers(0, 86_399),
        prices(), prices(), ints, ints, st.integers(0, 20),
        st.sampled_from(["N", "P", "", "é"]),
        st.sampled_from(["", "FLOW", "EDGX", None]),
    ), min_size=n, max_size=n))
    cols: list[Any] = list(zip(*rows)) if rows else [[] for _ in range(10)]
    arrays = [
        pa.array(cols[0], pa.string()).dictionary_encode(),
        pa.array([_EPOCH + dt.timedelta(days=d) for d in cols[1]], pa.date32()),
        pa.array(list(cols[2]), pa.int32()).cast(pa.time32("s")),
        pa.array(cols[3], pa.float64()), pa.array(cols[4], pa.float64()),
        pa.array(cols[5], pa.int32()), pa.array(cols[6], pa.int32()),
        pa.array(cols[7], pa.int32()),
        pa.array(cols[8], pa.string()).dictionary_encode(),
        pa.array(cols[9], pa.string()).dictionary_encode(),
    ]
    return schema.TAQ.conform(pa.Table.from_arrays(arrays, names=schema.TAQ.names))


# -- reducers: data, ways to split it, and ways to merge the pieces ------------------------------
def reducer_values(*, finite: bool = False, max_size: int = 60) -> st.SearchStrategy[list]:
    """Floats for reducer properties: huge and tiny magnitudes, -0.0, and (unless ``finite``)
    NaN and +-inf.

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> from hfq import reduce as hr
    >>> from hfq.testing.strategies import reducer_values
    >>> @settings(max_examples=50)
    ... @given(reducer_values())
    ... def test_max_is_numpys(values):
    ...     got, expected = hr.Max().of(values), np.max(values) if values else None
    ...     assert got is expected is None or np.array_equal(got, expected, equal_nan=True)
    >>> test_max_is_numpys()
    """
    edge = [0.0, -0.0, 1e-300, -1e-300, 1e300, -1e300, 1e6 + 0.5, 5e-324]
    value = st.one_of(st.floats(allow_nan=not finite, allow_infinity=not finite,
                                width=64, min_value=None if not finite else -1e250,
                                max_value=None if not finite else 1e250),
                      st.sampled_from(edge))
    return st.lists(value, max_size=max_size)


def partitioned(values: list[Any]) -> st.SearchStrategy[list[list[Any]]]:
    """``values`` cut into consecutive pieces, empty pieces and single rows included.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from hfq import reduce as hr
    >>> from hfq.testing.strategies import partitioned, reducer_values
    >>> @settings(max_examples=50)
    ... @given(reducer_values(finite=True).flatmap(partitioned))
    ... def test_min_of_the_pieces_is_the_min(pieces):
    ...     values = [v for piece in pieces for v in piece]
    ...     r = hr.Min()
    ...     assert r.merge_all(r.of(piece) for piece in pieces) == min(values, default=None)
    >>> test_min_of_the_pieces_is_the_min()
    """
    return _partitioned(values)


@st.composite
def _partitioned(draw: st.DrawFn, values: list[Any]) -> list[list[Any]]:
    cuts = sorted(draw(st.lists(st.integers(0, len(values)), max_size=8)))
    bounds = [0, *cuts, len(values)]
    return [values[a:b] for a, b in zip(bounds, bounds[1:])]


def merge_trees(n: int) -> st.SearchStrategy[tuple[list[int], list[tuple[int, int]]]]:
    """A random order of ``n`` partial results and a random binary merge tree over them, as
    (order, [(i, j), ...]): each step merges slot i into slot j (fixed left/right roles).

    Examples
    --------
    >>> from hypothesis import given, settings, strategies as st
    >>> from hfq import reduce as hr
    >>> from hfq.testing.strategies import merge_trees
    >>> @settings(max_examples=50)
    ... @given(st.integers(1, 8).flatmap(merge_trees))
    ... def test_counts_merge_in_any_order_and_tree(tree):
    ...     order, steps = tree
    ...     slots = {k: i + 1 for k, i in enumerate(order)}   # slot k holds partial order[k]
    ...     for i, j in steps:
    ...         slots[j] = hr.Count().merge(slots.pop(i), slots[j])
    ...     n = len(order)
    ...     assert list(slots.values()) == [n * (n + 1) // 2]
    >>> test_counts_merge_in_any_order_and_tree()
    """
    return _merge_trees(n)


@st.composite
def _merge_trees(draw: st.DrawFn, n: int) -> tuple[list[int], list[tuple[int, int]]]:
    order = draw(st.permutations(list(range(n))))
    steps = []
    alive = list(range(n))
    while len(alive) > 1:
        i = draw(st.integers(0, len(alive) - 1))
        j = draw(st.integers(0, len(alive) - 2))
        a = alive.pop(i)
        b = alive[j]
        steps.append((a, b))
    return order, steps
