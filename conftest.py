"""Repository-wide pytest settings, here at the rootdir so they reach the doctests collected
from hfq/ as well as tests/.

* Ray stays private for every test and doctest: its own temp directory (not /tmp/ray, which
  other Ray users on this machine share) and no auth token written to ~/.ray.
* One hypothesis profile for every property test and doctest.  Slow data generation on a
  loaded machine (CI has 2 shared cores) is never a failure: the "ci" profile suppresses the
  timing and size health checks and has no per-example deadline.  It is loaded by default and
  under CI=true; ``HYPOTHESIS_PROFILE=default`` gives hypothesis's own settings back.
* The API reference's examples (doctests of hfq/) share ``quotes`` (a small synthetic TAQ
  table, ``hfq.demo.example_quotes()``) and ``db`` (its database), made once per session, and
  get ``tmp``, an empty directory of their own.  The examples that need Ray share one embedded
  runtime, the shared database's: it starts at most once per session (before the first such
  example) and stops after the last doctest of a run of doctests, so tests that start their own
  Ray clusters never find it running.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

# before anything imports Ray (it reads its settings when imported)
_OWN_RAY_TMPDIR = "RAY_TMPDIR" not in os.environ
os.environ.setdefault("RAY_TMPDIR", f"/tmp/hfq-tests-{os.getpid()}")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import pytest  # noqa: E402
from _pytest.doctest import DoctestItem  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
    deadline=None,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: Doctests calling any of these need the embedded Ray: they run with the shared one started.
_NEEDS_RAY = re.compile(r"\.runtime\b|\b(map_reduce|rebalance|cluster_nodes|minute_bars|ols|"
                        r"spread_by_minute)\(")
#: Doctests using any of these names get them all (the reference's examples).
_SHARED = re.compile(r"\b(db|quotes|tmp)\b")
_session: dict[str, Any] = {}


def _source(item: DoctestItem) -> str:
    return "".join(example.source for example in item.dtest.examples) if item.dtest else ""


def _shared_quotes() -> Any:
    if "quotes" not in _session:
        from hfq.demo import example_quotes
        _session["quotes"] = example_quotes()
    return _session["quotes"]


def _stop_shared_ray() -> None:
    """Stop the shared embedded Ray if it runs (the database and its table stay usable)."""
    quotes = _session.get("quotes")
    if quotes is not None and quotes.db.session.running:
        quotes.db.close()


@pytest.fixture(autouse=True)
def _doctest_names(request: pytest.FixtureRequest,
                   doctest_namespace: dict[str, Any]) -> Iterator[None]:
    """The names the API reference's examples use (see the module docstring)."""
    item = request.node
    if isinstance(item, DoctestItem):
        source = _source(item)
        if _SHARED.search(source) or _NEEDS_RAY.search(source):
            import polars as pl
            import pyarrow as pa

            import hfq
            quotes = _shared_quotes()
            doctest_namespace.update(hfq=hfq, pl=pl, pa=pa, quotes=quotes, db=quotes.db,
                                     tmp=str(request.getfixturevalue("tmp_path")))
            if _NEEDS_RAY.search(source):
                quotes.db.session.runtime()   # starts the shared Ray, once
    yield


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if isinstance(item, DoctestItem) and not isinstance(nextitem, DoctestItem):
        _stop_shared_ray()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _stop_shared_ray()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the Ray temp directory this session chose (sessions, logs: tens of MB a run)."""
    if _OWN_RAY_TMPDIR and not hasattr(config, "workerinput"):
        import shutil
        shutil.rmtree(os.environ["RAY_TMPDIR"], ignore_errors=True)
