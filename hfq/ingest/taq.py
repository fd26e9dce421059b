"""Loading NYSE Daily TAQ files (2026 format): ``EQY_US_ALL_BBO_YYYYMMDD`` (quotes) and
``EQY_US_ALL_TRADE_YYYYMMDD`` (trades) into tables of :data:`hfq.schema.NYSE_QUOTES` /
:data:`~hfq.schema.NYSE_TRADES`.

The files are pipe-separated with a header line naming the columns and end with a trailer
``END|YYYYMMDD|<records>|...``, whose record count is checked.  Times are ``HHMMSS`` followed
by 9 digits of nanoseconds (15 characters; the participant and FINRA/TRF timestamps too, empty
when absent).  The day comes from the file name, or from ``date=``.  Columns of the file the
schema does not keep are skipped; a column the schema needs and the header lacks is an error.
Files may be compressed (``.gz``, ``.bz2``, ``.zst``: by extension).

Reading streams: pyarrow parses blocks of ``block_bytes`` and each block is converted and
handed to the table's writer before the next one is read, so memory holds a few blocks, not the
file; the whole file (all files) is one atomic commit.  Any problem is a
:class:`~hfq.errors.CsvError` naming the file, line and column.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from hfq.errors import CsvError, SchemaMismatchError
from hfq.schema import NYSE_QUOTES, NYSE_TRADES, Schema
from hfq.write import Write, merge_small_fragments

if TYPE_CHECKING:
    from hfq.session import TableLike

__all__ = ["TaqReport", "load_taq", "read_taq"]

_NS = 1_000_000_000
_NAME = re.compile(r"EQY_US_ALL_(BBO|TRADE)(?:_[A-Z])?_(\d{8})")

# file column -> (schema column, how): "time" 15-digit stamps, "char"/"sym" text, else numbers
_BBO = {"Time": ("time", "time"), "Exchange": ("ex", "char"), "Symbol": ("symbol", "sym"),
        "Bid_Price": ("bid", pa.float64()), "Bid_Size": ("bidsiz", pa.int32()),
        "Offer_Price": ("ofr", pa.float64()), "Offer_Size": ("ofrsiz", pa.int32()),
        "Quote_Condition": ("cond", "char"), "Sequence_Number": ("seq", pa.int64()),
        "National_BBO_Ind": ("nbbo_ind", "char"),
        "FINRA_BBO_Indicator": ("finra_bbo_ind", "char"),
        "Short_Sale_Restriction_Indicator": ("ssr", "char"),
        "Participant_Timestamp": ("participant_time", "time"),
        "FINRA_ADF_Timestamp": ("finra_adf_time", "time")}
_TRADE = {"Time": ("time", "time"), "Exchange": ("ex", "char"), "Symbol": ("symbol", "sym"),
          "Sale_Condition": ("cond", "sym"), "Trade_Volume": ("size", pa.int32()),
          "Trade_Price": ("price", pa.float64()),
          "Trade_Stop_Stock_Indicator": ("stop", "char"),
          "Trade_Correction_Indicator": ("corr", pa.int16()),
          "Sequence_Number": ("seq", pa.int64()), "Trade_Id": ("trade_id", pa.int64()),
          "Source_of_Trade": ("source", "char"),
          "Trade_Reporting_Facility": ("trf", "char"),
          "Participant_Timestamp": ("participant_time", "time"),
          "Trade_Reporting_Facility_TRF_Timestamp": ("trf_time", "time")}
KINDS: dict[str, tuple[Schema, dict[str, tuple[str, Any]]]] = {
    "BBO": (NYSE_QUOTES, _BBO), "TRADE": (NYSE_TRADES, _TRADE)}


@dataclass(frozen=True)
class TaqReport:
    """What :func:`load_taq` loaded."""

    files: int
    rows: int
    bytes: int
    seconds: float
    version: int

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else float("inf")


def load_taq(table: TableLike, paths: str | Iterable[str], *, date: str | dt.date | None = None,
             block_bytes: int = 16 << 20) -> TaqReport:
    """Load NYSE Daily TAQ files into ``table`` (NYSE_QUOTES for BBO files, NYSE_TRADES for
    trade files) as one commit; ``date``: the trading day when the file names do not say it.

    Examples
    --------
    >>> from hfq.ingest.taq_synth import nyse_files
    >>> bbo, trade = nyse_files(tmp, quotes=3000, trades=400, seed=4)
    >>> db = hfq.connect(f"{tmp}/db")
    >>> quotes = db.create_table("quotes", hfq.schemas.NYSE_QUOTES, sort_by=("symbol", "time"),
    ...                          partition_by=hfq.Hash("symbol", 4))
    >>> report = load_taq(quotes, bbo)
    >>> report.rows, len(quotes), str(quotes.to_arrow()["time"].type)
    (3000, 3000, 'time64[ns]')
    """
    import time
    began = time.perf_counter()
    files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    schema = table.snapshot().schema
    kinds = {_kind(str(p)) for p in files}
    if len(kinds) != 1:
        raise CsvError(f"load_taq: load quote (BBO) and trade files separately, got {files}")
    want = KINDS[kinds.pop()][0]
    if schema != want:
        raise SchemaMismatchError(f"load_taq: table {table.name!r} has schema {schema}; "
                                  f"these files need {want}")
    rows = [0]

    def batches() -> Iterator[pa.RecordBatch]:
        for path in files:
            for batch in read_taq(str(path), date=date, block_bytes=block_bytes):
                rows[0] += batch.num_rows
                yield batch

    base = table.snapshot()
    with Write(table.session, base) as write, write.rows() as out:
        for batch in batches():
            out.write(base.schema.conform(pa.Table.from_batches([batch]),
                                          where=f"load_taq into {table.name!r}"))
        write.stage_all(out.flush())
        version = write.commit("load_taq").version
    merge_small_fragments(write)   # the table's compact_after policy
    size = sum(os.path.getsize(p) for p in files)
    return TaqReport(len(files), rows[0], size, time.perf_counter() - began, version)


def _kind(path: str) -> str:
    match = _NAME.search(os.path.basename(path))
    if not match:
        raise CsvError(f"{path}: not a NYSE Daily TAQ file name (EQY_US_ALL_BBO_YYYYMMDD or "
                       "EQY_US_ALL_TRADE_YYYYMMDD)")
    return match.group(1)


def read_taq(path: str, *, date: str | dt.date | None = None,
             block_bytes: int = 16 << 20) -> Iterator[pa.RecordBatch]:
    """The rows of one daily file as record batches of its table's schema, a block at a time
    (the trailer checked and dropped)."""
    kind = _kind(path)
    schema, columns = KINDS[kind]
    day = _day(path, date)
    bad: list[Any] = []

    def invalid(row: Any) -> str:
        bad.append(row)
        return "error"

    try:
        stream = pa.input_stream(path, compression="detect")
        header = _header(path)
    except OSError as exc:
        raise CsvError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    missing = [c for c in columns if c not in header]
    if missing:
        raise CsvError(f"{path}, line 1: the header lacks column(s) {', '.join(missing)}")
    types = {c: pa.string() if isinstance(how, str) else how
             for c, (_, how) in columns.items()}
    try:
        reader = pcsv.open_csv(
            stream, read_options=pcsv.ReadOptions(block_size=block_bytes, use_threads=True),
            parse_options=pcsv.ParseOptions(delimiter="|", quote_char=False,
                                            invalid_row_handler=invalid),
            convert_options=pcsv.ConvertOptions(column_types=types,
                                                 include_columns=list(columns),
                                                 strings_can_be_null=False))
    except pa.ArrowInvalid as exc:
        raise _error(path, exc, bad, header) from exc
    line = 1   # the header
    trailer: tuple[int, list[str]] | None = None
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except pa.ArrowInvalid as exc:
            raise _error(path, exc, bad, header) from exc
        if trailer is not None:
            raise CsvError(f"{path}, line {trailer[0]}: the END trailer is not the last line")
        times = batch.column(batch.schema.get_field_index("Time"))
        ends = pc.equal(times, "END")
        if pc.any(ends).as_py():
            at = int(pc.index(ends, True).as_py())
            if at != batch.num_rows - 1:
                raise CsvError(f"{path}, line {line + at + 1}: the END trailer is not the "
                               "last line")
            fields = [str(batch.column(batch.schema.get_field_index(c))[at].as_py() or "")
                      for c in ("Exchange", "Symbol")]
            trailer = (line + at + 1, fields)
            batch = batch.slice(0, at)
        yield _convert(batch, path, line, schema, columns, day)
        line += batch.num_rows
    if trailer is not None:
        count = trailer[1][1]
        if count.isdigit() and int(count) != line - 1:
            raise CsvError(f"{path}, line {trailer[0]}: the trailer counts {int(count):,} "
                           f"records, the file holds {line - 1:,}")


def _header(path: str) -> list[str]:
    with pa.input_stream(path, compression="detect") as f:
        first = f.read(1 << 16).split(b"\n")[0]
    return first.decode("utf-8", "replace").rstrip("\r").split("|")


def _day(path: str, date: str | dt.date | None) -> dt.date:
    if date is not None:
        return dt.date.fromisoformat(date) if isinstance(date, str) else date
    match = _NAME.search(os.path.basename(path))
    assert match is not None
    try:
        return dt.datetime.strptime(match.group(2), "%Y%m%d").date()
    except ValueError as exc:
        raise CsvError(f"{path}: the file name's date {match.group(2)} is no date; pass "
                       "date=") from exc


def _error(path: str, exc: Exception, bad: list[Any], header: list[str]) -> CsvError:
    """pyarrow's parse error with the file, line and column."""
    if bad:
        row = bad[0]
        where = f"line {row.number}" if row.number and row.number > 0 else "a line"
        return CsvError(f"{path}, {where}: {row.expected_columns} columns expected, "
                        f"{row.actual_columns} found: {row.text[:120]!r}")
    text = str(exc).splitlines()[0]
    match = re.search(r"column #(\d+): (?:Row #(\d+): )?(.*)", text)
    if not match:
        return CsvError(f"{path}: {text}")
    index = int(match.group(1))
    column = header[index] if index < len(header) else "?"
    line = match.group(2)
    value = re.search(r"invalid value '(.*)'$", match.group(3))
    if line is None and value is not None:   # the streaming reader does not say the row
        line = _line_of(path, index, value.group(1))
    return CsvError(f"{path}, line {line or '?'}, column {column}: {match.group(3)}")


def _line_of(path: str, index: int, value: str) -> int | None:
    """The first line whose field ``index`` is ``value`` (only on the error path)."""
    wanted = value.encode()
    with pa.input_stream(path, compression="detect") as f:
        rest = b""
        line = 0
        while True:
            chunk = f.read(1 << 20)
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop() if chunk else b""
            for text in lines:
                line += 1
                cells = text.rstrip(b"\r").split(b"|")
                if line > 1 and index < len(cells) and cells[index] == wanted:
                    return line
            if not chunk:
                return None


def _convert(batch: pa.RecordBatch, path: str, line: int, schema: Schema,
             columns: dict[str, tuple[str, Any]], day: dt.date) -> pa.RecordBatch:
    """One parsed block as a batch of ``schema`` (``line``: the file line before its first
    row)."""
    n = batch.num_rows
    out: dict[str, Any] = {"date": pa.array(np.full(n, (day - dt.date(1970, 1, 1)).days,
                                                    dtype=np.int32)).view(pa.date32())}
    for source, (name, how) in columns.items():
        column = batch.column(batch.schema.get_field_index(source))
        if how == "time":
            out[name] = _times(column, path, line, source, nullable=source != "Time")
        elif how in ("char", "sym"):
            if how == "char":
                long = pc.greater(pc.utf8_length(column), 1)
                if pc.any(long).as_py():
                    at = int(pc.index(long, True).as_py())
                    raise CsvError(f"{path}, line {line + at + 1}, column {source}: "
                                   f"{column[at].as_py()!r} is more than one character")
            out[name] = pc.dictionary_encode(column)
        else:
            if column.null_count and name in ("bid", "ofr", "price", "time"):
                at = int(pc.index(column.is_null(), True).as_py())
                raise CsvError(f"{path}, line {line + at + 1}, column {source}: empty")
            out[name] = column
    if pc.any(pc.equal(out["symbol"].dictionary, "")).as_py():
        empty = pc.equal(pc.cast(out["symbol"], pa.string()), "")
        at = int(pc.index(empty, True).as_py())
        raise CsvError(f"{path}, line {line + at + 1}, column Symbol: empty")
    if not n:
        return pa.RecordBatch.from_pylist([], schema=schema.arrow)
    table = schema.conform(pa.table({c: out[c] for c in schema.names}), where=path)
    return table.combine_chunks().to_batches()[0]


def _times(column: pa.Array, path: str, line: int, source: str, *, nullable: bool
           ) -> pa.Array:
    """``HHMMSS`` + 9 digits of nanoseconds as time64[ns] (empty: null when ``nullable``)."""
    empty = pc.equal(column, "")
    if pc.any(empty).as_py():
        if not nullable:
            at = int(pc.index(empty, True).as_py())
            raise CsvError(f"{path}, line {line + at + 1}, column {source}: empty")
        column = pc.if_else(empty, pa.scalar(None, pa.string()), column)
    shape = pc.match_substring_regex(column, r"^\d{15}$")
    if not pc.all(pc.fill_null(shape, True)).as_py():
        at = int(pc.index(pc.fill_null(shape, True), False).as_py())
        raise CsvError(f"{path}, line {line + at + 1}, column {source}: {column[at].as_py()!r}"
                       " is not a time HHMMSS + 9 digits of nanoseconds")
    valid = None if not column.null_count else \
        column.is_valid().to_numpy(zero_copy_only=False)
    value = pc.cast(pc.fill_null(column, "0" * 15), pa.int64()).to_numpy(zero_copy_only=False)
    hms, frac = np.divmod(value, _NS)
    h, ms = np.divmod(hms, 10_000)
    m, s = np.divmod(ms, 100)
    ok = (h < 24) & (m < 60) & (s < 60)
    if valid is not None:
        ok |= ~valid
    if not ok.all():
        at = int(np.argmin(ok))
        raise CsvError(f"{path}, line {line + at + 1}, column {source}: "
                       f"{column[at].as_py()!r} is not a time of day")
    ns = ((h * 3600 + m * 60 + s) * _NS + frac).astype(np.int64)
    return pa.array(ns, pa.int64(), mask=None if valid is None else ~valid).view(
        pa.time64("ns"))
