"""Synthetic data generators: determinism, exact schemas, realism invariants, CSV round trips."""

from __future__ import annotations

import datetime as dt
import io
import re
import time

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from hfq import schema, synth

DAY = "2007-08-01"


def table(batches, sch) -> pa.Table:
    return pa.Table.from_batches(list(batches), schema=sch.arrow)


def plain(t: pa.Table) -> pl.DataFrame:
    """Polars frame with dictionary columns as strings (dictionaries differ between batches)."""
    df = pl.from_arrow(t)
    return df.with_columns(pl.col(pl.Categorical).cast(pl.String))


def taq(**kw) -> pa.Table:
    kw.setdefault("dates", (DAY,))
    return table(synth.taq_batches(**kw), schema.TAQ)


@pytest.fixture(scope="module")
def quotes() -> pa.Table:
    return taq(rows_per_day=100_000, symbols=1000, batch_rows=30_000)


# -- TAQ ------------------------------------------------------------------------------------
def test_taq_schema_rows_and_batches():
    batches = list(synth.taq_batches(dates=(DAY, dt.date(2007, 8, 2)), rows_per_day=20_000,
                                     symbols=300, batch_rows=7000))
    assert all(b.schema == schema.TAQ.arrow for b in batches)
    assert pa.Table.from_batches(batches).schema == schema.TAQ.arrow
    assert sum(b.num_rows for b in batches) == 40_000
    assert max(b.num_rows for b in batches) == 7000
    for b in batches:                                      # a batch never spans two days
        assert len(set(b.column("date").to_pylist())) == 1
    assert all(b.column(i).null_count == 0 for b in batches for i in range(b.num_columns))


def test_taq_deterministic_whatever_the_batch_size():
    kw = dict(rows_per_day=150_000, symbols=50)           # > one internal chunk: carried state
    ref = plain(taq(**kw))
    assert ref.equals(plain(taq(**kw)))
    for batch_rows in (999, 65_537, 1_000_000):
        assert ref.equals(plain(taq(batch_rows=batch_rows, **kw)))
    assert not ref.equals(plain(taq(seed=1, **kw)))


def test_taq_day_independent_of_other_dates():
    both = plain(taq(dates=("2007-07-31", DAY), rows_per_day=5000, symbols=100))
    one = plain(taq(dates=DAY, rows_per_day=5000, symbols=100))
    assert both.filter(pl.col("date") == dt.date(2007, 8, 1)).equals(one)
    assert both.filter(pl.col("date") == dt.date(2007, 7, 31)).height == 5000


def test_taq_sorted_by_symbol_then_time(quotes):
    df = plain(quotes)
    assert df.equals(df.sort(["symbol", "time"], maintain_order=True))


def test_taq_symbols_and_codes(quotes):
    df = plain(quotes)
    names = synth._ticker_names(8000)
    assert len(set(names)) == 8000 and all(re.fullmatch(r"[A-Z]{1,5}", n) for n in names)
    assert names[:4] == ("IBM", "MSFT", "AAPL", "GE")
    assert {"IBM", "MSFT", "AAPL", "GE"} <= set(df["symbol"])
    assert set(df["ex"]) <= set("NPTQZBCXDMW")
    assert set(df["mmid"]) == {"", "FLOW", "EDGX", "EDGA", "NASD"}
    assert (df["mmid"] == "").mean() > 0.8
    assert (df["mode"] == 12).mean() > 0.7 and {1, 2} <= set(df["mode"])


def test_taq_prices_times_and_edge_cases(quotes):
    bid, ofr = (quotes.column(c).to_numpy() for c in ("bid", "ofr"))
    bsz, osz = (quotes.column(c).to_numpy() for c in ("bidsiz", "ofrsiz"))
    for p in (bid, ofr):                                   # exactly k / 10000
        assert np.array_equal(np.round(p * 1e4) / 1e4, p)
    n = len(bid)
    zero_bid, zero_ofr, sentinel = bid == 0, ofr == 0, ofr == 214748.3647
    crossed = (ofr < bid) & (ofr > 0) & (bid > 0)
    assert 0.002 < zero_bid.mean() < 0.01 and 0.002 < zero_ofr.mean() < 0.01
    assert 0.002 < crossed.sum() / n < 0.01
    assert 0.0003 < sentinel.mean() < 0.003
    assert (bsz[zero_bid] == 0).all() and (osz[zero_ofr | sentinel] == 0).all()
    normal = ~(zero_bid | zero_ofr | sentinel | crossed)
    spread = ofr[normal] - bid[normal]
    assert (spread > 0).all() and np.median(spread) < 0.1
    assert 4 < bid[normal].min() and bid[normal].max() < 600
    assert np.median(bsz[bsz > 0]) <= 50 and bsz.max() > 100
    t = quotes.column("time").cast(pa.int32()).to_numpy()
    assert t.min() >= 4 * 3600 and t.max() < 20 * 3600
    assert ((t >= 9.5 * 3600) & (t < 16 * 3600)).mean() > 0.8


def test_taq_activity_is_heavy_tailed(quotes):
    counts = np.sort(plain(quotes)["symbol"].value_counts()["count"].to_numpy())[::-1]
    assert counts.sum() == 100_000
    assert counts[:10].sum() / counts.sum() > 0.12        # top 1% of 1000 symbols
    assert np.median(counts) < counts.mean() / 2


def read_taq_csv(source) -> pl.DataFrame:
    """Parse raw TAQ CSV independently of hfq: everything as strings, then convert."""
    raw = pl.read_csv(source, infer_schema=False)
    hms = pl.col("time").str.split(":")
    return raw.select(
        pl.col("symbol"), pl.col("date").str.to_date("%Y%m%d"),
        (hms.list.get(0).cast(pl.Int32) * 3600 + hms.list.get(1).cast(pl.Int32) * 60
         + hms.list.get(2).cast(pl.Int32)).alias("time"),
        pl.col("bid", "ofr").cast(pl.Float64),
        pl.col("bidsiz", "ofrsiz", "mode").cast(pl.Int32),
        pl.col("ex"), pl.col("mmid").fill_null(""))


def test_taq_csv_round_trip_exact(tmp_path):
    kw = dict(dates=(DAY, "2007-08-02"), rows_per_day=40_000, symbols=200)
    path = tmp_path / "taq.csv"
    assert synth.write_taq_csv(path, **kw) == 80_000
    got = read_taq_csv(path)
    want = plain(taq(**kw)).with_columns(
        (pl.col("time").cast(pl.Int64) // 1_000_000_000).cast(pl.Int32))    # Time is in ns
    assert got.equals(want)


def test_taq_csv_text_format(tmp_path):
    buf = io.BytesIO()
    n = synth.write_taq_csv(buf, rows_per_day=20_000, symbols=100)
    text = buf.getvalue().decode()
    lines = text.splitlines()
    assert lines[0] == synth.TAQ_CSV_HEADER and len(lines) == n + 1
    price = r"(0|[1-9]\d*)(\.\d*[1-9])?"
    row = re.compile(rf"[A-Z]{{1,5}},20070801,[1-9]\d?:[0-5]\d:[0-5]\d,{price},{price},"
                     r"\d+,\d+,\d+,[A-Z],(|FLOW|EDGX|EDGA|NASD)")
    assert all(row.fullmatch(line) for line in lines[1:])
    assert any(line.endswith(",") for line in lines) and ",214748.3647," in text
    assert re.search(r",\d+\.\d{4},", text) and re.search(r",\d+,\d+,\d+,\d+,12,", text)
    path = tmp_path / "same.csv"                           # a path gives the same bytes
    synth.write_taq_csv(path, rows_per_day=20_000, symbols=100)
    assert path.read_bytes() == buf.getvalue()
    nohead = io.BytesIO()
    synth.write_taq_csv(nohead, rows_per_day=20_000, symbols=100, header=False)
    assert nohead.getvalue() == buf.getvalue().split(b"\n", 1)[1]


def test_taq_csv_files_one_per_day(tmp_path):
    files = synth.taq_csv_files(tmp_path / "csv", dates=(DAY, "2007-08-02"), rows_per_day=3000,
                                symbols=40)
    assert [f.name for f in files] == ["taq_20070801.csv", "taq_20070802.csv"]
    single = tmp_path / "single.csv"
    synth.write_taq_csv(single, dates=("2007-08-02",), rows_per_day=3000, symbols=40)
    assert files[1].read_bytes() == single.read_bytes()


def test_taq_table_and_streaming():
    t = synth.taq_table(rows_per_day=3000, symbols=30)
    assert plain(t).equals(plain(taq(rows_per_day=3000, symbols=30)))
    start = time.perf_counter()                            # a huge day streams: no full build
    first = next(synth.taq_batches(rows_per_day=50_000_000, batch_rows=1000))
    assert first.num_rows == 1000 and time.perf_counter() - start < 5
    assert synth.taq_table(rows_per_day=0, symbols=5).num_rows == 0


@pytest.mark.parametrize("kw", [dict(seed=-1), dict(batch_rows=0), dict(symbols=0),
                                dict(rows_per_day=-1)])
def test_invalid_arguments(kw):
    with pytest.raises(ValueError):
        next(synth.taq_batches(**kw))


# -- China level 2 --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def l2() -> pa.Table:
    return table(synth.l2_batches(rows_per_day=80_000, securities=40, batch_rows=25_000),
                 schema.L2)


def test_l2_schema_order_and_determinism(l2):
    assert l2.schema == schema.L2.arrow and l2.num_columns == 78 and l2.num_rows == 80_000
    df = plain(l2)
    assert df.equals(df.sort(["SecurityID", "UpdateTime"], maintain_order=True))
    again = table(synth.l2_batches(rows_per_day=80_000, securities=40, batch_rows=1 << 20),
                  schema.L2)
    assert df.equals(plain(again))


def test_l2_invariants(l2):
    df = plain(l2)
    assert df["SecurityID"].str.contains(r"^\d{6}$").all()
    sh = df["SecurityID"].str.starts_with("6")
    assert ((df["Market"] == "SH") == sh).all() and 0 < sh.mean() < 1
    ms = df["UpdateTime"].cast(pl.Int64) // 1_000_000          # polars Time is in ns
    assert (ms >= 33_300_000).all() and (ms < 54_000_000).all()
    assert not ((ms >= 41_400_000) & (ms < 46_800_000)).any()  # lunch break
    assert (df["LocalTime"] > df["UpdateTime"]).all()
    for i in range(1, 10):
        assert (df[f"AskPrice{i + 1}"] > df[f"AskPrice{i}"]).all()
        assert (df[f"BidPrice{i + 1}"] < df[f"BidPrice{i}"]).all()
    assert (df["AskPrice1"] > df["BidPrice1"]).all() and (df["BidPrice10"] > 0).all()
    vols = [f"{p}{i}" for p in ("AskVolume", "BidVolume", "NumOrdersB", "NumOrdersS")
            for i in range(1, 11)]
    assert (df.select(pl.min_horizontal(vols)).to_series() > 0).all()
    assert ((df["HighPrice"] >= df["LastPrice"]) & (df["LastPrice"] >= df["LowPrice"])).all()
    assert ((df["LastPrice"] - df["PreCloPrice"]).abs() <= df["PreCloPrice"] * 0.1 + 1e-9).all()
    per_sec = df.group_by("SecurityID").agg(
        pl.col("TradVolume").diff().min().alias("dv"), pl.col("HighPrice").diff().min().alias("dh"))
    assert (per_sec["dv"].fill_null(0) >= 0).all() and (per_sec["dh"].fill_null(0) >= 0).all()


def test_l2_csv(tmp_path):
    path = tmp_path / "l2.csv"
    assert synth.write_l2_csv(path, rows_per_day=2000, securities=5) == 2000
    got = pl.read_csv(path, infer_schema=False)
    assert got.columns == schema.L2.names and got.height == 2000
    want = plain(table(synth.l2_batches(rows_per_day=2000, securities=5), schema.L2))
    assert got["SecurityID"].to_list() == want["SecurityID"].to_list()
    assert got["LastPrice"].cast(pl.Float64).equals(want["LastPrice"])
    assert got["TradeDate"][0] == "2020-06-01" and re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}",
                                                                 got["UpdateTime"][0])


# -- device readings ------------------------------------------------------------------------
def test_readings_invariants():
    t = table(synth.readings_batches(days=2, devices=200, interval_s=300, batch_rows=7777),
              schema.READINGS)
    assert t.schema == schema.READINGS.arrow and t.num_rows == 2 * 200 * 288
    df = plain(t)
    assert df.equals(df.sort(["time", "device_id"], maintain_order=True))
    assert df["device_id"].str.contains(r"^demo\d{6}$").all() and df["device_id"].n_unique() == 200
    assert df["device_id"].min() == "demo000000" and df["device_id"].max() == "demo000199"
    assert str(df["time"][0]) == "2016-11-15 05:00:00+00:00"
    assert (df["mem_free"] + df["mem_used"] == 1_000_000_000).all()
    pairs = set(zip(df["ssid"], df["bssid"], strict=True))
    assert pairs == {("stealth-net", "A0:B1:C5:D2:E0:F3"), ("demo-5ghz", "22:32:A2:B3:05:98"),
                     ("demo-net", "01:02:03:04:05:06")}
    assert 0.93 < (df["battery_status"] == "discharging").mean() < 0.995
    assert df["rssi"].min() >= -84 and df["rssi"].max() <= -17 and df["rssi"].dtype == pl.Int16
    assert df["battery_level"].is_between(0, 100).all()
    assert df["battery_temperature"].is_between(87, 102).all()
    for c in ("cpu_avg_1min", "cpu_avg_5min", "cpu_avg_15min"):
        assert df[c].is_between(0, 100).all()
    again = table(synth.readings_batches(days=2, devices=200, interval_s=300), schema.READINGS)
    assert df.equals(plain(again))


def test_readings_csv_round_trip(tmp_path):
    path = tmp_path / "readings.csv"
    assert synth.write_readings_csv(path, devices=7, interval_s=900) == 7 * 96
    raw = pl.read_csv(path, infer_schema=False)
    assert raw.columns == schema.READINGS.names
    assert raw["time"][0] == "2016-11-15 00:00:00-05" and raw["time"].str.ends_with("-05").all()
    want = plain(table(synth.readings_batches(devices=7, interval_s=900), schema.READINGS))
    got = raw.with_columns(
        (pl.col("time").str.strip_suffix("-05").str.to_datetime("%Y-%m-%d %H:%M:%S")
         .dt.offset_by("5h").dt.replace_time_zone("UTC").dt.cast_time_unit("ms")),
        pl.col("battery_level").cast(pl.Int32), pl.col("mem_free", "mem_used").cast(pl.Int64),
        pl.col("rssi").cast(pl.Int16),
        pl.col("battery_temperature", "cpu_avg_1min", "cpu_avg_5min", "cpu_avg_15min")
        .cast(pl.Float64))
    assert got.equals(want.with_columns(pl.col("time").dt.cast_time_unit("ms")))


def test_device_info():
    t = synth.device_info_table(devices=300)
    assert t.schema == schema.DEVICE_INFO.arrow and t.num_rows == 300
    df = plain(t)
    assert df["device_id"].to_list() == [f"demo{i:06d}" for i in range(300)]
    assert set(zip(df["api_version"], df["os_name"], strict=True)) == {
        ("19", "4.4.4"), ("21", "5.0.0"), ("22", "5.1.0"), ("23", "6.0.1")}
    assert set(df["manufacturer"]) == {"iobeam"}
    assert set(df["model"]) == {"focus", "mustang", "pinto"}
    assert plain(synth.device_info_table(devices=300)).equals(df)
    buf = io.BytesIO()
    assert synth.write_device_info_csv(buf, devices=300) == 300
    assert pl.read_csv(buf.getvalue(), infer_schema=False).equals(df)
