"""The asof join skips its sorts when both sides are already in order (``_in_order``): checked
against a plain Python reading of the rule on small frames, nulls and NaN included."""

from __future__ import annotations

import math

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from hfq.engine.joins import _in_order


def in_order_oracle(rows: list[tuple], on_float: bool) -> bool:
    """Rows (key1, key2, on): every run of equal keys (a null key equals nothing) has its
    ``on`` values non-null, not NaN and non-decreasing, and no two runs share their keys
    (nulls alike)."""
    if len(rows) < 2:
        return True
    if any(r[2] is None or (on_float and math.isnan(r[2])) for r in rows):
        return False
    runs: list[list[tuple]] = [[rows[0]]]
    for prev, row in zip(rows, rows[1:]):
        same = all(a is not None and a == b for a, b in zip(prev[:2], row[:2]))
        if same:
            runs[-1].append(row)
        else:
            runs.append([row])
    if any(a[2] > b[2] for run in runs for a, b in zip(run, run[1:])):
        return False
    keys = [run[0][:2] for run in runs]
    return len(set(keys)) == len(keys)


@st.composite
def frames(draw):
    on_float = draw(st.booleans())
    n = draw(st.integers(0, 30))
    nulls = not draw(st.integers(0, 2))   # most examples without: nulls make any frame unordered
    key = st.sampled_from(["A", "B", "C", None] if nulls else ["A", "B", "C"])
    day = st.sampled_from([0, 1, 2, None] if nulls else [0, 1, 2])
    number = st.one_of(st.floats(0, 5), st.just(math.nan)) if on_float and draw(st.booleans()) \
        else st.floats(0, 5) if on_float else st.integers(0, 5)
    on = st.one_of(st.none(), number) if nulls else number
    rows = draw(st.lists(st.tuples(key, day, on), min_size=n, max_size=n))
    if draw(st.integers(0, 3)):   # mostly sorted, as a partition is
        rows.sort(key=lambda r: (r[0] or "", r[1] or 0,
                                 -1 if r[2] is None else r[2]))
    return rows, on_float


@given(frames())
def test_in_order_matches_the_rule(case):
    rows, on_float = case
    df = pl.DataFrame({"sym": [r[0] for r in rows], "day": [r[1] for r in rows],
                       "t": [r[2] for r in rows]},
                      schema={"sym": pl.Categorical, "day": pl.Int32,
                              "t": pl.Float64 if on_float else pl.Int64})
    keys = [(r[0], r[1], r[2]) for r in rows]
    assert _in_order(df, ("sym", "day"), "t") == in_order_oracle(keys, on_float)
    single = [(r[0], 0, r[2]) for r in rows]
    assert _in_order(df, ("sym",), "t") == in_order_oracle(single, on_float)


def test_the_examples_reach_both_answers():
    """The property above is worth something only if frames in order come up often."""
    seen = []

    @settings(derandomize=True, max_examples=100)
    @given(frames())
    def collect(case):
        seen.append(in_order_oracle(*case))

    collect()
    assert sum(seen) >= 10 and len(seen) - sum(seen) >= 10, sum(seen)
