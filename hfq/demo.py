"""The demo behind ``hfq demo``: a synthetic TAQ week from CSV to answers, timed against pickle."""

from __future__ import annotations

import datetime as dt
import gc
import os
import pickle
import shutil
import time
from collections.abc import Callable
from typing import Any

__all__ = ["clock_axis", "clock_times", "default_demo_dir", "example_quotes", "plot_spread",
           "run_demo", "trading_days"]

#: What the demo writes under its directory; only these are replaced by the next run.
DEMO_ENTRIES = ("csv", "db", "day.pkl", "spread_by_minute.png")


def default_demo_dir() -> str:
    """Where ``hfq demo`` writes unless told: ``$HFQ_DEMO_DIR``, else ``hfq/demo`` under
    ``$XDG_CACHE_HOME`` (``~/.cache`` when unset) -- never inside the current directory, so a
    demo run in a clone of the repository leaves the clone as it was."""
    explicit = os.environ.get("HFQ_DEMO_DIR")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(os.path.join(cache, "hfq", "demo"))


def example_quotes(*, days: int = 2, rows_per_day: int = 5000, symbols: int = 50,
                   buckets: int = 2) -> Any:
    """A small synthetic TAQ ``quotes`` table in a new database under a temporary directory
    (removed when the process exits): what the API reference's examples run on.

    Examples
    --------
    >>> from hfq.demo import example_quotes
    >>> quotes = example_quotes(days=2, rows_per_day=1000)
    >>> len(quotes), quotes.db.tables()
    (2000, ['quotes'])
    """
    import atexit
    import tempfile

    import hfq
    workdir = tempfile.mkdtemp(prefix="hfq-ex-")
    atexit.register(shutil.rmtree, workdir, True)
    db = hfq.connect(os.path.join(workdir, "db"), threads=1, progress="never")
    quotes = db.create_table("quotes", hfq.schemas.TAQ,
                             partition_by=hfq.Compo(hfq.Value("date"),
                                                    hfq.Hash("symbol", buckets)),
                             sort_by=("symbol", "time"))
    quotes.append(hfq.synth.taq_batches(dates=trading_days("2007-08-01", days),
                                        rows_per_day=rows_per_day, symbols=symbols))
    return quotes


def trading_days(first: str, count: int) -> list[str]:
    """``count`` weekdays from ``first`` on, as ISO dates."""
    day, out = dt.date.fromisoformat(first), list[str]()
    while len(out) < count:
        if day.weekday() < 5:
            out.append(day.isoformat())
        day += dt.timedelta(days=1)
    return out


def _timed(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """Best of ``repeat`` runs (warm page cache), and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        result = None
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files)


def _clear(workdir: str) -> None:
    """Remove what an earlier demo wrote under ``workdir`` (and nothing else there)."""
    for entry in DEMO_ENTRIES:
        path = os.path.join(workdir, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)


def run_demo(workdir: str | None = None, *, days: int = 5, rows_per_day: int = 2_000_000,
             symbols: int = 8000, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Generate, ingest, read and query a synthetic TAQ week; print and return the timings.

    Writes under ``workdir`` (default :func:`default_demo_dir`): ``csv/``, ``db/``,
    ``day.pkl`` and ``spread_by_minute.png``, replacing those of an earlier run; the result's
    ``workdir`` and ``workdir_bytes`` say where and how much.

    ``hfq demo`` and ``bash run.sh demo`` run it (CI runs a small one first, see ``.ci/run``);
    it is the command's engine, not part of the public API.
    """
    import hfq
    from hfq import synth

    workdir = os.path.abspath(workdir or default_demo_dir())
    csv_dir = os.path.join(workdir, "csv")
    root = os.path.join(workdir, "db")
    os.makedirs(workdir, exist_ok=True)
    _clear(workdir)
    os.makedirs(csv_dir)
    echo(f"writing under {workdir}")
    dates = trading_days("2007-08-01", days)
    out: dict[str, Any] = {"workdir": workdir}

    echo(f"1. writing {days} days x {rows_per_day:,} synthetic TAQ quotes as raw CSV ...")
    start = time.perf_counter()
    files = synth.taq_csv_files(csv_dir, dates=dates, rows_per_day=rows_per_day,
                                symbols=symbols)
    csv_bytes = sum(os.path.getsize(f) for f in files)
    echo(f"   {len(files)} files, {csv_bytes / 1e6:,.0f} MB in "
         f"{time.perf_counter() - start:.1f} s")

    db = hfq.connect(root)
    # about a million rows a partition: the published layout (100 buckets a day) is sized for
    # 230 M-row days; smaller days get fewer buckets, so files stay large enough to stream
    buckets = max(1, min(100, rows_per_day // 1_000_000))
    quotes = db.create_table("quotes", hfq.schemas.TAQ,
                             partition_by=hfq.Compo(hfq.Value("date"),
                                                    hfq.Hash("symbol", buckets)),
                             sort_by=("symbol", "time"))
    echo("2. loading the CSV files (parse, partition, sort, encode, compress, commit) ...")
    report = db.load_csv("quotes", [os.path.join(csv_dir, "taq_*.csv")])
    disk = _dir_bytes(os.path.join(root, "quotes"))
    echo(f"   {report}")
    echo(f"   on disk {disk / 1e6:,.{0 if disk >= 1e7 else 1}f} MB = 1/{csv_bytes / disk:.1f} "
         "of the CSV")
    out.update(rows=report.rows, load_rows_per_s=report.rows_per_s, csv_bytes=csv_bytes,
               disk_bytes=disk)

    day = dates[len(dates) // 2]
    echo(f"3. reading one full day ({day}), all columns, warm cache, best of 3 ...")
    t_arrow, table = _timed(lambda: quotes.scan(dates=day).to_arrow())
    t_polars, _ = _timed(lambda: quotes.scan(dates=day).to_polars())
    t_pandas, frame = _timed(lambda: quotes.scan(dates=day).to_pandas())
    # the same day as a pandas user keeps it: text columns as Python strings
    plain = frame.astype({"symbol": object, "ex": object, "mmid": object})
    pickle_path = os.path.join(workdir, "day.pkl")
    with open(pickle_path, "wb") as fh:
        pickle.dump(plain, fh, protocol=pickle.HIGHEST_PROTOCOL)
    del plain

    def load_pickle() -> Any:
        with open(pickle_path, "rb") as fh:
            return pickle.load(fh)

    t_pickle, _ = _timed(load_pickle)
    rows = table.num_rows
    echo(f"   {rows:,} rows")
    for label, seconds in (("hfq -> pyarrow", t_arrow), ("hfq -> polars", t_polars),
                           ("hfq -> pandas", t_pandas), ("pickle.load (pandas)", t_pickle)):
        ratio = f"  {t_pickle / seconds:5.1f}x pickle" if "hfq" in label else ""
        echo(f"   {label:22s} {seconds:7.3f} s{ratio}")
    out.update(day_rows=rows, read_arrow_s=t_arrow, read_polars_s=t_polars,
               read_pandas_s=t_pandas, pickle_load_s=t_pickle)

    symbol = "IBM"
    echo(f"4. point query: {symbol} on {day} ...")
    scan = quotes.scan(dates=day, symbols=[symbol])
    t_point, point = _timed(lambda: scan.to_polars())
    echo("   " + scan.explain().replace("\n", "\n   "))
    share = (f"1/{t_arrow / t_point:.0f} of" if t_point * 2 <= t_arrow else
             f"{t_point / t_arrow:.1f}x")   # tiny days: a point read costs about a day's
    echo(f"   {point.height:,} rows in {t_point * 1e3:.1f} ms ({share} the full-day read)")
    echo(str(point.head(5)))
    out.update(point_rows=point.height, point_s=t_point)

    out.update(_queries(db, day, dates, echo))
    out.update(_analytics(db, quotes, workdir, dates, echo))
    out.update(_live(db, quotes, dates, rows_per_day, symbols, echo))
    db.close()

    sizes = {entry: _entry_bytes(os.path.join(workdir, entry)) for entry in DEMO_ENTRIES}
    out.update(workdir_bytes=sum(sizes.values()))
    parts = ", ".join(f"{entry}{'/' if entry in ('csv', 'db') else ''} {b / 1e6:,.1f} MB"
                      for entry, b in sizes.items())
    echo(f"9. the demo's files: {workdir} ({out['workdir_bytes'] / 1e6:,.1f} MB: {parts})")
    if set(os.listdir(workdir)) <= set(DEMO_ENTRIES):
        echo(f"   remove them with: rm -rf {workdir}")
    return out


def _live(db: Any, quotes: Any, dates: list[str], rows_per_day: int, symbols: int,
          echo: Callable[[str], None], *, seconds: float = 3.0,
          most: int = 1_000_000) -> dict[str, Any]:
    """Step 8: the next day's ticks published live into ``quotes`` (the demo's size, at most
    ``most`` rows, for at most ``seconds``), in 1,000-row batches: each durable on its node
    when ``publish`` returns; a subscriber and a bars engine take them as they come; one SQL
    reads the files' days and the live one together; then the day is written down
    (:mod:`hfq.live`)."""
    from hfq import synth
    from hfq.live import TimeSeriesEngine
    day = trading_days(dates[-1], 2)[1]
    rows = min(rows_per_day, most)
    echo(f"8. live: publishing {day}'s {rows:,} quotes into quotes, 1,000-row batches, "
         f"for at most {seconds:.0f} s ...")
    ticks = synth.taq_table(dates=[day], rows_per_day=rows, symbols=symbols,
                            seed=26).sort_by("time")
    pub = quotes.publisher(name="demo-feed")
    sub = quotes.subscribe(symbols="IBM", start="now", wait_s=0)
    bars = TimeSeriesEngine(window="1m", kind="quotes")
    published = ibm = closed = counted = 0
    in_publish = 0.0
    started = time.perf_counter()
    for batch in ticks.to_batches(max_chunksize=1000):
        start = time.perf_counter()
        pub.publish(batch)            # returns once the batch is fsynced on its nodes
        in_publish += time.perf_counter() - start
        published += batch.num_rows
        got_bars = bars.feed(batch)
        closed += got_bars.height
        counted += int(got_bars["count"].sum())
        ibm += sum(got.num_rows for got in iter(sub.poll, None))
        if time.perf_counter() - started >= seconds:
            break
    took = time.perf_counter() - started
    sub.wait_s = 0.5                  # what the last polls had not seen yet
    ibm += sum(got.num_rows for got in iter(sub.poll, None))
    echo(f"   {published:,} rows acknowledged, each batch fsynced before publish returned: "
         f"{published / in_publish:,.0f} rows/s in publish ({in_publish:.2f} s); "
         f"{published / took:,.0f} rows/s with the bars and the subscriber in the loop")
    ibm_sql = quotes.scan(dates=day, symbols="IBM").count()
    rest = bars.flush()               # the windows still open at the end
    ticks_in_bars = int(rest["count"].sum()) + counted
    echo(f"   the IBM subscriber got {ibm:,} rows as they came (the table's IBM rows that "
         f"day: {ibm_sql:,}); {closed:,} minute bars closed as the ticks arrived, "
         f"{rest.height:,} more at the end ({ticks_in_bars:,} ticks in all)")
    per_day = db.sql("SELECT date, count(*) AS n FROM quotes GROUP BY date ORDER BY date"
                     ).collect()
    days_text = ", ".join(f"{d}{' (live)' if str(d) == day else ''}: {n:,}"
                          for d, n in per_day.iter_rows())
    echo(f"   one SQL over the files and the live rows: {days_text}")
    done = quotes.write_down(day)
    after = db.sql(f"SELECT count(*) AS n FROM quotes WHERE date = DATE '{day}'").collect()
    echo(f"   written down: {done.rows:,} rows into {done.partitions} partition(s) in "
         f"{done.seconds:.2f} s (version {done.version}); the day in SQL now: "
         f"{after['n'][0]:,} rows")
    return {"live_rows": published, "live_rows_per_s": published / in_publish,
            "live_ibm": ibm, "live_ibm_sql": ibm_sql, "live_bars": closed,
            "live_bar_ticks": ticks_in_bars,
            "live_sql_rows": int(per_day["n"].sum()),
            "live_written_down": done.rows,
            "live_after_rows": int(after["n"][0]),
            "live_days": per_day.height}


def _entry_bytes(path: str) -> int:
    if os.path.isdir(path):
        return _dir_bytes(path)
    return os.path.getsize(path) if os.path.exists(path) else 0


def _queries(db: Any, day: str, dates: list[str], echo: Callable[..., Any]) -> dict[str, Any]:
    """Step 4b: questions asked as queries -- SQL and the same through the Python API --
    run next to the data (filters and partial aggregates per partition, merged)."""
    import polars as pl

    import hfq
    echo("4b. queries: the spread of three symbols that day, in SQL and in Python ...")
    text = (f"SELECT symbol, count(*) AS quotes, avg((ofr - bid) / (ofr + bid)) * 2 AS spread "
            f"FROM quotes WHERE date = '{day}' AND symbol IN ('IBM', 'MSFT', 'GE') "
            f"AND ofr > bid AND bid > 0 GROUP BY symbol ORDER BY symbol")
    echo(f"   db.sql({text!r})")
    t_sql, by_sql = _timed(lambda: db.sql(text).collect())
    bid, ofr = pl.col("bid"), pl.col("ofr")
    query = (db["quotes"].query(dates=day, symbols=["IBM", "MSFT", "GE"])
             .filter((ofr > bid) & (bid > 0))
             .group_by("symbol")
             .agg(quotes=pl.len(), spread=((ofr - bid) / (ofr + bid)).mean() * 2)
             .sort("symbol"))
    t_py, by_py = _timed(query.collect)
    echo(str(by_sql))
    same = by_sql.with_columns(pl.col("symbol").cast(pl.String)).equals(
        by_py.with_columns(pl.col("symbol").cast(pl.String), pl.col("quotes").cast(pl.Int64)))
    echo(f"   SQL {t_sql * 1e3:.1f} ms, Python API {t_py * 1e3:.1f} ms; same answer: {same}")
    busiest = ("SELECT time_bucket(INTERVAL '1 minute', time) AS minute, count(*) AS n, "
               "max(ofr) - min(bid) AS range FROM quotes WHERE symbol = 'IBM' "
               "GROUP BY minute ORDER BY n DESC, minute LIMIT 5")
    echo(f"   IBM's five busiest minutes of the week: db.sql({busiest!r})")
    t_top, top = _timed(lambda: db.sql(busiest).collect())
    echo(str(top))
    days = [dt.date.fromisoformat(d) for d in dates]
    mids = db["quotes"].query(symbols="IBM").group_by("date", hfq.bucket("time", "1h")) \
        .agg(mid=((bid + ofr) / 2).mean()).pivot("date", index="time", values="mid",
                                                 columns=days)
    t_pivot, hours = _timed(mids.collect)
    echo("   IBM's mean mid-quote per hour, one column per day (pivot):")
    echo(str(hours.head(4)))
    echo("   what ran where: " + db.sql(text).explain().replace("\n", "\n   "))
    echo(f"   {t_top * 1e3:.1f} ms, {t_pivot * 1e3:.1f} ms")
    return {"query_sql_s": t_sql, "query_python_s": t_py, "query_same": same,
            "query_top_s": t_top, "query_pivot_s": t_pivot}


def _analytics(db: Any, quotes: Any, workdir: str, dates: list[str],
               echo: Callable[..., Any]) -> dict[str, Any]:
    """Steps 5-7: the three published analytics, each partition reduced where it lives."""
    import polars as pl

    from hfq import analytics as ha
    db.session.nodes_for(start=True)   # start the embedded one-node cluster outside the timings
    echo("5. spread by minute over the week (numba kernel per partition, merged) ...")
    ha.spread_by_minute(quotes, progress=False)   # first run: compile / load the kernel
    t_spread, curve = _timed(lambda: ha.spread_by_minute(quotes, progress=False))
    png = os.path.join(workdir, "spread_by_minute.png")
    plot_spread(curve, png, title=f"Quoted spread by minute, {dates[0]} .. {dates[-1]}")
    echo(f"   {curve.height} minutes from {int(curve['n'].sum()):,} quotes in {t_spread:.3f} s "
         f"({len(quotes) / t_spread / 1e6:,.0f} M rows/s); plot: {png}")

    echo("6. one-minute bars, written back next to each partition as table quotes_1m ...")
    start = time.perf_counter()
    bars = ha.minute_bars(quotes, "quotes_1m", bar="1m", progress=False)
    t_bars = time.perf_counter() - start
    echo(f"   {bars:,} bars in {t_bars:.2f} s")
    echo(str(db["quotes_1m"].to_polars(symbols="IBM").head(3)))

    echo("7. OLS: relative spread on quote size in dollars (robust HC1 errors) ...")
    bid, ofr = pl.col("bid"), pl.col("ofr")
    start = time.perf_counter()
    fit = ha.ols(quotes, y=ofr / bid - 1,
                 x={"quote_size": (pl.col("bidsiz") + pl.col("ofrsiz")) * (ofr + bid) / 2},
                 where=(ofr > bid) & (bid > 0) & (ofr / bid < 1.2), robust="HC1",
                 progress=False)
    t_ols = time.perf_counter() - start
    echo("   " + fit.summary().replace("\n", "\n   "))
    echo(f"   in {t_ols:.2f} s (two passes: moments, then residuals for HC1)")
    return {"spread_s": t_spread, "spread_png": png, "bars": bars, "bars_s": t_bars,
            "ols_s": t_ols, "ols_coef": fit.coef}


def plot_spread(curve: Any, path: str | None = None, *,
                title: str = "Quoted spread by minute", ax: Any = None) -> Any:
    """Draw a :func:`~hfq.analytics.spread_by_minute` curve with a clock-time x axis
    (``09:30`` ... ``16:00``), into the PNG file ``path`` (returned) or, without ``path``,
    onto ``ax`` or a new figure (the axes are returned; a notebook shows them inline).

    Examples
    --------
    >>> import datetime as dt, matplotlib.pyplot as plt, polars as pl
    >>> curve = pl.DataFrame({"minute": [dt.time(9, 30), dt.time(12, 0), dt.time(15, 59)],
    ...                       "avg_spread": [0.002, 0.001, 0.0015], "n": [10, 20, 30]})
    >>> ax = plot_spread(curve)
    >>> ax.get_xlabel()
    'time of day'
    >>> plt.close(ax.figure)
    """
    import matplotlib
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 4), dpi=110)
    ax.plot(clock_times(curve["minute"]), curve["avg_spread"] * 1e4, lw=1.2)
    clock_axis(ax)
    ax.set_ylabel("average quoted spread (bp)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if path is None:
        return ax
    figure = fig or ax.figure
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def clock_times(times: Any) -> list[dt.datetime]:
    """Times of day (``datetime.time``, e.g. a polars Time column) as datetimes on one
    arbitrary day, which matplotlib can put on a clock-time axis (see :func:`clock_axis`).

    Examples
    --------
    >>> import datetime as dt
    >>> clock_times([dt.time(9, 30)])
    [datetime.datetime(2000, 1, 3, 9, 30)]
    """
    return [dt.datetime.combine(_CLOCK_DAY, t) for t in times]


def clock_axis(ax: Any, *, axis: str = "x", label: str = "time of day") -> None:
    """Format an axis of datetimes made by :func:`clock_times` as a clock (``HH:MM``).

    Examples
    --------
    >>> import datetime as dt, matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot(clock_times([dt.time(9, 30), dt.time(16, 0)]), [1, 2])
    >>> clock_axis(ax)
    >>> fig.canvas.draw()
    >>> [t.get_text() for t in ax.get_xticklabels()][:2]
    ['10:00', '11:00']
    >>> plt.close(fig)
    """
    import matplotlib.dates as mdates
    target = ax.xaxis if axis == "x" else ax.yaxis
    locator = mdates.AutoDateLocator(minticks=4, maxticks=10)
    target.set_major_locator(locator)
    target.set_major_formatter(mdates.DateFormatter("%H:%M"))
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)


_CLOCK_DAY = dt.date(2000, 1, 3)
