"""The package's floors: each module imports only from its own floor or the floors below it.

Data flows one way: errors -> diagnose -> copying/graphs -> scenarios/dataloading -> views ->
widgets/exercises/gpu -> notebooks. Nothing in the package imports ``widgets``. Sideways imports
within a floor form no cycle (module by module, imports under ``if TYPE_CHECKING:`` left out).
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "graphleaf_edu"
FLOORS = [
    {"errors", "i18n", "messages", "places", "tables", "tracebacks", "notebook", "kernels"},
    {"stored_values", "deepcopy_reducers", "deepcopy_walk", "paths", "causes", "findings", "diagnose", "storing",
     "patches"},
    {"copying", "copyable", "snapshot", "graph_picture", "on_error", "keep_going", "keep_going_report", "ranks"},
    {"graphs", "dataloading"},
    {"scenarios"},
    {"views", "gpu_probes"},
    {"widgets", "gpu", "exercises"},
]
FLOOR = {name: number for number, names in enumerate(FLOORS) for name in names}
CORE = FLOOR["copying"]  # `from graphleaf_edu import X` reaches the eagerly loaded core only


def top_module(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported(path: Path) -> set[tuple[str, int]]:
    """``(module, line)`` of every graphleaf_edu module ``path`` imports (the package itself as its core)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "graphleaf_edu":
            parts = node.module.split(".")
            if len(parts) > 1:
                found.add((parts[1], node.lineno))
            else:  # from graphleaf_edu import name: a submodule, or a core name
                found |= {(alias.name if alias.name in FLOOR else "graphleaf_edu", node.lineno) for alias in node.names}
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")
                 or p.parent != PACKAGE)


def test_every_module_has_a_floor():
    assert {top_module(path) for path in MODULES} <= set(FLOOR)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_or_sideways_never_up(path):
    floor = FLOOR[top_module(path)]
    upward = [f"line {line}: {module}" for module, line in sorted(imported(path))
              if (CORE if module == "graphleaf_edu" else FLOOR[module]) > floor]
    assert not upward, f"{path.name} (floor {floor}) imports from above: {upward}"


def test_only_the_package_entry_imports_the_widgets():
    users = [path for path in MODULES if "widgets" in {module for module, _ in imported(path)}]
    assert users == []


def test_the_check_sees_submodules_and_core_names(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("from graphleaf_edu.widgets import x\nfrom graphleaf_edu import safe_deepcopy, views\n")
    assert imported(source) == {("widgets", 1), ("graphleaf_edu", 2), ("views", 2)}


def module_name(path: Path) -> str:
    parts = ("graphleaf_edu",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:`` (imports only type checkers run)."""
    nodes, stack = [], [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))
    return nodes


def direct_imports(path: Path, known: set[str]) -> set[str]:
    """The package modules ``path`` imports by name (a package's ``__init__`` as the package)."""
    found = set()
    for node in runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "graphleaf_edu":
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
            found |= submodules
            if len(submodules) < len(node.names):  # names defined in the module itself
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names} & known
    return found & known


def first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in ``{module: modules it imports}`` as ``[a, b, ..., a]``, or None."""
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> list[str] | None:
        if module in trail:
            return trail[trail.index(module):] + [module]
        if module in done:
            return None
        for imported_module in sorted(graph[module]):
            cycle = visit(imported_module, [*trail, module])
            if cycle:
                return cycle
        done.add(module)
        return None

    return next((cycle for module in sorted(graph) if (cycle := visit(module, []))), None)


def test_no_import_cycles():
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(path) for path in paths}
    graph = {module_name(path): direct_imports(path, known) - {module_name(path)} for path in paths}
    cycle = first_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_cycles_and_skips_type_checking_imports(tmp_path):
    assert first_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert first_cycle({"a": {"b"}, "b": set()}) is None
    source = tmp_path / "probe.py"
    source.write_text("from typing import TYPE_CHECKING\nfrom graphleaf_edu import errors, safe_deepcopy\n"
                      "if TYPE_CHECKING:\n    from graphleaf_edu.widgets import x\n")
    known = {"graphleaf_edu", "graphleaf_edu.errors", "graphleaf_edu.widgets"}
    assert direct_imports(source, known) == {"graphleaf_edu.errors", "graphleaf_edu"}


def private_imports(path: Path) -> list[str]:
    """Private names (``_x``, not dunders) that ``path`` takes from another module of the package:
    ``from graphleaf_edu.m import _x``, or ``m._x`` on a package module it imported."""
    tree = ast.parse(path.read_text())
    own = module_name(path) if PACKAGE in path.parents else path.stem
    aliases, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "graphleaf_edu":
            for alias in node.names:
                if node.module != own and _is_private(alias.name):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            aliases |= {alias.asname for alias in node.names if alias.asname and alias.name.startswith("graphleaf_edu.")}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and _is_private(node.attr)):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_takes_another_modules_private_names(path):
    assert private_imports(path) == []


def test_the_private_name_check_sees_both_forms(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("from graphleaf_edu.diagnose import _scan, scan\nfrom graphleaf_edu import deepcopy_walk as dw\n"
                      "import graphleaf_edu.paths as p\nx = dw._opaque_plan, dw.walk, p._STEPS, dw.__name__\n")
    assert private_imports(source) == [
        "line 1: from graphleaf_edu.diagnose import _scan", "line 4: dw._opaque_plan", "line 4: p._STEPS"]
