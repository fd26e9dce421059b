"""Large scans into pandas and polars go through hfq.query.read.Assembler: every partition
copied into one buffer per column by the thread that read it, dictionaries unified once.
Checked against the source rows (polars) and against Arrow's own conversion of the chunked
table (the dictionary order pandas users saw before)."""

from __future__ import annotations

import datetime as dt
import random
import threading

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import hfq
import hfq.engine.read
from hfq.engine.read import pandas_ready as _pandas_ready
from hfq.errors import CorruptPartitionError
from hfq.query.read import Assembler, pandas_type

DAY = dt.date(2007, 8, 1)


def part(symbols: list[str], n: int, seed: int, *, nulls: bool = False) -> pa.Table:
    """``n`` rows whose symbol column's dictionary is ``symbols`` in that order (a file's
    dictionary need not be sorted, nor used in full)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(symbols), n).astype(np.int32)
    mask = rng.random(n) < 0.1 if nulls else None
    symbol = pa.DictionaryArray.from_arrays(pa.array(idx, mask=mask),
                                            pa.array(symbols, pa.string()))
    exchanges = pa.array(["N", "Q"] if seed % 2 else ["Q", "N"], pa.string())
    ex = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 2, n).astype(np.int8)),
                                        exchanges)
    return pa.table({
        "symbol": symbol,
        "ex": ex,
        "date": pa.array([DAY + dt.timedelta(days=seed % 3)] * n, pa.date32()),
        "time": pa.array(rng.integers(0, 86_399, n).astype(np.int32), pa.time32("s")),
        "bid": pa.array(rng.random(n) * 100, mask=mask),
        "size": pa.array(rng.integers(-5, 5, n).astype(np.int16)),
        "note": pa.array([f"n{v}" for v in rng.integers(0, 9, n)], pa.string()),
        "flag": pa.array(rng.random(n) < 0.5, pa.bool_()),
    })


def parts_for_test() -> list[pa.Table]:
    few = ["IBM", "MSFT", "A"]
    many = [f"S{i:03d}" for i in range(300)]   # more than int8 indices hold
    chunked = pa.concat_tables([part(few[::-1], 70, 5), part(few, 30, 6)])   # two chunks
    return [part(few, 50, 1), part(few, 0, 2), part(few + ["ZZ"], 40, 3, nulls=True),
            chunked, part(many, 500, 4), part(few, 20, 7)]


def assemble(parts: list[pa.Table], types=None, order=None) -> pa.Table:
    asm = Assembler(parts[0].schema, [p.num_rows for p in parts], types=types)
    order = list(range(len(parts))) if order is None else order
    threads = [threading.Thread(target=asm.fill, args=(i, parts[i])) for i in order]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return asm.finish()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_assembled_pandas_is_arrows_own_conversion_of_the_chunks(seed):
    parts = parts_for_test()
    order = list(range(len(parts)))
    random.Random(seed).shuffle(order)   # parts arrive in any order, from several threads
    got = assemble(parts, pandas_type, order)
    assert all(c.num_chunks == 1 for c in got.columns)
    want = _pandas_ready(pa.concat_tables(parts)).to_pandas(date_as_object=False)
    frame = got.to_pandas(date_as_object=False, split_blocks=True, self_destruct=True)
    pd.testing.assert_frame_equal(frame, want, check_categorical=True)
    for name in ("symbol", "ex"):   # the same categories in the same order
        assert list(frame[name].cat.categories) == list(want[name].cat.categories)
    assert frame["symbol"].cat.codes.dtype == np.int16   # 303 categories: pandas' own width


def test_assembled_arrow_has_the_rows_and_values_of_the_parts():
    parts = parts_for_test()
    got = assemble(parts, None)
    want = pl.from_arrow(pa.concat_tables(parts))
    frame = pl.from_arrow(got)
    assert isinstance(frame, pl.DataFrame) and isinstance(want, pl.DataFrame)
    assert frame.schema == want.schema
    assert frame.with_columns(pl.col(pl.Categorical).cast(pl.String)).equals(
        want.with_columns(pl.col(pl.Categorical).cast(pl.String)))


def test_a_part_with_other_rows_than_planned_is_refused():
    parts = parts_for_test()
    asm = Assembler(parts[0].schema, [p.num_rows for p in parts])
    with pytest.raises(ValueError, match="rows"):
        asm.fill(0, parts[2])


@pytest.mark.parametrize("seed", [0, 1])
def test_parts_filled_in_pieces_from_several_threads_give_the_same_result(seed):
    parts = parts_for_test()
    asm = Assembler(parts[0].schema, [p.num_rows for p in parts], types=pandas_type)
    rng = random.Random(seed)
    pieces = []
    for i, p in enumerate(parts):   # each part cut at random rows, strings and nulls included
        cuts = sorted({0, p.num_rows, *(rng.randrange(p.num_rows + 1) for _ in range(3))})
        pieces += [(i, p.slice(a, b - a), a) for a, b in zip(cuts, cuts[1:])]
    rng.shuffle(pieces)
    threads = [threading.Thread(target=asm.fill, args=piece) for piece in pieces]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = _pandas_ready(pa.concat_tables(parts)).to_pandas(date_as_object=False)
    got = asm.finish().to_pandas(date_as_object=False)
    pd.testing.assert_frame_equal(got, want, check_categorical=True)


def test_a_piece_past_its_part_is_refused():
    parts = parts_for_test()
    asm = Assembler(parts[0].schema, [p.num_rows for p in parts])
    with pytest.raises(ValueError, match="past"):
        asm.fill(0, parts[0].slice(0, 20), 31)   # part 0 has 50 rows: 31 + 20 > 50
    asm.fill(0, parts[0].slice(0, 20), 30)


# -- through scans: a table of several partitions, the assembler forced on tiny data ----------
@pytest.fixture(scope="module")
def table(tmp_path_factory):
    db = hfq.connect(str(tmp_path_factory.mktemp("speed")), batch_rows=300)
    t = db.create_table("quotes", hfq.schemas.TAQ, sort_by=("symbol", "time"),
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)))
    source = hfq.synth.taq_table(rows_per_day=2500, symbols=40, seed=3,
                                 dates=["2007-08-01", "2007-08-02"])
    t.append(source)
    return t, source


@pytest.fixture()
def assembled(monkeypatch):
    monkeypatch.setattr(hfq.engine.read, "INLINE_ROWS", 0)   # every scan takes the large-scan path


@pytest.mark.parametrize("scan", [
    {},
    {"dates": "2007-08-02"},
    {"symbols": ["IBM", "C"], "columns": ["symbol", "time", "bid"]},   # rows known when read
    {"where": pl.col("bid") > 50, "columns": ["date", "ex", "ofr", "bid"]},
])
def test_scans_into_polars_and_pandas_hold_the_source_rows(table, assembled, scan):
    t, source = table
    want = pl.from_arrow(source)
    assert isinstance(want, pl.DataFrame)
    if "dates" in scan:
        want = want.filter(pl.col("date") == dt.date.fromisoformat(scan["dates"]))
    if "symbols" in scan:
        want = want.filter(pl.col("symbol").cast(pl.String).is_in(scan["symbols"]))
    if "where" in scan:
        want = want.filter(scan["where"])
    want = want.select(scan.get("columns", want.columns))
    got = t.scan(**scan).to_polars()
    assert got.schema == want.schema
    def norm(f: pl.DataFrame) -> pl.DataFrame:
        return f.with_columns(pl.col(pl.Categorical).cast(pl.String)).sort(f.columns)
    assert norm(got).equals(norm(want))
    frame = t.scan(**scan).to_pandas()
    back = pl.from_pandas(frame).with_columns(   # pandas' timedeltas back to times of day
        [pl.col(c).dt.total_nanoseconds().cast(pl.Time) if want.schema[c] == pl.Time
         else pl.col(c).cast(want.schema[c]) for c in want.columns])
    assert norm(back).equals(norm(want))
    # and exactly what Arrow's conversion of the chunked result gives
    old = _pandas_ready(t.scan(**scan).to_arrow()).to_pandas(date_as_object=False)
    pd.testing.assert_frame_equal(frame, old, check_categorical=True)


def test_large_partitions_are_read_and_copied_a_few_batches_at_a_time(table, assembled,
                                                                      monkeypatch):
    """A partition read into one result comes in pieces of PIECE_ROWS rows' worth of record
    batches (300-row batches here), each copied into place, never the whole partition."""
    import hfq.query.read as read
    t, source = table
    monkeypatch.setattr(read, "PIECE_ROWS", 600)   # two batches a piece
    sizes: list[int] = []
    fill = Assembler.fill

    def spy(self, i, part, offset=None):
        sizes.append(part.num_rows)
        return fill(self, i, part, offset)
    monkeypatch.setattr(Assembler, "fill", spy)
    frame = t.scan().to_pandas()
    biggest = max(u.rows for u in t.scan().plan.units)
    assert biggest > 600 and max(sizes) <= 600 and sum(sizes) == source.num_rows
    want = _pandas_ready(t.scan().to_arrow()).to_pandas(date_as_object=False)
    pd.testing.assert_frame_equal(frame, want, check_categorical=True)
    got = t.scan(dates="2007-08-02", columns=["symbol", "time", "bid"]).to_polars()
    want_pl = pl.from_arrow(source).filter(pl.col("date") == dt.date(2007, 8, 2)).select(
        "symbol", "time", "bid")
    def norm(f: pl.DataFrame) -> pl.DataFrame:
        return f.with_columns(pl.col("symbol").cast(pl.String)).sort(f.columns)
    assert isinstance(want_pl, pl.DataFrame) and norm(got).equals(norm(want_pl))


@pytest.mark.parametrize("piece_rows", [1 << 18, 300])
def test_a_damaged_file_is_refused_on_the_large_scan_path(table, assembled, tmp_path,
                                                          monkeypatch, piece_rows):
    import hfq.query.read as read
    monkeypatch.setattr(read, "PIECE_ROWS", piece_rows)   # whole, and a batch at a time
    t, _ = table
    db = hfq.connect(str(tmp_path / "copy"), batch_rows=300)
    copy = db.create_table("quotes", hfq.schemas.TAQ, sort_by=("symbol", "time"),
                           partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)))
    copy.append(t.to_arrow())
    fragment = next(iter(copy.snapshot().fragments()))
    path = tmp_path / "copy" / fragment.file
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptPartitionError):
        copy.scan().to_pandas()
    with pytest.raises(CorruptPartitionError):
        copy.scan().to_polars()


def test_a_file_read_in_pieces_is_verified_whole_before_the_first_piece(table, tmp_path):
    """A damaged last batch fails the read before the first piece is decoded: no piece of a
    partition reaches the result unless every piece's bytes are intact (a retry on another
    replica then fills the part afresh, never over half of a damaged one)."""
    from hfq.storage.fragment import read_fragment_pieces
    t, _ = table
    db = hfq.connect(str(tmp_path / "copy"), batch_rows=300)
    copy = db.create_table("quotes", hfq.schemas.TAQ, sort_by=("symbol", "time"),
                           partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)))
    copy.append(t.to_arrow())
    fragment = max(copy.snapshot().fragments(), key=lambda f: len(f.batches))
    assert len(fragment.batches) >= 2
    pieces = [[b] for b in range(len(fragment.batches))]
    logical = copy.snapshot().schema.arrow
    store = db.session.nodes.store
    whole = list(read_fragment_pieces(store, fragment, logical, pieces))
    assert sum(p.num_rows for p in whole) == fragment.rows
    offset, length = fragment.batches[-1].span
    path = tmp_path / "copy" / fragment.file
    data = bytearray(path.read_bytes())
    data[offset + length // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    reading = read_fragment_pieces(store, fragment, logical, pieces)
    with pytest.raises(CorruptPartitionError):
        next(reading)


# -- row filters of a unit (hfq.query.read._filter_rows): numpy masks, runs as slices ----------
def filter_input(seed: int, *, dictionary: bool, timestamps: bool, sort: bool) -> pa.Table:
    rng = np.random.default_rng(seed)
    chunks = []
    for k in range(3):
        n = int(rng.integers(0, 60))
        names = ["A", "B", "C", "IBM"] if k % 2 else ["IBM", "C", "B", "Z"]
        idx = rng.integers(0, len(names), n)
        if sort:
            idx.sort()
        nulls = rng.random(n) < 0.1
        symbol = pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32), mask=nulls),
                                                pa.array(names, pa.string()))
        days = rng.integers(0, 4, n)
        date = pa.array([DAY + dt.timedelta(days=int(d)) for d in days], pa.date32(),
                        mask=rng.random(n) < 0.1)
        if timestamps:
            date = date.cast(pa.timestamp("s")).cast(pa.timestamp("us"))
        chunks.append(pa.table({
            "symbol": symbol if dictionary else symbol.cast(pa.string()),
            "date": date, "i": pa.array(np.arange(n) + 1000 * k)}))
    return pa.concat_tables(chunks)


@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("timestamps", [False, True])
@pytest.mark.parametrize("sort", [False, True])
def test_row_filters_match_polars(dictionary, timestamps, sort):
    from hfq.query.plan import Filters
    from hfq.query.read import _filter_rows
    for seed in range(6):
        table = filter_input(seed, dictionary=dictionary, timestamps=timestamps, sort=sort)
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        frame = frame.with_columns(pl.col("symbol").cast(pl.String),
                                   pl.col("date").cast(pl.Date))
        for symbols in (None, ("IBM",), ("Q",), ("B", "Z", "Q")):
            for lo, hi in ((None, None), ("2007-08-02", None), (None, "2007-08-02"),
                           ("2007-08-02", "2007-08-03")):
                f = Filters(date_column="date" if lo or hi else None, date_lo=lo, date_hi=hi,
                            symbol_column="symbol" if symbols else None, symbols=symbols)
                want = frame
                if lo:
                    want = want.filter(pl.col("date") >= dt.date.fromisoformat(lo))
                if hi:
                    want = want.filter(pl.col("date") <= dt.date.fromisoformat(hi))
                if symbols:
                    want = want.filter(pl.col("symbol").is_in(list(symbols)))
                got = _filter_rows(table, f)
                assert got.schema == table.schema
                assert got.column("i").to_pylist() == want["i"].to_list(), (seed, f)


def test_assembled_types_convert_as_arrow_converts_them():
    rng = np.random.default_rng(7)

    def other_part(n: int) -> pa.Table:
        ms = rng.integers(0, 86_399_999, n)
        return pa.table({
            "d64": pa.array(rng.integers(0, 20_000, n) * 86_400_000, pa.date64()),
            "t_ms": pa.array(ms.astype(np.int32), pa.time32("ms")),
            "t_us": pa.array(ms * 1000, pa.time64("us"), mask=rng.random(n) < 0.2),
            "ts": pa.array(rng.integers(0, 2**40, n), pa.timestamp("us", tz="UTC")),
            "u": pa.array(rng.integers(0, 60_000, n).astype(np.uint16)),
            "f": pa.array(rng.random(n).astype(np.float32)),
            "dec": pa.array([None if v == 0 else int(v) for v in rng.integers(0, 99, n)],
                            pa.int64()).cast(pa.decimal128(22, 2)),
            "b": pa.array(rng.random(n) < 0.5, pa.bool_()),
        })
    parts = [other_part(n) for n in (5, 0, 17, 9)]
    for types in (pandas_type, None):
        got = assemble(parts, types)
        want = pa.concat_tables(parts)
        if types is pandas_type:
            pd.testing.assert_frame_equal(
                got.to_pandas(date_as_object=False, split_blocks=True, self_destruct=True),
                _pandas_ready(want).to_pandas(date_as_object=False))
        else:
            a, b = pl.from_arrow(got), pl.from_arrow(want)
            assert isinstance(a, pl.DataFrame) and isinstance(b, pl.DataFrame)
            assert a.equals(b) and a.schema == b.schema


def test_point_reads_through_the_cached_symbol_runs_match_polars(table):
    from hfq.storage.cache import clear_process_caches
    t, source = table
    want = pl.from_arrow(source)
    assert isinstance(want, pl.DataFrame)
    want = want.with_columns(pl.col(pl.Categorical).cast(pl.String))
    symbols = sorted(want["symbol"].unique().to_list())
    clear_process_caches()
    asks = [[s] for s in symbols] + [symbols[:3], [symbols[5], "NOPE"], ["NOPE"],
                                     symbols[::7]]
    for _ in range(2):   # the second time from the cached batches and their runs
        for day in ("2007-08-01", "2007-08-02"):
            for ask in asks:
                got = t.scan(dates=day, symbols=ask).to_polars()
                expected = want.filter((pl.col("date") == dt.date.fromisoformat(day)) &
                                       pl.col("symbol").is_in(ask))
                got = got.with_columns(pl.col(pl.Categorical).cast(pl.String))
                assert got.sort(got.columns).equals(expected.sort(expected.columns)), ask
    clear_process_caches()


def test_symbol_runs_refuse_batches_not_sorted_by_symbol():
    from hfq.query.read import SymbolRuns
    sorted_ = pa.chunked_array([pa.array(["A", "A", "B", "C", "C"]).dictionary_encode()])
    assert dict(SymbolRuns.of(sorted_)) == {"A": (0, 2), "B": (2, 3), "C": (3, 5)}
    assert not SymbolRuns.of(pa.chunked_array(
        [pa.array(["A", "B", "A"]).dictionary_encode()])).usable
    assert not SymbolRuns.of(pa.chunked_array(
        [pa.array(["A", None, "B"]).dictionary_encode()])).usable
    twice = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["A", "A"]))
    assert not SymbolRuns.of(pa.chunked_array([twice])).usable
