"""The few file primitives everything else is built on: a root directory, local or fsspec.

Local roots use the operating system directly (memory-mapped reads, ``link`` for
create-if-absent, ``rename`` for atomic replace).  Other fsspec URLs go through fsspec with
``storage_options`` passed straight through; their create-if-absent is only as atomic as the
backend makes it (documented in :meth:`Store.create_exclusive`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

import fsspec
import pyarrow as pa

__all__ = ["HOST", "Store", "pid_alive", "temp_name", "temp_owner_alive"]

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


@dataclass
class Store:
    """A root directory; every path given to a method is relative to it and uses ``/``."""

    url: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        protocol = fsspec.utils.get_protocol(self.url)
        self.local = protocol in ("file", "local")
        if self.local:
            path = self.url.split("://", 1)[1] if "://" in self.url else self.url
            self.root = os.path.abspath(os.path.expanduser(path))
            self.fs = None
        else:
            self.fs, self.root = fsspec.core.url_to_fs(self.url, **self.storage_options)
            self.root = self.root.rstrip("/")

    def path(self, rel: str) -> str:
        rel = rel.strip("/")
        if self.local:
            return os.path.join(self.root, *rel.split("/")) if rel else self.root
        return f"{self.root}/{rel}" if rel else self.root

    # -- reading ------------------------------------------------------------------------------
    def open_arrow(self, rel: str):
        """A seekable Arrow input file: memory-mapped when local (zero copy)."""
        if self.local:
            return pa.memory_map(self.path(rel), "r")
        return pa.PythonFile(self.fs.open(self.path(rel), "rb"), mode="r")

    def read_bytes(self, rel: str) -> bytes:
        if self.local:
            with open(self.path(rel), "rb") as f:
                return f.read()
        return self.fs.cat_file(self.path(rel))

    def exists(self, rel: str) -> bool:
        if self.local:
            return os.path.exists(self.path(rel))
        return self.fs.exists(self.path(rel))

    def listdir(self, rel: str) -> list[str]:
        """Names (not paths) in a directory; empty when it does not exist."""
        if self.local:
            try:
                return os.listdir(self.path(rel))
            except (FileNotFoundError, NotADirectoryError):
                return []
        try:
            return [p.rstrip("/").rsplit("/", 1)[-1]
                    for p in self.fs.ls(self.path(rel), detail=False)]
        except FileNotFoundError:
            return []

    def walk_files(self, rel: str) -> list[tuple[str, float]]:
        """Every file below ``rel`` as (relative path, modification time)."""
        out = []
        if self.local:
            base = self.path(rel)
            for dirpath, _, files in os.walk(base):
                for name in files:
                    full = os.path.join(dirpath, name)
                    try:
                        mtime = os.stat(full).st_mtime
                    except FileNotFoundError:
                        continue
                    relpath = os.path.relpath(full, self.root).replace(os.sep, "/")
                    out.append((relpath, mtime))
            return out
        for full, info in self.fs.find(self.path(rel), detail=True).items():
            mtime = info.get("mtime") or info.get("LastModified") or 0
            mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime)
            out.append((full[len(self.root) + 1:], mtime))
        return out

    # -- writing ------------------------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        if self.local:
            os.makedirs(self.path(rel), exist_ok=True)
        else:
            self.fs.makedirs(self.path(rel), exist_ok=True)

    def open_output(self, rel: str):
        """A writable Arrow output stream for a *new* file (callers write to a temp name)."""
        if self.local:
            return pa.OSFile(self.path(rel), "wb")
        return pa.PythonFile(self.fs.open(self.path(rel), "wb"), mode="w")

    def write_bytes(self, rel: str, data: bytes, *, sync: bool = False) -> None:
        if self.local:
            with open(self.path(rel), "wb") as f:
                f.write(data)
                if sync:
                    f.flush()
                    os.fsync(f.fileno())
        else:
            self.fs.pipe_file(self.path(rel), data)

    def fsync(self, rel: str) -> None:
        if self.local:
            fd = os.open(self.path(rel), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst``, replacing it (atomic on a local disk)."""
        if self.local:
            os.replace(self.path(src), self.path(dst))
        else:
            self.fs.mv(self.path(src), self.path(dst))

    def create_exclusive(self, src: str, dst: str) -> bool:
        """Make ``src`` visible as ``dst`` only if ``dst`` does not exist; True when it won.

        Local: ``link`` then ``unlink`` -- atomic, so of two racing writers exactly one wins.
        fsspec: check-then-move, which is atomic only on backends with conditional writes;
        two writers racing on such a store are not protected (use a local catalog root).
        """
        if self.local:
            try:
                os.link(self.path(src), self.path(dst))
            except FileExistsError:
                return False
            finally:
                os.unlink(self.path(src))
            return True
        if self.fs.exists(self.path(dst)):
            self.fs.rm(self.path(src))
            return False
        self.fs.mv(self.path(src), self.path(dst))
        return True

    def remove(self, rel: str) -> None:
        try:
            if self.local:
                os.unlink(self.path(rel))
            else:
                self.fs.rm(self.path(rel))
        except FileNotFoundError:
            pass

    def remove_tree(self, rel: str) -> None:
        if self.local:
            shutil.rmtree(self.path(rel), ignore_errors=True)
        elif self.fs.exists(self.path(rel)):
            self.fs.rm(self.path(rel), recursive=True)

    def stamp(self, rel: str) -> tuple | None:
        """What identifies this file's contents cheaply (local: inode, size, mtime), or None
        where that cannot be had."""
        if not self.local:
            return None
        st = os.stat(self.path(rel))
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def size(self, rel: str) -> int:
        if self.local:
            return os.stat(self.path(rel)).st_size
        return self.fs.size(self.path(rel))
