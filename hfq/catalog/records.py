"""The catalog's records: typed, immutable, and (de)serialised here and nowhere else.

A :class:`Manifest` is one committed version of a table.  It maps each partition path to a
:class:`PartitionEntry` (the partition's key and its :class:`Fragment` files); each fragment
carries its size, CRC-32, the nodes holding it and, per record batch, :class:`BatchStats` (rows
and the min/max/null count of the statistics columns) for the planner.

Every record is a frozen dataclass: a change makes a new record (:meth:`Fragment.placed_on`,
:meth:`PartitionEntry.with_fragments`), so a manifest a reader holds never changes under it.

Format 2 (written since the split catalog): a version is a small *record* -- the table's
schema, scheme and options, totals, and one :class:`PieceRef` per group of partitions -- and
the partition entries live in immutable *pieces*, one per group (the first component of the
partition path: a day under ``Compo(Value("date"), Hash(...))``), named after their SHA-256
and shared by every version that did not change them.  :class:`Partitions` is the lazy
mapping a format-2 manifest holds: pieces are read when a partition of theirs is needed.
Every file carries its checksum (the record a sealed SHA-256, a piece the SHA-256 in its name
and its record's reference), so damage is an :class:`~hfq.errors.ManifestError` naming the
file.  Format 1 (one JSON file listing every partition, no checksum) is still read; the next
commit writes the table in format 2.

>>> f = fragment_from("t/data/p/x.arrow", rows=3, size=100, crc32=7,
...                   batches=[(3, {"sym": ("A", "C", 0)})], nodes=["n1"])
>>> f.batches[0].stats["sym"].max
'C'
>>> Fragment.from_json(f.to_json()) == f
True
"""

from __future__ import annotations

import gc
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from hfq.errors import HfqError, ManifestError
from hfq.partition import Compo, Scheme, scheme_from_json
from hfq.schema import Schema

__all__ = ["EVOLVED", "FORMAT", "BatchStats", "ColumnStats", "Fragment", "LoadRecord",
           "Manifest", "PartitionEntry", "Partitions", "PieceRef", "build_history",
           "build_ledger", "build_piece", "fragment_from", "group_of", "history_from_bytes",
           "ledger_from_bytes", "manifest_from_bytes",
           "manifest_to_bytes", "new_manifest", "partition_entry", "piece_from_bytes",
           "record_time", "seal", "unseal"]

FORMAT = 2
"""The format written (see the module's docstring); format 1 is still read."""

EVOLVED = 3
"""The format of the records of a table whose columns changed (``add_column``...): format 2
plus the fragments' column layouts (:mod:`hfq.catalog.evolution`).  Its own number, so that
an hfq that does not know layouts refuses the table rather than misread its older files."""

Scalar = str | int | float | bool | None
"""A statistic as JSON keeps it: dates and times as ISO text."""


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Min and max of a column's non-null values in one record batch, and its null count."""

    min: Scalar
    max: Scalar
    nulls: int

    def to_json(self) -> list[Scalar]:
        return [self.min, self.max, self.nulls]


@dataclass(frozen=True, slots=True)
class BatchStats:
    """One record batch: its rows and, per statistics column, its :class:`ColumnStats`
    (``None`` when every value is null)."""

    rows: int
    stats: Mapping[str, ColumnStats | None]
    # -- checksums (JSON keys "span" and "crc32", absent in files written before them) --
    span: tuple[int, int] | None = None
    """``(offset, length)`` of the batch's record-batch message in the file."""
    crc32: int | None = None
    """CRC-32 of the file's *frame* -- every byte outside the record-batch messages (magic,
    schema, dictionaries, footer), in file order -- followed by this batch's bytes: a reader
    of some batches checks exactly what it decodes (:mod:`hfq.storage.fragment`)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rows": self.rows,
            "stats": {k: None if v is None else v.to_json() for k, v in self.stats.items()}}
        if self.span is not None and self.crc32 is not None:
            out["span"] = list(self.span)
            out["crc32"] = self.crc32
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> BatchStats:
        span = data.get("span")
        return _batch_stats(int(data["rows"]), data["stats"],
                            None if span is None else (span[0], span[1], data["crc32"]))


def _batch_stats(rows: int, stats: Mapping[str, Sequence[Any] | None],
                 check: Sequence[int] | None = None) -> BatchStats:
    """A batch from ``{column: [min, max, nulls] or None}`` (JSON's and storage's form) and
    its ``(offset, length, crc32)`` check, when known."""
    return BatchStats(rows, {k: None if v is None else ColumnStats(v[0], v[1], int(v[2]))
                             for k, v in stats.items()},
                      None if check is None else (int(check[0]), int(check[1])),
                      None if check is None else int(check[2]))


@dataclass(frozen=True, slots=True)
class Fragment:
    """One immutable Arrow IPC file of a partition."""

    file: str
    """Path relative to a node's root: ``<table>/data/<partition>/<name>.arrow``."""
    rows: int
    bytes: int
    crc32: int
    """CRC-32 of the whole file: every replica holds the same bytes."""
    batches: tuple[BatchStats, ...] = ()
    nodes: tuple[str, ...] = ()
    """The nodes holding a copy (empty: written before nodes were recorded)."""
    layout: int = 0
    """The table's column layout the file was written in (0: the schema at the table's
    creation; see :mod:`hfq.catalog.evolution`)."""

    def placed_on(self, nodes: Iterable[str]) -> Fragment:
        return replace(self, nodes=tuple(nodes))

    def without_stats(self) -> Fragment:
        """The fragment less its per-batch statistics: less to ship once planning is done.
        Each batch keeps its rows and checksum (span, CRC-32): readers verify what they read."""
        return replace(self, batches=tuple(BatchStats(b.rows, {}, b.span, b.crc32)
                                           for b in self.batches))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "rows": self.rows, "bytes": self.bytes,
                               "crc32": self.crc32,
                               "batches": [b.to_json() for b in self.batches]}
        if self.nodes:
            out["nodes"] = list(self.nodes)
        if self.layout:
            out["layout"] = self.layout
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Fragment:
        return Fragment(file=data["file"], rows=int(data["rows"]), bytes=int(data["bytes"]),
                        crc32=int(data["crc32"]),
                        batches=tuple(BatchStats.from_json(b) for b in data.get("batches", ())),
                        nodes=tuple(data.get("nodes") or ()), layout=int(data.get("layout", 0)))


def fragment_from(file: str, *, rows: int, size: int, crc32: int,
                  batches: Sequence[tuple[Any, ...]],
                  nodes: Iterable[str] = (), layout: int = 0) -> Fragment:
    """A fragment from what the storage layer reports of an encoded file: ``batches`` as
    ``(rows, {column: (min, max, nulls) or None})``, optionally followed by the batch's
    ``(offset, length, crc32)`` check (see :attr:`BatchStats.crc32`); ``layout``: the
    table's column layout it was written in."""
    return Fragment(file=file, rows=rows, bytes=size, crc32=crc32,
                    batches=tuple(_batch_stats(b[0], b[1], b[2] if len(b) > 2 else None)
                                  for b in batches),
                    nodes=tuple(nodes), layout=layout)


@dataclass(frozen=True, slots=True)
class PartitionEntry:
    """One partition of a version: its key (one value per partition level) and its files."""

    key: tuple[Any, ...]
    fragments: tuple[Fragment, ...]

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.fragments)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.fragments)

    def with_fragments(self, fragments: Iterable[Fragment]) -> PartitionEntry:
        return PartitionEntry(self.key, tuple(fragments))

    def to_json(self) -> dict[str, Any]:
        return {"key": list(self.key), "fragments": [f.to_json() for f in self.fragments]}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> PartitionEntry:
        return PartitionEntry(tuple(data["key"]),
                              tuple(Fragment.from_json(f) for f in data["fragments"]))


def partition_entry(key: Sequence[Any], fragments: Iterable[Fragment]) -> PartitionEntry:
    return PartitionEntry(tuple(key), tuple(fragments))


# -- format 2: pieces and the lazy partitions of a version ---------------------------------------
def group_of(path: str) -> str:
    """The group (and so the manifest piece) of a partition: the first component of its path,
    e.g. ``date=v2007-08-01`` for ``Compo(Value("date"), Hash("symbol", 100))``."""
    return path.split("/", 1)[0]


@dataclass(frozen=True, slots=True)
class PieceRef:
    """A version's reference to the manifest piece of one group, with the group's totals (what
    ``len(t)``, partition counts and the planner's pruning need without reading it)."""

    group: str
    sha256: str
    """SHA-256 of the piece file's bytes: the file is named after it and checked against it."""
    origin: str
    """The transaction that wrote it (its file name starts with it, as fragments' do)."""
    key0: Scalar
    """The first partition level's value, shared by every partition of the group."""
    partitions: int
    rows: int
    bytes: int
    files: int
    batches: int

    @property
    def name(self) -> str:
        """The piece's file name under ``<table>/_manifests/``."""
        return f"{self.origin}-{self.group}.{self.sha256[:32]}.json"

    def to_json(self) -> list[Any]:
        return [self.group, self.sha256, self.origin, self.key0, self.partitions, self.rows,
                self.bytes, self.files, self.batches]

    @staticmethod
    def from_json(data: Sequence[Any]) -> PieceRef:
        if len(data) != 9:
            raise ValueError(f"a piece reference has 9 fields, not {len(data)}")
        group, sha, origin, key0, *counts = data
        return PieceRef(str(group), str(sha), str(origin), key0, *(int(c) for c in counts))


PieceLoader = Callable[[PieceRef], Mapping[str, PartitionEntry]]
"""Reads (or finds in a cache) the partitions of one piece."""


def _no_pieces(ref: PieceRef) -> Mapping[str, PartitionEntry]:
    raise HfqError(f"manifest piece {ref.name} was never stored")


class Partitions(Mapping[str, PartitionEntry]):
    """The partitions of a format-2 version: its piece references, and each piece read (by
    ``load``, the catalog's cache of immutable pieces) only when one of its partitions is
    needed.  Iterates group by group, each in path order."""

    __slots__ = ("_cache", "_held", "_load", "refs")

    def __init__(self, refs: Iterable[PieceRef], load: PieceLoader,
                 held: Mapping[str, Mapping[str, PartitionEntry]] | None = None) -> None:
        self.refs: dict[str, PieceRef] = {r.group: r for r in sorted(refs,
                                                                    key=lambda r: r.group)}
        self._load = load
        self._held = dict(held or {})   # groups built in memory by a commit
        self._cache: dict[str, Any] = {}   # derived from the (immutable) references

    def group(self, group: str) -> Mapping[str, PartitionEntry]:
        """The partitions of one group (empty when the version has none)."""
        held = self._held.get(group)
        if held is not None:
            return held
        ref = self.refs.get(group)
        return {} if ref is None else self._load(ref)

    def total(self, what: str) -> int:
        """``rows``, ``bytes``, ``files`` or ``batches`` of the version, from the references."""
        return int(self.derived(f"total:{what}",
                                lambda refs: sum(getattr(r, what) for r in refs.values())))

    def derived(self, name: str, build: Callable[[Mapping[str, PieceRef]], Any]) -> Any:
        """``build(refs)``, computed once per version and kept under ``name`` (an index
        the planner searches instead of scanning every reference)."""
        try:
            return self._cache[name]
        except KeyError:
            value = self._cache[name] = build(self.refs)
            return value

    def __getitem__(self, path: str) -> PartitionEntry:
        return self.group(group_of(path))[path]

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and path in self.group(group_of(path))

    def __iter__(self) -> Iterator[str]:
        for group in self.refs:
            yield from self.group(group)

    def items(self) -> Iterator[tuple[str, PartitionEntry]]:  # type: ignore[override]
        """(path, entry) group by group: each piece looked up once, not once per path."""
        for group in self.refs:
            yield from self.group(group).items()

    def values(self) -> Iterator[PartitionEntry]:  # type: ignore[override]
        for group in self.refs:
            yield from self.group(group).values()

    def __len__(self) -> int:
        return sum(r.partitions for r in self.refs.values())

    def __reduce__(self) -> tuple[Any, ...]:   # shipped to a node: the entries, as a dict
        return (dict, (dict(self.items()),))


_gc_lock = threading.Lock()
_gc_held = [0, False]   # parses running, whether the collector was on before the first


@contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while catalog JSON is parsed: a piece is tens of
    thousands of small acyclic objects, and collections triggered by allocating them cost
    more than the parse (2-3x on a 100-partition day)."""
    with _gc_lock:
        if _gc_held[0] == 0:
            _gc_held[1] = gc.isenabled()
            gc.disable()
        _gc_held[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_held[0] -= 1
            if _gc_held[0] == 0 and _gc_held[1]:
                gc.enable()


def _dumps(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def build_piece(table: str, table_id: str, group: str, entries: Mapping[str, PartitionEntry],
                origin: str) -> tuple[PieceRef, bytes]:
    """The piece file of one group of partitions (not empty), written by transaction
    ``origin``, and its reference."""
    ordered = dict(sorted(entries.items()))
    data = _dumps({"format": FORMAT, "kind": "piece", "table": table, "table_id": table_id,
                   "group": group, "origin": origin,
                   "partitions": {p: e.to_json() for p, e in ordered.items()}})
    first = next(iter(ordered.values()))
    return PieceRef(group, hashlib.sha256(data).hexdigest(), origin,
                    first.key[0] if first.key else None, len(ordered),
                    *_totals(ordered.values())), data


def _totals(entries: Iterable[PartitionEntry]) -> tuple[int, int, int, int]:
    rows = size = files = batches = 0
    for e in entries:
        for f in e.fragments:
            rows += f.rows
            size += f.bytes
            files += 1
            batches += len(f.batches)
    return rows, size, files, batches


def piece_from_bytes(data: bytes, where: str, ref: PieceRef,
                     table: str) -> dict[str, PartitionEntry]:
    """The partitions of a piece file, checked against its reference (SHA-256, group, table
    and totals); damage or disagreement is a :class:`ManifestError` naming ``where``."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref.sha256:
        raise _damaged(where, table, None, f"its SHA-256 is {digest[:16]}..., the version's "
                       f"record says {ref.sha256[:16]}... (truncated or edited)")
    try:
        with _no_gc():
            body = json.loads(data)
            if body["table"] != table or body["group"] != ref.group:
                raise ValueError(f"it belongs to group {body['group']!r} of table "
                                 f"{body['table']!r}")
            entries = {p: PartitionEntry.from_json(v) for p, v in body["partitions"].items()}
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise _damaged(where, table, None, f"{type(exc).__name__}: {exc}") from exc
    totals = (len(entries), *_totals(entries.values()))
    expected = (ref.partitions, ref.rows, ref.bytes, ref.files, ref.batches)
    if totals != expected:
        raise _damaged(where, table, None, f"it holds (partitions, rows, bytes, files, "
                       f"batches) {totals}, its version's record says {expected}")
    for path, entry in entries.items():
        for f in entry.fragments:
            if f.batches and sum(b.rows for b in f.batches) != f.rows:
                raise _damaged(where, table, None, f"partition {path}: {f.file} records "
                               f"{f.rows} rows but its batches hold "
                               f"{sum(b.rows for b in f.batches)}")
    return entries


# -- format 2: what load_csv loaded ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LoadRecord:
    """A file ``load_csv`` loaded into the table: where from, its size, the SHA-256 of its
    content and the version that loaded it."""

    path: str
    size: int
    sha256: str
    version: int

    def to_json(self) -> list[Any]:
        return [self.path, self.size, self.sha256, self.version]


def build_ledger(table: str, table_id: str, records: Iterable[LoadRecord],
                 origin: str) -> tuple[str, bytes]:
    """The ledger piece of a table's loaded files, written by transaction ``origin``: its file
    name and bytes."""
    data = _dumps({"format": FORMAT, "kind": "loads", "table": table, "table_id": table_id,
                   "loads": [r.to_json() for r in records]})
    return f"{origin}-_loads.{hashlib.sha256(data).hexdigest()[:32]}.json", data


def _check_named(data: bytes, where: str, name: str, table: str) -> None:
    """A piece named after its SHA-256 (a ledger, a history) must hash to its name."""
    digest = hashlib.sha256(data).hexdigest()[:32]
    if not name.endswith(f".{digest}.json"):
        raise _damaged(where, table, None, f"its SHA-256 starts {digest[:16]}..., its name "
                       "says otherwise (truncated or edited)")


def ledger_from_bytes(data: bytes, where: str, name: str, table: str,
                      table_id: str) -> list[LoadRecord]:
    """The records of a ledger piece, checked against the SHA-256 in its ``name``."""
    _check_named(data, where, name, table)
    try:
        body = json.loads(data)
        if body["table_id"] != table_id:
            raise ValueError("it belongs to another table")
        return [LoadRecord(str(p), int(s), str(h), int(v)) for p, s, h, v in body["loads"]]
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise _damaged(where, table, None, f"{type(exc).__name__}: {exc}") from exc


# -- format 2: what one commit did ----------------------------------------------------------------
def build_history(table: str, table_id: str, version: int,
                  partitions: Mapping[str, tuple[int, int]],
                  sources: Iterable[tuple[str, int, str]], origin: str) -> tuple[str, bytes]:
    """The history piece of version ``version`` (written by transaction ``origin``): rows
    added and removed per partition, and the source files the commit loaded (path, size,
    SHA-256).  Its file name and bytes.

    >>> name, data = build_history("t", "id", 3, {"h0": (2, 0)}, [("a.csv", 9, "ab")], "x")
    >>> history_from_bytes(data, "here", name, "t", "id")["partitions"]
    {'h0': (2, 0)}
    """
    data = _dumps({"format": FORMAT, "kind": "history", "table": table, "table_id": table_id,
                   "version": version,
                   "partitions": {p: list(c) for p, c in sorted(partitions.items())},
                   "sources": [list(s) for s in sources]})
    return f"{origin}-_history.{hashlib.sha256(data).hexdigest()[:32]}.json", data


def history_from_bytes(data: bytes, where: str, name: str, table: str,
                       table_id: str) -> dict[str, Any]:
    """The detail of a history piece (``partitions``: path -> (added, removed); ``sources``:
    (path, size, SHA-256) tuples; ``version``), checked against the SHA-256 in its
    ``name``."""
    _check_named(data, where, name, table)
    try:
        body = json.loads(data)
        if body["table_id"] != table_id or body["kind"] != "history":
            raise ValueError("it is not a history piece of this table")
        return {"version": int(body["version"]),
                "partitions": {str(p): (int(a), int(r))
                               for p, (a, r) in body["partitions"].items()},
                "sources": [(str(p), int(n), str(h)) for p, n, h in body["sources"]]}
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise _damaged(where, table, None, f"{type(exc).__name__}: {exc}") from exc


# -- versions ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Manifest:
    """One committed version of a table: everything a reader needs, nothing that changes."""

    table: str
    version: int
    schema: Schema
    partition_by: Scheme | Compo
    sort_by: tuple[str, ...]
    partitions: Mapping[str, PartitionEntry]
    """A :class:`Partitions` (read piece by piece) for format 2, a dict for format 1."""
    op: str = "create"
    committed_at: float = field(default_factory=time.time)
    options: Mapping[str, Any] = field(default_factory=dict)
    table_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Random per creation: a writer that began before a drop + recreate cannot commit."""
    parent: int | None = None
    """The version this one was made from (None: version 0, or format 1)."""
    loads: str | None = None
    """File name of the ledger piece of the files ``load_csv`` loaded (None: none yet)."""
    info: Mapping[str, Any] = field(default_factory=dict)
    """What the commit that made this version was (its history entry): ``user``, ``args``,
    ``message``, ``job``, ``rows_added``, ``rows_removed``, ``partitions`` (empty: written
    before commits recorded it)."""
    history: str | None = None
    """File name of the history piece of this version's commit (rows per partition, source
    files), or None."""
    pending: Mapping[str, bytes] = field(default_factory=dict, compare=False, repr=False)
    """Pieces this version made, by file name, until the catalog has stored them."""

    @property
    def rows(self) -> int:
        if isinstance(self.partitions, Partitions):
            return self.partitions.total("rows")
        return sum(p.rows for p in self.partitions.values())

    def fragments(self) -> Iterable[Fragment]:
        for part in self.partitions.values():
            yield from part.fragments

    def files(self) -> set[str]:
        return {f.file for f in self.fragments()}

    def only(self, path: str) -> Manifest:
        """This version restricted to one partition (e.g. to read it alone)."""
        return replace(self, partitions={path: self.partitions[path]})

    def evolve(self, changes: Mapping[str, PartitionEntry | None], op: str, *, version: int,
               load: PieceLoader, origin: str,
               loads: tuple[str, bytes] | None = None,
               info: Mapping[str, Any] | None = None,
               history: tuple[str, bytes] | None = None,
               schema: Schema | None = None,
               options: Mapping[str, Any] | None = None,
               sort_by: Sequence[str] | None = None) -> Manifest:
        """The next version: this one with ``changes`` (a partition's new entry; None or no
        fragments: the partition goes), numbered ``version``.

        Only the pieces of the groups changed are rebuilt (their bytes wait in ``pending``
        until the catalog stores them); the others are shared with this version.  From a
        format-1 version every group is new: the commit writes the table in format 2.
        ``origin``: the transaction (new pieces are named after it); ``loads``: the new
        ledger piece (file name, bytes), if the change loaded files; ``info`` and
        ``history``: the commit's history entry and its detail piece (name, bytes);
        ``schema``, ``options`` and ``sort_by``: the table's new ones (a schema change).

        The new version's ``committed_at`` is never earlier than this one's: the versions'
        times only grow with their numbers, which :func:`hfq.catalog.timeline.as_of`'s
        binary search relies on (a clock set back, or another host's, cannot reorder them).
        """
        parts = self.partitions
        groups: dict[str, dict[str, PartitionEntry]] = {}
        if isinstance(parts, Partitions):
            refs = dict(parts.refs)
            for path in changes:
                group = group_of(path)
                if group not in groups:
                    groups[group] = dict(parts.group(group))
        else:
            refs = {}
            for path, old in parts.items():
                groups.setdefault(group_of(path), {})[path] = old
        for path, new in changes.items():
            members = groups.setdefault(group_of(path), {})
            if new is None or not new.fragments:
                members.pop(path, None)
            else:
                members[path] = new
        held: dict[str, Mapping[str, PartitionEntry]] = {}
        pending: dict[str, bytes] = {}
        for group, entries in groups.items():
            if not entries:
                refs.pop(group, None)
                continue
            ref, data = build_piece(self.table, self.table_id, group, entries, origin)
            refs[group] = ref
            held[group] = dict(sorted(entries.items()))
            pending[ref.name] = data
        ledger = self.loads
        if loads is not None:
            ledger = loads[0]
            pending[ledger] = loads[1]
        detail = None
        if history is not None:
            detail = history[0]
            pending[detail] = history[1]
        return replace(self, version=version, parent=self.version, op=op,
                       committed_at=max(time.time(), self.committed_at),
                       partitions=Partitions(refs.values(), load, held),
                       loads=ledger, pending=pending, info=dict(info or {}), history=detail,
                       schema=self.schema if schema is None else schema,
                       options=self.options if options is None else dict(options),
                       sort_by=self.sort_by if sort_by is None else tuple(sort_by))

    def to_json(self) -> dict[str, Any]:
        """The version's record (format 2); its pieces are stored apart."""
        parts = self.partitions
        if not isinstance(parts, Partitions):
            raise TypeError("only versions made by Manifest.evolve or new_manifest are written")
        return {
            "format": EVOLVED if "evolution" in self.options else FORMAT,
            "table": self.table, "version": self.version,
            "parent": self.parent, "schema": self.schema.to_json(),
            "partition_by": self.partition_by.to_json(), "sort_by": list(self.sort_by),
            "op": self.op, "committed_at": self.committed_at, "options": dict(self.options),
            "table_id": self.table_id, "loads": self.loads,
            "info": dict(self.info), "history": self.history,
            "summary": {"partitions": len(parts),
                        **{k: parts.total(k) for k in ("rows", "bytes", "files", "batches")}},
            "pieces": [r.to_json() for r in parts.refs.values()],
        }

    @staticmethod
    def from_json(data: Mapping[str, Any], load: PieceLoader = _no_pieces) -> Manifest:
        """A version from its record (format 2, pieces read through ``load``) or from a
        format-1 manifest."""
        fmt = data.get("format")
        partitions: Mapping[str, PartitionEntry]
        if fmt == 1:
            partitions = {p: PartitionEntry.from_json(v) for p, v in data["partitions"].items()}
        elif fmt in (FORMAT, EVOLVED):
            partitions = Partitions([PieceRef.from_json(r) for r in data["pieces"]], load)
            summary = dict(data["summary"])
            totals = {"partitions": len(partitions),
                      **{k: partitions.total(k) for k in ("rows", "bytes", "files", "batches")}}
            if summary != totals:
                raise ValueError(f"its summary {summary} disagrees with its pieces {totals}")
        else:
            raise HfqError(f"manifest format {fmt!r} is not supported (this hfq reads formats "
                           f"1, {FORMAT} and {EVOLVED}; a newer hfq wrote it?)")
        return Manifest(table=data["table"], version=int(data["version"]),
                        schema=Schema.from_json(data["schema"]),
                        partition_by=scheme_from_json(data["partition_by"]),
                        sort_by=tuple(data["sort_by"]), partitions=partitions,
                        op=data["op"], committed_at=float(data["committed_at"]),
                        options=data.get("options", {}), table_id=data["table_id"],
                        parent=data.get("parent"), loads=data.get("loads"),
                        info=data.get("info") or {}, history=data.get("history"))


def new_manifest(table: str, schema: Schema, partition_by: Scheme | Compo,
                 sort_by: Iterable[str], options: Mapping[str, Any]) -> Manifest:
    """Version 0 of a new table: no partitions."""
    return Manifest(table=table, version=0, schema=schema, partition_by=partition_by,
                    sort_by=tuple(sort_by), partitions=Partitions((), _no_pieces),
                    options=dict(options))


_SEAL = b',"checksum":"'


def seal(body: Mapping[str, Any]) -> bytes:
    """``body`` as compact JSON with its own SHA-256 as a last key, ``checksum``."""
    data = _dumps(body)
    return data[:-1] + _SEAL + hashlib.sha256(data).hexdigest().encode() + b'"}'


def unseal(data: bytes) -> dict[str, Any]:
    """The JSON of a sealed file, its checksum verified (ValueError when it fails); a format-1
    manifest (never sealed) is returned as it is."""
    at = data.rfind(_SEAL)
    if at >= 0 and len(data) == at + len(_SEAL) + 66 and data.endswith(b'"}'):
        body = data[:at] + b"}"
        stored = data[at + len(_SEAL):-2].decode("ascii", "replace")
        if hashlib.sha256(body).hexdigest() != stored:
            raise ValueError("it fails its checksum (a field was edited, or bytes damaged)")
        return dict(json.loads(body))
    parsed = json.loads(data)
    if not isinstance(parsed, dict):
        raise ValueError("it is not a JSON object")
    if parsed.get("format") != 1:
        raise ValueError("it has no checksum")
    return parsed


def manifest_to_bytes(manifest: Manifest) -> bytes:
    """A version's record file (sealed)."""
    return seal(manifest.to_json())


def manifest_from_bytes(data: bytes, where: str, load: PieceLoader = _no_pieces, *,
                        table: str | None = None, version: int | None = None) -> Manifest:
    """Parse a version's record (or a format-1 manifest); damage is a
    :class:`~hfq.errors.ManifestError` naming ``where`` (and ``table``, ``version``)."""
    try:
        with _no_gc():
            return Manifest.from_json(unseal(data), load)
    except ManifestError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise _damaged(where, table, version, _why(exc)) from exc


def record_time(data: bytes, where: str, *, table: str, version: int) -> float:
    """The ``committed_at`` of a version's record, its checksum, table and number checked,
    without building the :class:`Manifest` (what a search by time reads of each record it
    looks at); damage is a :class:`~hfq.errors.ManifestError` as for
    :func:`manifest_from_bytes`."""
    try:
        body = unseal(data)
        found = (body["table"], int(body["version"]))
        at = float(body["committed_at"])
    except (ValueError, KeyError, TypeError) as exc:
        raise _damaged(where, table, version, _why(exc)) from exc
    if found != (table, version):
        raise ManifestError(
            f"catalog file {where} is inconsistent: it holds version {found[1]} of table "
            f"{found[0]!r}, its name says version {version} of {table!r}", path=where,
            table=table, version=version)
    return at


def _why(exc: Exception) -> str:
    """What is wrong with a record, from what parsing it raised."""
    if isinstance(exc, ValueError) and str(exc).startswith("it "):
        return str(exc)   # unseal's own words
    return f"{type(exc).__name__}: {exc}"


def _damaged(where: str, table: str | None, version: int | None, why: str) -> ManifestError:
    return ManifestError(f"catalog file {where} is damaged: {why}; hfq.connect(root, "
                         "recover=True) or `hfq check --repair` opens the newest intact version",
                         path=where, table=table, version=version)
