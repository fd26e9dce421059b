"""A handle on one table: append, scan, partitions, maintenance."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from hfq import faults, maintenance
from hfq.catalog import timeline
from hfq.catalog.history import history_frame
from hfq.catalog.keys import known_at_column
from hfq.catalog.records import Manifest
from hfq.change import columns as column_changes
from hfq.change import mutate
from hfq.change.knowledge import known_filters
from hfq.change.rewrite import ChangeReport
from hfq.errors import ArgumentError
from hfq.ingest.frames import iter_arrow_batches
from hfq.live.cut import is_live
from hfq.live.publisher import Publisher
from hfq.live.snapshot import LiveView
from hfq.live.subscribe import Subscription
from hfq.live.writedown import AutoWriteDown, WriteDown, write_down
from hfq.quality import QualityReport
from hfq.quality import report as quality_report
from hfq.query.read import PartitionFunction
from hfq.schema import Schema
from hfq.session import Session, check_columns
from hfq.write import Write, merge_small_fragments

if TYPE_CHECKING:
    import pandas

    from hfq.db import Database
    from hfq.engine.query import Query

__all__ = ["Table"]


class Table:
    """One table of a :class:`~hfq.Database`; get it with ``db["name"]``.

    A handle is pinned to one committed version (the newest when it was made, or the newest
    committed through its database since): ``schema``, ``version``, ``len()``,
    ``partitions()``, ``scan()`` and ``map_reduce()`` all see that version, whatever other
    processes commit meanwhile, until :meth:`refresh` moves it to the newest.
    ``scan(version=n)`` reads any version still on record (time travel).

    Examples
    --------
    The examples run on ``quotes = hfq.demo.example_quotes()`` (a small synthetic TAQ table:
    2 days, 50 symbols, 10,000 rows), ``db = quotes.db`` and ``tmp``, an empty directory.

    >>> quotes
    <hfq.Table 'quotes' version 1: 10,000 rows in 4 partitions>
    >>> len(quotes), quotes.version, quotes.name
    (10000, 1, 'quotes')
    >>> len(quotes.scan(version=0).to_arrow())                # time travel: before the append
    0
    """

    def __init__(self, db: Database, name: str, manifest: Manifest | None = None) -> None:
        self.db = db
        """The :class:`~hfq.Database` this handle came from."""
        self.session: Session = db.session
        """The database's session (catalog, nodes, settings), for code below the facade."""
        self.name = name
        # raises TableNotFoundError for an unknown name
        self._manifest = manifest or self.session.snapshot(name)

    def __repr__(self) -> str:
        m = self._manifest
        return (f"<hfq.Table {self.name!r} version {m.version}: {m.rows:,} rows in "
                f"{len(m.partitions)} partitions>")

    # -- metadata -----------------------------------------------------------------------------
    def refresh(self) -> Table:
        """Move this handle to the newest committed version; returns the handle.

        Examples
        --------
        >>> mine = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                      partition_by=hfq.Value("date"))
        >>> theirs = hfq.connect(tmp)["q"]       # as another process would hold it
        >>> mine.append(quotes.to_arrow(symbols="IBM"))
        1
        >>> theirs.version, theirs.refresh().version
        (0, 1)
        """
        self._manifest = self.session.snapshot(self.name)
        return self

    def _refresh_to(self, manifest: Manifest) -> None:
        """Pin this handle to ``manifest`` (a version of this table just committed)."""
        self._manifest = manifest

    def snapshot(self, version: int | None = None) -> Manifest:
        """The catalog's record of this handle's version (or of ``version``): an internal
        object, for code below the facade; users read :attr:`version`, :attr:`schema`,
        :meth:`partitions`.

        Examples
        --------
        >>> quotes.snapshot().version, quotes.snapshot(0).rows    # an earlier version
        (1, 0)
        """
        if version is None or version == self._manifest.version:
            return self._manifest
        if not isinstance(version, int) or isinstance(version, bool):
            raise ArgumentError(f"version=: a committed version number, not {version!r}",
                                argument="version")
        return self.session.snapshot(self.name, version)

    @property
    def schema(self) -> Schema:
        """The columns and their hfq types (:class:`hfq.schema.Schema`).

        Examples
        --------
        >>> quotes.schema.names
        ['symbol', 'date', 'time', 'bid', 'ofr', 'bidsiz', 'ofrsiz', 'mode', 'ex', 'mmid']
        >>> quotes.schema["bid"], quotes.schema["time"]
        (DOUBLE, SECOND)
        """
        return self._manifest.schema

    @property
    def version(self) -> int:
        """The committed version this handle reads (0: the empty table just created).

        Examples
        --------
        >>> quotes.version
        1
        """
        return self._manifest.version

    def versions(self) -> list[int]:
        """Every committed version still on record.

        Examples
        --------
        >>> quotes.versions()            # 0: created, 1: appended
        [0, 1]
        """
        return self.session.catalog.versions(self.name)

    def __len__(self) -> int:
        return self._manifest.rows

    def partitions(self, *, version: int | None = None) -> pl.DataFrame:
        """One row per partition: key, rows, bytes, files, the nodes holding every file,
        version, checksum (polars).

        Examples
        --------
        >>> quotes.partitions().select("partition", "key", "rows", "files")
        shape: (4, 4)
        ┌────────────────────────────┬─────────────────────┬──────┬───────┐
        │ partition                  ┆ key                 ┆ rows ┆ files │
        │ ---                        ┆ ---                 ┆ ---  ┆ ---   │
        │ str                        ┆ list[str]           ┆ i64  ┆ i64   │
        ╞════════════════════════════╪═════════════════════╪══════╪═══════╡
        │ date=v2007-08-01/symbol=h0 ┆ ["2007-08-01", "0"] ┆ 3126 ┆ 1     │
        │ date=v2007-08-01/symbol=h1 ┆ ["2007-08-01", "1"] ┆ 1874 ┆ 1     │
        │ date=v2007-08-02/symbol=h0 ┆ ["2007-08-02", "0"] ┆ 3619 ┆ 1     │
        │ date=v2007-08-02/symbol=h1 ┆ ["2007-08-02", "1"] ┆ 1381 ┆ 1     │
        └────────────────────────────┴─────────────────────┴──────┴───────┘
        """
        m = self.snapshot(version)
        # built column by column through Arrow: cheap per partition (issue 16)
        cols: dict[str, list[Any]] = {c: [] for c in ("partition", "key", "rows", "bytes",
                                                      "files", "nodes", "checksum")}
        holders = self.session.nodes.common_holders
        for path, part in m.partitions.items():
            fragments = part.fragments
            cols["partition"].append(path)
            cols["key"].append([str(k) for k in part.key])
            cols["rows"].append(sum(f.rows for f in fragments))
            cols["bytes"].append(sum(f.bytes for f in fragments))
            cols["files"].append(len(fragments))
            cols["nodes"].append(holders(fragments))
            cols["checksum"].append(",".join(f"{f.crc32:08x}" for f in fragments))
        strings, counts = pa.list_(pa.string()), pa.int64()
        types = {"partition": pa.string(), "key": strings, "rows": counts, "bytes": counts,
                 "files": counts, "nodes": strings, "checksum": pa.string()}
        frame = pl.from_arrow(pa.table({c: pa.array(v, types[c]) for c, v in cols.items()}))
        assert isinstance(frame, pl.DataFrame)
        return frame.with_columns(version=pl.lit(m.version, pl.Int64)).select(
            "partition", "key", "rows", "bytes", "files", "nodes", "version", "checksum")

    # -- writing ------------------------------------------------------------------------------
    def append(self, data: Any, *, sync: bool = False, message: str | None = None) -> int:
        """Append a pandas / polars / pyarrow Table or RecordBatchReader; returns the version.

        All rows become visible at once in one new version, or none do (an error, or the
        process dying, leaves the table as it was).  Column order does not matter; types are
        cast when no information can be lost, otherwise :class:`SchemaMismatchError` lists
        every difference.  ``sync=True`` fsyncs the files before the commit.  A float NaN
        (pandas' "missing" in float columns included) is stored as NaN, not null; nulls come
        from ``None``/``pd.NA`` in object or nullable columns (:mod:`hfq.ingest.frames`).
        A table with a dedup key (``create_table(..., unique=...)``) keeps it (see
        :meth:`upsert`); ``message`` goes into the commit's :meth:`history` entry.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> t.append(quotes.to_polars(dates="2007-08-01"))        # polars, pandas or Arrow
        1
        >>> t.append(quotes.to_arrow(dates="2007-08-02", symbols=["IBM", "MSFT"]))
        2
        >>> len(t), t.partitions()["rows"].to_list()
        (5094, [5000, 94])
        """
        base = self._manifest
        with Write(self.session, base, sync=sync) as write, write.rows() as rows:
            for batch in iter_arrow_batches(data):
                rows.write(base.schema.conform(batch, where=f"append to {self.name!r}"))
            write.stage_all(rows.flush())
            self._manifest = write.commit("append", args={"rows": rows.rows},
                                          message=message)
        self._manifest = merge_small_fragments(write) or self._manifest   # compact_after
        return self._manifest.version

    def compact(self) -> int:
        """Merge each partition's files into one sorted file; returns the new version.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
        ...                                   sort_by=("symbol", "time"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM")), t.append(quotes.to_arrow(symbols="C"))
        >>> t.partitions()["files"].to_list()                # two files in each day
        [2, 2]
        >>> t.compact(), t.partitions()["files"].to_list()
        (3, [1, 1])
        """
        base = self.refresh()._manifest
        multi = {p: v for p, v in base.partitions.items() if len(v.fragments) > 1}
        if not multi:
            return base.version
        with Write(self.session, base) as write, write.rows() as rows:
            for path, part in multi.items():
                rows.write(self._read_all(base.only(path)))
                write.replace(path, [f.file for f in part.fragments])
            write.stage_all(rows.flush())
            faults.point("compact.before_commit")
            self._manifest = write.commit("compact")
        return self._manifest.version

    # -- changing data (hfq.change) -------------------------------------------------------------
    def delete(self, *, where: pl.Expr | None = None, dates: Any = None,
               symbols: Iterable[str] | str | None = None,
               message: str | None = None) -> ChangeReport:
        """Delete the rows matching ``where`` (a polars expression) and ``dates`` /
        ``symbols``, in one commit touching only the partitions they reach; returns a
        :class:`~hfq.change.rewrite.ChangeReport`.  Nothing matched: nothing is committed,
        and the report says so.  An empty or reversed range raises
        :class:`~hfq.errors.ArgumentError`.  Applies to the newest version.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow())
        >>> print(t.delete(dates="2007-08-01", symbols="IBM"))
        delete on 'q': 32 rows removed in 1 partitions -> version 2
        >>> print(t.delete(where=pl.col("bid") > 1e9))
        delete on 'q': no row matched; nothing changed (the table stays at version 2)
        >>> t.scan(version=1, symbols="IBM").count(), t.scan(symbols="IBM").count()
        (41, 9)
        """
        return mutate.delete(self, where=where, dates=dates, symbols=symbols, message=message)

    def update(self, *, set: Mapping[str, Any], where: pl.Expr | None = None,
               dates: Any = None, symbols: Iterable[str] | str | None = None,
               message: str | None = None) -> ChangeReport:
        """Set columns of the rows matching ``where`` and ``dates``/``symbols``, in one
        commit: ``set`` maps a column to a polars expression of the row's (old) values, or
        to a value.  Values are cast to the column's type when nothing is lost (else
        :class:`~hfq.errors.SchemaMismatchError`); partition columns cannot be set.

        Examples
        --------
        >>> import datetime as dt
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"))
        >>> print(t.update(set={"bid": pl.col("bid") * 2}, where=pl.col("time") < dt.time(10)))
        update on 'q': 6 rows changed in 2 partitions -> version 2
        >>> t.to_polars(where=pl.col("time") < dt.time(10))["bid"].to_list()
        [125.5, 124.86, 124.52, 123.68, 123.46, 123.82]
        """
        return mutate.update(self, set=set, where=where, dates=dates, symbols=symbols,
                             message=message)

    def upsert(self, data: Any, *, on: Sequence[str] | str | None = None, keep: str = "last",
               message: str | None = None) -> ChangeReport:
        """Add the rows of ``data`` (pandas / polars / pyarrow); a row whose ``on`` key is
        stored already replaces it (``keep="last"``), yields to it (``"first"``) or fails
        the write (``"error"``), in one commit.  ``on`` defaults to the table's dedup key
        (``create_table(..., unique=...)``) and must hold the partition columns.

        Examples
        --------
        >>> import datetime as dt
        >>> from hfq import schema as s
        >>> t = hfq.connect(tmp).create_table(
        ...     "px", s.Schema({"sym": s.SYMBOL, "day": s.DATE, "px": s.DOUBLE}),
        ...     partition_by=hfq.Value("day"), unique=("sym", "day"))
        >>> day = dt.date(2024, 1, 2)
        >>> _ = t.append(pl.DataFrame({"sym": ["A", "B"], "day": [day] * 2, "px": [1.0, 2.0]}))
        >>> print(t.upsert(pl.DataFrame({"sym": ["B", "C"], "day": [day] * 2, "px": [2.5, 3.0]})))
        upsert on 'px': 2 rows added, 1 removed in 1 partitions -> version 2
        >>> t.to_polars().sort("sym")["px"].to_list()
        [1.0, 2.5, 3.0]
        """
        return mutate.upsert(self, iter_arrow_batches(data), on=on, keep=keep, message=message)

    def overwrite(self, data: Any, *, dates: Any = None,
                  symbols: Iterable[str] | str | None = None,
                  message: str | None = None) -> ChangeReport:
        """Replace exactly the slice ``dates``/``symbols`` by the rows of ``data``, in one
        commit: the slice's stored rows go, ``data``'s come (each must lie in the slice),
        the rest of the table stays as it is.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols=["IBM", "MSFT"]))
        >>> fixed = quotes.to_polars(dates="2007-08-01", symbols="IBM").head(3)
        >>> print(t.overwrite(fixed, dates="2007-08-01", symbols="IBM"))
        overwrite on 'q': 3 rows added, 32 removed in 1 partitions -> version 2
        >>> t.scan(symbols="IBM").count(), t.scan(symbols="MSFT").count()
        (12, 196)
        """
        return mutate.overwrite(self, iter_arrow_batches(data), dates=dates, symbols=symbols,
                                message=message)

    # -- columns (hfq.change.columns) -----------------------------------------------------------
    def add_column(self, name: str, type: str, *, default: Any = None,
                   message: str | None = None) -> int:
        """Add column ``name`` of hfq type ``type`` (``"LONG"``, ``"DOUBLE"``, ``"SYMBOL"``...)
        in one commit, rewriting no file: stored rows read it as ``default`` (NULL unless
        given); older versions keep their own columns.  Returns the new version.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"))
        >>> t.add_column("venue", "SYMBOL", default="XNYS")
        2
        >>> t.to_polars()["venue"].unique().to_list(), t.scan(version=1).columns[-1]
        (['XNYS'], 'mmid')
        """
        return column_changes.add_column(self, name, type, default=default, message=message).version

    def drop_column(self, name: str, *, message: str | None = None) -> int:
        """Drop column ``name`` in one commit (older versions keep it; the files are not
        rewritten).  Partition, sort, dedup-key and ``known_at`` columns stay.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"))
        >>> t.drop_column("mmid"), "mmid" in t.schema, "mmid" in t.snapshot(1).schema
        (2, False, True)
        """
        return column_changes.drop_column(self, name, message=message).version

    def rename_column(self, name: str, new: str, *, message: str | None = None) -> int:
        """Rename column ``name`` to ``new`` in one commit, rewriting no file (not a
        partition column).

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"))
        >>> t.rename_column("ofr", "ask")
        2
        >>> t.to_polars()["ask"][0], t.scan(version=1).to_polars()["ofr"][0]
        (62.76, 62.76)
        """
        return column_changes.rename_column(self, name, new, message=message).version

    def widen_column(self, name: str, type: str, *, message: str | None = None) -> int:
        """Widen column ``name`` to ``type`` -- INT or SHORT to LONG, SHORT to INT, FLOAT to
        DOUBLE: every stored value kept exactly -- in one commit, rewriting no file.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"))
        >>> t.widen_column("bidsiz", "LONG"), t.schema["bidsiz"], t.to_polars()["bidsiz"].dtype
        (2, LONG, Int64)
        """
        return column_changes.widen_column(self, name, type, message=message).version

    # -- history, tags ---------------------------------------------------------------------------
    def history(self, *, partitions: bool = False) -> pl.DataFrame:
        """What each commit did, newest first (polars): ``version``, ``committed_at`` (UTC),
        ``user``, ``operation``, ``arguments`` (JSON), ``rows_added``, ``rows_removed``,
        ``partitions`` (touched), ``message``, ``job``, ``source_files`` and
        ``source_sha256`` (what a CSV load loaded).  ``partitions=True``: one row per
        partition a commit touched, with its rows added and removed.

        Examples
        --------
        >>> t = hfq.connect(tmp, user="ana").create_table("q", hfq.schemas.TAQ,
        ...                                               partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"), message="first load")
        >>> _ = t.delete(symbols="IBM", dates="2007-08-02")
        >>> for row in t.history().select("version", "user", "operation", "rows_added",
        ...                                "rows_removed", "message").rows():
        ...     print(row)
        (2, 'ana', 'delete', 0, 9, None)
        (1, 'ana', 'append', 41, 0, 'first load')
        (0, 'ana', 'create', 0, 0, None)
        >>> t.history(partitions=True).select("version", "partition", "rows_removed").rows()
        [(2, 'date=v2007-08-02', 9), (1, 'date=v2007-08-01', 0), (1, 'date=v2007-08-02', 0)]
        """
        return history_frame(self.session.catalog, self.name, partitions=partitions)

    def tag(self, name: str, *, version: int | None = None,
            message: str | None = None) -> int:
        """Tag this handle's version (or ``version``) as ``name``: ``scan(as_of=name)``
        reads it, and vacuum keeps it.  A tag never moves (:meth:`drop_tag` first); names
        start with a letter (so they are never read as times).  Returns the version.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"))
        >>> t.tag("paper-v1")
        1
        >>> _ = t.delete(symbols="IBM")
        >>> t.scan(as_of="paper-v1").count(), t.scan().count(), t.tags()["tag"].to_list()
        (41, 0, ['paper-v1'])
        """
        v = self.version if version is None else version
        timeline.tag(self.session.catalog, self.name, name, v, user=self.session.user,
                     message=message)
        return v

    def tags(self) -> pl.DataFrame:
        """The table's tags: ``tag``, ``version``, ``tagged_at`` (UTC), ``user``,
        ``message`` (see :meth:`tag`).

        Examples
        --------
        >>> quotes.tags().columns
        ['tag', 'version', 'tagged_at', 'user', 'message']
        """
        found = timeline.tags(self.session.catalog, self.name)
        return pl.DataFrame(
            [{"tag": k, "version": v["version"],
              "tagged_at": dt.datetime.fromtimestamp(v["at"], dt.timezone.utc),
              "user": v.get("user"), "message": v.get("message")}
             for k, v in sorted(found.items())],
            schema={"tag": pl.String, "version": pl.Int64,
                    "tagged_at": pl.Datetime("us", "UTC"), "user": pl.String,
                    "message": pl.String})

    def drop_tag(self, name: str) -> None:
        """Remove tag ``name`` (its version may then be forgotten by :meth:`vacuum`).

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.tag("empty"); t.drop_tag("empty"); t.tags().height
        0
        """
        timeline.drop_tag(self.session.catalog, self.name, name)

    def _read_all(self, manifest: Manifest) -> pa.Table:
        """Every row of ``manifest`` (one partition's, to compact it)."""
        from hfq.engine.query import plain_query  # the engine loads on a table's first read
        return plain_query(self.session, self.name, manifest).to_arrow()

    # -- maintenance --------------------------------------------------------------------------
    def verify(self) -> maintenance.Checked:
        """Check every copy of every file, on every live node that holds it, against the
        catalog's size and CRC-32; returns the copies checked (a number; its
        ``unreachable``: holders counted as down, e.g. silent to a ping).

        Raises :class:`~hfq.errors.CorruptPartitionError` listing every bad copy.

        Examples
        --------
        >>> quotes.verify()                  # 4 partitions of one file each, on one node
        4
        """
        return maintenance.verify(self.session, self.refresh().snapshot())

    def vacuum(self, *, keep_versions: int | None = None, keep_for: dt.timedelta | None = None,
               grace_s: float | None = None) -> maintenance.Counts:
        """Delete files of writers that died, copies no version places on their node any more
        (after a rebalance) and, optionally, old versions: all but the newest
        ``keep_versions``, and those superseded longer than ``keep_for`` ago (every version
        a read ``as_of`` a time within ``keep_for`` may need stays).  Versions a tag or a
        database snapshot names are always kept (:meth:`tag`, ``db.snapshot``).

        Each live node lists its files first; only then are the kept versions read, so a file
        committed meanwhile is never touched.  Files of this process's own failed writes go
        too, although the process is alive (it knows which of its transactions still run).
        Nodes that do not answer a ping are left alone and named in the result's
        ``unreachable``.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM")), t.append(quotes.to_arrow(symbols="C"))
        >>> t.compact(), t.vacuum()          # versions 0-2 still use the files compact replaced
        (3, {'files_removed': 0, 'versions_forgotten': 0})
        >>> t.vacuum(keep_versions=1, grace_s=0), t.versions()
        ({'files_removed': 10, 'versions_forgotten': 3}, [3])
        """
        return maintenance.vacuum(self.session, self.name, keep_versions=keep_versions,
                                  keep_for=keep_for, grace_s=grace_s)

    # -- compute ------------------------------------------------------------------------------
    def map_reduce(self, map_fn: Callable[[pl.DataFrame], Any] | PartitionFunction | None,
                   reduce: Any, *,
                   columns: Sequence[str] | None = None, where: pl.Expr | None = None,
                   dates: Any = None, symbols: Iterable[str] | str | None = None,
                   version: int | None = None, progress: bool | None = None) -> Any:
        """Run ``map_fn`` on every matching partition, on a node that holds it; merge.

        ``map_fn`` gets one partition as a polars DataFrame (``columns`` only, rows passing
        ``where``/``dates``/``symbols``) and returns a small value -- a reducer state such as
        ``hfq.reduce.Sum(on="bid").accumulate(df)``, a number, or a small DataFrame.
        ``reduce`` is an :mod:`hfq.reduce` reducer or a binary function; with ``map_fn=None``
        the reducer's own ``accumulate`` is the map function.  Partial results are merged in
        partition order as they arrive, so the answer does not depend on scheduling or on
        nodes failing: a partition whose node dies runs again on a replica, and if no copy of
        some partition is alive, :class:`~hfq.errors.PartitionUnavailableError` names them.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> quotes.map_reduce(None, hr.Count())                      # the reducer maps too
        10000
        >>> quotes.map_reduce(lambda df: df.height, lambda a, b: a + b, dates="2007-08-01")
        5000
        >>> quotes.map_reduce(None, hr.Max(on="bid"), symbols="IBM", where=pl.col("ofr") > 0)
        62.75
        """
        return self.session.map_reduce(self.snapshot(version), map_fn, reduce,
                                       columns=columns, where=where, dates=dates,
                                       symbols=symbols, progress=progress)

    # -- quality (hfq.quality) ----------------------------------------------------------------
    def quality(self, dates: Any = None, symbols: Iterable[str] | str | None = None, *,
                version: int | None = None, progress: bool | None = None,
                **rules: Any) -> QualityReport:
        """Market-data quality per symbol-day, computed next to the data: rows, clean rows,
        zero/negative and sentinel prices, crossed, locked and wide quotes, times out of
        order or outside the session, duplicates, gap minutes, robust mid jumps.

        ``dates``/``symbols`` select as in :meth:`scan`; keywords set the
        :class:`hfq.quality.Rules` (``session=("09:30", "16:00")``, ``max_ratio=1.2``,
        ``jump_k=10``, ``sentinels=(214748.3647,)``, column names ``bid``/``ofr``/``time``).
        Returns a :class:`hfq.quality.QualityReport`: ``by_symbol_day`` (polars),
        ``summary()``, ``plot(path)`` (PNG), ``str()``.  See :mod:`hfq.quality` for each rule.

        Examples
        --------
        >>> from hfq.demo import example_quotes
        >>> quotes = example_quotes(days=2, rows_per_day=5000, symbols=20)
        >>> report = quotes.quality(dates="2007-08-01")     # no Ray needed when embedded
        >>> report.by_symbol_day.height, report.rows         # symbol-days, rows
        (19, 5000)
        >>> report.summary().filter(check="crossed")["count"].item()
        26
        """
        return quality_report(self, dates, symbols, version=version, progress=progress,
                              **rules)

    # -- reading ------------------------------------------------------------------------------
    def scan(self, *, columns: Sequence[str] | None = None, where: pl.Expr | None = None,
             dates: Any = None, symbols: Iterable[str] | str | None = None,
             version: int | None = None, as_of: Any = None, known_at: Any = None) -> Query:
        """A lazy read: a :class:`~hfq.Query` of ``columns`` of the rows passing ``where``,
        ``dates`` and ``symbols``; ``to_arrow()``, ``to_polars()``, ``to_pandas()``,
        ``count()``, ``to_csv()`` or ``explain()`` run it, and it chains like any query.
        A bad argument raises :class:`~hfq.errors.ArgumentError` naming it.

        Parameters
        ----------
        columns
            Columns to return (default: all), in this order.
        where
            A polars boolean expression, evaluated partition by partition.
        dates
            A date or an inclusive ``(first, last)`` pair on the table's date column; prunes
            partitions and record batches.
        symbols
            Symbols on the table's symbol column; prunes partitions and record batches.
        version
            Read this committed version instead of the handle's.
        as_of
            Read the version a time, a version number or a tag names (time travel): a
            ``datetime`` or ISO text is UTC (a naive one *is* UTC) and names the newest
            version committed at or before it -- an error before the table's first;
            other text is a tag (:meth:`tag`) or a database snapshot (``db.snapshot``).
        known_at
            The rows as they were known at this instant, by the table's ``known_at``
            column (:mod:`hfq.change.knowledge`): a backtest's view, corrections made
            later left out.

        Examples
        --------
        >>> s = quotes.scan(columns=["symbol", "time", "bid"], dates="2007-08-01",
        ...                 symbols=["IBM", "MSFT"], where=pl.col("bid") > 50)
        >>> s.count()                        # reads 1 of the 4 partitions (see s.explain())
        32
        >>> s.to_polars().row(0)
        ('IBM', datetime.time(9, 31, 49), 62.75)
        >>> quotes.scan(columns=["nope"])       # doctest: +ELLIPSIS
        Traceback (most recent call last):
        hfq.errors.ArgumentError: columns=: table 'quotes' has no column 'nope'; the columns are ...
        """
        from hfq.engine.query import plain_query  # the engine loads on a table's first read
        m, live = self._at(version, as_of)
        if known_at is None:
            return plain_query(self.session, self.name, m, columns=columns, where=where,
                               dates=dates, symbols=symbols, live=live)
        q = plain_query(self.session, self.name, m, where=where, dates=dates, symbols=symbols,
                        live=live)
        column = known_at_column(m.options)
        for f in known_filters(m.options, m.schema[column].name if column else "", known_at):
            q = q.filter(f)
        return q if columns is None else q.select(check_columns(m, columns))

    def _at(self, version: int | None, as_of: Any) -> tuple[Manifest, LiveView | None]:
        """The version ``version=`` or ``as_of=`` names (the handle's: neither) and the
        live rows read with it: a live table's newest version (the handle moves to it) reads
        its live rows with its files, pinned together; time travel reads the files alone."""
        if as_of is None:
            if version is None and is_live(self._manifest):
                self.refresh()   # the newest version: its cut goes with the live rows held now
                return self._manifest, LiveView(self.session, self._manifest)
            return self.snapshot(version), None
        if version is not None:
            raise ArgumentError("version= and as_of= name the version twice: give one",
                                argument="as_of")
        return self.snapshot(timeline.as_of(self.session.catalog, self.name, as_of)), None

    # -- queries (hfq.engine) -----------------------------------------------------------------
    def query(self, *, dates: Any = None, symbols: Iterable[str] | str | None = None,
              version: int | None = None, as_of: Any = None) -> Query:
        """A lazy query over this table (polars-flavoured: ``filter``, ``with_columns``,
        ``group_by(...).agg(...)``, ``sort``, ``head``, joins...); ``dates``/``symbols``
        and ``as_of`` as for :meth:`scan`.  Nothing runs until ``collect()``;
        ``explain()`` shows what runs on the nodes and what on the driver.

        Examples
        --------
        >>> q = (quotes.query(dates="2007-08-01").filter(pl.col("bid") > 0)
        ...      .group_by("symbol").agg(pl.len().alias("n")).sort("n", descending=True))
        >>> q.head(2).collect().rows()        # the busiest symbols of the day
        [('WMT', 1980), ('DIA', 457)]
        """
        from hfq.engine.query import make_query  # the engine loads on a table's first query
        m, live = self._at(version, as_of)
        return make_query(self.session, self.name, m, dates=dates, symbols=symbols, live=live)

    # -- live data (hfq.live, docs/live.md) ----------------------------------------------------
    def publisher(self, *, name: str | None = None, write_down: bool = False) -> Publisher:
        """A :class:`~hfq.live.Publisher` of live rows into this table: ``publish(frame)``
        returns once the batch is on disk on every replica node; every read of the table
        sees it from then on (see :mod:`hfq.live.publisher`).

        ``name``: who publishes (a publisher that restarts under the same name continues
        its sequence numbers, so retries never duplicate rows).  ``write_down``: the
        automatic end of day -- when a batch of a new day is acknowledged, every older day
        with live rows is written down (:meth:`write_down`) in a background thread.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                   partition_by=hfq.Value("date"))
        >>> pub = t.publisher(name="feed")
        >>> pub.publish(quotes.to_arrow(symbols="IBM"))
        1
        >>> t.scan(symbols="IBM").count(), len(t)     # live rows: read, not yet in files
        (41, 0)
        """
        pub = Publisher(self, name=name)
        self._manifest = pub.manifest if pub.manifest.version > self._manifest.version \
            else self._manifest
        if write_down:
            pub.on_new_day = AutoWriteDown(self).poke
        return pub

    def subscribe(self, *, symbols: Iterable[str] | str | None = None, start: Any = "sod",
                  columns: Sequence[str] | None = None, max_rows: int = 100_000,
                  wait_s: float = 0.2) -> Subscription:
        """An iterator of Arrow record batches, one per published batch with rows of
        ``symbols`` (all: None), as they are acknowledged (see :mod:`hfq.live.subscribe`).

        ``start``: ``"sod"`` (every live row not written down), ``"now"``, or an offset
        (``sub.offset`` saved earlier): every row after it exactly once.  ``max_rows``:
        rows fetched per node per poll (the buffer's bound); ``wait_s``: how long a poll
        waits for new rows.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                   partition_by=hfq.Value("date"))
        >>> pub = t.publisher(name="feed")
        >>> sub = t.subscribe(symbols="IBM", start="now")
        >>> pub.publish(quotes.to_arrow(symbols=["IBM", "MSFT"]))
        1
        >>> batch = sub.poll()
        >>> batch.num_rows, sub.offset
        (41, {'feed': 1})
        """
        return Subscription(self, symbols=symbols, start=start, columns=columns,
                            max_rows=max_rows, wait_s=wait_s)

    def write_down(self, date: Any, *, progress: bool | None = None) -> WriteDown:
        """Write ``date``'s live rows into this table's files through the one write
        operator, in one commit that also records which live rows the files now hold; the
        nodes drop them and truncate their logs only after it (see
        :mod:`hfq.live.writedown`).  Every read sees each row once, before, during and
        after.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                   partition_by=hfq.Value("date"))
        >>> _ = t.publisher(name="feed").publish(quotes.to_arrow(symbols="IBM"))
        >>> done = t.write_down("2007-08-01")
        >>> done.rows, len(t), t.scan(symbols="IBM").count()
        (32, 32, 41)
        """
        done = write_down(self, date, progress=progress)
        self.refresh()
        return done

    def to_arrow(self, **scan_args: Any) -> pa.Table:
        """``scan(**scan_args).to_arrow()``: the matching rows as one Arrow table.

        Examples
        --------
        >>> day = quotes.to_arrow(dates="2007-08-01", columns=["symbol", "bid", "ofr"])
        >>> day.num_rows, day.column_names
        (5000, ['symbol', 'bid', 'ofr'])
        """
        return self.scan(**scan_args).to_arrow()

    def to_polars(self, **scan_args: Any) -> pl.DataFrame:
        """``scan(**scan_args).to_polars()``: the matching rows as a polars DataFrame.

        Examples
        --------
        >>> ibm = quotes.to_polars(symbols="IBM", columns=["date", "time", "bid"])
        >>> ibm.shape, ibm["bid"].max()
        ((41, 3), 62.75)
        """
        return self.scan(**scan_args).to_polars()

    def to_pandas(self, **scan_args: Any) -> pandas.DataFrame:
        """``scan(**scan_args).to_pandas()``: the matching rows as pandas (see
        :meth:`Query.to_pandas` for the dtypes).

        Examples
        --------
        >>> ibm = quotes.to_pandas(symbols="IBM", columns=["symbol", "time", "bid"])
        >>> ibm.head(2)
          symbol            time    bid
        0    IBM 0 days 09:31:49  62.75
        1    IBM 0 days 09:37:58  62.43
        """
        return self.scan(**scan_args).to_pandas()
