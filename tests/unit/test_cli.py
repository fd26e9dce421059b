"""The hfq command as people use it: through the real entry point (``python -m hfq.cli`` and
the ``hfq`` console script) for what the shell sees -- exit status, one-line errors, JSON --
and in-process ``main([...])`` for the many small cases.  Answers are checked against the
Python API and polars on the same data.  No Ray: embedded reads and writes only (except the
demo, which runs the analytics).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import hfq
from hfq import maintenance
from hfq.cli import COMMANDS, main

DAYS = ("2007-08-01", "2007-08-02")
SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))
HFQ_SCRIPT = Path(sys.executable).with_name("hfq")
README = Path(__file__).resolve().parents[2] / "README.md"


# -- helpers -----------------------------------------------------------------------------------
def shell(*args: str, cwd: Path | str | None = None, script: bool = False
          ) -> subprocess.CompletedProcess[str]:
    """``hfq ARGS`` in a child process, as typed in a shell (no HFQ_ROOT inherited)."""
    env = {k: v for k, v in os.environ.items() if k != "HFQ_ROOT"}
    exe = [str(HFQ_SCRIPT)] if script else [sys.executable, "-m", "hfq.cli"]
    return subprocess.run([*exe, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``main(ARGS)`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hfq: error: ") and "Traceback" not in err
    return lines[0]


def make_quotes(root: str) -> hfq.Table:
    """Two days x 2,000 quotes of 50 symbols, then 6 rows with nulls (a second file in some
    partitions)."""
    db = hfq.connect(root)
    t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=SCHEME,
                        sort_by=("symbol", "time"))
    data = hfq.synth.taq_table(dates=DAYS, rows_per_day=2000, symbols=50)
    t.append(data)
    nulls = pl.from_arrow(data.slice(0, 6))
    assert isinstance(nulls, pl.DataFrame)
    t.append(nulls.with_columns(pl.lit(None, pl.Float64).alias("bid"),
                                pl.lit(None, pl.String).alias("mmid")))
    return t


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database root with table quotes, read (never changed) by many tests."""
    root = str(tmp_path_factory.mktemp("shared") / "db")
    make_quotes(root)
    return root


@pytest.fixture
def own(tmp_path: Path) -> str:
    """A database root with table quotes that the test may change."""
    root = str(tmp_path / "db")
    make_quotes(root)
    return root


# -- the shell: entry points, help, version, global options ------------------------------------
def test_version_and_help_through_the_real_entry_points() -> None:
    for script in (False, True):
        if script and not HFQ_SCRIPT.exists():
            continue
        done = shell("--version", script=script)
        assert (done.returncode, done.stdout) == (0, f"hfq {hfq.__version__}\n")
    done = shell("--help")
    assert done.returncode == 0 and done.stderr == ""
    text = " ".join(done.stdout.split())   # help text is re-wrapped to the terminal
    for name, description in COMMANDS:
        assert f"{name} {' '.join(description.split())}" in text, name
    for option in ("--root", "--address", "--json", "--debug", "--version"):
        assert option in done.stdout


def test_every_option_has_help_and_shows_its_default(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    from hfq.cli import _parser
    parser = _parser()
    sub = next(a for a in parser._actions if a.dest == "==SUPPRESS==" and a.choices)
    assert isinstance(sub.choices, dict)
    assert set(sub.choices) == {name for name, _ in COMMANDS}
    for name, command in sub.choices.items():
        for action in command._actions:
            assert action.help, f"hfq {name} {action.option_strings or action.dest}: no help"
    code, out, _ = cli(capsys, "scan", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "--limit LIMIT rows to show (with --json: to include as 'head') (default: 10)" in text
    assert "--where EXPR" in text and "(default: none)" in text
    code, out, _ = cli(capsys, "demo", "--help")
    assert "$HFQ_DEMO_DIR" in out and "(default: 5)" in " ".join(out.split())


def test_global_options_before_or_after_the_command(shared: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    t = hfq.connect(shared)["quotes"]
    want = [{"table": "quotes", "version": t.version, "rows": len(t),
             "partitions": t.partitions().height, "files": int(t.partitions()["files"].sum()),
             "bytes": int(t.partitions()["bytes"].sum())}]
    for args in (["--root", shared, "--json", "tables"], ["tables", "--root", shared, "--json"],
                 ["--json", "tables", "--root", shared], ["--root", shared, "tables", "--json"]):
        code, out, err = cli(capsys, *args)
        assert (code, err) == (0, ""), args
        assert json.loads(out) == want, args
    # a later value wins; an empty root has no tables
    code, out, _ = cli(capsys, "--root", shared, "tables", "--root", str(tmp_path / "e"))
    assert code == 0 and out.startswith("no tables in")
    if HFQ_SCRIPT.exists():   # the console script, options after the command
        done = shell("tables", "--json", "--root", shared, script=True)
        assert done.returncode == 0 and json.loads(done.stdout) == want


def test_usage_errors_are_one_line_with_exit_status_2(shared: str,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    code, _, err = cli(capsys, "scan")
    assert code == 2
    assert "the following arguments are required: table" in one_error_line(err)
    code, _, err = cli(capsys, "create", "x", "--schema", "TAQ", "--partition", "date",
                       "--hash", "symbol:many")
    assert code == 2 and "'many' is not an integer" in one_error_line(err)
    code, _, err = cli(capsys, "--root", shared, "--address", "auto", "tables")
    assert code == 2 and "--root and --address exclude each other" in one_error_line(err)
    code, _, err = cli(capsys, "frobnicate")
    assert code == 2 and "invalid choice: 'frobnicate'" in one_error_line(err)
    code, _, err = cli(capsys)
    assert code == 2 and "usage: hfq" in err


def test_errors_are_one_line_with_exit_status_1(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "--root", str(tmp_path), "scan", "nope")
    assert code == 1
    assert one_error_line(err) == f"hfq: error: no table 'nope' in {tmp_path} (tables: none)"
    code, out, _ = cli(capsys, "--help")
    assert code == 0 and "usage: hfq" in out


def test_a_bad_date_is_one_line_on_stderr(shared: str) -> None:
    done = shell("scan", "quotes", "--root", shared, "--dates", "2007-13-01")
    assert done.returncode == 2 and done.stdout == ""
    line = one_error_line(done.stderr)
    assert "'2007-13-01' is not a date" in line and "month must be in 1..12" in line
    done = shell("scan", "quotes", "--root", shared, "--dates", "2007-08-02,2007-08-01")
    assert done.returncode == 2 and "the first date is after the last" in done.stderr


def test_a_missing_ingest_file_is_one_line_and_debug_shows_the_traceback(shared: str,
                                                                         tmp_path: Path
                                                                         ) -> None:
    missing = str(tmp_path / "taq_nope.csv")
    done = shell("--root", shared, "ingest", "quotes", missing, cwd=tmp_path)
    assert done.returncode == 1
    assert one_error_line(done.stderr) == f"hfq: error: No such file or directory: {missing}"
    done = shell("--root", shared, "ingest", "quotes", str(tmp_path / "none_*.csv"))
    assert done.returncode == 1 and "no file matches" in one_error_line(done.stderr)
    done = shell("ingest", "quotes", missing, "--root", shared, "--debug")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert "FileNotFoundError" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"hfq: error: No such file or directory: {missing}")
    assert len(hfq.connect(shared)["quotes"]) == 4006   # unchanged


def test_a_closed_pipe_ends_quietly(shared: str) -> None:
    done = subprocess.run(f"set -o pipefail; {sys.executable} -m hfq.cli --root {shared} "
                          "scan quotes --limit 4000 | head -n 2", shell=True,
                          capture_output=True, text=True, timeout=120, executable="/bin/bash")
    assert len(done.stdout.splitlines()) == 2
    assert "Traceback" not in done.stderr and "Error" not in done.stderr


# -- the workflow, and JSON equal to the Python API ---------------------------------------------
def test_workflow_through_the_shell_with_json(tmp_path: Path) -> None:
    root, data = str(tmp_path / "db"), str(tmp_path / "csv")
    done = shell("synth", "taq", data, "--days", "2", "--rows-per-day", "2000", "--symbols",
                 "50", "--json")
    synth = json.loads(done.stdout)
    assert len(synth["files"]) == 2 and synth["bytes"] > 0
    done = shell("create", "quotes", "--schema", "taq", "--partition", "date", "--hash",
                 "symbol:4", "--sort", "symbol,time", "--root", root, "--json")
    assert json.loads(done.stdout) == {"table": "quotes", "version": 0, "created": True,
                                       "partitioning": "date / hash(symbol, 4)",
                                       "sort_by": ["symbol", "time"]}
    done = shell("--root", root, "--json", "ingest", "quotes", f"{data}/taq_*.csv")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    t = hfq.connect(root)["quotes"]
    assert report["rows"] == len(t) == 4000 and report["version"] == t.version == 1
    assert report["rejected"] == 0 and len(report["files"]) == 2
    done = shell("--root", root, "scan", "quotes", "--symbols", "IBM", "--dates",
                 "2007-08-01", "--explain", "--json")
    plan = json.loads(done.stdout)
    assert "partitions: 1 kept, 7 pruned of 8" in plan["plan"] and plan["version"] == 1
    done = shell("--root", root, "scan", "quotes", "--dates", "2007-08-02,", "--json",
                 "--limit", "3")
    scan = json.loads(done.stdout)
    assert scan["rows"] == 2000 and len(scan["head"]) == 3
    assert {r["date"] for r in scan["head"]} == {"2007-08-02"}


def test_command_line_workflow_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    root, data = str(tmp_path / "db"), str(tmp_path / "csv")
    assert cli(capsys, "synth", "taq", data, "--days", "2", "--rows-per-day", "5000",
               "--symbols", "50")[0] == 0
    assert cli(capsys, "--root", root, "create", "quotes", "--schema", "TAQ", "--partition",
               "date", "--hash", "symbol:4", "--sort", "symbol,time")[0] == 0
    code, out, _ = cli(capsys, "--root", root, "ingest", "quotes", f"{data}/taq_*.csv",
                       "--no-progress")
    assert code == 0 and "loaded 10,000 rows" in out
    code, out, _ = cli(capsys, "--root", root, "tables")
    assert out.split("\n")[2].split() == ["quotes", "1", "10,000", "8", "8",
                                          *out.split("\n")[2].split()[-2:]]
    code, out, _ = cli(capsys, "--root", root, "scan", "quotes", "--dates", "2007-08-01",
                       "--symbols", "IBM", "--explain")
    assert "partitions: 1 kept, 7 pruned of 8" in out
    out_csv = str(tmp_path / "ibm.csv")
    code, out, _ = cli(capsys, "--root", root, "scan", "quotes", "--symbols", "IBM", "--out",
                       out_csv)
    expected = hfq.connect(root)["quotes"].scan(symbols=["IBM"]).to_polars()
    assert out == f"wrote {expected.height:,} rows to {out_csv}\n"
    assert pl.read_csv(out_csv).height == expected.height > 0
    code, out, _ = cli(capsys, "--root", root, "scan", "quotes", "--limit", "3")
    lines = out.strip().splitlines()
    assert lines[0].split() == hfq.schemas.TAQ.names and len(lines) == 2 + 3 + 1
    assert lines[-1] == "10,000 rows (first 3 shown)"


def test_info_text_and_json(shared: str, capsys: pytest.CaptureFixture[str]) -> None:
    t = hfq.connect(shared)["quotes"]
    info = cli_json(capsys, "info", "quotes", "--root", shared)
    parts = t.partitions()
    assert info["table"] == "quotes" and info["version"] == t.version == 2
    assert info["versions"] == t.versions() == [0, 1, 2]
    assert info["rows"] == len(t) == 4006
    assert (info["partitions"], info["files"], info["bytes"]) == (
        parts.height, parts["files"].sum(), parts["bytes"].sum())
    assert info["partitioning"] == "date / hash(symbol, 4)"
    assert info["partition_by"] == SCHEME.to_json()
    assert info["sort_by"] == ["symbol", "time"]
    assert [c["name"] for c in info["schema"]] == hfq.schemas.TAQ.names
    assert info["schema"][0] == {"name": "symbol", "type": "SYMBOL"}
    code, out, _ = cli(capsys, "info", "quotes", "--root", shared)
    assert code == 0
    for line in ("table            quotes", "rows             4,006",
                 "partitioned by   date / hash(symbol, 4)", "sorted by        symbol, time",
                 "bid      DOUBLE"):
        assert line in out


def test_partitions_summary_and_all(shared: str, capsys: pytest.CaptureFixture[str]) -> None:
    parts = hfq.connect(shared)["quotes"].partitions()
    summary = cli_json(capsys, "--root", shared, "partitions", "quotes")
    assert summary["partitions"] == parts.height == 8
    assert summary["rows"] == parts["rows"].sum() == 4006
    assert summary["bytes"] == parts["bytes"].sum() and summary["files"] == parts["files"].sum()
    assert summary["first_partition"] == parts["partition"][0]
    assert summary["last_partition"] == parts["partition"][-1]
    assert summary["by"] == "date"
    assert [(g["date"], g["partitions"]) for g in summary["groups"]] == [(d, 4) for d in DAYS]
    assert sum(g["rows"] for g in summary["groups"]) == 4006
    every = cli_json(capsys, "--root", shared, "partitions", "quotes", "--all")
    assert every == parts.to_dicts()

    code, short, _ = cli(capsys, "--root", shared, "partitions", "quotes")
    assert code == 0 and "8 partitions, 4,006 rows" in short
    assert "2007-08-01            4   2," in short and "hfq partitions quotes --all" in short
    code, full, _ = cli(capsys, "--root", shared, "partitions", "quotes", "--all")
    rows = [line for line in full.splitlines() if line.startswith("date=")]
    assert len(rows) == parts.height
    assert len([x for x in short.splitlines() if x.startswith("date=")]) == 0
    assert rows[0].split()[0] == parts["partition"][0]   # the whole path, never cut here
    assert all(len(line) <= 200 for line in full.splitlines())


def test_json_is_strict_nan_and_infinity_are_null(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = str(tmp_path / "db")
    assert cli(capsys, "--root", root, "create", "q", "--schema", "TAQ", "--partition",
               "date", "--hash", "symbol")[0] == 0
    info = cli_json(capsys, "--root", root, "info", "q")
    assert info["partition_by"] == hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 100)).to_json()
    row = pl.from_arrow(hfq.synth.taq_table(rows_per_day=1, symbols=1))
    assert isinstance(row, pl.DataFrame)
    hfq.connect(root)["q"].append(row.with_columns(bid=pl.lit(float("nan")),
                                                   ofr=pl.lit(float("inf"))))
    code, out, _ = cli(capsys, "--root", root, "scan", "q", "--json")

    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant}")

    got = json.loads(out, parse_constant=refuse)
    assert (got["rows"], got["head"][0]["bid"], got["head"][0]["ofr"]) == (1, None, None)


# -- --where: SQL, compiled by the SQL compiler (hfq.engine.sql.where; unit tests and DuckDB as
# the oracle in tests/unit/test_where.py) --------------------------------------------------------
WHERE = [
    ("bid > 0 and ofr > bid", (pl.col("bid") > 0) & (pl.col("ofr") > pl.col("bid"))),
    ("symbol in ('IBM','MSFT')", pl.col("symbol").is_in(["IBM", "MSFT"])),
    ("symbol NOT IN ('IBM', 'MSFT') AND bidsiz % 2 = 1",
     ~pl.col("symbol").is_in(["IBM", "MSFT"]) & (pl.col("bidsiz") % 2 == 1)),
    ("not (ofr - bid) * 2 / (ofr + bid) < 0.001 or bidsiz >= 20",
     ~((pl.col("ofr") - pl.col("bid")) * 2 / (pl.col("ofr") + pl.col("bid")) < 0.001)
     | (pl.col("bidsiz") >= 20)),
    ("time >= '09:30' and time < '16:00:00' and date = '2007-08-02'",
     (pl.col("time") >= pl.time(9, 30)) & (pl.col("time") < pl.time(16))
     & (pl.col("date") == pl.date(2007, 8, 2))),
    ("bid BETWEEN 10 AND 30", (pl.col("bid") >= 10) & (pl.col("bid") <= 30)),
    ("-bid < -50 or ex = 'N'", (-pl.col("bid") < -50) | (pl.col("ex") == "N")),
    ("bid IS NULL", pl.col("bid").is_null()),
    ("mmid IS NOT NULL AND mmid <> ''", pl.col("mmid").is_not_null() & (pl.col("mmid") != "")),
    ("abs(ofr - bid) > 1 AND symbol LIKE 'A%'",
     ((pl.col("ofr") - pl.col("bid")).abs() > 1) & pl.col("symbol").cast(pl.String)
     .str.starts_with("A")),
]


@pytest.mark.parametrize(("text", "oracle"), WHERE, ids=[w[0] for w in WHERE])
def test_scan_where_equals_polars_filter(shared: str, capsys: pytest.CaptureFixture[str],
                                         text: str, oracle: pl.Expr) -> None:
    want = hfq.connect(shared)["quotes"].to_polars().filter(oracle)
    got = cli_json(capsys, "--root", shared, "scan", "quotes", "--where", text,
                   "--limit", "100000")
    assert got["rows"] == want.height
    expected = json.loads(json.dumps(want.to_dicts(), default=str))
    assert sorted(map(str, got["head"])) == sorted(map(str, expected))


def test_scan_where_to_csv_through_the_shell(shared: str, tmp_path: Path) -> None:
    out = tmp_path / "quoted.csv"
    done = shell("scan", "quotes", "--where", "symbol in ('IBM', 'MSFT') and ofr > bid",
                 "--columns", "symbol,bid,ofr", "--dates", "20070801", "--out", str(out),
                 "--root", shared)
    assert done.returncode == 0, done.stderr
    want = hfq.connect(shared)["quotes"].to_polars().filter(
        pl.col("symbol").is_in(["IBM", "MSFT"]) & (pl.col("ofr") > pl.col("bid"))
        & (pl.col("date") == pl.date(2007, 8, 1))).select("symbol", "bid", "ofr")
    got = pl.read_csv(out)
    assert done.stdout == f"wrote {want.height:,} rows to {out}\n" and want.height > 0
    assert sorted(got.rows()) == sorted(want.with_columns(pl.col("symbol").cast(pl.String))
                                        .rows())


def test_the_readme_where_example(shared: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = "symbol in ('IBM','MSFT') and ofr > bid and time >= '09:30'"
    assert text in " ".join(README.read_text().split())
    want = hfq.connect(shared)["quotes"].to_polars(dates=("2007-08-01", "2007-08-07")).filter(
        pl.col("symbol").is_in(["IBM", "MSFT"]) & (pl.col("ofr") > pl.col("bid"))
        & (pl.col("time") >= pl.time(9, 30)))
    got = cli_json(capsys, "--root", shared, "scan", "quotes", "--dates",
                   "2007-08-01,2007-08-07", "--where", text, "--limit", "0")
    assert got["rows"] == want.height > 0


REFUSED = [   # what the shell user sees after "hfq: error: --where: "
    ("__import__('os').system('touch PWNED')", "unsupported SQL: DOT (line 1, column 1)"),
    ("__import__('os')", "unsupported SQL: function __import__() (line 1, column 1)"),
    ("px > 0", "unknown column 'px'; columns: symbol, date, time, bid, ofr, bidsiz, ofrsiz, "
               "mode, ex, mmid (line 1, column 1)"),
    ("bid >", "SQL syntax error: Required keyword: 'expression' missing for"),
    ("bid > 0 AND", "(line 1, column 11)"),
    ("1; DROP TABLE quotes", "SQL syntax error: Invalid expression / Unexpected token (line 1"),
    ("symbol = 'x'; DROP TABLE quotes; --", "SQL syntax error: Invalid expression"),
    ("bid > 0 UNION SELECT * FROM quotes", "SQL syntax error: Invalid expression"),
    ("bid > (SELECT max(bid) FROM quotes)", "a subquery is not allowed in a row filter"),
    ("EXISTS (SELECT 1)", "EXISTS (a subquery) is not allowed in a row filter"),
    ("sum(bid) > 0", "an aggregate is not allowed in a row filter"),
    ("row_number() OVER () > 1", "a window function (OVER ...) is not allowed in a row filter"),
    ("read_csv('/etc/passwd') IS NULL", "unsupported SQL: function read_csv()"),
    ("bid + 1", "a row filter needs a boolean condition, not bid + 1 (a number) (line 1, "
                "column 1)"),
    ("symbol > 3", "type mismatch in 'symbol > 3': symbol is text, 3 is a number"),
    ("10 < bid <= 30", "type mismatch in '10 < bid <= 30'"),
    ("date > '2007-13-01'", "'2007-13-01' is not a valid DATE literal"),
    ("symbol = ‘IBM’", "unknown column '‘IBM’'"),   # typographic quotes: a name, not a string
    ("bid[0] > 1", "unsupported SQL: BRACKET"),
    ("$1 > 0", "unsupported SQL: PLACEHOLDER"),
    ("", "SQL syntax error: the filter is empty"),
    ("'", "SQL syntax error: Error tokenizing"),
    ("(" * 60 + "bid > 0" + ")" * 60, "the filter nests too deeply to compile"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED, ids=[r[0][:40] for r in REFUSED])
def test_where_errors_are_one_line_with_exit_status_2(shared: str, text: str, message: str,
                                                     tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "--root", shared, "scan", "quotes", "--where", text)
    assert (code, out) == (2, "")
    line = one_error_line(err)
    assert line.startswith("hfq: error: --where: ") and message in line, line
    assert not (tmp_path / "PWNED").exists()


def test_where_errors_are_the_sql_compilers(shared: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """One filter language: the same message from hfq sql's WHERE as from --where."""
    code, _, err = cli(capsys, "--root", shared, "sql", "SELECT * FROM quotes WHERE px > 0")
    sql_line = one_error_line(err)
    code, _, err = cli(capsys, "--root", shared, "scan", "quotes", "--where", "px > 0")
    where_line = one_error_line(err)
    assert sql_line.split("(line")[0].removeprefix("hfq: error: ") == \
        where_line.split("(line")[0].removeprefix("hfq: error: --where: ")
    # an error met while reading rows (not at compile time) is one line too, exit status 1
    code, out, err = cli(capsys, "--root", shared, "scan", "quotes", "--where",
                         "bidsiz % 0 = 1")
    assert code == 1 and "division by zero in bidsiz % 0" in one_error_line(err)


# -- maintenance commands -----------------------------------------------------------------------
def test_compact_verify_vacuum_and_time_travel(own: str, capsys: pytest.CaptureFixture[str]
                                               ) -> None:
    before = hfq.connect(own)["quotes"]
    files_before = int(before.partitions()["files"].sum())
    rows_before = before.to_polars().sort(pl.all()).rows()
    result = cli_json(capsys, "--root", own, "compact", "quotes")
    after = hfq.connect(own)["quotes"]
    assert result["version_before"] == 2 and result["version"] == after.version == 3
    assert result["files_before"] == files_before > result["files"] == after.partitions().height
    assert after.to_polars().sort(pl.all()).rows() == rows_before
    code, out, _ = cli(capsys, "--root", own, "compact", "quotes")
    assert code == 0 and "one file already (version 3)" in out

    checked = cli_json(capsys, "--root", own, "verify", "quotes")
    assert checked == {"table": "quotes", "version": 3, "files_checked": result["files"],
                       "ok": True, "unreachable": []}
    code, out, _ = cli(capsys, "verify", "quotes", "--root", own)
    assert out == f"{result['files']} files match their checksums (quotes version 3)\n"

    vacuumed = cli_json(capsys, "--root", own, "vacuum", "quotes", "--keep-versions", "1")
    assert set(vacuumed) == {"table", "version", "files_removed", "versions_forgotten",
                             "unreachable"}
    code, out, _ = cli(capsys, "--root", own, "vacuum", "quotes")
    assert code == 0 and out.startswith("vacuumed quotes: files removed ")

    # the version before the nulls were appended, still on record
    old = cli_json(capsys, "--root", own, "scan", "quotes", "--at-version", "1", "--limit", "0")
    assert (old["version"], old["rows"], old["head"]) == (1, 4000, [])


def test_maintenance_names_the_nodes_it_counted_as_down(shared: str,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """What rebalance / repair / verify / vacuum / check say when a node did not answer
    (the calls themselves are tested on a cluster: tests/faults/test_nodes.py)."""
    down = ["node-b", "node-c"]
    monkeypatch.setattr(hfq.Database, "rebalance", lambda self, tables=None: maintenance.Counts(
        {"quotes": 3}, unreachable=down))
    monkeypatch.setattr(hfq.Database, "repair", lambda self, tables=None: maintenance.Rows(
        unreachable=down))
    monkeypatch.setattr(hfq.Database, "check", lambda self, repair=False: maintenance.Rows(
        unreachable=down[:1]))
    monkeypatch.setattr(hfq.Table, "verify", lambda self: maintenance.Checked(
        8, unreachable=down))
    monkeypatch.setattr(hfq.Table, "vacuum", lambda self, keep_versions=None: maintenance.Counts(
        {"files_removed": 1, "versions_forgotten": 0}, unreachable=down))
    line = "counted as down (no answer to a ping, or gone): hfq nodes node-b, node-c; "
    assert cli(capsys, "--root", shared, "rebalance", "quotes") == (
        0, f"quotes: 3 files moved\n{line}their copies were re-created on the others\n", "")
    assert cli_json(capsys, "--root", shared, "rebalance") == {"moved": {"quotes": 3},
                                                               "unreachable": down}
    assert cli(capsys, "--root", shared, "repair") == (
        0, f"every copy on the live nodes matches its checksum\n{line}their copies were not "
           "checked\n", "")
    assert cli_json(capsys, "--root", shared, "repair")["unreachable"] == down
    code, out, _ = cli(capsys, "--root", shared, "check")
    assert code == 0 and out.endswith("counted as down (no answer to a ping, or gone): hfq "
                                      "node node-b; their copies of the catalog were not used\n")
    assert cli_json(capsys, "--root", shared, "check") == {"ok": True, "problems": [],
                                                           "unreachable": ["node-b"]}
    code, out, _ = cli(capsys, "--root", shared, "verify", "quotes")
    assert out.splitlines()[1] == line + "their copies were not checked"
    assert cli_json(capsys, "--root", shared, "verify", "quotes")["unreachable"] == down
    code, out, _ = cli(capsys, "--root", shared, "vacuum", "quotes")
    assert out.splitlines()[1] == line + "their files were left as they are"
    assert cli_json(capsys, "--root", shared, "vacuum", "quotes")["unreachable"] == down
    code, _, err = cli(capsys, "--root", shared, "rebalance", "nosuch")
    assert code == 1 and "no table 'nosuch'" in one_error_line(err)


def test_json_stdout_holds_the_json_only(shared: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever else prints on stdout while a --json command runs -- Ray's log thread telling
    that a node was marked dead (seen in a cluster test under load), a library -- goes to
    stderr."""
    import threading

    real = hfq.Table.verify

    def noisy(self: hfq.Table) -> Any:
        thread = threading.Thread(target=print, args=("(raylet) node marked dead",))
        thread.start()
        thread.join()
        print("a library's own line")
        return real(self)

    monkeypatch.setattr(hfq.Table, "verify", noisy)
    code, out, err = cli(capsys, "--root", shared, "verify", "quotes", "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    assert err.splitlines() == ["(raylet) node marked dead", "a library's own line"]
    code, out, err = cli(capsys, "--root", shared, "verify", "quotes")   # text: as it was
    assert out.splitlines()[:2] == ["(raylet) node marked dead", "a library's own line"]
    print("after")   # stdout is stdout again
    assert capsys.readouterr().out == "after\n"


def test_a_command_closes_the_ray_connection_it_opened(shared: str,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """...so that Ray's log lines end with the command (one came after the JSON of hfq repair
    --json in test_nodes under load), and never one the caller had open."""
    import types

    calls: list[str] = []
    ray = types.SimpleNamespace(up=False)
    ray.is_initialized = lambda: ray.up
    ray.shutdown = lambda: calls.append("shutdown")
    monkeypatch.setitem(sys.modules, "ray", ray)
    real = hfq.Table.verify

    def connecting(self: hfq.Table) -> Any:
        ray.up = True   # as hfq.connect(address=...) does
        return real(self)

    monkeypatch.setattr(hfq.Table, "verify", connecting)
    assert cli(capsys, "--root", shared, "verify", "quotes", "--json")[0] == 0
    assert calls == ["shutdown"]
    assert cli(capsys, "--root", shared, "verify", "quotes")[0] == 0   # it was open before
    assert calls == ["shutdown"]


def test_drop(own: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "drop", "quotes", "--root", own)
    assert (code, out, err) == (0, "dropped quotes\n", "")
    assert hfq.connect(own).tables() == []
    code, out, err = cli(capsys, "drop", "quotes", "--root", own)
    assert code == 1 and out == ""
    assert one_error_line(err) == f"hfq: error: no table 'quotes' in {own} (tables: none)"
    assert cli_json(capsys, "--root", own, "tables") == []


# -- the demo -----------------------------------------------------------------------------------
def test_demo_writes_outside_the_current_directory_by_default(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    from hfq.demo import default_demo_dir
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HFQ_DEMO_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_demo_dir() == str(tmp_path / "home" / ".cache" / "hfq" / "demo")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_demo_dir() == str(tmp_path / "xdg" / "hfq" / "demo")
    monkeypatch.setenv("HFQ_DEMO_DIR", "elsewhere")
    assert default_demo_dir() == str(tmp_path / "elsewhere")


def test_demo_runs_small(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hfq.demo import run_demo
    workdir = tmp_path / "demo"
    workdir.mkdir()
    (workdir / "notes.txt").write_text("mine")   # not the demo's: left alone
    result = run_demo(str(workdir), days=2, rows_per_day=20_000, symbols=100)
    assert result["rows"] == 40_000 and result["day_rows"] == 20_000
    assert 0 < result["point_rows"] < 20_000
    out = capsys.readouterr().out
    assert "pickle.load" in out and "OLS of" in out
    # the analytics ran: a PNG of the spread curve, bars written back, a fitted slope
    with open(result["spread_png"], "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert result["bars"] > 0 and set(result["ols_coef"]) == {"intercept", "quote_size"}
    # where and how much, said at the end
    assert result["workdir"] == str(workdir)
    size = sum(f.stat().st_size for f in workdir.rglob("*") if f.is_file())
    assert result["workdir_bytes"] == size - len("mine")
    assert f"9. the demo's files: {workdir} ({(size - 4) / 1e6:,.1f} MB: csv/ " in out
    # the next day's ticks published live into quotes (every row: the demo is small): the
    # subscriber got every IBM row once, SQL read the files' days and the live one together,
    # and the write-down moved exactly what was published
    assert result["live_rows"] == 20_000 and result["live_rows_per_s"] > 0
    assert result["live_ibm"] == result["live_ibm_sql"] > 0
    assert result["live_days"] == 3 and result["live_sql_rows"] == 40_000 + 20_000
    assert result["live_written_down"] == result["live_after_rows"] == 20_000
    assert result["live_bars"] > 0 and result["live_bar_ticks"] == 20_000
    assert "(live): 20,000" in out
    assert "rm -rf" not in out and (workdir / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in workdir.iterdir()) == sorted(
        ["csv", "db", "day.pkl", "spread_by_minute.png", "notes.txt"])


def test_messages_people_see(db: hfq.Database, quotes: hfq.Table) -> None:
    with pytest.raises(hfq.errors.SchemaMismatchError,
                       match=r"no column 'price'; the columns are symbol, date, time, bid"):
        quotes.scan(columns=["price"])
    with pytest.raises(hfq.errors.SchemaMismatchError,
                       match=r"where= uses column 'px', which table 'quotes' does not have"):
        quotes.scan(where=pl.col("px") > 1)
    with pytest.raises(hfq.errors.ArgumentError, match="where=: a polars expression"):
        quotes.scan(where="bid > 0")   # type: ignore[arg-type]
    with pytest.raises(ValueError, match="the first date is after the second"):
        quotes.scan(dates=("2007-08-02", "2007-08-01"))
    with pytest.raises(ValueError, match="is not a date"):
        quotes.scan(dates="yesterday")
    with pytest.raises(hfq.errors.InvalidNameError, match="partition column 'day' is not in"):
        db.create_table("x", hfq.schemas.TAQ, partition_by=hfq.Value("day"))
    with pytest.raises(hfq.errors.SchemaMismatchError, match="cannot append a str"):
        quotes.append("quotes.csv")
    with pytest.raises(TypeError, match="unknown settings"):
        hfq.connect(str(db.session.store.root), compresion="lz4")


# -- hfq quality (H7) --------------------------------------------------------------------------
def test_quality_through_the_real_entry_point(shared: str, tmp_path: Path) -> None:
    """``hfq quality`` as typed in a shell: the summary, --json equal to the Python API's
    report, --all with every symbol-day, --png; no Ray is started for an embedded root."""
    t = hfq.connect(shared)["quotes"]
    want = t.quality()
    assert want.by_symbol_day["missing_price"].sum() == 6   # make_quotes' rows of null bids
    done = shell("quality", "quotes", "--root", shared)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == want.headline()
    summary = want.summary()
    for r in summary.iter_rows(named=True):
        line = next(x for x in lines if x.split()[:1] == [r["check"]])
        assert f"{r['count']:,}" in line.split() and r["rule"] in line
    assert lines[-1] == "every symbol-day: hfq quality quotes --all"
    png = tmp_path / "q.png"
    done = shell("--json", "quality", "quotes", "--all", "--png", str(png), "--root", shared)
    assert done.returncode == 0 and done.stderr == f"wrote {png}\n"
    got = json.loads(done.stdout)
    assert got["summary"] == json.loads(json.dumps(summary.to_dicts()))
    assert got["rows"] == len(t) and got["on_nodes"] is True
    assert got["symbol_days"] == json.loads(pl.DataFrame(want.by_symbol_day).with_columns(
        pl.col("date").cast(pl.String)).write_json())
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_quality_options_and_errors(shared: str, capsys: pytest.CaptureFixture[str]) -> None:
    t = hfq.connect(shared)["quotes"]
    got = cli_json(capsys, "quality", "quotes", "--root", shared, "--dates", DAYS[1],
                   "--symbols", "IBM,MSFT", "--session", "9:45-15:30", "--max-ratio", "1.1",
                   "--jump-k", "5")
    want = t.quality(DAYS[1], ["IBM", "MSFT"], session=("09:45", "15:30"), max_ratio=1.1,
                     jump_k=5)
    assert got["summary"] == json.loads(json.dumps(want.summary().to_dicts()))
    assert got["rules"]["session"] == ["09:45:00", "15:30:00"] and got["symbol_days"] == 2
    code, out, _ = cli(capsys, "quality", "quotes", "--root", shared, "--all")
    every = t.quality().by_symbol_day   # headline, blank, header, rule, one line each
    assert code == 0 and len(out.splitlines()) == 4 + every.height
    assert [line.split()[:2] for line in out.splitlines()[4:]] == [
        [s, str(d)] for s, d in every.select("symbol", "date").iter_rows()]
    code, _, err = cli(capsys, "quality", "quotes", "--root", shared, "--session", "16:00-9:30")
    assert code == 2 and "the session must start before it ends" in one_error_line(err)
    code, _, err = cli(capsys, "quality", "quotes", "--root", shared, "--max-ratio", "0.5")
    assert code == 1 and "max_ratio must be a number above 1" in one_error_line(err)
    code, _, err = cli(capsys, "quality", "nope", "--root", shared)
    assert code == 1 and "no table 'nope'" in one_error_line(err)


# -- hfq sql (H1, hfq.engine) -------------------------------------------------------------------
def test_sql_command_text_json_csv_and_one_line_errors(capsys: pytest.CaptureFixture[str],
                                                       shared: str, tmp_path: Path) -> None:
    text = "SELECT symbol, count(*) AS n FROM quotes GROUP BY symbol ORDER BY symbol"
    want = hfq.connect(shared).sql(text).collect()   # the same engine: the CLI's output
    code, out, _ = cli(capsys, "sql", text, "--root", shared)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["symbol", "n"]
    shown = min(want.height, 20)   # --limit's default
    assert [ln.split() for ln in lines[2:2 + shown]] == \
        [[s, str(n)] for s, n in want.head(shown).iter_rows()]
    got = cli_json(capsys, "sql", text, "--root", shared)
    assert got["rows"] == want.height and got["head"] == want.head(20).to_dicts()
    code, out, _ = cli(capsys, "sql", text, "--root", shared, "--out", str(tmp_path / "a.csv"))
    assert code == 0 and pl.read_csv(tmp_path / "a.csv")["n"].to_list() == want["n"].to_list()
    code, out, _ = cli(capsys, "sql", text, "--root", shared, "--explain")
    assert code == 0 and "node stage" in out and "driver stage" in out
    code, _, err = cli(capsys, "sql", "SELECT nope FROM quotes", "--root", shared)
    assert code == 1 and one_error_line(err).endswith("(line 1, column 8)")
    assert "unknown column 'nope'" in err
