"""The package's floors: each module imports only from its own floor or the floors below it.

Data flows one way: errors -> diagnose -> copying/graphs -> scenarios/dataloading -> views ->
widgets/exercises/gpu -> notebooks. Nothing in the package imports ``widgets``.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "graphleaf_edu"
FLOORS = [
    {"errors", "tables", "tracebacks", "notebook", "kernels"},
    {"stored_values", "deepcopy_reducers", "deepcopy_walk", "paths", "causes", "findings", "diagnose"},
    {"copying", "graph_picture", "on_error"},
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
