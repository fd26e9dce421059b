"""The service's fixtures: a store with rows some users may not see, users and grants, the
service on loopback over TLS (certificates made here by trustme), ADBC clients.

The table ``quotes`` holds rows of every exchange; role ``analyst`` may read only those of
exchanges N and P (NULL exchanges included in no policy), never the column ``mmid``.  A
symbol, ``SECRET``, and a market maker, ``HIDDENMM``, appear only in rows the analyst may
not see: no answer, count or error message given to the analyst may contain them.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.util
import math
import pathlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hfq
from hfq.service import ServiceConfig, serve
from hfq.service.identity import Admin
from hfq.service.passwords import Passwords
from hfq.service.state import SecurityStore

# pytest may import this file as the module ``conftest`` in place of ``tests/conftest.py``
# (directories without ``__init__.py``): test files anywhere that do ``from conftest import
# ROOT, canonical, ...`` get the parent's helpers from here too
_parent_spec = importlib.util.spec_from_file_location(
    "_hfq_tests_conftest", pathlib.Path(__file__).resolve().parents[1] / "conftest.py")
assert _parent_spec is not None and _parent_spec.loader is not None
_parent = importlib.util.module_from_spec(_parent_spec)
_parent_spec.loader.exec_module(_parent)
ROOT: str = _parent.ROOT
canonical = _parent.canonical
csv_nulls = _parent.csv_nulls
python = _parent.python
in_thread = _parent.in_thread

PASSWORDS = Passwords(time_cost=1, memory_kib=1024, parallelism=1)   # cheap, for tests
SECRETS = ("SECRET", "HIDDENMM")
"""Values that occur only in rows (or the column) the analyst may not see."""

PW = {"root": "root's long password", "ann": "ann's long password",
      "bob": "bob's long password", "wendy": "wendy's long password"}


@functools.cache
def quotes_rows() -> pa.Table:
    """Synthetic quotes plus the nasty rows: NULL and empty exchanges, NaN/inf/-0.0 prices,
    duplicate timestamps, midnight, the hidden symbol and market maker."""
    base = hfq.synth.taq_table(rows_per_day=3000, symbols=12)
    d1, d2 = dt.date(2007, 8, 1), dt.date(2007, 8, 2)
    extra = pa.table({
        "symbol": ["SECRET", "SECRET", "IBM", "IBM", "IBM", "MSFT", "MSFT", "MSFT", "AA"],
        "date": [d1, d2, d1, d1, d2, d1, d1, d2, d2],
        "time": [dt.time(10), dt.time(11), dt.time(0), dt.time(0), dt.time(23, 59, 59),
                 dt.time(12), dt.time(12), dt.time(9, 30), dt.time(15)],
        "bid": [99.0, 98.0, math.nan, -0.0, math.inf, 1.0, 1.0, -math.inf, 2.0],
        "ofr": [99.5, 98.5, 1.0, 0.0, math.inf, 1.1, 1.1, 0.0, 2.5],
        "bidsiz": [1, 2, 3, 4, 2**31 - 1, -2**31, 0, 7, 8],
        "ofrsiz": [1, 2, 3, 4, 5, 6, 7, 8, 9],
        "mode": [77, 77, 12, 12, 12, 12, 12, 12, 12],     # 77: only in hidden rows
        "ex": ["Q", "Z", "N", None, "P", "N", "N", "", "P"],
        "mmid": ["HIDDENMM", "HIDDENMM", "", "HIDDENMM", "", None, "", "", ""],
    })
    extra = extra.cast(pa.schema([base.schema.field(n).with_type(
        base.schema.field(n).type.value_type if pa.types.is_dictionary(base.schema.field(n).type)
        else base.schema.field(n).type) for n in base.schema.names]))
    return pa.concat_tables([base.cast(extra.schema), extra])


@functools.cache
def trades_rows() -> pa.Table:
    return hfq.synth.trades_table(rows_per_day=200, symbols=4)


def analyst_view(rows: pa.Table) -> pa.Table:
    """What the analyst may see of ``rows`` (the oracle: pyarrow, not the engine)."""
    keep = pc.fill_null(pc.is_in(rows.column("ex"), pa.array(["N", "P"])), False)
    return rows.filter(keep).drop_columns(["mmid"])


@dataclass
class Clock:
    """The service's time, moved by the tests."""

    now: float = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Env:
    db: hfq.Database
    rows: pa.Table
    admin: Admin
    service: Any
    clock: Clock
    ca_pem: str
    uri: str

    def adbc(self, user: str, password: str | None = None) -> Any:
        import adbc_driver_flightsql.dbapi as fsql
        from adbc_driver_flightsql import DatabaseOptions
        return fsql.connect(self.uri, db_kwargs={
            "username": user, "password": PW.get(user, "") if password is None else password,
            DatabaseOptions.TLS_ROOT_CERTS.value: self.ca_pem}, autocommit=True)

    def audit(self, **where: Any) -> list[dict]:
        rows = self.service.audit.frame().to_dicts()
        return [r for r in rows if all(r[k] == v for k, v in where.items())]


def make_env(tmp_path: Any, config: ServiceConfig | None = None, clock: Clock | None = None,
             **settings: Any) -> Env:
    import trustme
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    db = hfq.connect(str(tmp_path / "db"), **settings)
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                        sort_by=("symbol", "time"))
    rows = quotes_rows()
    t.append(rows)
    other = db.create_table("trades", hfq.schemas.TRADES, partition_by=hfq.Value("date"))
    other.append(trades_rows())
    admin = Admin(SecurityStore(db.session), by="root", passwords=PASSWORDS)
    admin.add_user("root", PW["root"], admin=True)
    admin.add_user("ann", PW["ann"], roles=["analyst"])
    admin.add_user("bob", PW["bob"])                                  # no grant at all
    admin.add_user("wendy", PW["wendy"], roles=["writer"])
    admin.grant(["SELECT"], "quotes", "analyst", rows="ex IN ('N', 'P')", hide=["mmid"])
    admin.grant(["INSERT", "SELECT"], "quotes", "writer", rows="ex = 'N'", hide=["mmid"])
    clock = clock or Clock()
    config = config or ServiceConfig(clock=clock, refresh_s=0.0)
    service = serve(db, tls=(cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes()),
                    config=config, passwords=PASSWORDS)
    uri = service.location.replace("127.0.0.1", "localhost")
    return Env(db, rows, admin, service, clock, ca.cert_pem.bytes().decode(), uri)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Iterator[Env]:
    """One service for a module's tests (they do not change its data or grants)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        e = make_env(tmp_path_factory.mktemp("service"))
    yield e
    e.service.shutdown()


@pytest.fixture
def fresh(tmp_path) -> Iterator[Env]:
    """A service of its own, for a test that changes data, grants or time."""
    e = make_env(tmp_path)
    yield e
    e.service.shutdown()
