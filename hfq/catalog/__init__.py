"""The catalog: typed records of tables and their versions, atomic commits, snapshot reads.

``records`` defines what a version is (and is the only place records are built or parsed),
``catalog`` publishes and reads versions, ``files`` looks after a node's files of a table.
"""

from hfq.catalog.catalog import Catalog, FileNamer, Transaction
from hfq.catalog.files import list_table_files, remove_table_files, sweep
from hfq.catalog.records import BatchStats, ColumnStats, Fragment, Manifest, PartitionEntry

__all__ = ["BatchStats", "Catalog", "ColumnStats", "FileNamer", "Fragment", "Manifest",
           "PartitionEntry", "Transaction", "list_table_files", "remove_table_files", "sweep"]
