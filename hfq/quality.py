"""Market-data quality: per symbol-day counts of the defects tick data carries, computed where
the partitions are, and :func:`clean_quotes`, the filter the analytics examples use.

:func:`report` (``Table.quality``, ``hfq quality TABLE``) counts, for every (symbol,
date) of a quotes table:

=================  =======  ===============================================================
column             counts   rule (defaults; every threshold is a keyword of ``Rules``)
=================  =======  ===============================================================
rows               rows     rows of the symbol-day
clean              rows     rows :func:`clean_quotes` keeps
missing_price      rows     bid or ofr null, NaN or infinite
nonpositive        rows     bid or ofr zero or negative (and not missing)
sentinel           rows     bid or ofr within 0.00005 of a sentinel (214748.3647, the largest
                            32-bit integer in units of 1e-4, which real TAQ offers carry)
crossed            rows     bid > ofr, both prices valid (positive, finite, not sentinels)
locked             rows     bid == ofr, both valid
wide               rows     ofr / bid >= ``max_ratio`` (1.2), both valid, not crossed
outside_session    rows     time of day outside ``[session start, session end)``
                            (09:30-16:00, end excluded), or null; a timestamp's time of day
                            is read in its own time zone (UTC for DATETIME)
out_of_order       rows     time earlier than the previous row's, in the table's stored
                            order (none by construction when ``sort_by`` ends with the time:
                            the sort fixed the order at write; sort by symbol only to keep
                            the arrival order and see it)
duplicates         rows     a copy, in every column, of an earlier row
gap_minutes        minutes  minutes of the session without any row of the symbol-day
longest_gap        minutes  the longest run of such minutes
jumps              moves    between consecutive clean quotes (stored order), a mid
                            ``(bid + ofr) / 2`` change ``d`` with
                            ``|d - median(d)| > k * max(1.4826 * MAD(d), floor)`` over the
                            symbol-day; ``k = 10``, ``floor = 0.01`` (a cent: the MAD of
                            prices that move in ticks is often 0)
=================  =======  ===============================================================

The price checks are exclusive, in this order: missing, nonpositive, sentinel, then crossed /
locked / wide; so ``clean = rows - missing_price - nonpositive - sentinel - crossed - locked -
wide``.  The others overlap with them and with each other.

Where it runs: every symbol-day lies in one partition when each partitioning level reads the
date or the symbol column (``Compo(Value("date"), Hash("symbol", n))``, the default scheme):
then each partition is reduced to its symbol-day rows on a node that holds it and only those
rows travel.  Otherwise (e.g. partitions by exchange) the nodes send the rows and the driver
finishes (``QualityReport.on_nodes`` says which).  An embedded database without a running Ray
does the work in this process's threads, next to its files; it never starts Ray for this.

Examples
--------
>>> import polars as pl
>>> from hfq.quality import clean_quotes
>>> quotes = pl.DataFrame({"bid": [10.0, 0.0, 10.0, 10.0, 10.0],
...                        "ofr": [10.01, 10.01, 9.99, 214748.3647, 12.5]})
>>> quotes.filter(clean_quotes())["ofr"].to_list()
[10.01]
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from hfq.errors import QueryError, SchemaMismatchError
from hfq.query.plan import filter_columns
from hfq.query.read import MapTask

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from hfq.session import TableLike

__all__ = ["CHECKS", "SENTINELS", "QualityReport", "Rules", "clean_quotes", "parse_time",
           "report", "symbol_days"]

SENTINELS: tuple[float, ...] = (214748.3647,)
"""Prices that mean "no price" in TAQ files: 2**31 - 1 in units of 1e-4."""
_SENTINEL_TOL = 0.5e-4   # half a ten-thousandth: prices are exact multiples of 1e-4
_MAD_TO_SIGMA = 1.4826   # the scaled MAD estimates the standard deviation of normal data
_NS = 1_000_000_000

#: (column, unit, description) of every count, in report order; ``{...}`` are Rules fields
CHECKS: tuple[tuple[str, str, str], ...] = (
    ("missing_price", "rows", "bid or ofr null, NaN or infinite"),
    ("nonpositive", "rows", "bid or ofr zero or negative"),
    ("sentinel", "rows", "bid or ofr a sentinel ({sentinels})"),
    ("crossed", "rows", "bid > ofr"),
    ("locked", "rows", "bid == ofr"),
    ("wide", "rows", "ofr/bid >= {max_ratio}"),
    ("outside_session", "rows", "time outside {start}-{end} (or null)"),
    ("out_of_order", "rows", "time before the previous row's (stored order)"),
    ("duplicates", "rows", "copy of an earlier row"),
    ("gap_minutes", "minutes", "session minutes without a quote"),
    ("jumps", "moves", "mid moves beyond {jump_k} MADs (clean quotes)"),
)
_COUNTS = ["rows", "clean", *(c for c, _, _ in CHECKS[:9]), "gap_minutes", "longest_gap",
           "jumps"]


def parse_time(value: str | dt.time, what: str = "time") -> dt.time:
    """A time of day from ``"9:30"``, ``"09:30"``, ``"16:00:00"`` or a ``datetime.time``.

    Examples
    --------
    >>> parse_time("9:30"), parse_time("16:00:00.5")
    (datetime.time(9, 30), datetime.time(16, 0, 0, 500000))
    """
    if isinstance(value, dt.time):
        return value
    text = str(value).strip()
    try:
        return dt.time.fromisoformat(text.zfill(len(text) + 1) if text[1:2] == ":" else text)
    except ValueError:
        raise QueryError(f"quality: {what} {value!r} is not a time of day such as "
                         "'09:30'") from None


def _decimal(x: float) -> str:
    """214748.3647 as written (up to 4 decimals, no trailing zeros)."""
    return f"{x:.4f}".rstrip("0").rstrip(".")


def _ns(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * _NS + t.microsecond * 1000


@dataclass(frozen=True)
class Rules:
    """What counts as a defect (see the module's table); the defaults are the analytics'.

    Parameters
    ----------
    session
        ``(start, end)`` times of day, end excluded (``"09:30"``, ``"16:00"``).
    max_ratio
        ``ofr / bid`` at or above this is ``wide`` (and not clean).
    sentinels
        Prices that mean "no price".
    jump_k, jump_floor
        A mid move is a jump beyond ``jump_k`` scaled MADs of the symbol-day's moves, the
        scale never below ``jump_floor`` (price units).
    bid, ofr, time
        The columns read as bid, offer and time.

    Examples
    --------
    >>> Rules(session=("10:00", "15:30")).minutes
    330
    """

    session: tuple[str | dt.time, str | dt.time] = ("09:30", "16:00")
    max_ratio: float = 1.2
    sentinels: tuple[float, ...] = SENTINELS
    jump_k: float = 10.0
    jump_floor: float = 0.01
    bid: str = "bid"
    ofr: str = "ofr"
    time: str = "time"
    start: dt.time = field(init=False, repr=False)
    end: dt.time = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.session) != 2:
            raise QueryError(f"quality: session must be (start, end), not {self.session!r}")
        start = parse_time(self.session[0], "session start")
        end = parse_time(self.session[1], "session end")
        if start >= end:
            raise QueryError(f"quality: the session starts ({start}) after it ends ({end})")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "sentinels", tuple(float(s) for s in self.sentinels))
        for name, value, least in (("max_ratio", self.max_ratio, 1.0),
                                   ("jump_k", self.jump_k, 0.0),
                                   ("jump_floor", self.jump_floor, 0.0)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and
                    value > least if name != "jump_floor" else value >= least):
                raise QueryError(f"quality: {name} must be a number above {least}, "
                                 f"not {value!r}")

    @property
    def minutes(self) -> int:
        """Minutes of the session (a started minute counts).

        Examples
        --------
        >>> from hfq.quality import Rules
        >>> Rules().minutes, Rules(session=("09:30", "09:30:01")).minutes
        (390, 1)
        """
        return -(-(_ns(self.end) - _ns(self.start)) // (60 * _NS))

    def describe(self, column: str) -> str:
        """The description of a count, with this rule set's values.

        Examples
        --------
        >>> from hfq.quality import Rules
        >>> Rules(max_ratio=1.5).describe("wide")
        'ofr/bid >= 1.5'
        >>> Rules(session=("04:00", "20:00")).describe("outside_session")
        'time outside 04:00-20:00 (or null)'
        """
        text = next(d for c, _, d in CHECKS if c == column)
        return text.format(sentinels=", ".join(_decimal(s) for s in self.sentinels) or "none",
                           max_ratio=f"{self.max_ratio:g}", jump_k=f"{self.jump_k:g}",
                           start=self.start.strftime("%H:%M"), end=self.end.strftime("%H:%M"))


def clean_quotes(bid: str = "bid", ofr: str = "ofr", *, max_ratio: float = 1.2,
                 sentinels: Iterable[float] = SENTINELS) -> pl.Expr:
    """The quotes worth computing on, as a polars expression: finite positive prices, neither a
    sentinel, ``ofr > bid`` and ``ofr / bid < max_ratio`` -- what the published analytics
    filter on (``ofr > bid > 0``, ``ofr/bid < 1.2``), with the sentinel check explicit.
    Never null: a row with a null price is not clean.

    Use it as ``where=`` of a scan, ``map_reduce`` or an analytic, or in ``frame.filter``.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq.quality import clean_quotes
    >>> df = pl.DataFrame({"bid": [20.0, 20.0, None, float("nan"), 20.0],
    ...                    "ofr": [20.02, 20.0, 20.02, 20.02, 30.0]})
    >>> df.with_columns(clean=clean_quotes())["clean"].to_list()
    [True, False, False, False, False]
    """
    b, o = pl.col(bid), pl.col(ofr)
    expr = b.is_finite() & o.is_finite() & (b > 0) & (o > b) & (o / b < max_ratio)
    for s in sentinels:
        expr = expr & ~_near(b, float(s)) & ~_near(o, float(s))
    return expr.fill_null(False)


def _near(x: pl.Expr, value: float) -> pl.Expr:
    return (x - value).abs() <= _SENTINEL_TOL


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema={"symbol": pl.String, "date": pl.Date,
                                **dict.fromkeys(_COUNTS, pl.Int64)})


def symbol_days(frame: pl.DataFrame, rules: Rules, *, symbol: str = "symbol",
                date: str = "date") -> pl.DataFrame:
    """The quality counts of every (symbol, date) of ``frame``: one row each, sorted, with the
    columns ``symbol``, ``date`` and those of the module's table.  ``frame`` holds every
    column of the table (duplicates compare all of them), rows in stored order.

    Examples
    --------
    >>> import datetime as dt, polars as pl
    >>> df = pl.DataFrame({"symbol": ["A"] * 4, "date": [dt.date(2007, 8, 1)] * 4,
    ...                    "time": [dt.time(9, 30), dt.time(9, 31), dt.time(9, 31),
    ...                             dt.time(17, 0)],
    ...                    "bid": [10.0, 10.0, 10.0, 10.0], "ofr": [10.01, 9.99, 9.99, 10.01]})
    >>> row = symbol_days(df, Rules()).row(0, named=True)
    >>> row["rows"], row["clean"], row["crossed"], row["duplicates"], row["outside_session"]
    (4, 2, 2, 1, 1)
    >>> row["gap_minutes"], row["longest_gap"]
    (388, 388)
    """
    if frame.height == 0:
        return _empty()
    keys = ["__symbol", "__date"]
    b, o, t = pl.col(rules.bid), pl.col(rules.ofr), pl.col(rules.time)
    missing = ~(b.is_finite() & o.is_finite()).fill_null(False)
    nonpositive = ~missing & ((b <= 0) | (o <= 0))
    sentinel = pl.lit(False)
    for s in rules.sentinels:
        sentinel = sentinel | _near(b, s) | _near(o, s)
    sentinel = ~missing & ~nonpositive & sentinel
    valid = ~missing & ~nonpositive & ~sentinel
    clean = valid & (o > b) & (o / b < rules.max_ratio)
    is_time = frame.schema[rules.time] == pl.Time
    tod = (t if is_time else t.dt.time()).cast(pl.Int64)
    start, end = _ns(rules.start), _ns(rules.end)
    in_session = tod.is_between(start, end, closed="left").fill_null(False)
    stamp = t.to_physical()
    originals = frame.columns
    f = frame.with_columns(
        pl.col(symbol).cast(pl.String).alias("__symbol"), pl.col(date).alias("__date"),
        missing.alias("__missing"), nonpositive.alias("__nonpositive"),
        sentinel.alias("__sentinel"), valid.alias("__valid"), clean.alias("__clean"),
        in_session.alias("__in_session"),
        (stamp < stamp.shift(1).over(symbol, date)).fill_null(False).alias("__out_of_order"),
        (~pl.struct(originals).is_first_distinct()).alias("__duplicate"),
        ((tod - start) // (60 * _NS)).alias("__minute"),
    )
    v = pl.col("__valid")
    counts = f.group_by(keys).agg(
        rows=pl.len(), clean=pl.col("__clean").sum(), missing_price=pl.col("__missing").sum(),
        nonpositive=pl.col("__nonpositive").sum(), sentinel=pl.col("__sentinel").sum(),
        crossed=(v & (b > o)).sum(), locked=(v & (b == o)).sum(),
        wide=(v & (o > b) & (o / b >= rules.max_ratio)).sum(),
        outside_session=(~pl.col("__in_session")).sum(),
        out_of_order=pl.col("__out_of_order").sum(), duplicates=pl.col("__duplicate").sum())
    out = (counts.join(_gaps(f, keys, rules.minutes), on=keys, how="left")
           .join(_jumps(f, keys, rules), on=keys, how="left")
           .with_columns(pl.col("gap_minutes", "longest_gap").fill_null(rules.minutes),
                         pl.col("jumps").fill_null(0))
           .rename({"__symbol": "symbol", "__date": "date"}))
    return out.select("symbol", "date", *_COUNTS).cast(
        dict.fromkeys(_COUNTS, pl.Int64)).sort("symbol", "date")


def _gaps(f: pl.DataFrame, keys: list[str], minutes: int) -> pl.DataFrame:
    """Per symbol-day with rows in the session: minutes without any, and the longest run."""
    seen = f.filter(pl.col("__in_session")).select(*keys, "__minute").unique()
    if seen.height == 0:
        return pl.DataFrame(schema={**{k: f.schema[k] for k in keys},
                                    "gap_minutes": pl.Int64, "longest_gap": pl.Int64})
    ends = seen.select(keys).unique()
    edges = pl.concat([seen, ends.with_columns(__minute=pl.lit(-1, pl.Int64)),
                       ends.with_columns(__minute=pl.lit(minutes, pl.Int64))])
    runs = edges.sort(*keys, "__minute").with_columns(
        run=(pl.col("__minute").diff().over(keys) - 1))
    return runs.group_by(keys).agg(gap_minutes=minutes - (pl.len() - 2),
                                   longest_gap=pl.col("run").max())


def _jumps(f: pl.DataFrame, keys: list[str], rules: Rules) -> pl.DataFrame:
    """Per symbol-day: robust outliers among the mid moves between consecutive clean quotes."""
    mid = (pl.col(rules.bid) + pl.col(rules.ofr)) / 2
    moves = (f.filter(pl.col("__clean")).select(*keys, move=mid.diff().over(keys))
             .drop_nulls("move"))
    dev = (pl.col("move") - pl.col("move").median().over(keys)).abs()
    scale = pl.max_horizontal(_MAD_TO_SIGMA * pl.col("dev").median().over(keys),
                              pl.lit(rules.jump_floor))
    return (moves.with_columns(dev=dev).group_by(keys)
            .agg(jumps=(pl.col("dev") > rules.jump_k * scale).sum()))


@dataclass(frozen=True)
class _PartitionQuality:
    """The task's map function: one partition's symbol-days (``finish``), or its rows for the
    driver to finish when a symbol-day may span partitions."""

    rules: Rules
    symbol: str
    date: str
    finish: bool

    def __call__(self, frame: pl.DataFrame) -> pl.DataFrame:
        if not self.finish:
            return frame
        return symbol_days(frame, self.rules, symbol=self.symbol, date=self.date)


@dataclass(frozen=True)
class QualityReport:
    """What :func:`report` returns: ``by_symbol_day`` (polars, one row per symbol-day),
    :meth:`summary`, :meth:`plot` (a PNG), and ``str()`` (the summary as text).

    Examples
    --------
    >>> import polars as pl
    >>> rep = quotes.quality()          # Table.quality: sugar for hfq.quality.report(quotes)
    >>> rep.by_symbol_day.select("symbol", "date", "rows", "clean", "crossed").head(2).rows()
    [('A', datetime.date(2007, 8, 1), 13, 13, 0), ('A', datetime.date(2007, 8, 2), 10, 9, 0)]
    >>> rep.summary().filter(pl.col("count") > 0)["check"].to_list()
    ['nonpositive', 'sentinel', 'crossed', 'outside_session', 'gap_minutes', 'jumps']
    """

    table: str
    version: int
    rules: Rules
    by_symbol_day: pl.DataFrame
    partitions: int
    on_nodes: bool
    """True when each partition was reduced on a node holding it (the symbol-days could not
    span partitions); False when the driver finished from the rows."""

    @property
    def rows(self) -> int:
        """The rows examined: the sum of ``by_symbol_day["rows"]``.

        Examples
        --------
        >>> rep = quotes.quality(dates="2007-08-01")
        >>> rep.rows, rep.rows == len(quotes.to_polars(dates="2007-08-01"))
        (5000, True)
        """
        return int(self.by_symbol_day["rows"].sum())

    def summary(self) -> pl.DataFrame:
        """One row per check: ``check``, ``count``, ``unit``, ``share`` (of the rows; of the
        session minutes of all symbol-days for gaps; of the clean rows for jumps),
        ``symbol_days`` (how many have any), ``worst`` (the symbol-day with the most) and
        ``rule``.

        Examples
        --------
        >>> import datetime as dt, polars as pl
        >>> df = pl.DataFrame({"symbol": ["A", "A"], "date": [dt.date(2007, 8, 1)] * 2,
        ...                    "time": [dt.time(9, 30), dt.time(9, 31)],
        ...                    "bid": [10.0, 0.0], "ofr": [10.01, 10.01]})
        >>> r = QualityReport("q", 1, Rules(), symbol_days(df, Rules()), 1, True)
        >>> r.summary().filter(pl.col("check") == "nonpositive").row(0)[:5]
        ('nonpositive', 1, 'rows', 0.5, 1)
        """
        df = self.by_symbol_day
        rows, clean = self.rows, int(df["clean"].sum())
        minutes = df.height * self.rules.minutes
        out = []
        for check, unit, _ in CHECKS:
            count = int(df[check].sum())
            base = {"rows": rows, "minutes": minutes, "moves": clean}[unit]
            worst = df.sort(check, "symbol", "date", descending=[True, False, False]).row(
                0, named=True) if count else None
            out.append({"check": check, "count": count, "unit": unit,
                        "share": count / base if base else 0.0,
                        "symbol_days": int((df[check] > 0).sum()),
                        "worst": f"{worst['symbol']} {worst['date']} ({worst[check]:,})"
                        if worst else "", "rule": self.rules.describe(check)})
        return pl.DataFrame(out, schema={"check": pl.String, "count": pl.Int64,
                                         "unit": pl.String, "share": pl.Float64,
                                         "symbol_days": pl.Int64, "worst": pl.String,
                                         "rule": pl.String})

    def headline(self) -> str:
        """One line: the table, its rows, symbols, days and the clean share.

        Examples
        --------
        >>> print(quotes.quality().headline())   # doctest: +NORMALIZE_WHITESPACE
        quality of quotes @ version 1: 10,000 rows, 48 symbols, 2 days, 93 symbol-days;
        clean 9,819 (98.19%); 4 partitions reduced on the nodes
        """
        df = self.by_symbol_day
        rows, clean = self.rows, int(df["clean"].sum()) if df.height else 0
        where = "on the nodes" if self.on_nodes else "on the driver"
        share = f"{clean / rows:.2%}" if rows else "-"
        return (f"quality of {self.table} @ version {self.version}: {rows:,} rows, "
                f"{df['symbol'].n_unique():,} symbols, {df['date'].n_unique():,} days, "
                f"{df.height:,} symbol-days; clean {clean:,} ({share}); "
                f"{self.partitions:,} partitions reduced {where}")

    def __str__(self) -> str:
        lines = [self.headline(), ""]
        summary = self.summary()
        width = max(len(c) for c in summary["check"])
        for r in summary.iter_rows(named=True):
            lines.append(f"  {r['check']:<{width}}  {r['count']:>12,} {r['unit']:<7} "
                         f"{r['share']:>8.3%}  {r['symbol_days']:>7,} symbol-days  "
                         f"{r['rule']}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The headline facts, the rules and the summary rows (for JSON).

        Examples
        --------
        >>> import json
        >>> facts = quotes.quality().to_dict()
        >>> facts["rows"], facts["clean"], facts["rules"]["session"]
        (10000, 9819, ['09:30:00', '16:00:00'])
        >>> {key: facts["summary"][2][key] for key in ("check", "count", "worst")}
        {'check': 'sentinel', 'count': 6, 'worst': 'WMT 2007-08-02 (3)'}
        >>> json.loads(json.dumps(facts)) == facts
        True
        """
        df = self.by_symbol_day
        return {"table": self.table, "version": self.version, "rows": self.rows,
                "clean": int(df["clean"].sum()), "symbols": df["symbol"].n_unique(),
                "days": df["date"].n_unique(), "symbol_days": df.height,
                "partitions": self.partitions, "on_nodes": self.on_nodes,
                "rules": {"session": [self.rules.start.isoformat(),
                                      self.rules.end.isoformat()],
                          "max_ratio": self.rules.max_ratio,
                          "sentinels": list(self.rules.sentinels),
                          "jump_k": self.rules.jump_k, "jump_floor": self.rules.jump_floor},
                "summary": self.summary().to_dicts()}

    def plot(self, path: str | None = None, *, top: int = 15) -> Figure:
        """A figure of the report (saved as PNG at ``path`` when given): the share of each
        check, the ``top`` symbol-days by bad quotes (the row checks but the session, stacked
        by check), and session minutes without quotes against rows per symbol-day.

        Examples
        --------
        >>> import os, matplotlib.pyplot as plt
        >>> fig = quotes.quality().plot(os.path.join(tmp, "quality.png"))
        >>> [ax.get_title() for ax in fig.axes]   # doctest: +NORMALIZE_WHITESPACE
        ['share of each defect', 'top 15 symbol-days by bad quotes',
         'gaps: illiquid symbols go quiet']
        >>> os.listdir(tmp)
        ['quality.png']
        >>> plt.close(fig)
        """
        import matplotlib
        if path is not None and matplotlib.get_backend().lower() not in (
                "agg", "module://matplotlib_inline.backend_inline"):
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        summary = self.summary()
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.8),
                                 gridspec_kw={"width_ratios": [1.1, 1.3, 1]})
        ax = axes[0]
        shares = summary["share"].to_numpy() * 100
        labels = [f"{c} ({u})" if u != "rows" else c
                  for c, u in zip(summary["check"], summary["unit"])]
        ax.barh(labels[::-1], shares[::-1], color="#4c72b0")
        ax.set_xscale("symlog", linthresh=0.01)
        ax.set_xlabel("% of rows (gaps: of session minutes; jumps: of clean quotes)")
        ax.set_title("share of each defect")
        for y, value in enumerate(shares[::-1]):
            ax.text(value, y, f" {value:.3g}%", va="center", fontsize=8)
        ax = axes[1]
        # extended-hours quotes are not defects of the quote itself: not in this ranking
        row_checks = [c for c, u, _ in CHECKS if u == "rows" and c != "outside_session"]
        df = self.by_symbol_day.with_columns(bad=pl.sum_horizontal(row_checks))
        worst = df.sort("bad", descending=True).head(top).reverse()
        names = [f"{s} {d}" for s, d in zip(worst["symbol"], worst["date"])]
        left = [0.0] * worst.height
        cmap = plt.get_cmap("tab10")
        for i, check in enumerate(row_checks):
            values = worst[check].to_list()
            if any(values):
                ax.barh(names, values, left=left, label=check, color=cmap(i))
                left = [a + b for a, b in zip(left, values)]
        ax.set_title(f"top {worst.height} symbol-days by bad quotes")
        ax.set_xlabel("rows")
        if worst.height:
            ax.legend(fontsize=7, loc="lower right")
        ax = axes[2]
        sd = self.by_symbol_day
        ax.scatter(sd["rows"].to_numpy(), sd["gap_minutes"].to_numpy(), s=6, alpha=0.5)
        ax.set_xscale("log")
        ax.set_xlabel("rows of the symbol-day")
        ax.set_ylabel(f"minutes without quotes (of {self.rules.minutes})")
        ax.set_title("gaps: illiquid symbols go quiet")
        fig.suptitle(self.headline(), fontsize=9)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig


def report(table: TableLike, dates: Any = None, symbols: Iterable[str] | str | None = None,
           *, rules: Rules | None = None, version: int | None = None,
           progress: bool | None = None, **rule_args: Any) -> QualityReport:
    """The quality counts of ``table`` per symbol-day (``Table.quality`` is sugar for it),
    computed next to the data: on the node servers when a runtime is running, else in this
    process (:meth:`hfq.session.Session.nodes_for`).

    ``dates`` / ``symbols`` select as in ``Table.scan``; ``rules`` (or its fields as keywords:
    ``session=("09:30", "16:00")``, ``max_ratio=1.2``, ``jump_k=10`` ...) say what counts.
    Raises :class:`~hfq.errors.SchemaMismatchError` when the table lacks a column the rules
    read.

    Examples
    --------
    >>> from hfq import quality
    >>> rep = quality.report(quotes, dates="2007-08-01", symbols=["IBM", "MSFT"])
    >>> rep.by_symbol_day.select("symbol", "rows", "clean", "crossed", "gap_minutes").rows()
    [('IBM', 32, 31, 1, 358), ('MSFT', 111, 111, 0, 285)]
    >>> quality.report(quotes, symbols="IBM", session=("10:00", "11:00")).rules.minutes
    60
    """
    rules = rules or Rules(**rule_args)
    m = table.snapshot(version)
    date, symbol = filter_columns(m)
    need = {"symbol (SYMBOL)": symbol, "date (DATE)": date, "bid": rules.bid,
            "ofr": rules.ofr, "time": rules.time}
    lacking = [what for what, col in need.items() if col is None or col not in m.schema]
    if lacking:
        raise SchemaMismatchError(f"table {table.name!r} has no {', '.join(lacking)} column "
                                  f"for a quality report; columns: {', '.join(m.schema.names)}")
    assert symbol is not None and date is not None
    types = m.schema.arrow
    wrong = [f"{col!r} is {types.field(col).type}, not a number" for col in (rules.bid, rules.ofr)
             if not pa.types.is_floating(types.field(col).type)
             and not pa.types.is_integer(types.field(col).type)]
    kind = types.field(rules.time).type
    if not (pa.types.is_time(kind) or pa.types.is_timestamp(kind)):
        wrong.append(f"{rules.time!r} is {kind}, not a time of day or a timestamp")
    if wrong:
        raise SchemaMismatchError(f"table {table.name!r}: a quality report needs prices and "
                                  f"times; {'; '.join(wrong)} (choose columns with bid=, ofr=, "
                                  "time=)")
    finish = all(level.column in (symbol, date) for level in m.partition_by.levels())
    session = table.session
    read = session.plan_read(m, dates=dates, symbols=symbols)
    units = read.plan.units
    parts: dict[int, pl.DataFrame] = {}

    def arrive(i: int, value: pl.DataFrame) -> None:
        parts[i] = value

    session.run_units(MapTask(read.spec, _PartitionQuality(rules, symbol, date, finish)),
                      units, arrive, progress=progress, label=f"quality {table.name}")
    ordered: Sequence[pl.DataFrame] = [parts[i] for i in range(len(units))]
    frame = pl.concat([p for p in ordered if p.height]) if any(p.height for p in ordered) \
        else None
    if frame is None:
        result = _empty()
    elif finish:
        result = frame.sort("symbol", "date")
    else:   # the driver finishes: each symbol-day's rows, in partition order
        result = symbol_days(frame, rules, symbol=symbol, date=date)
    return QualityReport(table.name, m.version, rules, result, len(units), finish)
