"""One exception tree for hfq.

Every error hfq raises derives from :class:`HfqError`; each subclass also derives from the
builtin exception it resembles, so ``except KeyError`` keeps working for code that does not know
about hfq.  Messages say what was wrong, where (table, partition, file, line, column) and what the
valid choices are.
"""

from __future__ import annotations

__all__ = [
    "CommitConflictError",
    "CorruptPartitionError",
    "CsvError",
    "HfqError",
    "InvalidNameError",
    "NodeUnavailableError",
    "PartitionUnavailableError",
    "SchemaMismatchError",
    "TableExistsError",
    "TableNotFoundError",
    "UnsafePathError",
]


class HfqError(Exception):
    """Root of every error raised by hfq."""


class TableNotFoundError(HfqError, KeyError):
    """A table name that the catalog does not know."""

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else ""


class TableExistsError(HfqError, FileExistsError):
    """``create_table`` of a name that is already taken."""


class InvalidNameError(HfqError, ValueError):
    """A table or column name that hfq cannot store safely."""


class UnsafePathError(HfqError, ValueError):
    """A storage path that would leave the store's root (``..``, absolute, NUL, backslash)."""


class SchemaMismatchError(HfqError, ValueError):
    """Data whose columns or types differ from the table's schema."""


class CsvError(HfqError, ValueError):
    """A CSV value, row or header that cannot be parsed; names file, line and column."""

    def __init__(self, message: str, *, path: str = "", line: int | None = None,
                 column: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column


class CommitConflictError(HfqError, RuntimeError):
    """Another writer committed a change that cannot be merged with this one."""


class CorruptPartitionError(HfqError, OSError):
    """A partition file whose checksum or contents do not match the catalog."""


class PartitionUnavailableError(HfqError, RuntimeError):
    """Partitions that no live node holds: the answer would be incomplete, so there is none."""

    def __init__(self, message: str, partitions: list[str] | None = None) -> None:
        super().__init__(message)
        self.partitions = list(partitions or [])


class NodeUnavailableError(HfqError, RuntimeError):
    """An hfq node needed for a call is gone (its server's actor died, or Ray lost it)."""

    def __init__(self, message: str, nodes: list[str] | None = None) -> None:
        super().__init__(message)
        self.nodes = list(nodes or [])
