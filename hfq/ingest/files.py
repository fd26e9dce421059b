"""The files of a load: one expansion of paths and globs, kept with their ``storage_options``
all the way to the nodes; each file's SHA-256 computed while it is parsed; the ledger of what a
table loaded, so that the same content is never loaded twice by mistake.

A file is read once.  The only exception is a file whose size equals that of a file the table
loaded before (or of another file of the same load): its content might be loaded already, so it
is hashed before the load decides whether to load it (``duplicates=``).

Examples
--------
>>> import pathlib
>>> _ = pathlib.Path(f"{tmp}/a.csv").write_text("x\\n1\\n")
>>> [(f.path.endswith("a.csv"), f.size) for f in expand(f"{tmp}/*.csv", {})]
[(True, 4)]
>>> expand(f"{tmp}/none-*.csv", {})       # doctest: +ELLIPSIS
Traceback (most recent call last):
hfq.errors.CsvError: no file matches '.../none-*.csv'
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hfq.catalog.records import LoadRecord
from hfq.errors import CsvError, DuplicateLoadError

__all__ = ["CsvFile", "HashingReader", "Ledger", "expand", "open_file"]


@dataclass(frozen=True)
class CsvFile:
    """One file to load: where it is (``url``: a local path, or a URL with its protocol),
    how the load names it (``path``), its size in bytes as stored, how to open it."""

    url: str
    path: str
    size: int
    storage_options: dict[str, Any] = field(default_factory=dict)
    compression: str | None = None
    sha256: str | None = None
    """Known before the load only when the ledger needed it (see :class:`Ledger`)."""


def expand(paths: str | Iterable[str], storage_options: dict[str, Any]) -> list[CsvFile]:
    """Each file ``paths`` (paths, globs, fsspec URLs) names, with its size: one listing per
    pattern; the only expansion of the load (nodes open exactly these files)."""
    import fsspec
    from fsspec.utils import infer_compression
    patterns: Iterable[Any] = paths
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        patterns = [paths]
    out: list[CsvFile] = []
    for pattern in patterns:
        text = str(pattern)
        fs, _, found = fsspec.get_fs_token_paths(text, mode="rb",
                                                 storage_options=storage_options)
        if not found:
            raise CsvError(f"no file matches {text!r}", path=text)
        local = "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))
        for name in found:
            try:
                size = int(fs.size(name))
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise CsvError(f"{name}: cannot be read ({exc})", path=name) from exc
            url = name if local else fs.unstrip_protocol(name)
            out.append(CsvFile(url, url, size, dict(storage_options),
                               infer_compression(name)))
    return out


class HashingReader:
    """A binary file whose bytes, as they are read, go into a SHA-256."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.digest.update(data)
        self.size += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self.raw.seekable())

    def seek(self, offset: int, whence: int = 0) -> int:
        """Move in the file (for finding a line number; the hash is then of no use)."""
        return int(self.raw.seek(offset, whence))

    def tell(self) -> int:
        return int(self.raw.tell())

    def finish(self) -> str:
        """Hash the bytes not read yet (a decompressor may stop before the end); the
        content's SHA-256."""
        while self.read(1 << 24):
            pass
        return self.digest.hexdigest()

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> HashingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return bool(getattr(self.raw, "closed", False))


def open_file(f: CsvFile) -> tuple[Any, HashingReader]:
    """``f`` opened for reading (decompressed when its name says so) and the reader that
    hashes its bytes as stored; close the first, then ``finish()`` the second."""
    import fsspec
    from fsspec.compression import compr
    fs, path = fsspec.core.url_to_fs(f.url, **f.storage_options)
    try:
        raw = HashingReader(fs.open(path, "rb"))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CsvError(f"{f.path}: cannot be read ({exc})", path=f.path) from exc
    if f.compression is None:
        return raw, raw
    return compr[f.compression](raw, mode="rb"), raw


def sha256_of(f: CsvFile) -> str:
    """The SHA-256 of ``f``'s bytes as stored (a read of its own)."""
    _, raw = open_file(f)
    try:
        return raw.finish()
    finally:
        raw.close()


class Ledger:
    """What a table loaded before (``loaded``: its :class:`LoadRecord` s) and what one load
    does with files whose content is there already (``duplicates``: ``"raise"``,
    ``"append"`` or ``"skip"``)."""

    def __init__(self, table: str, loaded: Sequence[LoadRecord], duplicates: str) -> None:
        if duplicates not in ("raise", "append", "skip"):
            raise ValueError(f"duplicates must be 'raise', 'append' or 'skip', "
                             f"not {duplicates!r}")
        self.table = table
        self.loaded = {r.sha256: r for r in loaded}
        self.sizes = {r.size for r in loaded}
        self.duplicates = duplicates

    def admit(self, files: list[CsvFile]) -> list[CsvFile]:
        """The files to load.  A file whose size matches a loaded file's, or another file's
        of this load, is hashed now (its content may be there already) and dealt with by
        the ``duplicates`` policy; any other file is new content, hashed as it is parsed."""
        if self.duplicates == "append":
            return files
        counts: dict[int, int] = {}
        for f in files:
            counts[f.size] = counts.get(f.size, 0) + 1
        out: list[CsvFile] = []
        seen: dict[str, CsvFile] = {}
        for f in files:
            if f.size not in self.sizes and counts[f.size] == 1:
                out.append(f)
                continue
            sha = sha256_of(f)
            earlier = self.loaded.get(sha)
            twin = seen.get(sha)
            if earlier is None and twin is None:
                seen[sha] = f
                out.append(CsvFile(f.url, f.path, f.size, f.storage_options, f.compression,
                                   sha))
            elif self.duplicates == "raise":
                where = (f"version {earlier.version} (from {earlier.path})" if earlier
                         else f"this load ({twin.path if twin else '?'})")
                raise DuplicateLoadError(
                    f"{f.path}: its content ({f.size:,} bytes, SHA-256 {sha[:16]}...) is "
                    f"already in table {self.table!r}, loaded by {where}; pass "
                    "duplicates='append' to load it again or duplicates='skip' to leave it "
                    "out")
        return out
