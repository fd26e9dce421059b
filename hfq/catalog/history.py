"""The history of a table: what each commit did, by whom, when and why.

Every commit records, in its version's record (:attr:`~hfq.catalog.records.Manifest.info`):
the user (``hfq.connect(user=...)``, else ``HFQ_USER``, else the login name), the operation
and its arguments, the rows added and removed and the partitions touched, the job id
(:func:`annotate` or ``HFQ_JOB_ID``) and an optional message; and, in an immutable history
piece the record names (:func:`~hfq.catalog.records.build_history`), the rows added and
removed per partition and the source files loaded (path, size, SHA-256).  The time is the
record's ``committed_at`` (UTC).  :func:`history_frame` reads them back as one polars frame,
Delta's ``DESCRIBE HISTORY`` for hfq.

Examples
--------
>>> import datetime as dt, polars as pl
>>> with annotate(message="vendor resend", job="job-42"):
...     current()
Note(message='vendor resend', job='job-42')
>>> current()
Note(message=None, job=None)
>>> jsonable({"where": pl.col("bid") > 0, "dates": dt.date(2024, 1, 2), "n": 3})
{'where': '[(col("bid")) > (dyn int: 0)]', 'dates': '2024-01-02', 'n': 3}
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

import polars as pl

from hfq.errors import TableNotFoundError

if TYPE_CHECKING:
    from hfq.catalog.catalog import Catalog

__all__ = ["Note", "annotate", "current", "history_frame", "jsonable", "job_id"]


class Note(NamedTuple):
    """The message and job id that commits made inside :func:`annotate` record."""

    message: str | None = None
    job: str | None = None


_NOTE: contextvars.ContextVar[Note | None] = contextvars.ContextVar("hfq_history_note",
                                                                   default=None)


@contextmanager
def annotate(*, message: str | None = None, job: str | None = None) -> Iterator[Note]:
    """Every commit made in this block (in this thread or task) records ``message`` and
    ``job`` in its history entry, whatever made it (an append, a CSV load, a mutation)."""
    outer = current()
    note = Note(message if message is not None else outer.message,
                job if job is not None else outer.job)
    token = _NOTE.set(note)
    try:
        yield note
    finally:
        _NOTE.reset(token)


def current() -> Note:
    """The note of the innermost :func:`annotate` block (empty outside any)."""
    return _NOTE.get() or Note()


def job_id() -> str | None:
    """The job a commit belongs to: :func:`annotate`'s, else ``HFQ_JOB_ID``, else None."""
    return current().job or os.environ.get("HFQ_JOB_ID") or None


def jsonable(value: Any, *, depth: int = 0) -> Any:
    """``value`` as JSON keeps it in a history entry: numbers, text, booleans and None as
    they are; dates and times in ISO form; lists and dicts element by element; a frame as
    its shape; anything else (a polars expression) as its text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return f"{value.total_seconds()}s"
    if depth < 4 and isinstance(value, Mapping):
        return {str(k): jsonable(v, depth=depth + 1) for k, v in value.items()}
    if depth < 4 and isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        out = [jsonable(v, depth=depth + 1) for v in items[:100]]
        return out + [f"... {len(items) - 100} more"] if len(items) > 100 else out
    rows = getattr(value, "num_rows", None) or getattr(value, "height", None)
    if isinstance(rows, int):
        return f"<{type(value).__name__}: {rows:,} rows>"
    return str(value)


_COLUMNS: dict[str, Any] = {
    "version": pl.Int64, "committed_at": pl.Datetime("us", "UTC"), "user": pl.String,
    "operation": pl.String, "arguments": pl.String, "rows_added": pl.Int64,
    "rows_removed": pl.Int64, "partitions": pl.Int64, "message": pl.String, "job": pl.String,
    "source_files": pl.List(pl.String), "source_sha256": pl.List(pl.String),
}

_PARTITION_COLUMNS: dict[str, Any] = {
    "version": pl.Int64, "committed_at": pl.Datetime("us", "UTC"), "operation": pl.String,
    "partition": pl.String, "rows_added": pl.Int64, "rows_removed": pl.Int64,
}


def history_frame(catalog: Catalog, name: str, *, versions: Sequence[int] | None = None,
                  partitions: bool = False) -> pl.DataFrame:
    """The history of table ``name``, newest first: one row per version still on record
    (``versions``: only those), or with ``partitions`` one row per partition each commit
    touched.  A version written before commits recorded their history has nulls where it
    did not."""
    rows: list[dict[str, Any]] = []
    wanted = catalog.versions(name) if versions is None else sorted(versions)
    for v in reversed(wanted):
        try:
            m = catalog.version(name, v)
        except TableNotFoundError:   # forgotten meanwhile
            continue
        info = m.info
        at = dt.datetime.fromtimestamp(m.committed_at, dt.timezone.utc)
        detail = catalog.history_detail(m)
        if partitions:
            for path, (added, removed) in (detail or {}).get("partitions", {}).items():
                rows.append({"version": m.version, "committed_at": at, "operation": m.op,
                             "partition": path, "rows_added": added, "rows_removed": removed})
            continue
        sources = (detail or {}).get("sources", [])
        rows.append({
            "version": m.version, "committed_at": at, "user": info.get("user"),
            "operation": m.op,
            "arguments": json.dumps(info["args"], sort_keys=True) if "args" in info else None,
            "rows_added": info.get("rows_added"), "rows_removed": info.get("rows_removed"),
            "partitions": info.get("partitions"), "message": info.get("message"),
            "job": info.get("job"), "source_files": [s[0] for s in sources],
            "source_sha256": [s[2] for s in sources]})
    return pl.DataFrame(rows, schema=_PARTITION_COLUMNS if partitions else _COLUMNS)

