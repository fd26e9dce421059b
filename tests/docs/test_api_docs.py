"""The API reference: built from the docstrings by mkdocs in strict mode for exactly the public
names (``hfq.PUBLIC``), every public function documented with an example (the examples run as
doctests: pytest's ``--doctest-modules``, configured in pyproject.toml)."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hfq

REPO = Path(__file__).resolve().parents[2]


#: Public names that need no example: exceptions (their docstrings say when they are raised;
#: the examples that raise them show them) and constants (column types, schemas).
NO_EXAMPLE = ("hfq.errors.", "hfq.schema.SYMBOL", "hfq.schema.CHAR", "hfq.schema.STRING",
              "hfq.schema.DATE", "hfq.schema.SECOND", "hfq.schema.TIME", "hfq.schema.DATETIME",
              "hfq.schema.TIMESTAMP", "hfq.schema.BOOL", "hfq.schema.SHORT", "hfq.schema.INT",
              "hfq.schema.LONG", "hfq.schema.FLOAT", "hfq.schema.DOUBLE", "hfq.schemas.",
              "hfq.testing.strategies.HOSTILE_SYMBOLS", "hfq.HfqError")


def public_api(public: dict[str, tuple[str, ...]] | None = None) -> dict[str, object]:
    """Qualified name -> object of every public function, class and method (``hfq.PUBLIC``,
    and each public class's public members) that needs an example."""
    api: dict[str, object] = {}
    seen: set[int] = set()   # hfq.Hash is hfq.partition.Hash: checked once
    for module_name, names in (public or hfq.PUBLIC).items():
        module = importlib.import_module(module_name)
        for name in names:
            obj = getattr(module, name)
            qual = f"{module_name}.{name}"
            if qual.startswith(NO_EXAMPLE) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            api[qual] = obj
            if not inspect.isclass(obj):
                continue
            for member_name, member in vars(obj).items():
                if member_name.startswith("_"):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if callable(member):
                    api[f"{qual}.{member_name}"] = member
    return api


def missing_examples(api: dict[str, object]) -> list[str]:
    return sorted(name for name, obj in api.items() if ">>>" not in (inspect.getdoc(obj) or ""))


def test_every_public_function_has_a_runnable_example():
    missing = missing_examples(public_api())
    assert not missing, f"public functions without an example: {missing}"


def test_a_new_public_name_without_an_example_fails_the_check():
    """Planted: a name added to the public list whose docstring has no example."""
    public = {**hfq.PUBLIC, "hfq.partition": (*hfq.PUBLIC["hfq.partition"], "key_path")}
    assert "hfq.partition.key_path" in missing_examples(public_api(public))


def test_every_public_module_exports_its_public_names():
    for module_name, names in hfq.PUBLIC.items():
        module = importlib.import_module(module_name)
        exported = set(getattr(module, "__all__", ()))
        assert set(names) <= exported, (module_name, sorted(set(names) - exported))


def _documented() -> dict[str, set[str] | None]:
    """What the reference pages render: object -> the members listed (None: all of them)."""
    found: dict[str, set[str] | None] = {}
    for page in (REPO / "docs" / "api").glob("*.md"):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.startswith("::: "):
                target = line[4:].strip()
                members = None
                for follow in lines[i + 1:i + 4]:
                    if follow.strip().startswith("members:"):
                        members = {m.strip() for m in
                                   follow.split(":", 1)[1].strip(" []").split(",") if m.strip()}
                found[target] = members
    return found


def test_the_reference_documents_exactly_the_public_names():
    """Each public module's page lists its public names (``members: [...]``), no more: the
    reference is built from ``hfq.PUBLIC``."""
    documented = _documented()
    for module_name, names in hfq.PUBLIC.items():
        if module_name == "hfq":   # the package's names have pages of their own
            continue
        members = documented.get(module_name, "absent")
        assert members != "absent", f"no page renders {module_name}"
        assert members == set(names), (module_name, members, set(names))
    for name in ("hfq.connect", "hfq.Database", "hfq.Table"):
        assert name in documented, name


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
