"""NYSE Daily TAQ files (2026 format) end to end: the synthetic generator's files loaded by
:func:`hfq.ingest.taq.load_taq` give back exactly the rows generated (the generator's own Arrow
tables are the oracle), in bounded blocks, with every malformed line named by file, line and
column; and ``minute_bars(where=)`` keeps a sentinel quote out of the bars (polars oracle)."""

from __future__ import annotations

import gzip
import os
import shutil

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import canonical
from hfq import analytics as ha
from hfq.errors import CsvError, SchemaMismatchError
from hfq.ingest.taq import load_taq, read_taq
from hfq.ingest.taq_synth import activity, nyse_day, nyse_files
from hfq.quality import clean_quotes


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    d = tmp_path_factory.mktemp("taq")
    bbo, trade, kept = nyse_files(str(d), "2026-04-01", quotes=30_000, trades=4_000, seed=7,
                                  keep=True)
    return str(d), bbo, trade, pa.concat_tables([k[0] for k in kept]), \
        pa.concat_tables([k[1] for k in kept])


def tables(db):
    q = db.create_table("quotes", hfq.schemas.NYSE_QUOTES, sort_by=("symbol", "time"),
                        partition_by=hfq.Hash("symbol", 4))
    t = db.create_table("trades", hfq.schemas.NYSE_TRADES, sort_by=("symbol", "time"),
                        partition_by=hfq.Hash("symbol", 4))
    return q, t


def test_loaded_files_hold_exactly_the_generated_rows(day, db):
    _, bbo, trade, want_q, want_t = day
    q, t = tables(db)
    report = load_taq(q, bbo, block_bytes=1 << 16)   # many blocks: streamed
    assert report.rows == want_q.num_rows == len(q) and report.version == 1
    assert load_taq(t, trade, block_bytes=1 << 16).rows == want_t.num_rows
    assert canonical(q.to_arrow()).equals(canonical(want_q))
    assert canonical(t.to_arrow()).equals(canonical(want_t))
    got = q.to_arrow()
    assert got.schema.field("time").type == pa.time64("ns")
    # nanoseconds survive (not cut to micro- or milliseconds), nulls stay null
    assert (pl.from_arrow(got)["time"].cast(pl.Int64) % 1000 != 0).mean() > 0.9
    assert got["finra_adf_time"].null_count == \
        pa.compute.sum(pa.compute.not_equal(want_q["ex"].cast(pa.string()), "D")).as_py()


def test_the_activity_is_heavy_tailed(day):
    want = pl.from_arrow(day[3])
    counts = want.group_by("symbol").len()["len"]
    assert 0.03 < counts.max() / want.height < 0.08
    assert 50 <= counts.median() <= 200
    w = activity(20_000_000)
    assert abs(w[0] - 0.05) < 1e-6 and 80 < np.median(w) * 20_000_000 < 125


def test_a_compressed_file_with_the_date_given(day, db, tmp_path):
    _, bbo, _, want_q, _ = day
    path = str(tmp_path / "EQY_US_ALL_BBO_20260401.gz")
    with open(bbo, "rb") as src, gzip.open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    q, _ = tables(db)
    load_taq(q, path, date="2026-04-02")
    dates = pl.from_arrow(q.to_arrow())["date"].unique().to_list()
    assert [d.isoformat() for d in dates] == ["2026-04-02"]
    assert len(q) == want_q.num_rows


def broken(day, tmp_path, edit):
    """A copy of the BBO file with ``edit(lines)`` applied."""
    _, bbo, *_ = day
    with open(bbo) as f:
        lines = f.read().splitlines()
    edit(lines)
    path = str(tmp_path / os.path.basename(bbo))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def field(lines, line, column, value):
    cells = lines[line - 1].split("|")
    cells[lines[0].split("|").index(column)] = value
    lines[line - 1] = "|".join(cells)


@pytest.mark.parametrize("line, column, value, says", [
    (500, "Time", "09300000000000", "line 500, column Time"),           # 14 digits
    (501, "Time", "246000000000000", "line 501, column Time"),          # hour 24
    (502, "Participant_Timestamp", "09x000000000000", "line 502, column Participant_Timest"),
    (503, "Bid_Price", "12,5", "line 503, column Bid_Price"),
    (504, "Exchange", "NQ", "line 504, column Exchange"),
    (505, "Symbol", "", "line 505, column Symbol"),
])
def test_a_bad_field_is_named_by_file_line_and_column(day, db, tmp_path, line, column, value,
                                                       says):
    path = broken(day, tmp_path, lambda lines: field(lines, line, column, value))
    q, _ = tables(db)
    with pytest.raises(CsvError, match=says) as info:
        load_taq(q, path, block_bytes=1 << 14)
    assert path in str(info.value)
    assert len(q) == 0   # nothing committed


def test_a_short_line_a_lying_trailer_and_a_missing_column(day, db, tmp_path):
    q, _ = tables(db)
    path = broken(day, tmp_path, lambda lines: lines.__setitem__(700, "093000000000000|N"))
    with pytest.raises(CsvError, match="columns expected"):
        load_taq(q, path)
    def lie(lines):
        lines[-1] = lines[-1].replace("|30000|", "|29999|")
    with pytest.raises(CsvError, match=r"trailer counts 29,999 records, the file holds 30,000"):
        load_taq(q, broken(day, tmp_path, lie))
    with pytest.raises(CsvError, match="the END trailer is not the last line"):
        load_taq(q, broken(day, tmp_path, lambda lines: lines.append(lines[1])))
    def drop(lines):
        for i, text in enumerate(lines):
            cells = text.split("|")
            lines[i] = "|".join(cells[:3] + cells[4:])   # no Bid_Price column
    with pytest.raises(CsvError, match="line 1: the header lacks column.*Bid_Price"):
        load_taq(q, broken(day, tmp_path, drop))
    with pytest.raises(CsvError, match="not a NYSE Daily TAQ file name"):
        load_taq(q, str(tmp_path / "quotes.csv"))
    _, t = tables(hfq.connect(str(tmp_path / "other")))
    with pytest.raises(SchemaMismatchError, match="these files need"):
        load_taq(t, day[1])
    assert len(q) == 0


def test_reading_is_bounded_by_blocks(day):
    """A file is read a block at a time: many batches, none larger than a block's rows."""
    sizes = [b.num_rows for b in read_taq(day[1], block_bytes=1 << 15)]
    assert len(sizes) > 20 and sum(sizes) == day[3].num_rows and max(sizes) < 1000


def test_minute_bars_keep_a_sentinel_quote_out_of_the_high(db):
    """Against polars: bars of the clean quotes only; without where= the sentinel offer is a
    bar's high (so the filter is what keeps it out)."""
    q, _ = next(nyse_day(quotes=20_000, trades=10, seed=3))
    ofr = q["ofr"].to_numpy().copy()
    ofr[[100, 5000, 12_000]] = 214748.3647      # sentinel offers
    q = q.set_column(q.schema.get_field_index("ofr"), "ofr", pa.array(ofr))
    quotes = db.create_table("quotes", hfq.schemas.NYSE_QUOTES, sort_by=("symbol", "time"),
                             partition_by=hfq.Hash("symbol", 3))
    quotes.append(q)
    ha.minute_bars(quotes, "dirty", bar="1m", progress=False)
    ha.minute_bars(quotes, "clean", bar="1m", where=clean_quotes(), progress=False)
    dirty = pl.from_arrow(db["dirty"].to_arrow())
    clean = pl.from_arrow(db["clean"].to_arrow())
    assert dirty["high"].max() > 100_000 and clean["high"].max() < 100_000
    frame = pl.from_arrow(q).filter(clean_quotes())
    mid = (pl.col("bid") + pl.col("ofr")) / 2
    want = frame.sort("symbol", "time").group_by(
        "symbol", "date", (pl.col("time").cast(pl.Int64) // 60_000_000_000 * 60_000_000_000)
        .cast(pl.Time).alias("time"), maintain_order=True).agg(
        bid=pl.col("bid").mean(), ofr=pl.col("ofr").mean(), open=mid.first(),
        high=mid.max(), low=mid.min(), close=mid.last(), count=pl.len())
    got = clean.with_columns(pl.col("symbol").cast(pl.String)).sort("symbol", "time")
    want = want.with_columns(pl.col("symbol").cast(pl.String),
                             pl.col("count").cast(pl.Int64)).sort("symbol", "time")
    assert got.columns == want.columns and got.height == want.height
    for name in ("symbol", "date", "time", "count"):
        assert got[name].to_list() == want[name].to_list(), name
    for name in ("bid", "ofr", "open", "high", "low", "close"):
        np.testing.assert_allclose(got[name].to_numpy(), want[name].to_numpy(), rtol=1e-12)
