"""Data that changes: mutations, dedup keys, schema evolution and knowledge time.

Every change of stored rows commits through the one write operator (:class:`hfq.write.Write`)
as one version touching only the partitions it must (:mod:`~hfq.change.rewrite`):
:mod:`~hfq.change.mutate` (``delete``, ``update``, ``overwrite``), :mod:`~hfq.change.dedup`
(dedup keys on every write that adds rows, ``upsert``), :mod:`~hfq.change.columns` (adding,
dropping, renaming and widening columns without rewriting a file) and
:mod:`~hfq.change.knowledge` (rows as they were known at a time).  The catalog's side --
history, reads as of a time, tags, snapshots, column layouts -- is in :mod:`hfq.catalog`.
See ``docs/changing-data.md``.

The modules are imported by name (``from hfq.change.mutate import delete``): the write
operator itself calls :func:`hfq.change.dedup.settle`, so this package's ``__init__`` imports
nothing.
"""

__all__: list[str] = []
