"""Quotas and fairness through the service: rows and concurrency limits, a timeout and a
cancellation that stop the node work not yet started, heavy queries in their own slots
while point reads go on.  Held exactly by a gate in the reading code (threading events),
time moved on the service's clock: no sleeps."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import adbc_driver_manager
import numpy as np
import pyarrow as pa
import pytest

import hfq
from hfq.engine import execute
from hfq.query import read
from hfq.service import ServiceConfig
from hfq.service.quotas import Limits
from tests.service.conftest import Clock, Env, make_env

Error = adbc_driver_manager.Error
ROWS = 400_000      # more than a point read (hfq.query.read.INLINE_ROWS): a heavy query


def with_big(env: Env) -> Env:
    t = env.db.create_table("big", hfq.schema.Schema({"x": hfq.schema.LONG,
                                                      "y": hfq.schema.DOUBLE}),
                            partition_by=hfq.Hash("x", 8))
    x = np.arange(ROWS, dtype=np.int64)
    t.append(pa.table({"x": x, "y": x * 0.5}))
    env.admin.grant(["SELECT"], "big", "analyst")
    return env


@pytest.fixture
def big(tmp_path) -> Iterator[Env]:
    env = with_big(make_env(tmp_path, threads=1))
    yield env
    env.service.shutdown()


class Gate:
    """Holds the first call of ``module.name`` until released; counts the calls."""

    def __init__(self, monkeypatch: Any, target: Any, name: str) -> None:
        self.reached, self.release, self.calls = threading.Event(), threading.Event(), 0
        original = getattr(target, name)

        def held(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == 1:
                self.reached.set()
                assert self.release.wait(60)
            return original(*args, **kwargs)

        monkeypatch.setattr(target, name, held)


def in_thread(conn: Any, sql: str) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            with conn.cursor() as cur:
                out["cursor"] = cur
                cur.execute(sql)
                out["rows"] = cur.fetch_arrow_table().num_rows
        except Error as exc:
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def wait_for(condition: Any, timeout: float = 60) -> None:
    """Until ``condition()`` (what another thread of the service does next)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the service"
        time.sleep(0.01)


def test_max_rows_refuses_a_larger_answer(fresh):
    fresh.admin.set_quota("analyst", max_rows=10)
    with fresh.adbc("ann") as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM quotes")          # one row: fine
        assert cur.fetchone()[0] > 10
        cur.execute("SELECT * FROM quotes")
        with pytest.raises(Error, match="more than 10 rows"):
            cur.fetch_arrow_table()
    wait_for(lambda: fresh.audit(kind="query", outcome="quota"))


def test_cancelling_a_scan_stops_its_reads(big, monkeypatch):
    gate = Gate(monkeypatch, read, "read_unit")
    with big.adbc("root") as conn:
        thread, out = in_thread(conn, "SELECT x, y FROM big")
        assert gate.reached.wait(60)
        out["cursor"].adbc_cancel()
        gate.release.set()
        thread.join(60)
    assert "error" in out and "rows" not in out
    wait_for(lambda: big.audit(kind="query", outcome="cancelled"))
    assert gate.calls < 8          # the partitions after the first read-ahead never read


def test_a_query_past_its_timeout_stops_its_node_work(big, monkeypatch):
    big.admin.set_quota("root", timeout_s=5)
    gate = Gate(monkeypatch, execute.NodeStage, "__call__")
    with big.adbc("root") as conn:
        thread, out = in_thread(conn, "SELECT x % 7 AS k, count(*) AS n FROM big GROUP BY k")
        assert gate.reached.wait(60)
        big.clock.now += 6
        gate.release.set()
        thread.join(60)
    assert "timeout" in str(out.get("error"))
    wait_for(lambda: big.audit(kind="query", outcome="timeout"))


def test_point_reads_go_on_beside_a_runaway_query(tmp_path, monkeypatch):
    clock = Clock()
    env = with_big(make_env(tmp_path, ServiceConfig(clock=clock, refresh_s=0.0, heavy_slots=1,
                                                    limits=Limits(max_concurrent=2)),
                            clock, threads=1))
    env.admin.set_quota("analyst", max_concurrent=1)
    gate = Gate(monkeypatch, execute.NodeStage, "__call__")
    try:
        with env.adbc("ann") as runaway, env.adbc("root") as reader:
            thread, out = in_thread(runaway, "SELECT x % 3 AS k, sum(y) AS s FROM big GROUP BY k")
            assert gate.reached.wait(60)          # it holds the one heavy slot
            with reader.cursor() as cur:           # everyone's point reads go on
                for symbol in ("IBM", "MSFT", "AA"):
                    cur.execute("SELECT * FROM quotes WHERE symbol = ? AND date = "
                                "DATE '2007-08-01'", [symbol])
                    assert cur.fetch_arrow_table().num_rows > 0
            with runaway.cursor() as cur:          # ann's second query: over her quota
                cur.execute("SELECT count(*) FROM quotes")
                with pytest.raises(Error, match="queries running"):
                    cur.fetchall()
            assert thread.is_alive()
            gate.release.set()
            thread.join(60)
        assert out.get("rows") == 3
        assert [r["outcome"] for r in env.audit(kind="query", user="ann")] == ["quota", "ok"]
    finally:
        gate.release.set()
        env.service.shutdown()


def test_max_bytes_counts_what_is_sent(fresh):
    """Bytes are counted batch by batch as sent, categoricals as their indices and each
    batch's dictionary: the audit's count is the Arrow size the client receives (to within
    validity bitmaps), well under the same rows' size as text; a limit one byte below the
    count stops the answer, the count itself lets it through."""
    sql = "SELECT symbol, ex, bid FROM quotes"
    with fresh.adbc("ann") as conn, conn.cursor() as cur:
        cur.execute(sql)
        got = cur.fetch_arrow_table()
    wait_for(lambda: fresh.audit(kind="query", text=sql))
    [ok] = fresh.audit(kind="query", text=sql)
    sent = ok["bytes"]
    assert ok["outcome"] == "ok" and ok["rows"] == got.num_rows > 0
    assert abs(sent - got.nbytes) <= 0.01 * got.nbytes
    as_text = got.cast(pa.schema([("symbol", pa.string()), ("ex", pa.string()),
                                  ("bid", pa.float64())]))
    assert sent < as_text.nbytes
    fresh.admin.set_quota("analyst", max_bytes=sent - 1)
    with fresh.adbc("ann") as conn, conn.cursor() as cur:
        cur.execute(sql)
        with pytest.raises(Error, match=f"more than {sent - 1:,} bytes"):
            cur.fetch_arrow_table()
    wait_for(lambda: fresh.audit(kind="query", outcome="quota"))
    fresh.admin.set_quota("analyst", max_bytes=sent)
    with fresh.adbc("ann") as conn, conn.cursor() as cur:
        cur.execute(sql)
        assert cur.fetch_arrow_table().num_rows == got.num_rows
