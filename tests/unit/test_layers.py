"""The rooms of hfq import only downward, and no import hides a cycle inside a function.

Layers, bottom to top (README, "Architecture"): model (errors, config, schema, partition,
reduce) <- storage <- catalog <- query <- runtime <- session <- write <- ingest | analytics |
synth | engine | quality | maintenance <- live <- facade (db, table, cli, demo, testing, the
package itself).  Imports under ``if TYPE_CHECKING:`` are for annotations only and are not
counted.  No module below the facade names ``Database``: the session is what they share.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "hfq"

LAYERS = [
    ("model", ["hfq.errors", "hfq.faults", "hfq.config", "hfq.schema", "hfq.schemas",
               "hfq.partition", "hfq.reduce"]),
    ("storage", ["hfq.storage"]),
    ("catalog", ["hfq.catalog"]),
    ("query", ["hfq.query"]),
    ("runtime", ["hfq.runtime"]),
    ("session", ["hfq.session"]),
    ("write", ["hfq.write", "hfq.change"]),
    ("ingest", ["hfq.ingest"]),
    ("analytics", ["hfq.analytics"]),
    ("synth", ["hfq.synth"]),
    ("engine", ["hfq.engine"]),
    ("quality", ["hfq.quality"]),
    ("maintenance", ["hfq.maintenance"]),
    ("live", ["hfq.live"]),
    ("facade", ["hfq.db", "hfq.table", "hfq.cli", "hfq.demo", "hfq.testing",
                "hfq"]),
]
LEVEL = {"model": 0, "storage": 1, "catalog": 2, "query": 3, "runtime": 4, "session": 5,
         "write": 6, "ingest": 7, "analytics": 7, "synth": 7, "engine": 7, "quality": 7,
         "maintenance": 7, "live": 8, "facade": 9}


def room(module: str) -> str:
    best = None
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > len(best[1]):
                    best = (name, prefix)
    assert best is not None, module
    return best[0]


def modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(module: str, path: pathlib.Path, known: set[str]) -> list[tuple[str, bool, int]]:
    """(imported hfq module, inside a function, line) for every import of ``module``."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[str, bool, int]] = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub, in_function)
                continue
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "hfq" or alias.name.startswith("hfq."):
                        target = resolve(alias.name)
                        if target:
                            found.append((target, in_function, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - child.level
                                                       + 1] + ([base] if base else []))
                if base == "hfq" or base.startswith("hfq."):
                    for alias in child.names:
                        target = resolve(f"{base}.{alias.name}") if \
                            f"{base}.{alias.name}" in known else resolve(base)
                        if target:
                            found.append((target, in_function, child.lineno))
            visit(child, nested)

    visit(tree, False)
    return [f for f in found if f[0] != module]


@pytest.fixture(scope="module")
def graph() -> dict[str, list[tuple[str, bool, int]]]:
    mods = modules()
    known = set(mods)
    return {m: imports(m, p, known) for m, p in mods.items()}


def test_every_module_has_a_room(graph):
    for module in graph:
        assert room(module) in LEVEL


def test_rooms_import_only_downward(graph):
    bad = []
    for module, targets in graph.items():
        here = room(module)
        for target, _, line in targets:
            there = room(target)
            if there == here:
                continue
            if LEVEL[there] >= LEVEL[here]:
                bad.append(f"{module}:{line} ({here}) imports {target} ({there})")
    assert not bad, "imports that go up or sideways:\n" + "\n".join(bad)


def _reachable(graph: dict[str, list[tuple[str, bool, int]]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        for target, in_function, _ in graph.get(module, []):
            if not in_function and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_no_import_cycle_at_module_level(graph):
    cycles = [m for m in graph if m in _reachable(graph, m)]
    assert not cycles, f"modules on an import cycle: {sorted(cycles)}"


def test_no_function_level_import_dodges_a_cycle(graph):
    dodges = []
    for module, targets in graph.items():
        for target, in_function, line in targets:
            if in_function and module in _reachable(graph, target):
                dodges.append(f"{module}:{line} imports {target} inside a function, and "
                              f"{target} imports {module}")
    assert not dodges, "\n".join(dodges)


def test_no_import_cycle_counting_function_level_imports(graph):
    """Function-level imports are edges too: two modules importing each other inside
    functions form a circle as real as one at module level."""
    def everything(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for target, _, _ in graph.get(todo.pop(), []):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    cycles = sorted(m for m in graph if m in everything(m))
    assert not cycles, f"modules on an import circle (function-level imports counted): {cycles}"


def _names_database(path: pathlib.Path) -> list[int]:
    """Lines of ``path``'s code (not its docstrings or comments) naming ``Database``."""
    tree = ast.parse(path.read_text(), str(path))
    return sorted({n.lineno for n in ast.walk(tree)
                   if (isinstance(n, ast.Name) and n.id == "Database")
                   or (isinstance(n, ast.Attribute) and n.attr == "Database")
                   or (isinstance(n, ast.alias) and n.name.endswith("Database"))
                   or (isinstance(n, ast.Constant) and n.value == "Database")})


def test_no_lower_layer_names_the_database(graph):
    facade = LEVEL["facade"]
    found = [f"{m}:{line}" for m, path in modules().items() if LEVEL[room(m)] < facade
             for line in _names_database(path)]
    assert not found, "below the facade, code names Database (take a Session):\n" + \
        "\n".join(found)


def test_the_engine_carries_no_untyped_context():
    engine = PACKAGE / "engine"
    found = [f"{p.relative_to(PACKAGE)}:{i}" for p in engine.rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1) if "ctx: Any" in line]
    assert not found, found


def test_the_checks_catch_a_planted_upward_import(graph):
    up = dict(graph)   # the runtime reaching into ingest code
    up["hfq.runtime.server"] = [*graph["hfq.runtime.server"], ("hfq.ingest.csv", True, 1)]
    with pytest.raises(AssertionError, match="go up"):
        test_rooms_import_only_downward(up)
    dodge = dict(graph)   # a cycle held together by a function-level import
    dodge["hfq.runtime.nodes"] = [*graph["hfq.runtime.nodes"], ("hfq.runtime.server", True, 1)]
    with pytest.raises(AssertionError, match="inside a function"):
        test_no_function_level_import_dodges_a_cycle(dodge)
    circle = dict(graph)   # two function-level imports, each way: a circle all the same
    circle["hfq.session"] = [*graph["hfq.session"], ("hfq.write", True, 1)]
    circle["hfq.write"] = [*graph["hfq.write"], ("hfq.session", True, 1)]
    with pytest.raises(AssertionError, match="function-level imports counted"):
        test_no_import_cycle_counting_function_level_imports(circle)
