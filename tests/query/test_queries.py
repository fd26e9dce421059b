"""The query suite, embedded: every case from SQL and (most) from the Python API, equal to
DuckDB on the same rows -- groups, counts and order exact, floats to 1e-9 relative."""

from __future__ import annotations

import pytest
from cases import CASES
from oracle import assert_same, load, oracle

import hfq


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = hfq.connect(str(tmp_path_factory.mktemp("querydb")))
    load(d)
    return d


@pytest.fixture(scope="module")
def duck(db):
    return oracle(db)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_sql(db, duck, case):
    got = db.sql(case.sql).collect()
    want = duck.sql(case.oracle or case.sql).pl()
    assert want.height > 0 or "empty" in case.id, f"{case.id}: the oracle found no rows"
    assert_same(got, want, ordered=case.ordered, what=case.id)


PY = [c for c in CASES if c.python is not None]


@pytest.mark.parametrize("case", PY, ids=[c.id for c in PY])
def test_python(db, duck, case):
    got = case.python(db).collect()
    want = duck.sql(case.oracle or case.sql).pl()
    assert_same(got, want, ordered=case.ordered, what=case.id)


def test_suite_size():
    assert len(CASES) >= 60
    assert len(PY) >= 45


def test_every_case_on_the_streaming_engine(db, duck, monkeypatch):
    """Big node stages that group run on polars' streaming engine: every case run that way
    (whatever its size) gives DuckDB's answer too."""
    from hfq.engine import execute, ops
    monkeypatch.setattr(ops, "STREAM_ROWS", 0)
    streamed = 0
    real = execute._groups

    def counting(ops):
        nonlocal streamed
        streamed += bool(real(ops))
        return real(ops)
    monkeypatch.setattr(execute, "_groups", counting)
    for case in CASES:
        got = db.sql(case.sql).collect()
        assert_same(got, duck.sql(case.oracle or case.sql).pl(), ordered=case.ordered,
                    what=case.id)
    assert streamed >= 30
