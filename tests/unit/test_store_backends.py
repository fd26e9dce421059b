"""One abstract suite for every :class:`~hfq.storage.store.Store` backend.

Like fsspec's ``tests/abstract``: each test takes the ``store`` fixture, which is parametrised
over a local temporary directory, ``memory://`` and a real S3 server (moto's, on 127.0.0.1),
each under a fresh unique prefix.  The key test is :func:`test_racing_writers_exactly_one_wins`:
the catalog's correctness rests on ``create_exclusive`` being a real create-if-absent.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from hfq.errors import HfqError, UnsafePathError
from hfq.storage.store import FsspecStore, LocalStore, Store, open_store

BACKENDS = ["local", "memory", "s3"]
BUCKET = "hfq-test"


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Store]:
    prefix = f"hfqtest-{uuid.uuid4().hex[:12]}"
    if request.param == "local":
        yield open_store(str(tmp_path / prefix))
    elif request.param == "memory":
        yield open_store(f"memory://{prefix}/root")
        fs = fsspec.filesystem("memory")
        if fs.exists(f"/{prefix}"):
            fs.rm(f"/{prefix}", recursive=True)
    else:
        options = request.getfixturevalue("s3_server")
        s = open_store(f"s3://{BUCKET}/{prefix}/root", options)
        yield s
        s.remove_tree("")


# -- construction --------------------------------------------------------------------------------
def test_open_store_picks_the_class(store: Store) -> None:
    kind = {LocalStore: "local", FsspecStore: "fsspec"}[type(store)]
    assert store.local is (kind == "local")
    assert isinstance(store, Store)
    assert (kind == "local") is (fsspec.utils.get_protocol(store.url) in ("file", "local"))


def test_local_urls(tmp_path: Any) -> None:
    for url in (str(tmp_path), f"file://{tmp_path}", f"local://{tmp_path}"):
        s = open_store(url)
        assert isinstance(s, LocalStore) and s.local and s.root == os.path.abspath(tmp_path)
    assert isinstance(open_store("memory://x/y", {}), FsspecStore)
    assert open_store(str(tmp_path)) == LocalStore(str(tmp_path))


# -- paths ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("rel", ["../x", "/abs", "a/../../b", "a/..", "..", "x/\x00y", "\x00",
                                 "a\\..\\b", "C:/x", "//x"])
def test_path_refuses_escapes(store: Store, rel: str) -> None:
    with pytest.raises(UnsafePathError):
        store.path(rel)
    with pytest.raises(ValueError):                   # also a builtin ValueError
        store.read_bytes(rel)
    with pytest.raises(HfqError):
        store.write_bytes(rel, b"x")
    for method in (store.exists, store.listdir, store.remove, store.remove_tree):
        with pytest.raises(UnsafePathError):
            method(rel)
    with pytest.raises(UnsafePathError):
        store.create_exclusive("tmp", rel)


def test_path_stays_below_the_root(store: Store) -> None:
    assert store.path("") == store.root
    assert store.path("a/b") == store.path("a/b/") == store.path("./a//b")
    sep = os.sep if store.local else "/"
    assert store.path("a/b").startswith(store.root + sep)
    assert store.path("a..b/..c").endswith(f"a..b{sep}..c")   # dots inside a name are fine


# -- primitives ----------------------------------------------------------------------------------
def test_write_read_round_trip(store: Store) -> None:
    store.makedirs("d")
    store.makedirs("d")                                # idempotent
    store.write_bytes("d/a.bin", b"hello")
    store.write_bytes("d/b.bin", b"\x00" * 1000, sync=True)
    assert store.read_bytes("d/a.bin") == b"hello"
    assert store.read_bytes("d/b.bin") == b"\x00" * 1000
    store.write_bytes("d/a.bin", b"bye")               # write replaces
    assert store.read_bytes("d/a.bin") == b"bye"
    store.fsync("d/a.bin")
    store.fsync("d")


def test_arrow_round_trip(store: Store) -> None:
    table = pa.table({"x": list(range(1000)), "s": [f"s{i % 7}" for i in range(1000)]})
    store.makedirs("t")
    with store.open_output("t/f.arrow") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=100)
    with store.open_arrow("t/f.arrow") as source:
        reader = ipc.open_file(source)
        assert reader.num_record_batches == 10
        assert reader.read_all().equals(table)
    assert store.size("t/f.arrow") == len(store.read_bytes("t/f.arrow"))


def test_exists_size_stamp(store: Store) -> None:
    assert not store.exists("d/x")
    store.makedirs("d")
    store.write_bytes("d/x", b"12345")
    assert store.exists("d/x")
    assert store.size("d/x") == 5
    stamp = store.stamp("d/x")
    if store.local:
        assert stamp is not None and stamp[1] == 5
    else:
        assert stamp is None


def test_listdir(store: Store) -> None:
    assert store.listdir("missing") == []
    assert store.listdir("missing/deeper") == []
    store.makedirs("d/sub")
    store.write_bytes("d/sub/z", b"z")
    store.write_bytes("d/a", b"a")
    store.write_bytes("d/b", b"b")
    assert sorted(store.listdir("d")) == ["a", "b", "sub"]
    assert store.listdir("d/sub") == ["z"]


def test_walk_files(store: Store) -> None:
    assert store.walk_files("missing") == []
    store.makedirs("t/data/p1")
    store.makedirs("t/_versions")
    for rel in ("t/data/p1/f1.arrow", "t/data/p1/f2.arrow", "t/_versions/1.json", "other"):
        store.write_bytes(rel, rel.encode())
    walked = store.walk_files("t")
    assert sorted(rel for rel, _ in walked) == ["t/_versions/1.json", "t/data/p1/f1.arrow",
                                                "t/data/p1/f2.arrow"]
    for rel, mtime in walked:
        assert isinstance(mtime, float) and mtime > 1e9       # a real time, not 0
        assert store.read_bytes(rel) == rel.encode()         # relative to the root
    assert [rel for rel, _ in store.walk_files("t/data")] != []
    assert len(store.walk_files("")) == 4


def test_rename_replaces(store: Store) -> None:
    store.makedirs("d")
    store.write_bytes("d/src", b"new")
    store.write_bytes("d/dst", b"old")
    store.rename("d/src", "d/dst")
    assert store.read_bytes("d/dst") == b"new"
    assert not store.exists("d/src")
    store.write_bytes("d/other", b"o")
    store.rename("d/other", "d/fresh")
    assert store.read_bytes("d/fresh") == b"o"
    assert sorted(store.listdir("d")) == ["dst", "fresh"]


def test_rename_directory(store: Store) -> None:
    """What dropping a table does: move its directory aside, then remove the tree."""
    store.makedirs("t/data")
    store.write_bytes("t/data/f", b"f")
    store.write_bytes("t/m", b"m")
    store.makedirs(".trash")
    store.rename("t", ".trash/t-1")
    assert not store.exists("t")
    assert sorted(rel for rel, _ in store.walk_files(".trash")) == [".trash/t-1/data/f",
                                                                   ".trash/t-1/m"]
    store.remove_tree(".trash/t-1")
    assert store.walk_files(".trash") == []


def test_remove(store: Store) -> None:
    store.remove("missing")                            # fine
    store.remove("missing/deeper")
    store.makedirs("d")
    store.write_bytes("d/x", b"x")
    store.remove("d/x")
    assert not store.exists("d/x")
    store.remove("d/x")                                # twice is fine


def test_remove_tree(store: Store) -> None:
    store.remove_tree("missing")                       # fine
    store.makedirs("t/a/b")
    store.write_bytes("t/a/b/f", b"f")
    store.write_bytes("t/g", b"g")
    store.write_bytes("keep", b"k")
    store.remove_tree("t")
    assert not store.exists("t")
    assert store.walk_files("t") == []
    assert store.read_bytes("keep") == b"k"


# -- create_exclusive ----------------------------------------------------------------------------
def test_create_exclusive(store: Store) -> None:
    store.makedirs("v")
    store.write_bytes("v/.tmp-a", b"first")
    assert store.create_exclusive("v/.tmp-a", "v/1.json") is True
    store.write_bytes("v/.tmp-b", b"second")
    assert store.create_exclusive("v/.tmp-b", "v/1.json") is False
    assert store.read_bytes("v/1.json") == b"first"
    assert store.listdir("v") == ["1.json"]           # both temporaries are gone


def test_racing_writers_exactly_one_wins(store: Store) -> None:
    """N writers each write their own temporary, then race for the same version.

    In-process races (memory://) only interleave when threads switch often, hence the short
    switch interval; with the old check-then-move about a third of the rounds had several
    winners, so 30 rounds catch it all but surely.  S3 rounds are network round trips: fewer.
    """
    writers = 8
    rounds = 5 if store.url.startswith("s3://") else 30
    store.makedirs("v")
    barrier = threading.Barrier(writers, timeout=30)

    def commit(version: int, writer: int) -> bool:
        tmp = f"v/.tmp~{writer}~{version}"
        store.write_bytes(tmp, f"writer {writer} version {version}".encode())
        barrier.wait()                                 # released together
        return store.create_exclusive(tmp, f"v/{version}.json")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)      # switch threads often: in-process races show up for real
    try:
        with concurrent.futures.ThreadPoolExecutor(writers) as pool:
            for version in range(rounds):
                results = list(pool.map(commit, [version] * writers, range(writers)))
                assert sum(results) == 1, f"version {version}: {results}"
                winner = results.index(True)
                assert (store.read_bytes(f"v/{version}.json")
                        == f"writer {winner} version {version}".encode())
    finally:
        sys.setswitchinterval(interval)
    assert sorted(store.listdir("v")) == sorted(f"{v}.json" for v in range(rounds))  # no temps


class _NoAtomicCreateFS(MemoryFileSystem):
    """A working filesystem with no atomic create-if-absent (as ftp, webdav, ... have none)."""

    protocol = "hfqtest-noatomic"
    store: dict[str, Any] = {}
    pseudo_dirs = [""]


def test_backend_without_atomic_create_is_refused() -> None:
    fsspec.register_implementation(_NoAtomicCreateFS.protocol, _NoAtomicCreateFS, clobber=True)
    s = open_store(f"{_NoAtomicCreateFS.protocol}://root-{uuid.uuid4().hex[:8]}")
    assert isinstance(s, FsspecStore) and not s.local
    s.makedirs("v")
    s.write_bytes("v/.tmp", b"x")                      # everything else works
    assert s.read_bytes("v/.tmp") == b"x"
    with pytest.raises(HfqError, match=r"'hfqtest-noatomic'.*no atomic create-if-absent"
                                       r".*local path, memory:// or s3://"):
        s.create_exclusive("v/.tmp", "v/1.json")
    assert s.listdir("v") == []                        # nothing published, temporary removed
