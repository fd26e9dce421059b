"""The hfq command end to end (in-process), and the messages people see."""

from __future__ import annotations

import polars as pl
import pytest

import hfq
from hfq.cli import main


def test_command_line_workflow(tmp_path, capsys):
    root = str(tmp_path / "db")
    data = str(tmp_path / "csv")
    assert main(["synth", "taq", data, "--days", "2", "--rows-per-day", "5000",
                 "--symbols", "50"]) == 0
    assert main(["--root", root, "create", "quotes", "--schema", "TAQ", "--partition", "date",
                 "--hash", "symbol:4", "--sort", "symbol,time"]) == 0
    assert main(["--root", root, "ingest", "quotes", f"{data}/taq_*.csv", "--no-progress"]) == 0
    assert "loaded 10,000 rows" in capsys.readouterr().out
    assert main(["--root", root, "tables"]) == 0
    assert "version 1: 10,000 rows in 8 partitions" in capsys.readouterr().out
    assert main(["--root", root, "scan", "quotes", "--dates", "2007-08-01", "--symbols", "IBM",
                 "--explain"]) == 0
    assert "partitions: 1 kept, 7 pruned of 8" in capsys.readouterr().out
    out = str(tmp_path / "ibm.csv")
    assert main(["--root", root, "scan", "quotes", "--symbols", "IBM", "--out", out]) == 0
    exported = pl.read_csv(out)
    expected = hfq.connect(root)["quotes"].scan(symbols=["IBM"]).to_polars()
    assert exported.height == expected.height > 0
    assert main(["--root", root, "verify", "quotes"]) == 0
    assert "8 files match" in capsys.readouterr().out
    assert main(["--root", root, "partitions", "quotes"]) == 0
    assert main(["--root", root, "vacuum", "quotes"]) == 0


def test_errors_are_one_line_with_exit_code_1(tmp_path, capsys):
    assert main(["--root", str(tmp_path), "scan", "nope"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"hfq: error: no table 'nope' in {tmp_path} (tables: none)")
    with pytest.raises(SystemExit):
        main(["--help"])


def test_demo_runs_small(tmp_path, capsys):
    from hfq.demo import run_demo
    result = run_demo(str(tmp_path / "demo"), days=2, rows_per_day=20_000, symbols=100)
    assert result["rows"] == 40_000 and result["day_rows"] == 20_000
    assert 0 < result["point_rows"] < 20_000
    out = capsys.readouterr().out
    assert "pickle.load" in out and "OLS of" in out
    # the analytics ran: a PNG of the spread curve, bars written back, a fitted slope
    with open(result["spread_png"], "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert result["bars"] > 0 and set(result["ols_coef"]) == {"intercept", "quote_size"}


def test_messages_people_see(db, quotes):
    with pytest.raises(hfq.errors.SchemaMismatchError,
                       match=r"no column 'price'; the columns are symbol, date, time, bid"):
        quotes.scan(columns=["price"])
    with pytest.raises(hfq.errors.SchemaMismatchError,
                       match=r"where= uses column 'px', which table 'quotes' does not have"):
        quotes.scan(where=pl.col("px") > 1)
    with pytest.raises(TypeError, match="where must be a polars expression"):
        quotes.scan(where="bid > 0")
    with pytest.raises(ValueError, match="the first date is after the second"):
        quotes.scan(dates=("2007-08-02", "2007-08-01"))
    with pytest.raises(ValueError, match="is not a date"):
        quotes.scan(dates="yesterday")
    with pytest.raises(hfq.errors.InvalidNameError, match="partition column 'day' is not in"):
        db.create_table("x", hfq.schemas.TAQ, partition_by=hfq.Value("day"))
    with pytest.raises(hfq.errors.SchemaMismatchError, match="cannot append a str"):
        quotes.append("quotes.csv")
    with pytest.raises(TypeError, match="unknown settings"):
        hfq.connect(str(db.store.root), compresion="lz4")
