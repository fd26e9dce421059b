"""Changing the rows of some partitions, as one commit of the one write operator.

Every change of stored rows -- a delete, an update, an overwrite of a slice, an upsert, the
dedup key of an append or a CSV load -- is a :class:`Change`: given one partition's stored rows
(``old``, at the head) and the rows the write staged for it (``new``: its fragments, already
written), what the partition becomes (an :class:`Outcome`).  :func:`commit_changed` runs it:

1. ``select(head)`` names the partitions the change must look at (pruned by the partition keys
   and per-batch statistics: a one-symbol-day delete reads one day's catalog piece and one
   partition), plus every partition the write staged rows for;
2. each runs as a task on a node holding its files (:meth:`hfq.session.Session.run_units`):
   the rows are read there, changed there and, when the partition changes, written there as
   one new sorted file (the transaction's, so an abort removes it) -- only counts travel;
3. the new files replace the old ones in one commit; the commit checks that what the change
   read is still what the head holds (:attr:`hfq.catalog.Transaction.check_reads`): if another
   writer changed one of those partitions meanwhile, nothing is published, the files this
   attempt wrote are removed, and the change is computed again on the new head -- so a
   delete never misses rows appended meanwhile and two keyed writers never both add a key.

The cost is the partitions selected, whatever the table's size.  A change that touches
nothing is not committed (:func:`commit_changed` returns None); the caller says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hfq import faults
from hfq.catalog.catalog import StaleReadError
from hfq.catalog.evolution import Layouts
from hfq.catalog.records import Fragment, Manifest
from hfq.errors import CommitConflictError
from hfq.query.plan import Filters, Unit
from hfq.query.read import NodeLike, ReadSpec, read_unit
from hfq.runtime.task import NodeContext

if TYPE_CHECKING:
    from hfq.write import FileWriter, Write

__all__ = ["ATTEMPTS", "Change", "ChangeReport", "Outcome", "Target", "commit_changed",
           "full_spec"]

log = logging.getLogger(__name__)

ATTEMPTS = 50
"""Times a change is computed again after another writer changed what it read."""


@dataclass(frozen=True)
class Outcome:
    """What one partition becomes.

    ``rows``: the partition's rows from now on (its files and the staged ones replaced by
    one file of them; empty: the partition goes).  Else ``new``: the stored rows stay and the
    staged ones are replaced by these (empty: none).  Neither: nothing changes (the staged
    rows, if any, are added as they are).  ``added``/``removed``: the rows the history
    counts."""

    rows: pa.Table | None = None
    new: pa.Table | None = None
    added: int = 0
    removed: int = 0

    @property
    def unchanged(self) -> bool:
        return self.rows is None and self.new is None


class Change:
    """A picklable change of one partition: ``change(partition, old, new) -> Outcome``
    (``old``: its stored rows at the head, ``new``: the rows staged for it, both with every
    column of the table, sorted)."""

    def __call__(self, partition: str, old: pa.Table, new: pa.Table) -> Outcome:
        raise NotImplementedError


@dataclass(frozen=True)
class Target:
    """One partition to change: its stored files at the head (``old``) and the files the
    write staged for it (``new``); a work unit where all of them are."""

    partition: str
    key: tuple[Any, ...]
    old: tuple[Fragment, ...]
    new: tuple[Fragment, ...]

    @property
    def fragments(self) -> tuple[Fragment, ...]:
        return self.old + self.new

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.fragments)


def _unit(target: Target, fragments: tuple[Fragment, ...]) -> Unit:
    bare = tuple(f.without_stats() for f in fragments)
    return Unit(target.partition, target.key, bare, (None,) * len(bare),
                sum(f.rows for f in bare), sum(f.bytes for f in bare), exact=True,
                batches_kept=sum(len(f.batches) for f in bare))


def full_spec(manifest: Manifest) -> ReadSpec:
    """Every column of every row (what a change reads of a partition)."""
    return ReadSpec(manifest.schema, manifest.sort_by, manifest.schema.names, None, [],
                    Filters(), Layouts.of(manifest.options))


@dataclass(frozen=True)
class ChangeTask:
    """Runs a :class:`Change` on one :class:`Target` on a node holding its files; writes
    the new file there (to the partition's replicas) and returns ``(kind, fragment, added,
    removed)`` -- kind ``same``, ``rows`` or ``new``."""

    spec: ReadSpec
    files: FileWriter
    change: Change

    def __call__(self, node: NodeLike, target: Target) -> tuple[str, Fragment | None, int, int]:
        empty = self.spec.schema.arrow.empty_table()
        old = read_unit(node.store, self.spec, _unit(target, target.old), node.name) \
            if target.old else empty
        new = read_unit(node.store, self.spec, _unit(target, target.new), node.name) \
            if target.new else empty
        outcome = self.change(target.partition, old, new)
        if outcome.unchanged:
            return "same", None, outcome.added, outcome.removed
        kind, rows = ("rows", outcome.rows) if outcome.rows is not None else ("new", outcome.new)
        assert rows is not None
        fragment = None
        if rows.num_rows:
            nodes = node.nodes() if isinstance(node, NodeContext) else None
            if nodes is None:
                raise TypeError("a change runs on a node context")
            near = nodes.holders(target.old[0]) if target.old else \
                nodes.holders(target.new[0]) if target.new else []
            fragment = self.files.write(nodes, target.partition, target.key, rows, near=near)
            faults.point("change.partition.after_write")
        return kind, fragment, outcome.added, outcome.removed


@dataclass
class ChangeReport:
    """What a change did: ``rows_added``/``rows_removed`` (an update counts each row it
    changed once in each), the partitions it rewrote or added to, and the table's version
    after it (unchanged when nothing matched: then ``changed`` is False and nothing was
    committed)."""

    op: str
    table: str
    version: int
    changed: bool
    rows_added: int = 0
    rows_removed: int = 0
    partitions: int = 0
    attempts: int = 1
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        if not self.changed:
            return (f"{self.op} on {self.table!r}: no row matched; nothing changed (the table "
                    f"stays at version {self.version})")
        what = f"{self.rows_added:,} rows changed" if self.op == "update" else \
            f"{self.rows_removed:,} rows removed" if self.op == "delete" else \
            f"{self.rows_added:,} rows added, {self.rows_removed:,} removed"
        return (f"{self.op} on {self.table!r}: {what} in {self.partitions:,} partitions -> "
                f"version {self.version}")


Selector = Callable[[Manifest], Mapping[str, Any]]
"""``select(head)``: the partitions (path -> entry) a change must read at ``head``."""


def commit_changed(write: Write, op: str, change: Change, select: Selector, *,
                   args: Any = None, message: str | None = None,
                   commit_unchanged: bool = False) -> tuple[Manifest | None, ChangeReport]:
    """Apply ``change`` to the partitions ``select`` names and to those ``write`` staged
    rows for, at the head, and commit it all through ``write`` (see the module's docstring).
    Returns the new version (None when nothing changed and ``commit_unchanged`` is False:
    nothing is committed) and a :class:`ChangeReport`.

    Raises :class:`~hfq.errors.CommitConflictError` after :data:`ATTEMPTS` heads changed
    under it."""
    txn, catalog, session = write.txn, write.catalog, write.session
    name = write.base.table
    staged = {p: (k, list(fs)) for p, (k, fs) in txn.added.items()}
    task = ChangeTask(full_spec(write.base), write.files, change)
    extra: list[Fragment] = []   # files of attempts that lost to a concurrent writer
    for attempt in range(1, ATTEMPTS + 1):
        head = catalog.snapshot(name) if attempt > 1 or write.base.version != \
            catalog.head(name) else write.base
        selected = dict(select(head))
        seen = {p: _files(e) for p, e in selected.items()}
        targets = []
        for path in sorted(set(selected) | set(staged)):
            entry = head.partitions.get(path)
            key = tuple(entry.key) if entry is not None else staged[path][0]
            targets.append(Target(path, key, tuple(entry.fragments) if entry else (),
                                  tuple(staged.get(path, ((), []))[1])))
        for t in targets:
            seen.setdefault(t.partition, _files(head.partitions.get(t.partition)))
        results: dict[int, tuple[str, Fragment | None, int, int]] = {}
        session.run_units(task, targets, results.__setitem__, label=f"{op} {name}")
        txn.added, txn.removed = {}, {}
        counts: dict[str, tuple[int, int]] = {}
        written: list[Fragment] = []
        for i, target in enumerate(targets):
            kind, fragment, added, removed = results[i]
            if fragment is not None:
                written.append(fragment)
            if kind == "rows":
                if target.old:
                    txn.replace(target.partition, [f.file for f in target.old])
                if fragment is not None:
                    txn.add(target.partition, target.key, fragment)
            else:
                frags = list(target.new) if kind == "same" else \
                    [fragment] if fragment is not None else []
                for f in frags:
                    txn.add(target.partition, target.key, f)
            if kind != "same" or target.new:
                counts[target.partition] = (added, removed)
        if not counts and not commit_unchanged:
            _remove(write, written + extra)
            return None, ChangeReport(op, name, head.version, False, attempts=attempt)
        txn.counts = counts
        txn.check_reads = _same_reads(select, seen)
        write.settled = True
        try:
            committed = write.commit(op, args=args, message=message)
        except StaleReadError:
            log.info("table %s: %s read rows another writer changed; computing it again",
                     name, op)
            extra += written
            txn.added = {p: (k, list(fs)) for p, (k, fs) in staged.items()}
            txn.removed = {}
            continue
        kept = {f.file for p in staged for f in _entry_fragments(committed, p)}
        superseded = [f for _, fs in staged.values() for f in fs if f.file not in kept]
        _remove(write, superseded + extra)
        added = sum(a for a, _ in counts.values())
        removed = sum(r for _, r in counts.values())
        return committed, ChangeReport(op, name, committed.version, True, added, removed,
                                       len(counts), attempt)
    raise CommitConflictError(f"table {name!r}: {op} gave up after {ATTEMPTS} attempts: other "
                              "writers kept changing the partitions it reads")


def _entry_fragments(manifest: Manifest, path: str) -> tuple[Fragment, ...]:
    """The fragments of partition ``path`` in ``manifest`` (none when it has no such
    partition): one day's piece read, not the table's."""
    entry = manifest.partitions.get(path)
    return () if entry is None else tuple(entry.fragments)


def _files(entry: Any) -> tuple[str, ...]:
    return () if entry is None else tuple(f.file for f in entry.fragments)


def _same_reads(select: Selector, seen: Mapping[str, tuple[str, ...]]
                ) -> Callable[[Manifest], bool]:
    """Whether a head holds exactly the files the change read (and no new partition the
    change would have had to read)."""
    def check(head: Manifest) -> bool:
        now = {p: _files(e) for p, e in select(head).items()}
        for path in seen:
            now.setdefault(path, _files(head.partitions.get(path)))
        return now == dict(seen)
    return check


def _remove(write: Write, fragments: Sequence[Fragment]) -> None:
    """Best effort: files no version will reference (vacuum finds any left)."""
    if not fragments:
        return
    try:
        write.nodes.remove(list(fragments))
    except Exception as exc:  # noqa: BLE001 - the commit stands; vacuum removes them
        log.warning("table %s: removing %d superseded files failed (%s); vacuum() removes "
                    "them", write.base.table, len(fragments), exc)
