"""Files written before the lightweight encodings keep reading.

``tests/fixtures/format_v1`` was written by commit b49989d (``make_format_v1.py`` beside it):
Arrow IPC files compressed by each table's codec (zstd, lz4, none) with the v1 column
encodings (``scale:d``, ``delta``, ``narrow``), thin one-file-per-symbol partitions, trades and
device readings, and hostile values (NaN, +-inf, -0.0, nulls, int32 extremes, an empty string).
The oracle is what pyarrow alone wrote of the same rows as Parquet.
"""

from __future__ import annotations

import glob
import os
import shutil

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import hfq
import hfq.engine.read
import hfq.query.read
from conftest import canonical

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "fixtures", "format_v1")
TABLES = ("quotes_zstd", "quotes_lz4", "quotes_none", "quotes_thin", "trades", "readings")


@pytest.fixture(scope="module")
def old_db(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("v1") / "db")
    shutil.copytree(os.path.join(FIXTURE, "db"), root)
    db = hfq.connect(root)
    yield db
    db.close()


def expected(name: str) -> pa.Table:
    return pq.read_table(os.path.join(FIXTURE, f"{name}.parquet"))


def test_the_fixture_is_in_the_old_format():
    """Every file is a v1 file (no format version in its schema), and the v1 encodings are
    all there: otherwise this test would not test what it claims."""
    seen = set()
    files = glob.glob(os.path.join(FIXTURE, "db", "*", "data", "**", "*.arrow"), recursive=True)
    assert len(files) > 20
    for path in files:
        schema = ipc.open_file(path).schema
        assert b"hfq.format" not in (schema.metadata or {})
        for field in schema:
            how = (field.metadata or {}).get(b"hfq.enc", b"").decode()
            seen.update(step.split(":")[0] for step in how.split(",") if step)
    assert seen == {"scale", "delta", "narrow"}


@pytest.mark.parametrize("name", TABLES)
def test_old_files_read_whole_as_written(old_db, name, monkeypatch):
    got = old_db[name].scan().to_arrow()
    want = expected(name)
    assert got.schema == old_db[name].schema.arrow
    assert canonical(got).equals(canonical(want))
    monkeypatch.setattr(hfq.engine.read, "INLINE_ROWS", 0)   # through the Assembler, in pieces
    monkeypatch.setattr(hfq.query.read, "PIECE_ROWS", 1000)
    assembled = old_db[name].scan()._plain()._assembled()   # what to_pandas converts
    assert canonical(assembled).equals(canonical(want))
    assert len(old_db[name].scan().to_pandas()) == want.num_rows


@pytest.mark.parametrize("name", ["quotes_zstd", "quotes_lz4", "quotes_none"])
def test_old_files_read_by_symbol_and_by_batch(old_db, name):
    want = expected(name)
    symbol = want["symbol"][1234].as_py()
    got = old_db[name].scan(symbols=[symbol], dates="2007-08-01").to_arrow()
    mask = pa.compute.and_(pa.compute.equal(want["symbol"].cast(pa.string()), symbol),
                           pa.compute.equal(want["date"].cast(pa.string()), "2007-08-01"))
    assert got.num_rows > 0
    assert canonical(got).equals(canonical(want.filter(mask)))
