"""hfq is typed: mypy passes on the package, and every public function says what it takes
and returns.

Public: a top-level function, or a method of a top-level class, whose name does not start with
``_`` -- dunder methods (``__init__``, ``__call__``, ...) included -- in a module whose name
does not start with ``_`` (``__init__`` counts as public).  Every parameter but a method's
``self``/``cls`` needs an annotation, and the function a return annotation (optional for
``__init__``).  Nested functions and classes are exempt.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hfq"


def test_mypy_passes_on_hfq() -> None:
    """``python -m mypy`` with the project's configuration (``[tool.mypy]`` in
    pyproject.toml: ``files = ["hfq"]``) finds no error."""
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, (
        f"mypy exited {result.returncode}:\n{result.stdout}\n{result.stderr}")


def _public(name: str) -> bool:
    """Not private: no leading underscore, or a dunder (``__init__``, ``__call__``)."""
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements at module level, including those under a module-level if/try/with."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse,
                          node.finalbody):
                yield from _top_level(block)
        elif isinstance(node, ast.With):
            yield from _top_level(node.body)
        else:
            yield node


def _missing(fn: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool) -> list[str]:
    """What ``fn`` leaves unannotated: parameter names, and ``return``."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod"
                    for d in fn.decorator_list)
    if method and not is_static and positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    params = [*positional, *args.kwonlyargs]
    if args.vararg is not None:
        params.append(args.vararg)
    if args.kwarg is not None:
        params.append(args.kwarg)
    missing = [p.arg for p in params if p.annotation is None]
    if fn.returns is None and fn.name != "__init__":
        missing.append("return")
    return missing


def _untyped(path: pathlib.Path) -> Iterator[str]:
    """``file:line name (what is missing)`` for each public function of ``path`` that is not
    fully annotated."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = path.relative_to(ROOT)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in _top_level(tree.body):
        found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, bool]] = []
        if isinstance(node, functions) and _public(node.name):
            found.append((node, node.name, False))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            found += [(item, f"{node.name}.{item.name}", True) for item in node.body
                      if isinstance(item, functions) and _public(item.name)]
        for fn, name, method in found:
            missing = _missing(fn, method=method)
            if missing:
                yield f"{rel}:{fn.lineno} {name} (no annotation: {', '.join(missing)})"


def _public_modules() -> list[pathlib.Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if all(_public(part) for part in p.relative_to(PACKAGE).with_suffix("").parts)]


def test_public_functions_are_typed() -> None:
    modules = _public_modules()
    assert len(modules) > 20, "the walk found too few modules of hfq"
    offenders = [line for path in modules for line in _untyped(path)]
    assert not offenders, (f"{len(offenders)} public function(s) not fully annotated:\n"
                           + "\n".join(offenders))
