"""Format-2 files reach a result without a decoded copy: a large scan's local pieces and the
files another node ships (:func:`hfq.query.read.decoded_pieces`) come as verified, undecoded
:class:`~hfq.storage.fragment.Blobs` that the Assembler decodes straight into its buffers --
with the same rows as a plain read (the oracle), and a damaged shipped copy is a named
error."""

from __future__ import annotations

import numpy as np
import pytest

import hfq
from conftest import canonical
from hfq.errors import CorruptPartitionError
from hfq.query import read
from hfq.storage.fragment import Blobs


@pytest.fixture
def table(db, monkeypatch):
    monkeypatch.setattr(read, "PIECE_ROWS", 1500)   # several pieces a partition
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Hash("symbol", 3),
                        sort_by=("symbol", "time"))
    t.append(hfq.synth.taq_table(rows_per_day=20_000, symbols=40, seed=3))
    return t


def assemble(scan, pieces_of):
    units = scan.plan.units
    out = read.Assembler(scan.manifest.schema.select(scan.columns).arrow,
                         [u.rows for u in units], types=read.pandas_type)
    kinds = set()
    for i, unit in enumerate(units):
        for offset, piece in pieces_of(unit):
            kinds.add(type(piece))
            out.fill(i, piece, offset)
    return out.finish(), kinds


def test_local_and_shipped_format_2_pieces_decode_in_place(db, table):
    scan = table.scan()._plain()   # the plain read under the query: its plan and spec
    assert scan is not None
    node = db.session.nodes.context()
    want, _ = assemble(scan, lambda u: [(0, read.read_unit(node.store, scan.spec, u))])
    local, kinds = assemble(scan, lambda u: read.read_unit_pieces(node.store, scan.spec, u))
    assert kinds == {Blobs}
    task = read.ReadTask(scan.spec, encoded=True)
    shipped, kinds = assemble(scan, lambda u: read.decoded_pieces(
        scan.spec, u, task(node, u), "other"))
    assert kinds == {Blobs}
    assert canonical(local).equals(canonical(want))
    assert canonical(shipped).equals(canonical(want))


def test_a_damaged_shipped_copy_is_named(db, table):
    scan = table.scan()._plain()   # the plain read under the query: its plan and spec
    assert scan is not None
    node = db.session.nodes.context()
    unit = scan.plan.units[0]
    value = read.ReadTask(scan.spec, encoded=True)(node, unit)
    data = next(iter(value.files.values())).copy()
    data[len(data) // 2] ^= np.uint8(4)
    damaged = read.EncodedFiles({next(iter(value.files)): data})
    with pytest.raises(CorruptPartitionError, match="on node other"):
        list(read.decoded_pieces(scan.spec, unit, damaged, "other"))
