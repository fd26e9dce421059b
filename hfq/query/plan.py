"""Planning a scan: one snapshot, pruned partitions and batches, a plain list of units.

A plan is built before anything is read and is easy to print (:meth:`Plan.explain`): which
partitions were kept and pruned, how many rows and bytes the kept record batches hold.
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hfq.catalog.records import Fragment, Manifest, PartitionEntry, Partitions, PieceRef
from hfq.partition import Compo, Hash, Scheme, Value, key_path, matcher
from hfq.schema import Schema

__all__ = ["Filters", "Plan", "Unit", "filter_columns", "make_plan", "normalize_dates"]


@dataclass(frozen=True)
class Filters:
    """Row filters on the table's date and symbol columns (inclusive date range)."""

    date_column: str | None = None
    date_lo: str | None = None
    date_hi: str | None = None
    symbol_column: str | None = None
    symbols: tuple | None = None

    def bounds(self) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        if self.date_column and (self.date_lo or self.date_hi):
            out[self.date_column] = (self.date_lo, self.date_hi, None)
        if self.symbol_column and self.symbols is not None:
            out[self.symbol_column] = (None, None, set(self.symbols))
        return out


@dataclass(frozen=True)
class Unit:
    """One partition to read: its fragments and, per fragment, the batches to read (None: all).

    The fragments carry no per-batch statistics (planning is done): less to ship to nodes.
    """

    partition: str
    key: tuple[Any, ...]
    fragments: tuple[Fragment, ...]
    batches: tuple[tuple[int, ...] | None, ...]
    rows: int
    bytes: int
    exact: bool = False
    """True when every row of the kept batches passes the date/symbol filters already."""
    batches_kept: int = 0


@dataclass
class Plan:
    table: str
    version: int
    columns: list[str]
    units: list[Unit]
    partitions_total: int
    batches_total: int
    filters: Filters
    where: Any = None
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(u.rows for u in self.units)

    @property
    def bytes(self) -> int:
        return sum(u.bytes for u in self.units)

    def explain(self) -> str:
        kept = len(self.units)
        batches = sum(u.batches_kept for u in self.units)
        f = self.filters
        lines = [
            f"scan {self.table} @ version {self.version}",
            f"  columns: {', '.join(self.columns)}",
            f"  partitions: {kept} kept, {self.partitions_total - kept} pruned "
            f"of {self.partitions_total}",
            f"  record batches: {batches} kept of {self.batches_total}",
            f"  rows to read: {self.rows:,} (before row filters); bytes on disk: {self.bytes:,}",
        ]
        if f.date_lo or f.date_hi:
            lines.append(f"  dates: {f.date_lo} .. {f.date_hi} on {f.date_column}")
        if f.symbols is not None:
            shown = ", ".join(map(repr, f.symbols[:10])) + (" ..." if len(f.symbols) > 10 else "")
            lines.append(f"  symbols: {shown} on {f.symbol_column}")
        if self.where is not None:
            lines.append(f"  where: {self.where}")
        lines += [f"  {n}" for n in self.notes]
        for u in self.units[:20]:
            lines.append(f"    {u.partition}: {u.rows:,} rows, {len(u.fragments)} file(s)")
        if len(self.units) > 20:
            lines.append(f"    ... {len(self.units) - 20} more partitions")
        return "\n".join(lines)


def normalize_dates(dates: Any) -> tuple[str | None, str | None]:
    """``"2007-08-01"``, a date, or an inclusive ``(lo, hi)`` pair (either may be None)."""
    if dates is None:
        return None, None
    if isinstance(dates, (str, dt.date)):
        d = _iso(dates)
        return d, d
    if isinstance(dates, Sequence) and len(dates) == 2:
        lo, hi = (None if d is None else _iso(d) for d in dates)
        if lo and hi and lo > hi:
            raise ValueError(f"dates=({lo!r}, {hi!r}): the first date is after the second")
        return lo, hi
    raise ValueError(f"dates must be a date, an ISO string or a (first, last) pair, "
                     f"not {dates!r}")


def _iso(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value)
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    raise ValueError(f"{value!r} is not a date (use YYYY-MM-DD or YYYYMMDD)")


def make_plan(manifest: Manifest, columns: list[str], filters: Filters, where: Any) -> Plan:
    """The units of a scan of ``manifest``: partitions pruned by their keys, batches by their
    statistics.  A split (format-2) manifest is pruned group by group first, on the first
    partition level's value its piece references carry: a one-day plan reads one day's
    piece, never the rest of the table's metadata."""
    bounds = filters.bounds()
    units = []
    parts = manifest.partitions
    if isinstance(parts, Partitions):
        candidates: Iterable[tuple[str, PartitionEntry]] = (
            item for ref in _kept_groups(manifest.partition_by, parts, bounds)
            for item in _group_items(manifest.partition_by, parts.group(ref.group), ref.key0,
                                     bounds))
        total_batches = parts.total("batches")
    else:
        candidates = iter(parts.items())
        total_batches = sum(len(f.batches) for p in parts.values() for f in p.fragments)
    match = matcher(manifest.partition_by, bounds)
    for path, part in candidates:
        if not match(part.key):
            continue
        batches: list[tuple[int, ...] | None] = []
        rows, size, kept, exact = 0, 0, 0, True
        for fragment in part.fragments:
            keep, all_exact = _keep_batches(fragment, filters)
            exact &= all_exact
            batches.append(None if len(keep) == len(fragment.batches) else tuple(keep))
            rows += sum(fragment.batches[i].rows for i in keep)
            kept += len(keep)
            if keep:
                size += fragment.bytes * len(keep) // max(1, len(fragment.batches))
        if rows:
            units.append(Unit(path, part.key, tuple(f.without_stats() for f in part.fragments),
                              tuple(batches), rows, size, exact, kept))
    return Plan(manifest.table, manifest.version, columns, units, len(manifest.partitions),
                total_batches, filters, where)


def _kept_groups(scheme: Scheme | Compo, parts: Partitions, bounds: dict[str, tuple]
                 ) -> Iterable[PieceRef]:
    """The piece references whose first-level key may hold matching rows.  Under a ``Value``
    first level with a date range (the default scheme's days), a binary search of the
    references sorted as :class:`~hfq.partition.Value` compares them (the first ten
    characters of the key's text): O(log days + days kept), not O(days)."""
    first = scheme.levels()[0]
    lo, hi, members = bounds.get(first.column, (None, None, None))
    refs: Iterable[PieceRef] = parts.refs.values()
    if isinstance(first, Value) and members is None and (lo is not None or hi is not None):
        keys, ordered = parts.derived("value-days", _by_day)
        refs = sorted(ordered[bisect_left(keys, lo) if lo is not None else 0:
                              bisect_right(keys, hi) if hi is not None else len(keys)],
                      key=lambda r: r.group)   # the units in partition order, as ever
    match = matcher(first, bounds)
    return (r for r in refs if match((r.key0,)))


def _group_items(scheme: Scheme | Compo, group: Mapping[str, PartitionEntry], key0: Any,
                 bounds: dict[str, tuple]) -> Iterable[tuple[str, PartitionEntry]]:
    """The partitions of one group that may match.  Under a ``Hash`` second level with a few
    symbols asked for (a point read), they are looked up by path, one per bucket asked, in
    path order (the group's), instead of testing each of the group's partitions."""
    if isinstance(scheme, Compo) and isinstance(scheme.second, Hash):
        members = bounds.get(scheme.second.column, (None, None, None))[2]
        if members is not None and len(members) < len(group):
            paths = sorted({key_path(scheme, (key0, scheme.second.bucket(m))) for m in members})
            return [(p, group[p]) for p in paths if p in group]
    return group.items()


def _by_day(refs: Mapping[str, PieceRef]) -> tuple[list[str], list[PieceRef]]:
    ordered = sorted(refs.values(), key=lambda r: str(r.key0)[:10])
    return [str(r.key0)[:10] for r in ordered], ordered


def _keep_batches(fragment: Fragment, f: Filters) -> tuple[list[int], bool]:
    """Batches whose min/max can hold matching rows, and whether all their rows surely match."""
    keep, exact = [], True
    for i, batch in enumerate(fragment.batches):
        if batch.rows == 0:
            continue
        stats = batch.stats
        inside = True
        if f.date_column and (f.date_lo or f.date_hi):
            mm = stats.get(f.date_column)
            if mm is not None:
                lo, hi = str(mm.min)[:10], str(mm.max)[:10]
                if (f.date_lo and hi < f.date_lo) or (f.date_hi and lo > f.date_hi):
                    continue
                inside &= (not f.date_lo or lo >= f.date_lo) and \
                    (not f.date_hi or hi <= f.date_hi) and not mm.nulls   # nulls never match
            else:
                inside = False
        if f.symbol_column and f.symbols is not None:
            mm = stats.get(f.symbol_column)
            if mm is not None:
                hits = [s for s in f.symbols
                        if isinstance(s, str) and str(mm.min) <= s <= str(mm.max)]
                if not hits:
                    continue
                inside &= mm.min == mm.max and not mm.nulls   # nulls never match
            else:
                inside = False
        keep.append(i)
        exact &= inside
    return keep, exact


def default_columns(schema: Schema, sort_by: Sequence[str]) -> tuple[str | None, str | None]:
    """The table's date column and symbol column, for ``dates=`` and ``symbols=``."""
    date_col = next((n for n, t in schema if t.name == "DATE"), None) or \
        next((n for n, t in schema if t.name in ("DATETIME", "TIMESTAMP")), None)
    symbol_col = next((n for n in sort_by if schema[n].name == "SYMBOL"), None) or \
        next((n for n, t in schema if t.name == "SYMBOL"), None)
    return date_col, symbol_col


def filter_columns(manifest: Manifest) -> tuple[str | None, str | None]:
    """The columns ``dates=`` and ``symbols=`` filter on in ``manifest``'s table (None: it has
    none): the table's ``date_column``/``symbol_column`` options, else
    :func:`default_columns`."""
    date_col, symbol_col = default_columns(manifest.schema, manifest.sort_by)
    return (manifest.options.get("date_column", date_col),
            manifest.options.get("symbol_column", symbol_col))
