"""Data that changes (issue 27): what corrections, upserts and time travel cost.

* ``flat``: deleting, and overwriting, one symbol-day on a 250-day table vs the same on a
  1-day table holding the same day (target: <= 1.5x -- a change costs the partitions it
  touches, not the table).  Each timed run works on another symbol of that day; both tables
  do the same runs, and their rows removed must agree.
* ``upsert``: a vendor resends a few tickers of one day, about 1% of its rows, with corrected
  bid/ofr: hfq ``upsert`` on its dedup key vs DuckDB ``INSERT OR REPLACE`` (a PRIMARY KEY
  table) and ``MERGE INTO``, and ArcticDB ``update`` (a symbol per ticker, indexed by time:
  the resent ticker-days replace their date range).  Each run applies the same correction;
  every contender's table is checked after it: rows and the sums of bid and ofr.
* ``as_of``: the version of an instant in the middle of a table's history, read as a count,
  on a table of 10,000 versions vs one of 10 (target: <= 2x -- a binary search over the
  version numbers, not a walk of the chain).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable

import numpy as np
import polars as pl

import hfq
from harness import DAY, Answer, Bench, measure, target_line

KEY = ("symbol", "date", "seq")


def _schema() -> hfq.schema.Schema:
    return hfq.schema.Schema([*hfq.schemas.TAQ, ("seq", hfq.schema.LONG)])


def _day(day: str, rows: int, symbols: int, seed: int) -> pl.DataFrame:
    frame = pl.from_arrow(hfq.synth.taq_table(dates=(day,), rows_per_day=rows,
                                              symbols=symbols, seed=seed))
    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(seq=pl.int_range(pl.len(), dtype=pl.Int64))


def _table(root: str, name: str, buckets: int, **options) -> hfq.Table:
    shutil.rmtree(root, ignore_errors=True)
    db = hfq.connect(root, compression="lz4")
    return db.create_table(name, _schema(), partition_by=hfq.Compo(
        hfq.Value("date"), hfq.Hash("symbol", buckets)), sort_by=("symbol", "time"), **options)


def scenario_lifecycle(bench: Bench) -> None:
    base = os.path.join(bench.work, "lifecycle")
    os.makedirs(base, exist_ok=True)
    _flat(bench, base)
    _upsert(bench, base)
    _as_of(bench, base)


# -- a change costs what it touches -------------------------------------------------------------
def _flat(bench: Bench, base: str) -> None:
    days = 250
    per_day = 2_000 if bench.quick else min(bench.rows, 200_000)
    symbols = 50 if bench.quick else 400
    buckets = 4 if bench.quick else 16
    shared = _day(DAY, per_day, symbols, seed=27)
    big = _table(os.path.join(base, "big"), "q", buckets)
    small = _table(os.path.join(base, "small"), "q", buckets)
    small.append(shared)
    start = dt.date.fromisoformat(DAY)
    others = [(start + dt.timedelta(days=i)).isoformat() for i in range(1, days)]
    big.append(shared)
    for i in range(0, len(others), 25):   # 10 appends of 25 days each
        chunk = pl.concat([_day(d, per_day, symbols, seed=1000 + i + k)
                           for k, d in enumerate(others[i:i + 25])])
        big.append(chunk)
    names = shared["symbol"].cast(pl.String).value_counts(sort=True)["symbol"].to_list()
    runs = bench.repeats + 1
    order = {"big": iter(names[:runs]), "small": iter(names[:runs])}
    slices = {"big": iter(names[runs:2 * runs]), "small": iter(names[runs:2 * runs])}

    def delete(t: hfq.Table, which: str):
        def run():
            report = t.delete(dates=DAY, symbols=next(order[which]))
            return report.rows_removed, None
        return run

    def overwrite(t: hfq.Table, which: str):
        def run():
            sym = next(slices[which])
            rows = shared.filter(pl.col("symbol").cast(pl.String) == sym) \
                .with_columns(bid=pl.col("bid") + 0.01)
            report = t.overwrite(rows, dates=DAY, symbols=sym)
            return report.rows_added, None
        return run

    d_big, d_small = measure(bench, "lifecycle delete one symbol-day", {
        f"hfq delete, {days}-day table ({len(big):,} rows)": delete(big, "big"),
        f"hfq delete, 1-day table ({len(small):,} rows)": delete(small, "small")},
        same_answer=False)
    o_big, o_small = measure(bench, "lifecycle overwrite one symbol-day", {
        f"hfq overwrite, {days}-day table": overwrite(big, "big"),
        "hfq overwrite, 1-day table": overwrite(small, "small")}, same_answer=False)
    for a, b in ((d_big, d_small), (o_big, o_small)):
        if a.rows != b.rows:
            raise AssertionError(f"{a.scenario}: {a.rows} rows on the big table, {b.rows} on "
                                 "the small one (the same symbol-days)")
    lines = [f"- {days} days x {per_day:,} rows vs 1 day; each run deletes (overwrites) "
             "another symbol of the same day on both tables."]
    for label, big_r, small_r in (("delete", d_big, d_small), ("overwrite", o_big, o_small)):
        ratio = big_r.median / small_r.median
        lines.append(f"- {label} one symbol-day: {big_r.median * 1e3:.1f} ms on {days} days, "
                     f"{small_r.median * 1e3:.1f} ms on 1 day: **{ratio:.2f}x** (target <= "
                     f"1.5x: {'met' if ratio <= 1.5 else 'not met'}).")
    bench.summary.setdefault(bench.name("lifecycle"), []).extend(lines)


# -- upsert 1% of a day vs DuckDB and ArcticDB -----------------------------------------------
def _upsert(bench: Bench, base: str) -> None:
    import duckdb
    import pandas as pd
    from arcticdb import Arctic

    rows = bench.rows
    day = _day(DAY, rows, bench.symbols, seed=41)
    counts = day["symbol"].cast(pl.String).value_counts().sort("symbol")
    chosen, total = [], 0   # tickers, from the quietest up, until about 1% of the rows
    for sym, n in counts.sort("count").rows():
        if total + n > rows // 100 and chosen:
            break
        chosen.append(sym)
        total += n
    fix = day.filter(pl.col("symbol").cast(pl.String).is_in(chosen)) \
        .with_columns(bid=pl.col("bid") * 1.001, ofr=pl.col("ofr") * 1.001)
    want = (day.height, float(day["bid"].sum() - fix["bid"].sum() / 1.001 + fix["bid"].sum()))
    buckets = max(1, min(100, rows // 200_000))
    t = _table(os.path.join(base, "upsert"), "q", buckets, unique=KEY, keep="last")
    t.append(day)
    flat = day.with_columns(pl.col(pl.Categorical).cast(pl.String))
    duck = duckdb.connect(os.path.join(base, "duck.db")) if not bench.quick else \
        duckdb.connect()
    duck.execute("DROP TABLE IF EXISTS pk; DROP TABLE IF EXISTS plain")
    duck.register("day_rows", flat.to_arrow())
    duck.execute("CREATE TABLE pk AS SELECT * FROM day_rows LIMIT 0")
    duck.execute("ALTER TABLE pk ADD PRIMARY KEY (symbol, date, seq)")
    duck.execute("INSERT INTO pk SELECT * FROM day_rows")
    duck.execute("CREATE TABLE plain AS SELECT * FROM day_rows")
    duck.unregister("day_rows")
    duck.register("fix_rows", fix.with_columns(pl.col(pl.Categorical).cast(pl.String)).to_arrow())
    shutil.rmtree(os.path.join(base, "arctic"), ignore_errors=True)
    lib = Arctic(f"lmdb://{os.path.join(base, 'arctic')}").get_library(
        "lifecycle", create_if_missing=True)

    def arctic_frame(frame: pl.DataFrame) -> pd.DataFrame:
        pdf = frame.with_columns(pl.col(pl.Categorical).cast(pl.String)).to_pandas()
        index = pd.to_datetime(pdf["date"]) + pd.to_timedelta(
            frame["time"].cast(pl.Int64).to_numpy() // 10**9, unit="s")
        return pdf.drop(columns=["date", "time"]).set_index(pd.DatetimeIndex(index))

    for sym, part in flat.group_by("symbol"):
        lib.write(str(sym[0]), arctic_frame(part.sort("time", "seq")))
    fixes = {sym: arctic_frame(part.sort("time", "seq"))
             for (sym,), part in fix.group_by("symbol")}

    def duck_check(table: str) -> tuple[int, float]:
        n, total = duck.execute(f"SELECT count(*), sum(bid) FROM {table}").fetchone()
        return int(n), float(total)

    def hfq_check(_: object) -> tuple[int, float]:
        return len(t.refresh()), float(t.to_polars(columns=["bid"])["bid"].sum())

    def arctic_check(_: object) -> tuple[int, float]:
        n, total = 0, 0.0
        for sym in lib.list_symbols():
            bid = lib.read(sym, columns=["bid"]).data["bid"]
            n, total = n + len(bid), total + float(bid.sum())
        return n, total

    def merge() -> None:
        duck.execute("MERGE INTO plain USING fix_rows AS f ON plain.symbol = f.symbol AND "
                     "plain.date = f.date AND plain.seq = f.seq WHEN MATCHED THEN UPDATE SET "
                     "bid = f.bid, ofr = f.ofr WHEN NOT MATCHED THEN INSERT BY NAME")

    def answer(run: Callable[[], object], check: Callable[[object], tuple[int, float]]
               ) -> Answer:
        # the table is checked after the warm-up run, outside the timing
        return Answer.of(run, check, count=lambda _: want[0])

    results = measure(bench, "lifecycle upsert 1% of a day", {
        "hfq upsert (dedup key, keep='last')": answer(lambda: t.upsert(fix, keep="last"),
                                                      hfq_check),
        "DuckDB INSERT OR REPLACE (PRIMARY KEY)": answer(
            lambda: duck.execute("INSERT OR REPLACE INTO pk SELECT * FROM fix_rows"),
            lambda _: duck_check("pk")),
        "DuckDB MERGE INTO": answer(merge, lambda _: duck_check("plain")),
        "ArcticDB update (a symbol per ticker)": answer(
            lambda: [lib.update(sym, frame) for sym, frame in fixes.items()], arctic_check)},
        rtol=1e-9)
    for res in results:
        if res.check[0] != want[0] or not np.isclose(res.check[1], want[1], rtol=1e-9):
            raise AssertionError(f"lifecycle upsert: {res.contender} gave {res.check}, the "
                                 f"model {want}")
    hfq_r = results[0]
    lines = [f"- {fix.height:,} rows of {len(chosen)} tickers ({fix.height / rows:.1%} of a "
             f"{rows:,}-row day) resent with corrected bid/ofr; each table checked after "
             "(rows, sum of bid)."]
    lines += [target_line(f"hfq upsert vs {r.contender}", hfq_r, r, 1.0) for r in results[1:]]
    bench.summary.setdefault(bench.name("lifecycle"), []).extend(lines)


# -- as_of is a binary search ----------------------------------------------------------------------
def _as_of(bench: Bench, base: str) -> None:
    many = 300 if bench.quick else 10_000
    tables = {}
    one = _day(DAY, 10, 5, seed=3)
    for n in (10, many):   # every version holds the same row, in one file: only the count of
        t = _table(os.path.join(base, f"versions-{n}"), "q", 1)   # versions differs
        t.append(one.head(1))
        for i in range(n - 1):
            t.overwrite(one.head(1).with_columns(bid=pl.lit(float(i))), dates=DAY)
        tables[n] = t
    middle = {n: dt.datetime.fromtimestamp(t.snapshot(n // 2).committed_at, dt.timezone.utc)
              for n, t in tables.items()}

    def read(n: int):
        def run():   # READS reads a run: one read is about a millisecond, below the noise
            counts = set()
            for _ in range(READS):
                fresh = hfq.connect(tables[n].db.session.store.root)["q"]   # nothing cached
                counts.add(fresh.scan(as_of=middle[n]).count())
            return 1, counts.pop() if len(counts) == 1 else counts
        return run

    small, large = measure(bench, f"lifecycle as_of by time ({READS} reads a run)", {
        "hfq as_of, 10 versions": read(10),
        f"hfq as_of, {many:,} versions": read(many)})
    ratio = large.median / small.median
    bench.summary.setdefault(bench.name("lifecycle"), []).append(
        f"- as_of by time (a fresh handle, then a count): {small.median / READS * 1e3:.2f} ms "
        f"on 10 versions, {large.median / READS * 1e3:.2f} ms on {many:,}: **{ratio:.2f}x** "
        f"(target <= 2x: {'met' if ratio <= 2 else 'not met'}).")


READS = 20
