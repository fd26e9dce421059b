"""The catalog's records: typed, immutable, and (de)serialised here and nowhere else.

A :class:`Manifest` is one committed version of a table.  It maps each partition path to a
:class:`PartitionEntry` (the partition's key and its :class:`Fragment` files); each fragment
carries its size, CRC-32, the nodes holding it and, per record batch, :class:`BatchStats` (rows
and the min/max/null count of the statistics columns) for the planner.

Every record is a frozen dataclass: a change makes a new record (:meth:`Fragment.placed_on`,
:meth:`PartitionEntry.with_fragments`), so a manifest a reader holds never changes under it.
The JSON layout (format 1) is the one hfq has always written: tables written before these
records existed open unchanged.

>>> f = fragment_from("t/data/p/x.arrow", rows=3, size=100, crc32=7,
...                   batches=[(3, {"sym": ("A", "C", 0)})], nodes=["n1"])
>>> f.batches[0].stats["sym"].max
'C'
>>> Fragment.from_json(f.to_json()) == f
True
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hfq.errors import HfqError
from hfq.partition import Compo, Scheme, scheme_from_json
from hfq.schema import Schema

__all__ = ["FORMAT", "BatchStats", "ColumnStats", "Fragment", "Manifest", "PartitionEntry",
           "fragment_from", "manifest_from_bytes", "manifest_to_bytes", "new_manifest",
           "partition_entry"]

FORMAT = 1

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

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows,
                "stats": {k: None if v is None else v.to_json() for k, v in self.stats.items()}}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> BatchStats:
        return _batch_stats(int(data["rows"]), data["stats"])


def _batch_stats(rows: int, stats: Mapping[str, Sequence[Any] | None]) -> BatchStats:
    """A batch from ``{column: [min, max, nulls] or None}`` (JSON's and storage's form)."""
    return BatchStats(rows, {k: None if v is None else ColumnStats(v[0], v[1], int(v[2]))
                             for k, v in stats.items()})


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

    def placed_on(self, nodes: Iterable[str]) -> Fragment:
        return replace(self, nodes=tuple(nodes))

    def without_stats(self) -> Fragment:
        """The fragment less its per-batch statistics: less to ship once planning is done."""
        return replace(self, batches=())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "rows": self.rows, "bytes": self.bytes,
                               "crc32": self.crc32,
                               "batches": [b.to_json() for b in self.batches]}
        if self.nodes:
            out["nodes"] = list(self.nodes)
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Fragment:
        return Fragment(file=data["file"], rows=int(data["rows"]), bytes=int(data["bytes"]),
                        crc32=int(data["crc32"]),
                        batches=tuple(BatchStats.from_json(b) for b in data.get("batches", ())),
                        nodes=tuple(data.get("nodes") or ()))


def fragment_from(file: str, *, rows: int, size: int, crc32: int,
                  batches: Sequence[tuple[int, Mapping[str, Sequence[Any] | None]]],
                  nodes: Iterable[str] = ()) -> Fragment:
    """A fragment from what the storage layer reports of an encoded file: ``batches`` as
    ``(rows, {column: (min, max, nulls) or None})``."""
    return Fragment(file=file, rows=rows, bytes=size, crc32=crc32,
                    batches=tuple(_batch_stats(n, stats) for n, stats in batches),
                    nodes=tuple(nodes))


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


@dataclass(frozen=True)
class Manifest:
    """One committed version of a table: everything a reader needs, nothing that changes."""

    table: str
    version: int
    schema: Schema
    partition_by: Scheme | Compo
    sort_by: tuple[str, ...]
    partitions: Mapping[str, PartitionEntry]
    op: str = "create"
    committed_at: float = field(default_factory=time.time)
    options: Mapping[str, Any] = field(default_factory=dict)
    table_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Random per creation: a writer that began before a drop + recreate cannot commit."""

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.partitions.values())

    def fragments(self) -> Iterable[Fragment]:
        for part in self.partitions.values():
            yield from part.fragments

    def files(self) -> set[str]:
        return {f.file for f in self.fragments()}

    def only(self, path: str) -> Manifest:
        """This version restricted to one partition (e.g. to read it alone)."""
        return replace(self, partitions={path: self.partitions[path]})

    def successor(self, partitions: Mapping[str, PartitionEntry], op: str) -> Manifest:
        """The next version: same table, these partitions (empty ones left out)."""
        return replace(self, version=self.version + 1, op=op, committed_at=time.time(),
                       partitions={p: v for p, v in sorted(partitions.items()) if v.fragments})

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "table": self.table, "version": self.version,
            "schema": self.schema.to_json(), "partition_by": self.partition_by.to_json(),
            "sort_by": list(self.sort_by), "op": self.op, "committed_at": self.committed_at,
            "options": dict(self.options), "table_id": self.table_id,
            "partitions": {p: v.to_json() for p, v in self.partitions.items()},
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Manifest:
        if data.get("format") != FORMAT:
            raise HfqError(f"manifest format {data.get('format')!r} is not supported "
                           f"(this hfq reads format {FORMAT})")
        return Manifest(table=data["table"], version=int(data["version"]),
                        schema=Schema.from_json(data["schema"]),
                        partition_by=scheme_from_json(data["partition_by"]),
                        sort_by=tuple(data["sort_by"]),
                        partitions={p: PartitionEntry.from_json(v)
                                    for p, v in data["partitions"].items()},
                        op=data["op"], committed_at=float(data["committed_at"]),
                        options=data.get("options", {}), table_id=data["table_id"])


def new_manifest(table: str, schema: Schema, partition_by: Scheme | Compo,
                 sort_by: Iterable[str], options: Mapping[str, Any]) -> Manifest:
    """Version 0 of a new table: no partitions."""
    return Manifest(table=table, version=0, schema=schema, partition_by=partition_by,
                    sort_by=tuple(sort_by), partitions={}, options=dict(options))


def manifest_to_bytes(manifest: Manifest) -> bytes:
    return json.dumps(manifest.to_json(), separators=(",", ":")).encode()


def manifest_from_bytes(data: bytes, where: str) -> Manifest:
    """Parse a manifest file; damage is an :class:`HfqError` naming ``where``."""
    try:
        return Manifest.from_json(json.loads(data))
    except HfqError:
        raise
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise HfqError(f"manifest {where} is damaged ({type(exc).__name__}: {exc})") from exc
