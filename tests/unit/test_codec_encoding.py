"""Choosing a column's encoding (``hfq.storage.encoding``): what is measured, and that a choice
made on the sample is checked on every value (numpy is the oracle for the values)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hfq.storage import encoding


def roundtrip(table: pa.Table, codec: str | None) -> tuple[pa.Table, pa.Table]:
    physical = encoding.encode(table, codec, 65_536)
    batches = pa.Table.from_batches(physical.to_batches(max_chunksize=65_536))   # as in a file
    return physical, encoding.decode(batches, table.schema)


def how(physical: pa.Table, name: str) -> str:
    return ((physical.schema.field(name).metadata or {}).get(encoding.ENC) or b"").decode()


@pytest.mark.parametrize("codec", ["zstd", "lz4", None])
def test_a_decimal_column_is_scaled_unless_some_value_outside_the_sample_is_not(codec):
    rng = np.random.default_rng(3)
    cents = np.round(rng.uniform(10, 20, 200_000), 2)
    broken = cents.copy()
    broken[123_456] = 1 / 3            # between the sample's runs: only the full check sees it
    table = pa.table({"cents": cents, "broken": broken})
    physical, back = roundtrip(table, codec)
    assert how(physical, "cents").startswith("scale:2")
    assert how(physical, "broken") == ""
    for name in ("cents", "broken"):   # bit for bit
        np.testing.assert_array_equal(back.column(name).to_numpy().view(np.int64),
                                      table.column(name).to_numpy().view(np.int64))


def test_a_column_no_encoding_applies_to_is_not_measured(monkeypatch):
    """Averages are no exact decimals: every candidate fails on the sample, so compressing
    the sample to compare sizes would be wasted (it was most of a bar file's encoding)."""
    rng = np.random.default_rng(5)
    means = rng.uniform(10, 20, 50_000) / 3
    ticks = np.repeat(np.arange(500, dtype=np.int64), 100)
    measured: list[int] = []
    size = encoding._size
    monkeypatch.setattr(encoding, "_size",
                        lambda array, codec: measured.append(len(array)) or size(array, codec))
    physical, back = roundtrip(pa.table({"mean": means}), "zstd")
    assert how(physical, "mean") == "" and measured == []
    assert back.column("mean").to_numpy().tobytes() == means.tobytes()
    # a column some encoding fits is measured, plain and encoded, and encoded when it pays
    physical, back = roundtrip(pa.table({"ticks": ticks}), "zstd")
    assert len(measured) >= 2 and "delta" in how(physical, "ticks")
    np.testing.assert_array_equal(back.column("ticks").to_numpy(), ticks)


def test_files_of_a_write_of_alike_files_follow_the_first_ones_encodings(monkeypatch):
    """``alike`` (the bars of a table's partitions): a large column takes the encoding
    chosen for an earlier file unmeasured, unless it does not hold for its values."""
    rng = np.random.default_rng(9)
    first = pa.table({"count": rng.integers(1, 100, 30_000), "price": rng.uniform(1, 2, 30_000)})
    hints: dict[str, str] = {}
    encoding.encode(first, "lz4", 65_536, hints, alike=True)
    assert hints["price"] == "" and hints["count"].endswith("narrow")
    measured: list[int] = []
    size = encoding._size
    monkeypatch.setattr(encoding, "_size",
                        lambda array, codec: measured.append(len(array)) or size(array, codec))
    second = pa.table({"count": rng.integers(1, 100, 40_000),
                       "price": np.round(rng.uniform(1, 2, 40_000), 2)})   # scale would pay
    physical = encoding.encode(second, "lz4", 65_536, hints, alike=True)
    assert measured == [] and how(physical, "price") == ""
    assert how(physical, "count").split(",")[-1] == "narrow"
    # without alike, the same large columns are measured (and the decimals scaled)
    physical = encoding.encode(second, "lz4", 65_536, dict(hints))
    assert measured and how(physical, "price").startswith("scale:2")
    # a hint that does not hold (counts beyond int8) is measured again, and round-trips
    measured.clear()
    wide = pa.table({"count": rng.integers(0, 10**6, 40_000), "price": second["price"]})
    physical = encoding.encode(wide, "lz4", 65_536, hints, alike=True)
    assert measured and "narrow" not in how(physical, "count")
    back = encoding.decode(pa.Table.from_batches(physical.to_batches(max_chunksize=65_536)),
                           wide.schema)
    assert back.equals(wide)
