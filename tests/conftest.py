"""Shared fixtures: a fresh database root per test, small data; private Ray settings."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

import hfq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Ray stays private (its own temp directory, no auth token in ~/.ray): set by the root
# conftest.py, before anything imports Ray


@pytest.fixture
def db(tmp_path):
    return hfq.connect(str(tmp_path / "db"))


@pytest.fixture
def quotes(db):
    return db.create_table("quotes", hfq.schemas.TAQ,
                           partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 5)),
                           sort_by=("symbol", "time"))


def canonical(table: pa.Table | pl.DataFrame) -> pl.DataFrame:
    """Rows in one deterministic order, floats compared bit for bit (NaN, -0.0 included)."""
    df = table if isinstance(table, pl.DataFrame) else pl.from_arrow(table)
    exprs = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if dtype == pl.Categorical or dtype == pl.Enum:
            exprs.append(col.cast(pl.String))
        elif dtype in (pl.Float64, pl.Float32):
            exprs.append(col.cast(pl.Float64).reinterpret(signed=True))
        else:
            exprs.append(col)
    out = df.select(exprs)
    return out.sort(out.columns, nulls_last=True, maintain_order=True)


def python() -> str:
    return sys.executable


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """``call()`` in a started thread (a writer held at a fault point while the test acts):
    the thread, and a dict that gets ``"value"`` (what it returned) or ``"error"`` (what it
    raised) when it ends."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box
