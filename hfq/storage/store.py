"""The few file primitives everything else is built on: a root directory, local or fsspec.

:class:`Store` is the interface; :func:`open_store` picks the implementation for a URL:

* :class:`LocalStore` -- a plain path or ``file://`` / ``local://`` URL.  The operating system
  directly: memory-mapped reads, ``link`` for create-if-absent, ``rename`` for atomic replace.
* :class:`FsspecStore` -- any other fsspec URL, with ``storage_options`` passed straight through.

Every path given to a method is relative to the store's root, uses ``/``, and is refused
(:class:`~hfq.errors.UnsafePathError`) when it could leave the root.

:meth:`Store.create_exclusive` is the one primitive the catalog's correctness rests on (two
writers racing for the same version: exactly one wins).  It is a real atomic create-if-absent on
a local disk, on ``memory://`` and on S3 (conditional PUT); every other fsspec backend refuses it
rather than pretend.
"""

from __future__ import annotations

import abc
import functools
import hashlib
import inspect
import os
import shutil
import socket
import threading
import time
import uuid
from typing import Any

import pyarrow as pa

from hfq.errors import HfqError, UnsafePathError

__all__ = [
    "HOST",
    "FsspecStore",
    "LocalStore",
    "Store",
    "open_store",
    "pid_alive",
    "temp_name",
    "temp_owner_alive",
]

HOST = hashlib.blake2b(socket.gethostname().encode(), digest_size=4).hexdigest()


def temp_name(final: str) -> str:
    """A temporary sibling of ``final`` that names its writer (host, pid) for orphan cleanup."""
    head, _, tail = final.rpartition("/")
    name = f".tmp~{HOST}~{os.getpid()}~{uuid.uuid4().hex[:12]}~{tail}"
    return f"{head}/{name}" if head else name


def temp_owner_alive(name: str) -> bool:
    """For a name made by :func:`temp_name`: is the process that wrote it still running here?"""
    parts = name.rsplit("/", 1)[-1].split("~", 4)
    if len(parts) != 5 or parts[0] != ".tmp" or not parts[2].isdigit():
        return False
    if parts[1] != HOST:
        return True  # another machine's writer: we cannot tell, so assume alive
    return pid_alive(int(parts[2]))


def pid_alive(pid: int) -> bool:
    """Is process ``pid`` running on this host?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _components(rel: str) -> list[str]:
    """The components of a root-relative path; raises when the path could leave the root.

    ``""`` (and ``"/"``-free spellings of it such as ``"."``) is the root itself; empty and
    ``.`` components are dropped, a trailing ``/`` is allowed.  (Checked once per string:
    a query looks up the same few catalog paths every time.)
    """
    if not isinstance(rel, str):
        raise UnsafePathError(f"store path must be a str, not {type(rel).__name__}")
    return list(_checked(rel))


@functools.lru_cache(maxsize=4096)
def _checked(rel: str) -> tuple[str, ...]:
    if "\x00" in rel:
        raise UnsafePathError(f"store path {rel!r} contains a NUL byte")
    if "\\" in rel:
        raise UnsafePathError(f"store path {rel!r} contains a backslash; use '/'")
    if rel.startswith("/") or (len(rel) >= 2 and rel[1] == ":" and rel[0].isalpha()):
        raise UnsafePathError(f"store path {rel!r} is absolute; paths are relative to the root")
    parts = tuple(p for p in rel.split("/") if p not in ("", "."))
    if ".." in parts:
        raise UnsafePathError(f"store path {rel!r} has a '..' component; it must stay below "
                              "the root")
    return parts


class Store(abc.ABC):
    """A root directory; every path given to a method is relative to it and uses ``/``.

    Build one with :func:`open_store`.  ``local`` is True only for :class:`LocalStore`, whose
    :meth:`path` is an operating-system path (memory-mappable, ``os.stat``-able).
    """

    url: str
    root: str
    storage_options: dict[str, Any]
    local: bool = False

    def path(self, rel: str) -> str:
        """The backend path of ``rel``; raises :class:`~hfq.errors.UnsafePathError` for any
        ``rel`` that could escape the root ('..' components, absolute paths, NUL, backslash)."""
        return self._join(_components(rel))

    @abc.abstractmethod
    def _join(self, parts: list[str]) -> str:
        """The backend path of already validated components below the root."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and isinstance(other, Store)
                and (self.url, self.storage_options) == (other.url, other.storage_options))

    # -- reading ------------------------------------------------------------------------------
    @abc.abstractmethod
    def open_arrow(self, rel: str) -> pa.NativeFile:
        """A seekable Arrow input file (memory-mapped, zero copy, when local)."""

    @abc.abstractmethod
    def read_bytes(self, rel: str) -> bytes:
        """The whole contents of a file."""

    @abc.abstractmethod
    def exists(self, rel: str) -> bool:
        """Is there a file or directory at ``rel``?"""

    @abc.abstractmethod
    def listdir(self, rel: str) -> list[str]:
        """Names (not paths) in a directory; empty when it does not exist."""

    @abc.abstractmethod
    def walk_files(self, rel: str) -> list[tuple[str, float]]:
        """Every file below ``rel`` as (path relative to the root, modification time)."""

    @abc.abstractmethod
    def stamp(self, rel: str) -> tuple[int, int, int] | None:
        """What identifies this file's contents cheaply (local: inode, size, mtime), or None
        where that cannot be had."""

    @abc.abstractmethod
    def size(self, rel: str) -> int:
        """The size of a file in bytes."""

    # -- writing ------------------------------------------------------------------------------
    @abc.abstractmethod
    def makedirs(self, rel: str) -> None:
        """Create a directory and its parents; fine when it exists."""

    @abc.abstractmethod
    def open_output(self, rel: str) -> pa.NativeFile:
        """A writable Arrow output stream for a *new* file (callers write to a temp name)."""

    @abc.abstractmethod
    def write_bytes(self, rel: str, data: bytes, *, sync: bool = False) -> None:
        """Write a whole file (replacing it); ``sync`` makes it durable where that means
        something (a local disk)."""

    @abc.abstractmethod
    def fsync(self, rel: str) -> None:
        """Make a file or directory durable where that means something (a local disk)."""

    @abc.abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst``, replacing it (atomic on a local disk)."""

    @abc.abstractmethod
    def create_exclusive(self, src: str, dst: str) -> bool:
        """Make the already written temporary ``src`` visible as ``dst`` only if ``dst`` does
        not exist; True when this caller won.  ``src`` is gone afterwards either way.

        Atomic: of any number of writers racing for the same ``dst`` exactly one wins.  A
        backend that cannot do that raises :class:`~hfq.errors.HfqError` instead.
        """

    @abc.abstractmethod
    def remove(self, rel: str) -> None:
        """Delete a file; fine when it does not exist."""

    @abc.abstractmethod
    def remove_tree(self, rel: str) -> None:
        """Delete a directory and everything below it; fine when it does not exist."""


class LocalStore(Store):
    """A root on a local (or locally mounted) disk, driven by ``os`` calls."""

    local = True

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.storage_options = dict(storage_options or {})
        path = url.split("://", 1)[1] if "://" in url else url
        self.root = os.path.abspath(os.path.expanduser(path))

    def _join(self, parts: list[str]) -> str:
        return os.path.join(self.root, *parts) if parts else self.root

    # -- reading ------------------------------------------------------------------------------
    def open_arrow(self, rel: str) -> pa.NativeFile:
        return pa.memory_map(self.path(rel), "r")

    def read_bytes(self, rel: str) -> bytes:
        with open(self.path(rel), "rb") as f:
            return f.read()

    def exists(self, rel: str) -> bool:
        return os.path.exists(self.path(rel))

    def listdir(self, rel: str) -> list[str]:
        try:
            return os.listdir(self.path(rel))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def walk_files(self, rel: str) -> list[tuple[str, float]]:
        out = []
        for dirpath, _, files in os.walk(self.path(rel)):
            for name in files:
                full = os.path.join(dirpath, name)
                try:
                    mtime = os.stat(full).st_mtime
                except FileNotFoundError:
                    continue
                out.append((os.path.relpath(full, self.root).replace(os.sep, "/"), mtime))
        return out

    def stamp(self, rel: str) -> tuple[int, int, int] | None:
        st = os.stat(self.path(rel))
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def size(self, rel: str) -> int:
        return os.stat(self.path(rel)).st_size

    # -- writing ------------------------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        os.makedirs(self.path(rel), exist_ok=True)

    def open_output(self, rel: str) -> pa.NativeFile:
        return pa.OSFile(self.path(rel), "wb")

    def write_bytes(self, rel: str, data: bytes, *, sync: bool = False) -> None:
        with open(self.path(rel), "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())

    def fsync(self, rel: str) -> None:
        fd = os.open(self.path(rel), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, src: str, dst: str) -> None:
        os.replace(self.path(src), self.path(dst))

    def create_exclusive(self, src: str, dst: str) -> bool:
        """``link`` then ``unlink``: the kernel refuses the link when ``dst`` exists."""
        source, target = self.path(src), self.path(dst)
        try:
            os.link(source, target)
        except FileExistsError:
            return False
        finally:
            os.unlink(source)
        return True

    def remove(self, rel: str) -> None:
        try:
            os.unlink(self.path(rel))
        except FileNotFoundError:
            pass

    def remove_tree(self, rel: str) -> None:
        shutil.rmtree(self.path(rel), ignore_errors=True)


# The memory filesystem is one process's dict, so one process-wide lock around check + copy
# makes its create-if-absent atomic for every thread that goes through FsspecStore.
_MEMORY_LOCK = threading.Lock()

# S3 answers 409 ConditionalRequestConflict when conditional writes to one key overlap; the
# request is to be retried (it then succeeds or gets 412).
_S3_CONFLICT_RETRIES = 8


def _protocols(fs: Any) -> set[str]:
    protocol = fs.protocol
    return {protocol} if isinstance(protocol, str) else set(protocol)


def _s3_error(exc: BaseException) -> tuple[str, int]:
    """(error code, HTTP status) of the botocore ClientError behind an s3fs exception."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            break
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            error = response.get("Error") or {}
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0
            return str(error.get("Code", "")), int(status)
        seen = seen.__cause__ or seen.__context__
    return "", 0


class FsspecStore(Store):
    """A root behind any fsspec URL; ``storage_options`` go straight to the filesystem.

    Listings and existence checks drop the filesystem's listing cache for the path first, so
    other writers' files are seen (s3fs caches directory listings).
    """

    local = False

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.storage_options = dict(storage_options or {})
        import fsspec  # here, not at import: a process on local paths never loads it
        from fsspec.implementations.memory import MemoryFileSystem
        self.fs, root = fsspec.core.url_to_fs(url, **self.storage_options)
        self.root = root.rstrip("/")
        protocols = _protocols(self.fs)
        self.protocol = sorted(protocols)[0] if protocols else "?"
        self._exclusive: str | None = None
        # by protocol, not class alone: a MemoryFileSystem subclass registered under another
        # protocol may stand for anything
        if "memory" in protocols and isinstance(self.fs, MemoryFileSystem):
            self._exclusive = "memory"
        elif "s3" in protocols and hasattr(self.fs, "_pipe_file"):
            self._exclusive = "s3"

    def _join(self, parts: list[str]) -> str:
        rel = "/".join(parts)
        return f"{self.root}/{rel}" if rel else self.root

    def _fresh(self, rel: str) -> str:
        path = self.path(rel)
        self.fs.invalidate_cache(path)
        return path

    # -- reading ------------------------------------------------------------------------------
    def open_arrow(self, rel: str) -> pa.NativeFile:
        return pa.PythonFile(self.fs.open(self.path(rel), "rb"), mode="r")

    def read_bytes(self, rel: str) -> bytes:
        return bytes(self.fs.cat_file(self.path(rel)))

    def exists(self, rel: str) -> bool:
        return bool(self.fs.exists(self._fresh(rel)))

    def listdir(self, rel: str) -> list[str]:
        try:
            return [p.rstrip("/").rsplit("/", 1)[-1]
                    for p in self.fs.ls(self._fresh(rel), detail=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def walk_files(self, rel: str) -> list[tuple[str, float]]:
        out = []
        for full, info in self.fs.find(self._fresh(rel), detail=True).items():
            mtime = info.get("mtime") or info.get("LastModified") or info.get("created") or 0
            mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime)
            out.append((full[len(self.root) + 1:], mtime))
        return out

    def stamp(self, rel: str) -> tuple[int, int, int] | None:
        return None

    def size(self, rel: str) -> int:
        return int(self.fs.size(self.path(rel)))

    # -- writing ------------------------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        self.fs.makedirs(self.path(rel), exist_ok=True)

    def open_output(self, rel: str) -> pa.NativeFile:
        return pa.PythonFile(self.fs.open(self.path(rel), "wb"), mode="w")

    def write_bytes(self, rel: str, data: bytes, *, sync: bool = False) -> None:
        self.fs.pipe_file(self.path(rel), data)

    def fsync(self, rel: str) -> None:
        self.path(rel)  # nothing to flush: a completed write is durable or never will be

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst``, replacing it; a directory moves file by file (object stores
        have no directories to rename, only keys to copy and delete)."""
        source, target = self._fresh(src), self._fresh(dst)
        if not self.fs.isdir(source):
            self.fs.mv(source, target)
            return
        files = sorted(self.fs.find(source))
        if files:
            self.fs.copy(files, [target + f[len(source):] for f in files])
        if self.fs.exists(source):
            self.fs.rm(source, recursive=True)
        self.fs.invalidate_cache(target)

    def create_exclusive(self, src: str, dst: str) -> bool:
        """Atomic per backend:

        * ``memory://`` -- check and copy under one process-wide lock (the memory filesystem
          is this process's dict, so that is every writer there is).
        * ``s3://`` -- a conditional PUT (``If-None-Match: *``) of ``src``'s bytes to ``dst``;
          412 PreconditionFailed means another writer got there first.  Needs a server that
          honours the header (AWS S3 since 2024-08, MinIO, R2, moto 5).
        * anything else -- refused with :class:`~hfq.errors.HfqError`: check-then-move would
          let two racing writers both "win".
        """
        source, target = self.path(src), self.path(dst)
        try:
            if self._exclusive == "memory":
                with _MEMORY_LOCK:
                    if self.fs.exists(target):
                        return False
                    self.fs.cp_file(source, target)
                    return True
            if self._exclusive == "s3":
                return self._s3_put_if_absent(target, bytes(self.fs.cat_file(source)))
            raise HfqError(
                f"{self.url!r}: the fsspec {self.protocol!r} backend has no atomic "
                f"create-if-absent, so two writers committing the same version could both "
                f"win; put the catalog on a local path, memory:// or s3:// instead")
        finally:
            try:
                self.fs.rm(source)
            except FileNotFoundError:
                pass

    def _s3_put_if_absent(self, target: str, data: bytes) -> bool:
        # s3fs >= 2024.12: mode="create" (also right for multipart); older: pass the header
        if "mode" in inspect.signature(self.fs._pipe_file).parameters:
            kwargs: dict[str, Any] = {"mode": "create"}
        else:
            kwargs = {"IfNoneMatch": "*"}
        for attempt in range(_S3_CONFLICT_RETRIES):
            try:
                self.fs.pipe_file(target, data, **kwargs)
                return True
            except FileExistsError:
                return False
            except OSError as exc:
                code, status = _s3_error(exc)
                if code == "PreconditionFailed" or status == 412:
                    return False
                conflict = code == "ConditionalRequestConflict" or status == 409
                if not conflict or attempt == _S3_CONFLICT_RETRIES - 1:
                    raise
                time.sleep(0.05 * 2 ** attempt)
            finally:
                self.fs.invalidate_cache(target)
        raise AssertionError("unreachable")

    def remove(self, rel: str) -> None:
        try:
            self.fs.rm(self.path(rel))
        except FileNotFoundError:
            pass

    def remove_tree(self, rel: str) -> None:
        path = self._fresh(rel)
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)


def open_store(url: str, storage_options: dict[str, Any] | None = None) -> Store:
    """The store for ``url``: a plain path, ``file://`` or ``local://`` gives a
    :class:`LocalStore`, any other fsspec URL a :class:`FsspecStore`."""
    url = os.fspath(url)
    if "://" not in url and "::" not in url:   # a plain path (fsspec would say "file")
        return LocalStore(url, storage_options)
    import fsspec
    if fsspec.utils.get_protocol(url) in ("file", "local"):
        return LocalStore(url, storage_options)
    return FsspecStore(url, storage_options)
