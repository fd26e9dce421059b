"""Shared fixtures: a fresh database root per test, small data; private Ray settings."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
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


def csv_nulls(table: pa.Table) -> pa.Table:
    """``table`` as a CSV load gives it back: empty text is NULL (the one NULL rule)."""
    import pyarrow.compute as pc
    for i, field in enumerate(table.schema):
        kind = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            col = table.column(i).cast(kind)
            col = pc.if_else(pc.equal(col, ""), pa.scalar(None, kind), col)
            table = table.set_column(i, field.name, col.cast(field.type))
    return table


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


# -- an S3 server on loopback (moto), for the object-store backends and s3:// loads ---------------
BUCKET = "hfq-test"


class _Serialized:
    """WSGI middleware running one request at a time.

    Real S3 makes a conditional PUT atomic; moto's server checks ``If-None-Match`` and then
    stores the object in separate steps on concurrent request threads, so two racing PUTs
    could both pass the check there.  Serialising requests restores S3's guarantee per request
    (and nothing more: a client's check-then-move is still two requests, still racy).
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with self.lock:
            return list(self.app(environ, start_response))


@pytest.fixture(scope="module")
def s3_server() -> Iterator[dict[str, Any]]:
    """A moto S3 server on a free loopback port with one bucket: the storage options to use."""
    pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    env = pytest.MonkeyPatch()
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_EC2_METADATA_DISABLED": "true"}.items():
        env.setenv(name, value)
    env.delenv("AWS_PROFILE", raising=False)
    werkzeug_log = logging.getLogger("werkzeug")
    level = werkzeug_log.level
    werkzeug_log.setLevel(logging.ERROR)     # one line per request otherwise
    app = _Serialized(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, name="moto-s3", daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    try:
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                     aws_access_key_id="testing", aws_secret_access_key="testing",
                     ).create_bucket(Bucket=BUCKET)
        yield {"endpoint_url": endpoint, "key": "testing", "secret": "testing",
               "client_kwargs": {"region_name": "us-east-1"}}
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()
        werkzeug_log.setLevel(level)
        env.undo()
