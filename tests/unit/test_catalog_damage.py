"""A catalog that defends itself (issue 14 item 2): every kind of damage to a version's record
or to a manifest piece, a deleted head, is an ``ManifestError`` naming the file; ``db.check()``
reports it; ``hfq.connect(root, recover=True)`` opens the newest intact version, whose rows
equal the polars oracle; a lost version number is never used again.  And the commit's atomic
step, made deterministic with a fault point: a writer held between reading the head and
publishing loses its number to another writer and commits the next one -- with a plain rename
in place of create-if-absent the other writer's rows vanish and the test fails.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import pathlib
from collections.abc import Callable

import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import in_thread
from hfq import faults
from hfq.errors import ManifestError
from hfq.schema import DATE, LONG, SYMBOL, Schema

SCHEMA = Schema({"sym": SYMBOL, "d": DATE, "id": LONG})
SCHEME = hfq.Compo(hfq.Value("d"), hfq.Hash("sym", 4))


def rows(day: int, first: int, n: int = 40) -> pa.Table:
    return pa.table({"sym": pa.array([f"S{i % 7}" for i in range(n)]).dictionary_encode(),
                     "d": pa.array([dt.date(2024, 1, day)] * n, pa.date32()),
                     "id": pa.array(range(first, first + n), pa.int64())})


def ids(table: hfq.Table, version: int | None = None) -> list[int]:
    return sorted(table.scan(columns=["id"], version=version).to_polars()["id"].to_list())


def oracle(*batches: pa.Table) -> list[int]:
    return sorted(pl.concat([pl.from_arrow(b) for b in batches])["id"].to_list())


APPENDS = [rows(2, 0), rows(3, 100), rows(4, 200)]   # versions 1, 2, 3


@pytest.fixture
def root(tmp_path) -> str:
    root = str(tmp_path / "db")
    t = hfq.connect(root).create_table("t", SCHEMA, partition_by=SCHEME, sort_by=("sym", "id"))
    for batch in APPENDS:
        t.append(batch)
    return root


def record(root: str, version: int) -> str:
    return os.path.join(root, "t", "_versions", f"{version:020d}.json")


def reseal(body: dict) -> bytes:
    """What a careful vandal writes: an edited record with a checksum that matches it."""
    data = json.dumps(body, separators=(",", ":")).encode()
    return data[:-1] + b',"checksum":"' + hashlib.sha256(data).hexdigest().encode() + b'"}'


def unsealed(path: str) -> dict:
    data = pathlib.Path(path).read_bytes()
    return json.loads(data[:data.rfind(b',"checksum":"')] + b"}")


def head_piece(root: str) -> str:
    """The piece only version 3 references (the day it added)."""
    body = unsealed(record(root, 3))
    ref = next(r for r in body["pieces"] if "2024-01-04" in r[0])
    group, sha, origin = ref[0], ref[1], ref[2]
    return os.path.join(root, "t", "_manifests", f"{origin}-{group}.{sha[:32]}.json")


def rewrite(path: str, change: Callable[[bytes], bytes]) -> None:
    data = pathlib.Path(path).read_bytes()
    pathlib.Path(path).write_bytes(change(data))


def edit_rows(data: bytes) -> bytes:
    body = json.loads(data[:data.rfind(b',"checksum":"')] + b"}")
    body["summary"]["rows"] += 1
    return json.dumps(body).encode()[:-1] + data[data.rfind(b',"checksum":"'):]


DAMAGE: dict[str, Callable[[str], str]] = {}


def damage(fn: Callable[[str], str]) -> Callable[[str], str]:
    DAMAGE[fn.__name__] = fn
    return fn


@damage
def truncated(root: str) -> str:
    rewrite(record(root, 3), lambda d: d[:len(d) // 2])
    return record(root, 3)


@damage
def empty(root: str) -> str:
    rewrite(record(root, 3), lambda d: b"")
    return record(root, 3)


@damage
def not_json(root: str) -> str:
    rewrite(record(root, 3), lambda d: b"\x00garbage" + d[8:])
    return record(root, 3)


@damage
def missing_key_resealed(root: str) -> str:
    body = unsealed(record(root, 3))
    del body["version"]
    rewrite(record(root, 3), lambda d: reseal(body))
    return record(root, 3)


@damage
def rows_edited(root: str) -> str:
    rewrite(record(root, 3), edit_rows)
    return record(root, 3)


@damage
def rows_edited_resealed(root: str) -> str:
    body = unsealed(record(root, 3))
    body["summary"]["rows"] += 1          # disagrees with the pieces' totals
    rewrite(record(root, 3), lambda d: reseal(body))
    return record(root, 3)


@damage
def wrong_checksum(root: str) -> str:
    rewrite(record(root, 3), lambda d: d[:-10] + b"0000000" + d[-3:])
    return record(root, 3)


@damage
def version_renamed(root: str) -> str:    # a record under another version's name
    os.replace(record(root, 3), record(root, 4))
    os.replace(record(root, 2), record(root, 3))
    return record(root, 4)


@damage
def piece_edited(root: str) -> str:
    path = head_piece(root)
    rewrite(path, lambda d: d.replace(b'"rows":', b'"rows":1', 1))
    return path


@damage
def piece_deleted(root: str) -> str:
    path = head_piece(root)
    os.remove(path)
    return path


@damage
def head_deleted(root: str) -> str:
    os.remove(record(root, 3))
    return record(root, 3)


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damage_is_named_reported_and_recovered_from(root, kind):
    doomed = DAMAGE[kind](root)
    name = os.path.basename(doomed)
    db = hfq.connect(root)
    with pytest.raises(ManifestError, match=name.replace(".", r"\.")[:60]) as err:
        db["t"].scan().to_arrow()
    assert err.value.table == "t"
    found = db.check()
    assert found and all(r["table"] == "t" for r in found)
    assert any(name[:40] in r["file"] or name[:40] in r["problem"] for r in found), found
    recovered = hfq.connect(root, recover=True)
    assert recovered.recovered and recovered.check() == []
    t = recovered["t"]
    intact = 1 if kind == "version_renamed" else 2   # renamed: version 2's record is gone
    assert t.version == intact and len(t) == len(oracle(*APPENDS[:intact]))
    assert ids(t) == oracle(*APPENDS[:intact])
    assert ids(t, version=1) == oracle(APPENDS[0])
    # the lost numbers are never used again
    assert t.append(rows(5, 900)) == 4
    assert ids(hfq.connect(root)["t"]) == oracle(*APPENDS[:intact], rows(5, 900))


def test_a_deleted_head_is_not_a_silent_rollback(root):
    """Without recover the table does not quietly open at version 2 and take number 3 again
    (the bug the issue found); the error names the missing record."""
    os.remove(record(root, 3))
    db = hfq.connect(root)
    with pytest.raises(ManifestError, match="version 3 was committed but its record"):
        db["t"]
    with pytest.raises(ManifestError):
        db["t"].append(rows(5, 900)) if "t" in db.tables() else db["t"]


def test_format_1_records_have_no_checksum_but_damage_is_still_named(tmp_path):
    root = str(tmp_path / "db")
    db = hfq.connect(root)
    db.create_table("t", SCHEMA, partition_by=SCHEME)
    path = record(root, 0)
    body = unsealed(path)
    old = {k: body[k] for k in ("table", "version", "schema", "partition_by", "sort_by", "op",
                                "committed_at", "options", "table_id")}
    with open(path, "w") as f:
        json.dump({**old, "format": 1, "partitions": {}}, f)
    assert hfq.connect(root)["t"].version == 0      # an old table opens
    with open(path, "w") as f:
        json.dump({**old, "format": 1}, f)           # ... "partitions" missing
    with pytest.raises(ManifestError, match="KeyError"):
        hfq.connect(root)["t"]


def test_a_writer_held_between_reading_the_head_and_publishing_loses_its_number(root):
    """A reads the head (3), builds version 4 and is held at the fault point before its
    publish; B commits 4; A's publish of 4 must fail and A commit 5 -- a plain rename there
    silently replaces B's version and B's rows are gone."""
    gate = os.path.join(root, "gate")
    faults.arm("catalog.commit.before_publish", f"pause:{gate}@1")
    thread, result = in_thread(lambda: hfq.connect(root)["t"].append(rows(5, 1000)))
    try:
        while not os.path.exists(gate + ".reached"):
            assert thread.is_alive(), result
            thread.join(0.01)
        b = hfq.connect(root)["t"]
        assert b.append(rows(6, 2000)) == 4        # the 2nd hit of the point: not held
    finally:
        pathlib.Path(gate).touch()
        thread.join(60)
        faults.disarm()
    assert "error" not in result, result.get("error")
    assert result["value"] == 5
    t = hfq.connect(root)["t"]
    assert t.versions() == [0, 1, 2, 3, 4, 5]
    assert ids(t) == oracle(*APPENDS, rows(5, 1000), rows(6, 2000))
    assert ids(t, version=4) == oracle(*APPENDS, rows(6, 2000))
