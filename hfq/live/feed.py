"""A feed from files and to the terminal: what ``hfq publish`` and ``hfq tail`` do.

:func:`csv_batches` reads a CSV file as the table's rows (``load_csv``'s text rules: empty
text is NULL, dates, SECOND/TIME and timestamps parsed exactly), a block at a time;
:func:`publish_csv` publishes them at a given rate (rows per second: a demo feed), and
:func:`tail` prints what a subscription delivers.

Examples
--------
>>> import hfq, tempfile, os
>>> d = tempfile.mkdtemp()
>>> db = hfq.connect(os.path.join(d, "db"))
>>> t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
>>> path = hfq.synth.taq_csv_files(d, dates=["2007-08-01"], rows_per_day=300, symbols=5)[0]
>>> publish_csv(t, [str(path)], batch_rows=100).rows
300
>>> t.scan().count()
300
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from hfq.errors import ArgumentError, CsvError
from hfq.ingest.parse import dates_of, times_of, timestamps_of
from hfq.live.publisher import Publisher
from hfq.live.subscribe import Subscription
from hfq.schema import Schema
from hfq.session import TableLike

__all__ = ["Fed", "csv_batches", "publish_csv", "tail"]

_NULLS = frozenset({""})


@dataclass
class Fed:
    """What :func:`publish_csv` did: rows and batches published, seconds, the last batch."""

    rows: int = 0
    batches: int = 0
    seconds: float = 0.0
    seq: int = 0


def csv_batches(path: str, schema: Schema, *, batch_rows: int = 10_000,
                delimiter: str = ",") -> Iterator[pa.Table]:
    """The rows of the CSV file at ``path`` (a header line naming the columns) as tables of
    ``schema``, ``batch_rows`` at a time."""
    options = pacsv.ConvertOptions(column_types={n: pa.string() for n in schema.names},
                                   strings_can_be_null=False)
    try:
        reader = pacsv.open_csv(path, parse_options=pacsv.ParseOptions(delimiter=delimiter),
                                convert_options=options,
                                read_options=pacsv.ReadOptions(block_size=1 << 20))
    except (OSError, pa.ArrowInvalid) as exc:
        raise CsvError(f"{path}: cannot be read as CSV: {exc}") from None
    pending: list[pa.Table] = []
    held = 0
    for batch in reader:
        rows = _convert(pa.Table.from_batches([batch]), schema, path)
        pending.append(rows)
        held += rows.num_rows
        while held >= batch_rows:
            table = pa.concat_tables(pending).combine_chunks()
            yield table.slice(0, batch_rows)
            pending, held = [table.slice(batch_rows)], table.num_rows - batch_rows
    if held:
        yield pa.concat_tables(pending).combine_chunks()


def _convert(table: pa.Table, schema: Schema, path: str) -> pa.Table:
    columns = {}
    for name, ctype in schema:
        if name not in table.column_names:
            raise CsvError(f"{path}: no column {name!r}; the header has "
                           f"{', '.join(table.column_names)}")
        text = table.column(name).combine_chunks()
        text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
        try:
            if ctype.name == "DATE":
                columns[name] = dates_of(text.dictionary_encode(), _NULLS)
            elif ctype.name in ("SECOND", "TIME"):
                columns[name] = times_of(text, ctype)
            elif ctype.name in ("DATETIME", "TIMESTAMP"):
                columns[name] = timestamps_of(text, ctype)
            else:
                columns[name] = text.cast(ctype.arrow)
        except (ValueError, pa.ArrowInvalid) as exc:
            raise CsvError(f"{path}, column {name!r}: {exc}") from None
    return schema.conform(pa.table(columns), where=path)


def publish_csv(table: TableLike, paths: Sequence[str], *, rate: float | None = None,
                batch_rows: int = 1000, name: str | None = None,
                sleep: Callable[[float], None] = time.sleep) -> Fed:
    """Publish the rows of the CSV files ``paths`` into ``table``, ``batch_rows`` a batch,
    at ``rate`` rows per second (None: as fast as they go); what was published."""
    if rate is not None and rate <= 0:
        raise ArgumentError(f"rate=: rows per second, more than 0, not {rate!r}",
                            argument="rate")
    pub = Publisher(table, name=name)
    schema = pub.manifest.schema
    fed = Fed(seq=pub.seq)
    started = time.perf_counter()
    for path in paths:
        for batch in csv_batches(path, schema, batch_rows=batch_rows):
            if rate is not None:
                wait = fed.rows / rate - (time.perf_counter() - started)
                if wait > 0:
                    sleep(wait)
            fed.seq = pub.publish(batch)
            fed.rows += batch.num_rows
            fed.batches += 1
    fed.seconds = time.perf_counter() - started
    return fed


def tail(subscription: Subscription, write: Callable[[str], Any], *,
         batches: int | None = None, idle_s: float | None = None) -> int:
    """Write each row ``subscription`` delivers as one line (columns separated by two
    spaces), stopping after ``batches`` batches, or once nothing came for ``idle_s``
    seconds; the rows written."""
    rows = taken = 0
    last = time.monotonic()
    while batches is None or taken < batches:
        batch = subscription.poll()
        if batch is None:
            if idle_s is not None and time.monotonic() - last >= idle_s:
                break
            continue
        last = time.monotonic()
        taken += 1
        for row in batch.to_pylist():
            write("  ".join("" if v is None else str(v) for v in row.values()))
            rows += 1
    return rows
