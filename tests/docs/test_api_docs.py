"""The API reference: built from the docstrings by mkdocs in strict mode, and every public
function of the facade documented with an example (the examples run as doctests: pytest's
``--doctest-modules``, configured in pyproject.toml)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hfq
from hfq import analytics, partition, reduce, schema, synth

REPO = Path(__file__).resolve().parents[2]


def public_api() -> dict[str, object]:
    """Qualified name -> object of every function, class and method the reference promises
    an example for: hfq.connect, Database, Table, Scan (each public method), the reducers, the
    schema and partition scheme classes, the analytics and the synthetic data generators."""
    api: dict[str, object] = {"hfq.connect": hfq.connect}
    for cls in (hfq.Database, hfq.Table, hfq.Scan):
        api[f"hfq.{cls.__name__}"] = cls
        for name, member in vars(cls).items():
            if name.startswith("_"):
                continue
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if isinstance(member, property):
                member = member.fget
            if callable(member):
                api[f"hfq.{cls.__name__}.{name}"] = member
    for module, names in ((reduce, reduce.__all__), (analytics, analytics.__all__),
                          (partition, ["Value", "Hash", "Range", "Compo"]),
                          (schema, ["Schema"]), (synth, synth.__all__)):
        for name in names:
            if callable(getattr(module, name)):
                api[f"{module.__name__}.{name}"] = getattr(module, name)
    return api


def test_every_public_function_has_a_runnable_example():
    api = public_api()
    missing = sorted(name for name, obj in api.items()
                     if ">>>" not in (inspect.getdoc(obj) or ""))
    assert not missing, f"public functions without an example: {missing}"


def test_the_examples_are_collected_as_doctests():
    """pytest runs the docstring examples of hfq/ (so an example that stops working fails)."""
    import tomllib
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in config["addopts"] and "hfq" in config["testpaths"]


def test_every_example_is_found_by_the_doctest_finder():
    """Each promised example parses as a doctest of its own (not lost to a property, a
    static method or a docstring the finder does not reach)."""
    import doctest
    api = public_api()
    modules = {sys.modules[obj.__module__] for obj in api.values()}   # type: ignore[attr-defined]
    finder = doctest.DocTestFinder()
    tested = {test.name for module in modules for test in finder.find(module) if test.examples}
    lost = sorted(name for name, obj in api.items()
                  if f"{obj.__module__}.{obj.__qualname__}" not in tested)   # type: ignore
    assert not lost, f"examples the doctests would not run: {lost}"


def test_mkdocs_builds_the_reference_in_strict_mode(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    site = tmp_path / "site" / "api"
    assert "map_reduce" in (site / "table" / "index.html").read_text()   # from the docstrings
    page = (site / "analytics" / "index.html").read_text()
    assert "spread_by_minute" in page and "Examples" in page and "summary" in page
