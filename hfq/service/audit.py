"""The audit log: every login, query and commit through the service, and who made it.

Events are kept in memory a moment and written, a batch at a time, as Arrow IPC files under
the catalog root (``.hfq-security/audit/<day>/<time>-<n>.arrow``, each written whole and
renamed into place); a reader flushes first, so it sees every event recorded before it.
Through the service the log is the system table ``hfq_audit`` -- readable with SQL by
admins (and users granted SELECT on it), never writable: no statement of the service writes
to it, bulk ingest into it is refused, and no file under it is reachable from a query.

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> log = AuditLog(db.session.store)
>>> log.record(kind="login", user="ann", outcome="ok")
>>> log.record(kind="query", user="ann", text="SELECT 1", rows=1, outcome="ok")
>>> log.frame().select("kind", "user", "outcome", "rows").rows()
[('login', 'ann', 'ok', None), ('query', 'ann', 'ok', 1)]
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa

from hfq.storage.store import Store, temp_name

__all__ = ["AUDIT_SCHEMA", "AuditLog"]

log = logging.getLogger(__name__)

ROOT = ".hfq-security/audit"

AUDIT_SCHEMA = pa.schema([
    ("time", pa.timestamp("us", tz="UTC")),
    ("kind", pa.string()),        # login, token, query, commit, action
    ("user", pa.string()),
    ("outcome", pa.string()),     # ok, failed, locked, refused, denied, error, cancelled...
    ("text", pa.string()),        # the SQL, the table of a commit
    ("params", pa.string()),      # bound parameters, JSON
    ("rows", pa.int64()),
    ("bytes", pa.int64()),
    ("seconds", pa.float64()),
    ("detail", pa.string()),      # why refused, what failed, the version committed
    ("peer", pa.string()),
])
"""The columns of ``hfq_audit``."""


def _params(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, default=str)


class AuditLog:
    """Audit events, written under ``store``'s root; ``clock`` stamps them."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time,
                 flush_s: float = 1.0) -> None:
        self.store = store
        self.clock = clock
        self.flush_s = flush_s
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._seq = itertools.count()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Flush in the background every ``flush_s`` seconds (until :meth:`close`)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="hfq-audit", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.flush_s):
            try:
                self.flush()
            except OSError as exc:   # the next flush tries again; the events stay pending
                log.error("audit: writing events failed: %s", exc)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush()

    def record(self, *, kind: str, user: str, outcome: str, text: str | None = None,
               params: Any = None, rows: int | None = None, nbytes: int | None = None,
               seconds: float | None = None, detail: str | None = None,
               peer: str | None = None) -> None:
        event = {"time": dt.datetime.fromtimestamp(self.clock(), dt.timezone.utc),
                 "kind": kind, "user": user, "outcome": outcome, "text": text,
                 "params": _params(params), "rows": rows, "bytes": nbytes,
                 "seconds": seconds, "detail": detail, "peer": peer}
        log.info("audit: %s %s %s %s", kind, user, outcome, (text or "")[:200])
        with self._lock:
            self._pending.append(event)

    def flush(self) -> int:
        """Write the pending events (one file); returns how many."""
        with self._write_lock:
            with self._lock:
                events, self._pending = self._pending, []
            if not events:
                return 0
            table = pa.Table.from_pylist(events, schema=AUDIT_SCHEMA)
            day = events[0]["time"].date().isoformat()
            rel = f"{ROOT}/{day}/{time.time_ns():020d}-{os.getpid()}-{next(self._seq)}.arrow"
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, AUDIT_SCHEMA) as writer:
                writer.write_table(table)
            self.store.makedirs(rel.rsplit("/", 1)[0])
            tmp = temp_name(rel)
            self.store.write_bytes(tmp, sink.getvalue().to_pybytes(), sync=True)
            self.store.rename(tmp, rel)
            return len(events)

    def frame(self) -> pl.DataFrame:
        """Every event written so far (pending ones flushed first), oldest first."""
        self.flush()
        tables = []
        for day in sorted(self.store.listdir(ROOT)):
            for name in sorted(self.store.listdir(f"{ROOT}/{day}")):
                if name.endswith(".arrow") and not name.startswith("."):
                    with self.store.open_arrow(f"{ROOT}/{day}/{name}") as f:
                        tables.append(pa.ipc.open_file(f).read_all())
        table = pa.concat_tables(tables) if tables else AUDIT_SCHEMA.empty_table()
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return frame.sort("time", maintain_order=True)
