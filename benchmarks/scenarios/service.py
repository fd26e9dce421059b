"""The shared service (issue 28): hfq served over Arrow Flight SQL with TLS and a password,
read with ADBC's driver, against the same reads in-process and DuckDB's.

* 16 client processes each running symbol-day queries (``SELECT * FROM quotes WHERE date = ?
  AND symbol = ?``): through the service (each client its own ADBC connection) vs in-process
  (each client ``db.sql(...).to_arrow()`` on the root): queries/s, p50 and p99 latency.
* One whole day fetched: ADBC's ``fetch_arrow_table`` through the service vs
  ``db.sql(...).to_arrow()`` in-process (target >= 0.7x) and vs DuckDB's Arrow fetch of the
  same rows from its database file.

The service's user has a plain SELECT grant (no row policy): the figures are of the service's
transport and execution, not of a policy's filter.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import multiprocessing as mp
import os
import random
import shutil
import statistics
import time
import traceback
from typing import Any

from harness import (
    DAY,
    Answer,
    Bench,
    Result,
    duck_arrow,
    make_csv,
    measure,
    price_check,
    taq_table,
    target_line,
)

CLIENTS = 16
QUERIES = 40          # per client per run
USER, PASSWORD = "bench", "the benchmark's long password"
SQL_POINT = "SELECT * FROM quotes WHERE date = ? AND symbol = ?"
SQL_DAY = "SELECT * FROM quotes WHERE date = ?"


def _client(conn: Any, kind: str, target: str, ca: str) -> None:
    """One client process: open a connection (ADBC to the service, or hfq on the root), then
    run the queries it is sent, answering (rows, latencies)."""
    try:
        if kind == "adbc":
            import adbc_driver_flightsql.dbapi as fsql
            db = fsql.connect(target, autocommit=True, db_kwargs={
                "username": USER, "password": PASSWORD,
                "adbc.flight.sql.client_option.tls_root_certs": ca})
            cur = db.cursor()

            def query(day: str, symbol: str) -> int:
                cur.execute(SQL_POINT, [dt.date.fromisoformat(day), symbol])
                return cur.fetch_arrow_table().num_rows
        else:
            import hfq
            local = hfq.connect(target)

            def query(day: str, symbol: str) -> int:
                return local.sql(SQL_POINT, params=[dt.date.fromisoformat(day), symbol]) \
                    .to_arrow().num_rows
        conn.send(("ready", None))
        while (job := conn.recv()) is not None:
            rows, lat = 0, []
            for day, symbol in job:
                start = time.perf_counter()
                rows += query(day, symbol)
                lat.append(time.perf_counter() - start)
            conn.send(("done", (rows, lat)))
    except BaseException:  # noqa: BLE001 - a client reports any failure to the parent
        conn.send(("error", traceback.format_exc()))


class _Clients:
    def __init__(self, kind: str, target: str, ca: str, n: int) -> None:
        ctx = mp.get_context("spawn")
        self.conns, self.procs = [], []
        for _ in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_client, args=(child, kind, target, ca), daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
        for c in self.conns:
            self._get(c)

    @staticmethod
    def _get(conn: Any) -> Any:
        status, value = conn.recv()
        if status == "error":
            raise RuntimeError(f"a client failed:\n{value}")
        return value

    def run(self, jobs: list[list[tuple[str, str]]]) -> tuple[int, list[float]]:
        for c, job in zip(self.conns, jobs):
            c.send(job)
        rows, lat = 0, []
        for c in self.conns:
            r, got = self._get(c)
            rows += r
            lat += got
        return rows, lat

    def close(self) -> None:
        for c in self.conns:
            with contextlib.suppress(OSError):   # a client that failed is gone already
                c.send(None)
        for p in self.procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def scenario_service(bench: Bench) -> None:
    import trustme

    import hfq
    from hfq.service.identity import Admin
    from hfq.service.state import SecurityStore

    root = os.path.join(bench.work, "service")
    shutil.rmtree(root, ignore_errors=True)
    table = taq_table(bench, root, "zstd")
    table.db.load_csv("quotes", make_csv(bench), progress=False)
    db = table.db
    admin = Admin(SecurityStore(db.session), by="bench")
    admin.add_user(USER, PASSWORD)
    admin.grant(["SELECT"], "quotes", USER)
    admin.set_quota(USER, max_concurrent=CLIENTS)   # the default (8 at once) would refuse some
    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    service = hfq.serve(db, tls=(cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes()))
    uri = service.location.replace("127.0.0.1", "localhost")
    ca_pem = ca.cert_pem.bytes().decode()
    try:
        _points(bench, db, root, uri, ca_pem)
        _day(bench, db, uri, ca_pem)
    finally:
        service.shutdown()


def _points(bench: Bench, db: Any, root: str, uri: str, ca: str) -> None:
    symbols = db.sql("SELECT DISTINCT symbol FROM quotes WHERE date = ?",
                     params=[dt.date.fromisoformat(DAY)]).collect()["symbol"].cast(str).to_list()
    rng = random.Random(7)
    queries = 5 if bench.quick else QUERIES
    clients = 2 if bench.quick else CLIENTS
    out: dict[str, tuple[float, int, list[float]]] = {}
    for kind, target in (("adbc", uri), ("in-process", root)):
        pool = _Clients(kind, target, ca, clients)
        try:
            jobs = [[(DAY, rng.choice(symbols)) for _ in range(queries)] for _ in range(clients)]
            pool.run(jobs)                       # warm-up, untimed
            best: tuple[float, int, list[float]] | None = None
            for _ in range(max(1, bench.repeats)):
                jobs = [[(DAY, rng.choice(symbols)) for _ in range(queries)]
                        for _ in range(clients)]
                start = time.perf_counter()
                rows, lat = pool.run(jobs)
                wall = time.perf_counter() - start
                if best is None or wall < best[0]:
                    best = (wall, rows, lat)
            assert best is not None
            out[kind] = best
        finally:
            pool.close()
    lines = []
    for kind, (wall, rows, lat) in out.items():
        n = clients * queries
        bench.results.append(Result(bench.name("service_points"), f"{kind} ({clients} clients)",
                                    [wall], rows, extra={"qps": n / wall, "p50_ms":
                                                         1000 * statistics.median(lat),
                                                         "p99_ms": 1000 * _pct(lat, 0.99)}))
        lines.append(f"- {kind}: {n / wall:,.0f} symbol-day queries/s with {clients} clients; "
                     f"latency p50 {1000 * statistics.median(lat):.1f} ms, p99 "
                     f"{1000 * _pct(lat, 0.99):.1f} ms.")
        bench.log(f"  service points {kind:12s} {n / wall:8.0f} q/s  p50 "
                  f"{1000 * statistics.median(lat):.1f} ms  p99 {1000 * _pct(lat, 0.99):.1f} ms")
    ratio = (clients * queries / out["adbc"][0]) / (clients * queries / out["in-process"][0])
    lines.append(f"- through the service: **{ratio:.2f}x** the in-process throughput.")
    bench.summary.setdefault(bench.name("service"), []).extend(lines)


def _day(bench: Bench, db: Any, uri: str, ca: str) -> None:
    import adbc_driver_flightsql.dbapi as fsql
    import duckdb
    day = dt.date.fromisoformat(DAY)
    duck_path = os.path.join(bench.work, "service-duck.db")
    if os.path.exists(duck_path):
        os.remove(duck_path)
    con = duckdb.connect(duck_path)
    arrow_day = db.sql(SQL_DAY, params=[day]).to_arrow()
    con.register("d", arrow_day)
    con.execute("CREATE TABLE quotes AS SELECT * REPLACE (CAST(symbol AS VARCHAR) AS symbol, "
                "CAST(ex AS VARCHAR) AS ex, CAST(mmid AS VARCHAR) AS mmid) FROM d")
    con.unregister("d")
    del arrow_day
    conn = fsql.connect(uri, autocommit=True, db_kwargs={
        "username": USER, "password": PASSWORD,
        "adbc.flight.sql.client_option.tls_root_certs": ca})
    cur = conn.cursor()

    def via_adbc() -> Any:
        cur.execute(SQL_DAY, [day])
        return cur.fetch_arrow_table()

    try:
        results = measure(bench, "service_day", {
            "hfq via ADBC (service, TLS)": Answer.of(via_adbc, price_check),
            "hfq in-process db.sql().to_arrow()": Answer.of(
                lambda: db.sql(SQL_DAY, params=[day]).to_arrow(), price_check),
            "DuckDB to_arrow_table (file)": Answer.of(
                lambda: duck_arrow(con.sql("SELECT * FROM quotes WHERE date = ?",
                                           params=[day])), price_check),
        }, rtol=1e-9)
    finally:
        conn.close()
        con.close()
    adbc, local, duck = results
    bench.summary.setdefault(bench.name("service"), []).extend([
        target_line(f"a {adbc.rows:,}-row day through the service vs in-process", adbc, local,
                    0.7),
        f"- vs DuckDB's Arrow fetch of the same rows: {duck.median / adbc.median:.2f}x "
        f"(service {adbc.median:.2f} s, in-process {local.median:.2f} s, DuckDB "
        f"{duck.median:.2f} s)."])
