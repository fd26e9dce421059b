"""One exception tree for hfq.

Every error hfq raises derives from :class:`HfqError`; each subclass also derives from the
builtin exception it resembles, so ``except KeyError`` keeps working for code that does not know
about hfq.  Messages say what was wrong, where (table, partition, file, line, column) and what the
valid choices are.
"""

from __future__ import annotations

__all__ = [
    "AccessDeniedError",
    "ArgumentError",
    "AuthenticationError",
    "CommitConflictError",
    "CorruptPartitionError",
    "CsvError",
    "DuplicateKeyError",
    "DuplicateLoadError",
    "HfqError",
    "InvalidNameError",
    "ManifestError",
    "NodeUnavailableError",
    "PartitionUnavailableError",
    "QueryError",
    "QuotaExceededError",
    "SchemaMismatchError",
    "SqlError",
    "TableExistsError",
    "TableNotFoundError",
    "UnsafePathError",
    "WriteError",
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


# -- the catalog's own damage (hfq.catalog) -----------------------------------------------------
class ManifestError(HfqError, ValueError):
    """A catalog file that is damaged (truncated, empty, not JSON, a key missing, a field
    edited: its checksum fails), missing (a committed version whose file is gone) or
    inconsistent (with its name, its pieces or the table's other versions).  ``path`` is the
    file, ``table`` and ``version`` say whose it is, when known.  ``hfq.connect(root,
    recover=True)``, ``db.check()`` and ``hfq check`` report these and open the newest intact
    version."""

    def __init__(self, message: str, *, path: str = "", table: str | None = None,
                 version: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.table = table
        self.version = version

    def __reduce__(self) -> tuple:   # keep the attributes across processes
        return (_manifest_error, (str(self), self.path, self.table, self.version))


def _manifest_error(message: str, path: str, table: str | None,
                    version: int | None) -> ManifestError:
    return ManifestError(message, path=path, table=table, version=version)


class DuplicateLoadError(HfqError, ValueError):
    """``load_csv`` of a file whose content this table has loaded already (the message names
    the file, the earlier one and the version that loaded it); pass ``duplicates="append"``
    to load it again or ``"skip"`` to leave it out."""


class DuplicateKeyError(HfqError, ValueError):
    """A write that would store two rows of one dedup key (``create_table(...,
    unique=...)``) on a table whose policy is ``keep="error"``, or an update that would give
    two rows one key; the message names the partition and a key.  Nothing was committed."""


class CorruptPartitionError(HfqError, OSError):
    """A partition file whose checksum or contents do not match the catalog (or that is
    missing or cannot be decoded).  ``file``, ``node`` and ``batch`` say which copy and which
    record batch, when known (the message names the table and partition too)."""

    def __init__(self, message: str, *, file: str | None = None, node: str | None = None,
                 batch: int | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.node = node
        self.batch = batch

    def __str__(self) -> str:   # OSError would format (errno, strerror) from the args
        return str(self.args[0]) if self.args else ""


class WriteError(HfqError, OSError):
    """Writing a table's files or its next version failed (a full disk, permissions, a node
    that refused); the message names table, partition, file and node, ``errno`` is the
    operating system's (``errno.ENOSPC`` for a full disk) and the original error is chained.
    Nothing of the failed write is left behind: the table is at its old version."""

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno

    def __str__(self) -> str:   # OSError would format (errno, strerror) from the args
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple:   # keep errno across processes (a node's error)
        return (_write_error, (str(self), self.errno))


def _write_error(message: str, errno: int | None) -> WriteError:
    return WriteError(message, errno=errno)


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


# -- queries (hfq.engine) ----------------------------------------------------------------------
class QueryError(HfqError, ValueError):
    """A query that cannot run: an unknown column or table, a type error, an operation the
    engine does not support; the message names it and the valid choices."""


class ArgumentError(SchemaMismatchError, QueryError):
    """A bad argument to a read -- ``dates=``, ``symbols=``, ``columns=``, ``where=``,
    ``version=`` -- on any path (``scan``, ``query``, ``to_*``, ``map_reduce``); ``argument``
    names it.  It is also a :class:`SchemaMismatchError` and a :class:`QueryError`, which the
    two read paths raised before they became one."""

    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


class SqlError(QueryError):
    """SQL text that cannot be compiled: a syntax error, an unsupported construct, an unknown
    column; ``line`` and ``column`` (1-based) point into the text when known."""

    def __init__(self, message: str, *, line: int | None = None,
                 column: int | None = None) -> None:
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(message + where)
        self.line = line
        self.column = column


# -- the service (hfq.service) ---------------------------------------------------------------------
class AccessDeniedError(HfqError, PermissionError):
    """An operation the current user's grants do not allow (reading a table without a SELECT
    grant, appending without INSERT, a read of a masked column); the message names the
    operation and the table, never a value the user may not read."""


class AuthenticationError(HfqError, PermissionError):
    """A login or token the service refuses: an unknown user or a wrong password (one message
    for both), an expired or forged token, or too many failed logins in a row."""


class QuotaExceededError(HfqError, RuntimeError):
    """A query beyond its user's quota: too many queries at once, more rows or bytes than
    the user may fetch, or longer than the user's timeout; ``cancelled`` for a query stopped
    on request."""
