"""One typed settings object with ``HFQ_*`` environment defaults and a scoped override.

Code that plans work takes a snapshot with :func:`get` and passes it on; workers never read
the environment or the module state on their own.

An :func:`override` holds in its ``with`` block, in the context that entered it (a
:class:`contextvars.ContextVar`), as :mod:`decimal`'s local context does: another thread,
or another asyncio task, never sees it.  A thread starts with no override (Python gives it a
fresh context); an asyncio task starts with the overrides in force where it was created
(asyncio copies the context); ``contextvars.copy_context().run(fn)`` runs ``fn`` with those in
force now, and what ``fn`` overrides stays inside.

Examples
--------
>>> from hfq import config
>>> import threading
>>> with config.override(batch_rows=1024):
...     seen = []
...     t = threading.Thread(target=lambda: seen.append(config.get().batch_rows))
...     t.start(); t.join()
...     config.get().batch_rows, seen            # the other thread: the default
(1024, [65536])
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = ["COMPRESSIONS", "Settings", "check_compression", "get", "override"]

COMPRESSIONS = ("zstd", "lz4", "none")
"""The codecs partition files can be written with (per database, or per table)."""


def check_compression(codec: object, what: str = "compression") -> str:
    """``codec`` if it names one of :data:`COMPRESSIONS`, else a ValueError naming ``what``."""
    if not isinstance(codec, str) or codec not in COMPRESSIONS:
        raise ValueError(f"{what} must be one of {', '.join(COMPRESSIONS)}, not {codec!r}")
    return codec


def machine_memory() -> int:
    """Bytes of RAM on this machine (8 GiB when it cannot be told)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _default_budget() -> int:
    return int(min(8 << 30, max(256 << 20, machine_memory() // 4)))


def _default_cache() -> int:
    return int(min(4 << 30, machine_memory() // 8))


def _in_jupyter() -> bool:
    """Is this a Jupyter kernel (where progress bars render in the cell's output)?"""
    import sys
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


@dataclass(frozen=True)
class Settings:
    """Every knob hfq has.  Environment variable ``HFQ_<FIELD>`` (upper case) sets the default.

    :func:`get` gives the settings in force; ``hfq.connect(root, **settings)`` fixes a
    database handle's (``db.settings``).  Values are checked when the object is made.

    Examples
    --------
    >>> from hfq.config import Settings
    >>> s = Settings(compression="lz4", threads=2)
    >>> s.compression, s.threads, s.batch_rows
    ('lz4', 2, 65536)
    >>> Settings(progress="sometimes")
    Traceback (most recent call last):
        ...
    ValueError: progress must be auto, always or never, not 'sometimes'
    """

    root: str = "./hfq_data"
    """Where the embedded default keeps its tables (``HFQ_ROOT``)."""
    compression: str = "zstd"
    """Codec for partition files: zstd, lz4 or none (a table created with its own
    ``compression`` keeps that one)."""
    compression_level: int = 3
    """zstd level (1-22); ignored by the other codecs."""
    batch_rows: int = 65_536
    """Rows per Arrow record batch inside a partition file (the unit of min/max statistics)."""
    memory_budget: int = field(default_factory=lambda: _default_budget())
    """Bytes an ingest may hold in memory at once (parsed blocks and partition buffers);
    default a quarter of the machine's memory, at most 8 GiB."""
    cache_bytes: int = field(default_factory=lambda: _default_cache())
    """Decoded partitions each node server keeps in memory for map functions (0: none); default
    an eighth of the machine's memory, at most 4 GiB."""
    csv_block_bytes: int = 32 << 20
    """Bytes of CSV text parsed at a time."""
    threads: int = max(1, os.cpu_count() or 1)
    """Threads for parsing, encoding and reading."""
    progress: str = "auto"
    """Progress bars: auto (only on a terminal), always or never."""
    orphan_grace_s: float = 3600.0
    """Unreferenced files younger than this are left alone by vacuum (a writer may still commit)."""
    live_group_commit_s: float = 0.0
    """Live publishing (:mod:`hfq.live`): how long a node's log waits for more batches before
    the fsync that makes them durable together (0: at once; batches that arrive during an
    fsync share the next one whatever this is)."""
    live_grace_s: float = 60.0
    """Live rows written down stay readable from the nodes (and their log segments on disk)
    this long after the write-down's commit, for queries and subscribers that pinned an older
    version; then they are dropped and the log truncated."""
    live_segment_bytes: int = 64 << 20
    """A live log segment file is closed and a new one begun past this size."""
    ping_timeout_s: float = 2.0
    """Seconds a node's server has to answer a ping before maintenance (rebalance, repair,
    verify, vacuum, check) counts the node as down: a crashed node stays on Ray's list of live
    nodes for 10-30 s."""

    def __post_init__(self) -> None:
        check_compression(self.compression)
        for name in ("batch_rows", "memory_budget", "csv_block_bytes", "threads",
                     "live_segment_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        if self.live_group_commit_s < 0 or self.live_grace_s < 0:
            raise ValueError("live_group_commit_s and live_grace_s must be 0 or more")
        if not self.ping_timeout_s > 0:
            raise ValueError(f"ping_timeout_s must be positive, not {self.ping_timeout_s!r}")
        if self.cache_bytes < 0:
            raise ValueError(f"cache_bytes must be 0 or more, not {self.cache_bytes!r}")
        if self.csv_block_bytes * 2 > self.memory_budget:
            raise ValueError("memory_budget must hold at least two CSV blocks "
                             f"({self.csv_block_bytes} bytes each), not {self.memory_budget}")
        if self.progress not in ("auto", "always", "never"):
            raise ValueError(f"progress must be auto, always or never, not {self.progress!r}")

    def show_progress(self, progress: bool | None = None) -> bool:
        """Whether to draw a progress bar: ``progress`` if given, else per ``self.progress``
        (``auto``: only when standard error is a terminal or a Jupyter notebook's).

        Examples
        --------
        >>> from hfq.config import Settings
        >>> Settings(progress="never").show_progress(), Settings(progress="always").show_progress()
        (False, True)
        >>> Settings(progress="never").show_progress(True)     # a call's own progress= wins
        True
        """
        if progress is not None:
            return progress
        import sys
        return self.progress == "always" or (self.progress == "auto" and (
            sys.stderr.isatty() or _in_jupyter()))

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied (and checked); an unknown name is a TypeError that
        lists the valid ones.

        Examples
        --------
        >>> from hfq.config import Settings
        >>> Settings().replace(batch_rows=4096, compression="none").batch_rows
        4096
        >>> Settings().replace(batch_size=4096)   # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        TypeError: unknown settings ['batch_size']; valid: ['root', 'compression', ...]
        """
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"unknown settings {sorted(unknown)}; "
                            f"valid: {[f.name for f in dataclasses.fields(self)]}")
        return dataclasses.replace(self, **changes)


def _from_env() -> Settings:
    values: dict[str, Any] = {}
    for f in dataclasses.fields(Settings):
        raw = os.environ.get(f"HFQ_{f.name.upper()}")
        if raw is None:
            continue
        kind: type[Any] = int if f.name in ("memory_budget", "cache_bytes") else type(f.default)
        try:
            values[f.name] = kind(raw)
        except ValueError:
            raise ValueError(f"HFQ_{f.name.upper()}={raw!r} is not a valid "
                             f"{kind.__name__}") from None
    return Settings(**values)


_overrides: ContextVar[tuple[dict[str, Any], ...]] = ContextVar("hfq_overrides", default=())
"""The overrides in force in this context, outermost first."""


def get() -> Settings:
    """A snapshot of the settings in force: defaults < environment < :func:`override`
    (those of this context only).

    Examples
    --------
    >>> from hfq import config
    >>> config.get().compression                # HFQ_COMPRESSION, else the default
    'zstd'
    """
    settings = _from_env()
    for changes in _overrides.get():
        settings = settings.replace(**changes)
    return settings


@contextlib.contextmanager
def override(**changes: Any) -> Iterator[Settings]:
    """Change settings inside a ``with`` block (validated at once), in this context only:
    other threads and tasks keep theirs (see the module's documentation).  Yields the
    settings now in force; blocks nest.

    Examples
    --------
    >>> from hfq import config
    >>> with config.override(batch_rows=1024) as outer:
    ...     with config.override(compression="lz4") as inner:
    ...         inner.batch_rows, inner.compression
    ...     config.get().compression
    (1024, 'lz4')
    'zstd'
    >>> with config.override(batch_rows=0):
    ...     pass
    Traceback (most recent call last):
    ...
    ValueError: batch_rows must be positive, not 0
    """
    get().replace(**changes)  # validate before entering
    token = _overrides.set((*_overrides.get(), dict(changes)))
    try:
        yield get()
    finally:
        _overrides.reset(token)
