"""The catalog: typed records of tables and their versions, atomic commits, snapshot reads.

``records`` defines what a version is (and is the only place records are built or parsed),
``catalog`` publishes, reads and checks versions, ``files`` looks after a node's files of a
table, ``replica`` a node's copy of the catalog, ``vacuum`` what a vacuum must look at.

Design (format 2, the split catalog).  The references were Iceberg's manifest list (a
snapshot is a small list of manifest files, each with partition-value summaries so planning
skips whole manifests; manifests are immutable and reused by later snapshots) and Delta's log
(numbered JSON commits published with put-if-absent, with a checkpoint so readers need not
replay the log).  hfq takes Iceberg's shape and Delta's commit:

* A version is one small *record*, ``<table>/_versions/<n>.json``, published with one
  create-if-absent -- still the only atomic step.  It holds the schema, scheme, options,
  the totals (``len(t)``, partition and file counts) and one reference per *group* of
  partitions (the first component of the partition path: a day under the default
  ``Compo(Value("date"), Hash("symbol", 100))``), with the group's first-level key and
  totals.  Every version's record is self-contained, like a Delta checkpoint at every
  commit, but costs O(groups), not O(partitions).
* A group's partition entries (fragments, per-batch statistics and checksums) live in a
  *piece*, ``<table>/_manifests/<txn>-<group>.<sha256>.json``: immutable, named after its
  content and the transaction that wrote it, shared by every later version that did not
  change the group.  A commit writes the pieces of the groups it touched (O(partitions
  touched)) plus the record; readers cache pieces by name, forever valid.
* Planning prunes groups on the references' first-level key before reading any piece
  (a one-day scan reads one day's piece); within a piece, the hash bucket and per-batch
  min/max prune as before.
* Defence: the record carries its SHA-256 (sealed as its last key), a piece is checked
  against the SHA-256 its record names, totals are cross-checked; a claim marker per
  published number (``_claims/``) keeps numbers from being reused and makes a deleted head a
  named error; ``Catalog.check`` reports and repairs (from the nodes' copies, which the
  database keeps through ``Catalog.on_files``), or sets aside and marks lost.
* Format 1 (one JSON manifest per version listing everything) is read as before; the next
  commit (or ``Catalog.migrate``) writes the table in format 2, and older format-1 versions
  stay readable for time travel.
* The files ``load_csv`` loaded (path, size, SHA-256, version) are a ledger piece named by
  the record (``loads``): loading the same content again is refused.
* Maintenance follows the change too: ``len``, partition counts and the schema come from the
  record; a vacuum (``hfq.catalog.vacuum``) remembers what it saw (``<table>/.vacuum.json``)
  and next looks only at the partitions new pieces, forgotten versions and failed commits
  name, the partition directories changed on each node since (one ``stat`` each) and those
  where it spared a file -- a full sweep whenever that record is missing or in doubt.
"""

from hfq.catalog.catalog import Catalog, FileNamer, Transaction
from hfq.catalog.files import list_table_files, remove_table_files, sweep
from hfq.catalog.records import BatchStats, ColumnStats, Fragment, Manifest, PartitionEntry

__all__ = ["BatchStats", "Catalog", "ColumnStats", "FileNamer", "Fragment", "Manifest",
           "PartitionEntry", "Transaction", "list_table_files", "remove_table_files", "sweep"]
