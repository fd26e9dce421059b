"""Streaming CSV ingest: bounded memory, parallel parsing, exact error locations, one commit.

Each file is read in blocks of ``csv_block_bytes`` cut at a line end; pyarrow parses a block with
all threads while the previous block is routed and buffered by the
:class:`~hfq.write.PartitionWriter`.  When a block does not parse, a slow exact pass over
its lines finds the bad line and column: with ``on_error="raise"`` (the default) the load stops
with a :class:`~hfq.errors.CsvError` naming ``file:line:column`` and nothing is committed; with
``on_error="skip"`` bad rows go to a reject file (file, line, column, reason, the row) and the
rest loads.  Assumes no line break inside a quoted field.
"""

from __future__ import annotations

import csv
import datetime as dt
import logging
import re
import sys
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from hfq import faults
from hfq.catalog.records import Manifest
from hfq.config import Settings
from hfq.errors import CsvError
from hfq.ingest.files import CsvFile, Ledger, expand, open_file
from hfq.ingest.parse import check_field, dates_of, invalid, times_of, timestamps_of
from hfq.runtime.nodes import Nodes
from hfq.runtime.task import NodeContext
from hfq.schema import Schema
from hfq.session import Session
from hfq.write import FileWriter, PartitionWriter, Write, merge_small_fragments

__all__ = ["LoadReport", "load_csv", "load_files"]

log = logging.getLogger(__name__)


@dataclass
class LoadReport:
    """What a load did."""

    table: str
    files: list[str]
    rows: int = 0
    bytes: int = 0
    seconds: float = 0.0
    version: int | None = None
    rejected: int = 0
    reject_path: str | None = None
    per_file: dict[str, int] = field(default_factory=dict)
    nodes: dict[str, list[str]] = field(default_factory=dict)
    """The files each node parsed."""

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0

    def __str__(self) -> str:
        text = (f"loaded {self.rows:,} rows ({self.bytes / 1e6:,.1f} MB of CSV, "
                f"{len(self.files)} files) into {self.table!r} in {self.seconds:.2f} s "
                f"({self.rows_per_s / 1e6:.2f} M rows/s), version {self.version}")
        if self.rejected:
            text += f"; {self.rejected} bad rows written to {self.reject_path}"
        return text


@dataclass
class _FileContext:
    reader: _BlockReader
    path: str
    schema: Schema
    names: list[str]
    read_types: dict[str, pa.DataType]
    delimiter: str
    nulls: frozenset[str]
    keys: frozenset[str]
    """Partition columns: an empty value there is refused, not null."""
    exact_ints: bool
    """Integer columns are read by Arrow, which takes ``0x10`` for 16: blocks holding
    ``0x``/``0X`` get the exact check."""
    text_nulls: bool = True
    """The ``nulls`` are null in text columns too (else text as it is)."""


def load_csv(session: Session, table: str, paths: str | Iterable[str], *,
             on_error: str = "raise", reject_path: str | None = None,
             progress: bool | None = None, sync: bool = False, duplicates: str = "raise",
             storage_options: dict[str, Any] | None = None, delimiter: str = ",",
             header: bool = True, null_values: Iterable[str] = ("",),
             empty_text: str = "null") -> LoadReport:
    """Load CSV files into ``table`` and commit them as one version (what
    :meth:`hfq.Database.load_csv` does).

    The paths and globs are expanded once, here; the files found -- with
    ``storage_options`` -- are what the nodes open.  On a cluster the files are shared out
    among the nodes (by size), each node parses its files and writes the partitions to the
    nodes that hold them, and the driver commits all of it as one version; the paths must be
    readable from every node (a shared disk or a URL).  Each file is read once: its SHA-256,
    for the table's ledger of loaded files, is computed as it is parsed (see
    :mod:`hfq.ingest.files`).  Any error (a bad value, a node dying) leaves the table as it
    was.

    Parameters
    ----------
    paths
        Paths, globs or fsspec URLs (``s3://bucket/taq_*.csv``); ``.gz``/``.zst`` decompress.
    on_error
        ``"raise"``: the first bad value stops the load, nothing is committed.
        ``"skip"``: bad rows go to ``reject_path`` and the rest is committed.
    duplicates
        A file whose content the table loaded already: ``"raise"`` (an error naming the
        version that loaded it), ``"append"`` (load it again) or ``"skip"`` (leave it out).
    storage_options
        fsspec options for the files (default: the database root's).
    header
        The first line names the columns (any order); without it, schema order.
    null_values
        Texts that mean null (default: the empty field), in every column.
    empty_text
        ``"null"`` (default): an empty field is null in text columns too (SYMBOL, CHAR,
        STRING), as DuckDB, pandas and polars read it; ``"empty"``: it is the empty text.
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    if empty_text not in ("null", "empty"):
        raise ValueError(f"empty_text must be 'null' or 'empty', not {empty_text!r}")
    started = time.perf_counter()
    base = session.snapshot(table)
    options = storage_options if storage_options is not None else \
        session.store.storage_options
    ledger = Ledger(table, session.catalog.loads(base), duplicates)
    files = ledger.admit(expand(paths, options))
    if not files:
        log.info("load_csv %s: every file was loaded before; nothing to do", table)
        return LoadReport(table=table, files=[], version=base.version)
    with Write(session, base, sync=sync) as write:
        report = _load(write, files, settings=session.settings, on_error=on_error,
                       reject_path=reject_path, progress=progress,
                       parse={"delimiter": delimiter, "header": header,
                              "null_values": tuple(null_values),
                              "text_nulls": empty_text == "null"})
    merge_small_fragments(write)   # the table's compact_after policy
    report.seconds = time.perf_counter() - started
    return report


def _load(write: Write, files: list[CsvFile], *, settings: Settings, on_error: str,
          reject_path: str | None, progress: bool | None, parse: dict[str, Any]) -> LoadReport:
    """Parse ``files`` (here, or shared out among the nodes), stage what they wrote, record
    them in the ledger and commit."""
    base, nodes = write.base, write.nodes
    report = LoadReport(table=base.table, files=[f.path for f in files])
    total = sum(f.size for f in files)
    options: dict[str, Any] = {"on_error": on_error, **parse}
    shares = _shares(nodes, files)
    report.nodes = {str(n): [f.path for f in share] for n, share in shares.items()}
    if list(shares) == [nodes.local]:
        bar = _progress(settings, progress, total, f"load {base.table}")
        try:
            results = [load_files(nodes.context(), write.files, base, files, settings,
                                  bar=bar, **options)]
        finally:
            if bar is not None:
                bar.close()
    else:
        results = _load_on_nodes(nodes, write, shares, settings, options)
    rejects: list[tuple[Any, ...]] = []
    for result in results:
        write.stage_all(result["added"])
        for f, (rows, sha) in zip(result["files"], result["per_file"]):
            report.per_file[f.path] = report.per_file.get(f.path, 0) + rows
            write.txn.record_load(f.path, f.size, sha)
        report.rows += result["rows"]
        rejects.extend(result["rejects"])
    if rejects:
        report.reject_path = _write_rejects(reject_path, base.table, rejects)
        report.rejected = len(rejects)
    report.version = write.commit("load_csv").version
    report.bytes = total
    return report


def load_files(node: NodeContext, files_out: FileWriter, base: Manifest, files: list[CsvFile],
               settings: Settings, *, on_error: str, delimiter: str, header: bool,
               null_values: tuple[str, ...], text_nulls: bool = True,
               bar: Any = None) -> dict[str, Any]:
    """Parse ``files`` on ``node`` and write their partitions through ``files_out``; commit
    nothing.

    Returns ``{"added": {partition: (key, fragments)}, "files", "per_file": [(rows, sha256)
    of each file], "rows", "rejects"}``.
    """
    rejects: list[tuple[Any, ...]] = []
    per_file: list[tuple[int, str]] = []
    nulls = frozenset(null_values)
    keys = {level.column for level in base.partition_by.levels()}
    with PartitionWriter(files_out, node.nodes(), base, settings) as writer, \
            ThreadPoolExecutor(max_workers=1) as parser:
        for f in files:
            rows_before = writer.rows
            with _BlockReader(f, settings.csv_block_bytes) as blocks:   # closed on errors too
                ctx = _context(f.path, base.schema, blocks, delimiter, header, nulls,
                               keys, text_nulls)
                pending = None
                for block, offset in blocks:
                    job = (parser.submit(_parse_block, block, offset, ctx, on_error),
                           len(block))
                    if pending is not None:
                        _take(pending, writer, rejects, bar)
                    pending = job
                if pending is not None:
                    _take(pending, writer, rejects, bar)
                sha = blocks.sha256()
            if f.sha256 is not None and sha != f.sha256:
                raise CsvError(f"{f.path}: the file changed while it was being loaded (its "
                               "SHA-256 differs from the one taken before); nothing is "
                               "committed", path=f.path)
            per_file.append((writer.rows - rows_before, sha))
        added = writer.flush()
        return {"added": dict(added), "files": files, "per_file": per_file,
                "rows": writer.rows, "rejects": rejects}


def _shares(nodes: Nodes, files: list[CsvFile]) -> dict[str | None, list[CsvFile]]:
    """The files each node loads: all here when this process's node is the only one, else
    shared out among the live nodes (largest first, to the least loaded)."""
    alive = nodes.alive()
    if nodes.local is not None and alive == [nodes.local]:
        return {nodes.local: files}
    shares: dict[str | None, list[CsvFile]] = {n: [] for n in alive}
    load = dict.fromkeys(alive, 0)
    for f in sorted(files, key=lambda f: f.size, reverse=True):
        name = min(alive, key=lambda n: (load[n], n))
        shares[name].append(f)
        load[name] += max(1, f.size)
    return {n: share for n, share in shares.items() if share}


def _load_on_nodes(nodes: Nodes, write: Write, shares: dict[str | None, list[CsvFile]],
                   settings: Settings, options: dict[str, Any]) -> list[dict[str, Any]]:
    """Load each node's share there, in parallel; every node's result.  A node that dies or
    fails fails the load (the caller's ``write`` removes what every node wrote)."""
    busy = [n for n in shares if n is not None]
    results = nodes.call_each(_load_share, names=busy, compute=True, strict=True,
                              args_for=lambda n: (write.files, write.base, shares[n],
                                                  settings, options))
    return [results[n] for n in busy]


def _load_share(node: NodeContext, files_out: FileWriter, base: Manifest, files: list[CsvFile],
                settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
    return load_files(node, files_out, base, files, settings, **options)


# -- files and blocks -------------------------------------------------------------------------
class _BlockReader:
    """Yields (block ending at a line end, byte offset of the block in the file).

    Each block is read straight into a buffer (only the partial last line is copied), and
    lines are not counted: a line number is worked out only when an error needs one.  Buffers
    rotate through a pool of three: the loader keeps at most two blocks in flight (one parsing,
    one being routed), so a buffer is free again when it comes round, and fresh memory is not
    page-faulted in for every block.
    """

    POOL = 3

    def __init__(self, f: CsvFile, block_bytes: int) -> None:
        self.file = f
        self.path = f.path
        self.block_bytes = block_bytes
        self._fh, self._raw = open_file(f)
        self._carry = b""
        self._offset = 0
        self._eof = False
        self._checkpoint = (0, 1)   # (byte offset, line number there), for line_at

    def __enter__(self) -> _BlockReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()
        self._raw.close()

    def sha256(self) -> str:
        """The SHA-256 of the file's bytes as stored (call after reading every block)."""
        return self._raw.finish()

    def read_header(self) -> tuple[bytes, int]:
        """The first line that is not blank, and its 1-based number; data starts after it."""
        number = 1
        while True:
            line = self.peek_line()
            self._carry = self._carry[len(line) + 1:]
            self._offset += len(line) + 1
            if line.rstrip(b"\r") or (self._eof and not self._carry):
                return line, number
            number += 1

    def peek_line(self) -> bytes:
        while b"\n" not in self._carry:
            chunk = self._fh.read(1 << 16)
            if not chunk:
                self._eof = True
                break
            self._carry += chunk
        return self._carry.split(b"\n", 1)[0]

    def line_at(self, offset: int) -> int:
        """1-based line number of the byte at ``offset`` (reads the file again; errors only).

        Counting resumes from the last offset asked for, so the bad blocks of one file cost
        one extra read of it in all, not one each.
        """
        done, line = self._checkpoint if offset >= self._checkpoint[0] else (0, 1)
        fh, raw = open_file(self.file)
        with raw, fh:
            fh.seek(done)
            while done < offset:
                chunk = fh.read(min(1 << 24, offset - done))
                if not chunk:
                    break
                line += chunk.count(b"\n")
                done += len(chunk)
        self._checkpoint = (done, line)
        return line

    def __iter__(self) -> Iterator[tuple[memoryview | bytes, int]]:
        try:
            carry, offset = self._carry, self._offset
            pool = [bytearray(2 * self.block_bytes) for _ in range(self.POOL)]
            turn = 0
            while True:
                need = len(carry) + self.block_bytes
                buf = pool[turn % self.POOL] if need <= 2 * self.block_bytes else bytearray(need)
                turn += 1
                buf[:len(carry)] = carry
                end = len(carry) + _read_into(self._fh, memoryview(buf)[len(carry):need])
                if end == len(carry):
                    if carry.strip():
                        yield carry, offset
                    return
                cut = buf.rfind(b"\n", 0, end)
                if cut < 0:
                    carry = bytes(buf[:end])
                    continue
                carry = bytes(buf[cut + 1:end])
                yield memoryview(buf)[:cut + 1], offset
                offset += cut + 1
        finally:
            self._carry = b""


def _read_into(fh: Any, view: memoryview) -> int:
    """Fill ``view`` as far as the file goes; returns the bytes read."""
    done = 0
    while done < len(view):
        n = fh.readinto(view[done:])
        if not n:
            break
        done += n
    return done


def _context(path: str, schema: Schema, blocks: _BlockReader, delimiter: str, header: bool,
             nulls: frozenset[str], keys: Iterable[str], text_nulls: bool) -> _FileContext:
    if header:
        raw, line = blocks.read_header()
        text = raw.decode("utf-8-sig", errors="replace").rstrip("\r")
        names = next(csv.reader([text], delimiter=delimiter)) if text else []
        missing = [n for n in schema.names if n not in names]
        extra = [n for n in names if n not in schema]
        if missing or extra or len(set(names)) != len(names):
            parts = []
            if missing:
                parts.append(f"missing columns {missing}")
            if extra:
                parts.append(f"unexpected columns {extra}")
            if len(set(names)) != len(names):
                parts.append("repeated column names")
            raise CsvError(f"{path}:{line}: the header does not match the table: "
                           f"{'; '.join(parts)} (expected {schema.names})",
                           path=path, line=line)
    else:
        names = schema.names
    read_types = {}
    for name, ctype in schema:
        kind = ctype.name
        if kind in ("SYMBOL", "CHAR", "DATE", "SECOND", "TIME"):
            # dates and times: few distinct texts, each converted (and checked) once
            read_types[name] = pa.dictionary(pa.int32(), pa.string())
        elif kind in ("STRING", "DATETIME", "TIMESTAMP"):
            read_types[name] = pa.string()
        else:
            read_types[name] = ctype.arrow
    exact_ints = any(pa.types.is_integer(t) for t in read_types.values())
    return _FileContext(blocks, path, schema, names, read_types, delimiter, nulls,
                        frozenset(keys), exact_ints, text_nulls)


# -- parsing one block --------------------------------------------------------------------------
def _parse_block(block: memoryview | bytes, offset: int, ctx: _FileContext,
                 on_error: str) -> tuple[pa.Table, list[tuple]]:
    """A block's rows as the table's Arrow, and its bad rows (``on_error="skip"``)."""
    if ctx.exact_ints and _maybe_hex(block):
        return _exact_block(block, offset, ctx, on_error, None)
    try:
        return _convert(_arrow_parse(block, ctx), ctx), []
    except (pa.ArrowInvalid, ValueError) as exc:
        return _exact_block(block, offset, ctx, on_error, exc)


def _exact_block(block: memoryview | bytes, offset: int, ctx: _FileContext, on_error: str,
                 exc: Exception | None) -> tuple[pa.Table, list[tuple]]:
    """The slow path of a block Arrow refused (``exc``) or that may hide a value Arrow
    accepts wrongly (``exc`` None): each row checked exactly."""
    lines = bytes(block).split(b"\n")
    first_line = ctx.reader.line_at(offset)
    first_only = on_error == "raise"
    bad = _find_bad_rows(lines, first_line, ctx, first_only)
    if not bad and exc is None:
        try:
            return _convert(_arrow_parse(block, ctx), ctx), []
        except (pa.ArrowInvalid, ValueError) as error:
            exc = error
    # where the validators see nothing wrong (a value they accept and Arrow does not),
    # bisect the block with Arrow itself
    bad = bad or _bisect_bad_rows(lines, first_line, ctx, first_only)
    if not bad:
        raise CsvError(f"{ctx.path}: lines {first_line}-{first_line + len(lines) - 1}: "
                       f"{_first_line_of(exc or ValueError())}", path=ctx.path) from None
    if first_only:
        line, column, reason, _ = bad[0]
        raise CsvError(f"{ctx.path}:{line}: column {column!r}: {reason}",
                       path=ctx.path, line=line, column=column) from None
    bad_lines = {b[0] - first_line for b in bad}
    good = b"\n".join(x for i, x in enumerate(lines) if i not in bad_lines)
    table = _convert(_arrow_parse(good, ctx), ctx) if good.strip() else \
        ctx.schema.arrow.empty_table()
    return table, [(ctx.path, *b) for b in bad]


def _maybe_hex(block: memoryview | bytes) -> bool:
    """Does ``block`` hold ``0x`` or ``0X`` anywhere?  A vectorised scan in cache-sized pieces
    with reused buffers (about 2.5 GB/s): 'x' or 'X' first, then a '0' before it."""
    data = np.frombuffer(block, dtype=np.uint8)
    step = 1 << 18
    lower, found = np.empty(step, dtype=np.uint8), np.empty(step, dtype=bool)
    for start in range(0, len(data) - 1, step):
        piece = data[start:start + step + 1]
        n = len(piece) - 1
        np.bitwise_or(piece[1:], 32, out=lower[:n])
        np.equal(lower[:n], 120, out=found[:n])
        if found[:n].any() and (piece[np.flatnonzero(found[:n])] == 48).any():
            return True
    return False


def _bisect_bad_rows(lines: list[bytes], first_line: int, ctx: _FileContext,
                     first_only: bool) -> list[tuple]:
    """Rows Arrow itself refuses, found by halving: about log2(lines) parses per bad row."""
    bad: list[tuple] = []

    def check(lo: int, hi: int) -> None:
        chunk = b"\n".join(lines[lo:hi])
        if (first_only and bad) or not chunk.strip():
            return
        try:
            _convert(_arrow_parse(chunk, ctx), ctx)
        except (pa.ArrowInvalid, ValueError) as exc:
            if hi - lo == 1:
                text = lines[lo].decode("utf-8", errors="replace").rstrip("\r")
                column = _column_of(exc, ctx)
                bad.append((first_line + lo, column, _reason(exc, text, column, ctx), text))
                return
            middle = (lo + hi) // 2
            check(lo, middle)
            check(middle, hi)

    check(0, len(lines))
    return bad


def _reason(exc: Exception, text: str, column: str | None, ctx: _FileContext) -> str:
    """``value 'v' is not a valid T (Arrow's reason)`` when the column is known."""
    if column is None:
        return _first_line_of(exc)
    try:
        fields = next(csv.reader([text], delimiter=ctx.delimiter))
        value = fields[ctx.names.index(column)]
    except (csv.Error, IndexError, StopIteration):
        return _first_line_of(exc)
    why = _first_line_of(exc)
    why = why.split(": ", 1)[1] if why.startswith("In CSV column") and ": " in why else why
    return invalid(value, ctx.schema[column].name, why)


class _ColumnError(ValueError):
    """A conversion that failed in one named column."""

    def __init__(self, column: str, exc: Exception) -> None:
        super().__init__(f"{_first_line_of(exc)}")
        self.column = column


def _column_of(exc: Exception, ctx: _FileContext) -> str | None:
    if isinstance(exc, _ColumnError):
        return exc.column
    match = re.search(r"column #(\d+)", str(exc))
    if match and int(match[1]) < len(ctx.names):
        return ctx.names[int(match[1])]
    return None


def _first_line_of(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _arrow_parse(block: bytes | memoryview, ctx: _FileContext) -> pa.Table:
    return pacsv.read_csv(
        pa.py_buffer(block),
        read_options=pacsv.ReadOptions(column_names=ctx.names, use_threads=True,
                                       block_size=max(1 << 20, len(block) // 8 + 1)),
        parse_options=pacsv.ParseOptions(delimiter=ctx.delimiter),
        convert_options=pacsv.ConvertOptions(
            column_types=ctx.read_types, null_values=sorted(ctx.nulls),
            strings_can_be_null=ctx.text_nulls, quoted_strings_can_be_null=ctx.text_nulls))


def _convert(table: pa.Table, ctx: _FileContext) -> pa.Table:
    """Arrow as parsed -> the table schema (dates, times, timestamps by fast paths)."""
    out = {}
    for name, ctype in ctx.schema:
        col = table.column(name).combine_chunks() if table.num_rows else \
            pa.array([], type=table.column(name).type)
        kind = ctype.name
        try:
            if kind == "DATE":
                col = dates_of(col, ctx.nulls)
            elif kind in ("SECOND", "TIME"):
                col = times_of(_nulls_to_null(col, ctx.nulls), ctype)
            elif kind in ("DATETIME", "TIMESTAMP"):
                col = timestamps_of(_nulls_to_null(col, ctx.nulls), ctype)
        except (ValueError, pa.ArrowInvalid) as exc:
            raise _ColumnError(name, exc) from None
        if col.null_count and name in ctx.keys:   # the exact pass names the line
            raise _ColumnError(name, ValueError(f"partition column {name!r} has nulls"))
        out[name] = col
    return ctx.schema.conform(pa.table(out), where=ctx.path)


def _nulls_to_null(col: pa.Array, nulls: frozenset[str]) -> pa.Array:
    """Texts that mean null (read as strings, so the parser kept them) become nulls."""
    if not nulls or len(col) == 0:
        return col
    if pa.types.is_dictionary(col.type):
        return pa.DictionaryArray.from_arrays(col.indices, _nulls_to_null(col.dictionary, nulls))
    is_null = pc.is_in(col, value_set=pa.array(sorted(nulls), pa.string()))
    if not pc.any(is_null).as_py():
        return col
    return pc.if_else(is_null, pa.scalar(None, pa.string()), col)


def _find_bad_rows(lines: list[bytes], first_line: int, ctx: _FileContext,
                   first_only: bool) -> list[tuple]:
    """Exact pass: (line, column, reason, raw row) of every row that cannot load."""
    bad = []
    types = [ctx.schema[n] for n in ctx.names]
    for i, raw in enumerate(lines):
        if not raw.rstrip(b"\r"):   # blank lines are skipped, as Arrow does
            continue
        line = first_line + i
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        problem = None
        try:
            raw.decode("utf-8")
            fields = next(csv.reader([text], delimiter=ctx.delimiter))
        except (UnicodeDecodeError, csv.Error) as exc:
            problem = (ctx.names[0], f"unreadable row: {exc}")
            fields = []
        if problem is None and len(fields) != len(ctx.names):
            column = ctx.names[min(len(fields), len(ctx.names)) - 1] if fields else ctx.names[0]
            problem = (column, f"expected {len(ctx.names)} fields, found {len(fields)}")
        if problem is None:
            for name, ctype, value in zip(ctx.names, types, fields):
                reason = check_field(value, ctype, ctx.nulls, required=name in ctx.keys,
                                     text_nulls=ctx.text_nulls)
                if reason:
                    problem = (name, reason)
                    break
        if problem is not None:
            bad.append((line, problem[0], problem[1], text))
            if first_only:
                break
    return bad


# -- plumbing ----------------------------------------------------------------------------------
def _take(pending: tuple[Future[tuple[pa.Table, list[tuple]]], int], writer: PartitionWriter,
          rejects: list[tuple], bar: Any) -> None:
    job, nbytes = pending
    table, bad = job.result()
    rejects.extend(bad)
    writer.write(table)
    faults.point("ingest.csv.after_block")
    if bar is not None:
        bar.update(nbytes)


def _write_rejects(path: str | None, table: str, rejects: list[tuple]) -> str:
    if path is None:
        stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
        path = f"hfq_rejects_{table}_{stamp}.csv"
    import fsspec
    with fsspec.open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["file", "line", "column", "reason", "row"])
        out.writerows(rejects)
    return path


def _progress(settings: Settings, progress: bool | None, total: int, label: str, *,
              unit: str = "B") -> Any:
    if not settings.show_progress(progress):
        return None
    from tqdm import tqdm
    return tqdm(total=total or None, unit=unit, unit_scale=unit == "B", desc=label,
                file=sys.stderr)

