"""The conformance corpus (issue 24): ``tests/sql/*.test`` in DuckDB's sqllogictest format,
written for hfq -- every row of ``docs/sql.md`` with NULL/NaN/edge inputs -- run on hfq and on
DuckDB over the same rows.  Each record is one test, named ``file:line``.

Format (DuckDB's sqllogictest, with a setup block of hfq's own)::

    # a comment
    table t partition_by=date,sym/2 sort_by=sym,time
    id LONG, date DATE, sym SYMBOL, x DOUBLE
    (1, DATE '2024-01-05', 'A', 1.5)
    (2, DATE '2024-01-05', 'B', CAST('NaN' AS DOUBLE))
    append
    (3, DATE '2024-01-06', 'A', NULL)

    query IRT rowsort
    SELECT id, x, sym FROM t WHERE x > 0
    ----
    1	1.5	A

    statement error
    SELECT * FROM t TABLESAMPLE 10%
    ----
    TABLESAMPLE

* **Setup** (``table``): hfq's SQL reads only, so a table is made through the Python API.  The
  line names the table, its partitioning (``partition_by=`` ``date`` for ``hfq.Value("date")``,
  ``sym/2`` for ``hfq.Hash("sym", 2)``, both joined by ``,`` for ``hfq.Compo``) and its sort
  columns; the next line its columns with hfq types (``hfq.schema.TYPES``); then one row per
  line as a SQL tuple of literals (evaluated by DuckDB, so ``CAST('NaN' AS DOUBLE)``,
  ``TIMESTAMPTZ '...'``, unicode strings work), ``append`` between rows cutting the appends
  (each append is one table version, readable with ``AT (VERSION => n)``).  A blank line ends the
  block.  DuckDB gets the rows hfq then holds, as the fuzzer's oracle does
  (``tests/fuzz/sqlfuzz/data.py``: SHORT/INT as BIGINT, FLOAT as DOUBLE, each version as
  ``<table>_v<n>``).
* **query** ``<types> [rowsort|nosort]`` + SQL + ``----`` + expected rows: hfq's answer must
  equal DuckDB's, computed now on the same rows, under the fuzzer's comparison
  (``tests/fuzz/sqlfuzz/compare.py``; ``rowsort`` compares multisets, otherwise in order).
  The types (``I`` integer, ``R`` float, ``T`` anything else) and rows after ``----`` are
  DuckDB's answer written by ``python tests/sql/test_corpus.py --rewrite`` -- never by hand --
  and checked again at test time, so the file shows what the answers are and a DuckDB that
  changes its mind fails loudly.  Rows are tab-separated; ``NULL``, ``NaN``, ``inf``,
  ``(empty)`` for an empty string, ISO dates and times.
* A comment ``# xfail F27`` right before a record marks it ``xfail(strict=True)`` until the
  finding (``/work/notes/sql-findings.md``) is fixed.
* **statement error** + SQL + ``----`` + text: hfq must refuse (or fail) with an
  :class:`~hfq.errors.HfqError` whose message contains the text; DuckDB is not consulted (it
  may answer: these are the constructs hfq refuses by name, or errors both raise).
"""

from __future__ import annotations

import datetime as dt
import math
import pathlib
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fuzz"))

import duckdb  # noqa: E402
import pyarrow as pa  # noqa: E402
from sqlfuzz.campaign import duckdb_connections  # noqa: E402
from sqlfuzz.compare import Answer, differ  # noqa: E402
from sqlfuzz.data import register_hfq_table  # noqa: E402
from sqlfuzz.differential import run_duckdb, run_hfq  # noqa: E402

import hfq  # noqa: E402
from hfq import schema  # noqa: E402
from hfq.engine import ops, runagg  # noqa: E402
from hfq.errors import HfqError  # noqa: E402

_DUCK_TYPE = {"DOUBLE": "DOUBLE", "FLOAT": "FLOAT", "INT": "INTEGER", "LONG": "BIGINT",
              "SHORT": "SMALLINT", "SYMBOL": "VARCHAR", "CHAR": "VARCHAR", "STRING": "VARCHAR",
              "DATE": "DATE", "SECOND": "TIME", "TIME": "TIME", "TIMESTAMP": "TIMESTAMP_NS",
              "DATETIME": "TIMESTAMPTZ", "BOOL": "BOOLEAN"}


@dataclass
class Table:
    name: str
    partition_by: str
    sort_by: tuple[str, ...]
    columns: list[tuple[str, str]]
    chunks: list[list[str]] = field(default_factory=lambda: [[]])


@dataclass
class Record:
    file: str
    line: int
    kind: str             # "query" or "error"
    sql: str
    types: str = ""
    sort: str = ""        # "rowsort" or "" (in order)
    expected: list[str] = field(default_factory=list)
    header: int = 0       # the line of the record's first line (for --rewrite)
    xfail: str = ""       # an open finding (``# xfail F27`` on the line before the record)


@dataclass
class Corpus:
    path: pathlib.Path
    tables: list[Table]
    records: list[Record]


def parse(path: pathlib.Path) -> Corpus:
    lines = path.read_text().splitlines()
    tables: list[Table] = []
    records: list[Record] = []
    i = 0
    xfail = ""
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("# xfail "):
            xfail = line[len("# xfail "):]
        if not line or line.startswith("#"):
            i += 1
            continue
        if line.startswith("table "):
            words = line.split()
            opts = dict(w.split("=", 1) for w in words[2:])
            cols = [tuple(c.strip().split()) for c in lines[i + 1].split(",")]
            table = Table(words[1], opts.get("partition_by", "date"),
                          tuple(c for c in opts.get("sort_by", "").split(",") if c),
                          [(c[0], c[1].upper()) for c in cols])
            i += 2
            while i < len(lines) and lines[i].strip():
                row = lines[i].strip()
                if row == "append":
                    table.chunks.append([])
                elif not row.startswith("#"):
                    table.chunks[-1].append(row)
                i += 1
            tables.append(table)
            continue
        if line.startswith("query ") or line.startswith("statement error"):
            start = i
            words = line.split()
            kind = "query" if words[0] == "query" else "error"
            sql_lines = []
            i += 1
            while i < len(lines) and lines[i].strip() not in ("----", ""):
                sql_lines.append(lines[i])
                i += 1
            expected = []
            if i < len(lines) and lines[i].strip() == "----":
                i += 1
                while i < len(lines) and lines[i] != "":
                    expected.append(lines[i])
                    i += 1
            records.append(Record(path.name, start + 1, kind, "\n".join(sql_lines),
                                  types=words[1] if kind == "query" and len(words) > 1 else "",
                                  sort=words[2] if kind == "query" and len(words) > 2 else "",
                                  expected=expected, header=start, xfail=xfail))
            xfail = ""
            continue
        raise ValueError(f"{path.name}:{i + 1}: cannot read {line!r}")
    return Corpus(path, tables, records)


def _scheme(text: str) -> Any:
    levels = []
    for part in text.split(","):
        if "/" in part:
            col, n = part.split("/")
            levels.append(hfq.Hash(col, int(n)))
        else:
            levels.append(hfq.Value(part))
    return levels[0] if len(levels) == 1 else hfq.Compo(*levels)


def _rows(con: duckdb.DuckDBPyConnection, table: Table, rows: list[str]) -> pa.Table:
    """The literal rows, evaluated by DuckDB and cast to the table's types, as Arrow."""
    names = ", ".join(n for n, _ in table.columns)
    casts = ", ".join(f"CAST({n} AS {_DUCK_TYPE[t]}) AS {n}" for n, t in table.columns)
    if rows:
        source = f"(VALUES {', '.join(rows)}) AS v({names})"
    else:
        source = "(SELECT " + ", ".join(f"NULL AS {n}" for n, _ in table.columns) + \
            ") AS v WHERE FALSE"
    data = con.sql(f"SELECT {casts} FROM {source}").to_arrow_table()
    cols = []
    for (_, t), col in zip(table.columns, data.columns):
        if pa.types.is_dictionary(schema.TYPES[t].arrow):
            col = col.cast(pa.string())
        cols.append(col)
    return pa.Table.from_arrays(cols, names=[n for n, _ in table.columns])


class _Setup:
    """The tables of one corpus file in hfq (``db``) and DuckDB (``con``)."""

    def __init__(self, corpus: Corpus, root: pathlib.Path) -> None:
        self.db = hfq.connect(str(root))
        self.con = duckdb_connections(1)[0]
        scratch = duckdb_connections(1)[0]
        for table in corpus.tables:
            sch = schema.Schema([(n, schema.TYPES[t]) for n, t in table.columns])
            t = self.db.create_table(table.name, sch, partition_by=_scheme(table.partition_by),
                                     sort_by=table.sort_by)
            for chunk in table.chunks:
                if chunk:
                    t.append(_rows(scratch, table, chunk))

            register_hfq_table(self.con, self.db, table.name,
                               versions=sum(1 for c in table.chunks if c))


# -- answers as text (the expected rows) ---------------------------------------------------------
def _cell(v: Any, kind: str) -> str:
    if v is None:
        return "NULL"
    if kind == "float":
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(float(v))
    if kind == "date":
        return (dt.date(1970, 1, 1) + dt.timedelta(days=v)).isoformat()
    if kind == "time":
        return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v // 1000)).time() \
            .isoformat()
    if kind == "timestamp":
        return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v // 1000)).isoformat(" ")
    if isinstance(v, str):
        return "(empty)" if v == "" else v.replace("\t", "\\t").replace("\n", "\\n")
    return str(v)


def render(ans: Answer, *, sort: bool) -> tuple[str, list[str]]:
    types = "".join("I" if k == "int" else "R" if k == "float" else "T" for k in ans.kinds)
    rows = ["\t".join(_cell(v, k) for v, k in zip(row, ans.kinds)) for row in ans.rows]
    return types, sorted(rows) if sort else rows


# -- collection and the test ---------------------------------------------------------------------
CORPORA = [parse(p) for p in sorted(HERE.glob("*.test"))]
RECORDS = [(c, r) for c in CORPORA for r in c.records]
_setups: dict[str, _Setup] = {}


@pytest.fixture
def setup_of(tmp_path_factory):
    def get(corpus: Corpus) -> _Setup:
        if corpus.path.name not in _setups:
            _setups[corpus.path.name] = _Setup(corpus, tmp_path_factory.mktemp(
                corpus.path.stem) / "db")
        return _setups[corpus.path.name]
    return get


def _param(corpus: Corpus, record: Record) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=f"open finding {record.xfail}")] \
        if record.xfail else []
    return pytest.param(corpus, record, id=f"{record.file}:{record.line}", marks=marks)


@pytest.mark.parametrize("corpus,record", [_param(c, r) for c, r in RECORDS])
def test_record(corpus: Corpus, record: Record, setup_of, monkeypatch) -> None:
    setup = setup_of(corpus)
    where = f"{record.file}:{record.line}"
    got = run_hfq(setup.db, record.sql)
    if record.kind == "error":
        assert isinstance(got, HfqError), f"{where}: hfq answered instead of refusing: {got}"
        text = "\n".join(record.expected)
        assert text in str(got), f"{where}: hfq's error {str(got)!r} does not say {text!r}"
        return
    want = run_duckdb(setup.con, record.sql)
    assert isinstance(want, Answer), f"{where}: DuckDB failed: {want}"
    assert isinstance(got, Answer), f"{where}: hfq raised {type(got).__name__}: {got}"
    why = differ(got, want, ordered=record.sort != "rowsort")
    assert why is None, f"{where}: {why}\n{record.sql}"
    if re.search(r"\bover\b", record.sql, re.IGNORECASE):
        # again as over a big table: the choices made only over many rows (windows read in
        # stored order) are made over these few too
        monkeypatch.setattr(ops, "SHARED_ROWS", 0)
        big = run_hfq(setup.db, record.sql)
        assert isinstance(big, Answer), f"{where}: hfq raised {type(big).__name__}: {big}" \
            " with SHARED_ROWS 0"
        why = differ(big, want, ordered=record.sort != "rowsort")
        assert why is None, f"{where}: with SHARED_ROWS 0: {why}\n{record.sql}"
    if re.search(r"\bgroup\s+by\b", record.sql, re.IGNORECASE):
        # again with every grouping whose keys lie in runs computed over its runs (the
        # engine does so from RUN_ROWS rows, in runs of RUN_SHARE rows or more, of at most
        # MAX_INPUTS inputs)
        monkeypatch.setattr(ops, "RUN_ROWS", 0)
        monkeypatch.setattr(runagg, "RUN_SHARE", 1)
        monkeypatch.setattr(runagg, "MAX_INPUTS", 100)
        runs = run_hfq(setup.db, record.sql)
        assert isinstance(runs, Answer), f"{where}: hfq raised {type(runs).__name__}: " \
            f"{runs} with RUN_ROWS 0"
        why = differ(runs, want, ordered=record.sort != "rowsort")
        assert why is None, f"{where}: with RUN_ROWS 0: {why}\n{record.sql}"
    types, rows = render(want, sort=record.sort == "rowsort")
    assert (types, rows) == (record.types, record.expected), \
        f"{where}: the recorded answer is not DuckDB's now ({types}: {rows}); " \
        "rerun `python tests/sql/test_corpus.py --rewrite`"


def rewrite() -> None:
    """Write DuckDB's answer (types and rows) into every query record, and check that every
    ``statement error`` record is refused by hfq."""
    import tempfile
    for corpus in CORPORA:
        setup = _Setup(corpus, pathlib.Path(tempfile.mkdtemp()) / "db")
        lines = corpus.path.read_text().splitlines()
        for record in reversed(corpus.records):
            if record.kind != "query":
                continue
            want = run_duckdb(setup.con, record.sql)
            if not isinstance(want, Answer):
                raise SystemExit(f"{record.file}:{record.line}: DuckDB failed: {want}")
            types, rows = render(want, sort=record.sort == "rowsort")
            head = lines[record.header].split()
            head[1] = types
            n_sql = len(record.sql.splitlines())
            start = record.header + 1 + n_sql   # the "----" line, if any
            end = start
            if end < len(lines) and lines[end].strip() == "----":
                end += 1
                while end < len(lines) and lines[end] != "":
                    end += 1
            lines[record.header] = " ".join(head)
            lines[start:end] = ["----", *rows]
        corpus.path.write_text("\n".join(lines) + "\n")
        print(f"rewrote {corpus.path.name}: {len(corpus.records)} records")


if __name__ == "__main__":
    if sys.argv[1:] == ["--rewrite"]:
        rewrite()
    else:
        raise SystemExit("usage: python tests/sql/test_corpus.py --rewrite")
