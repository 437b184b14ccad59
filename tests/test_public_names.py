"""Notebooks and the README use only public names: each ``gl.X``, ``gl.module.X`` and import is in an ``__all__``."""
import importlib
import importlib.util
import re
import types

import pytest
from notebook_files import ROOT, code_cells, read

NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb")) + sorted((ROOT / "instructor").rglob("*.ipynb"))
# gl.X or gl.X.Y (also spelled graphleaf_edu.X...), and from graphleaf_edu[.module] import a, b
ATTRIBUTE = re.compile(r"\b(?:gl|graphleaf_edu)\.(\w+)(?:\.(\w+)(?![\w*]))?")  # `check_*` is prose
FROM_IMPORT = re.compile(r"^\s*from graphleaf_edu(?:\.(\w+))? import (?:\(([\w,\s]+)\)|([\w, ]+))", re.MULTILINE)
MODULE_ALIAS = re.compile(r"^\s*from graphleaf_edu import (\w+)\s*$", re.MULTILINE)


def texts():
    for path in NOTEBOOKS:
        yield path.relative_to(ROOT), "\n".join(cell.source for cell in code_cells(read(path)))
    readme = (ROOT / "README.md").read_text()
    yield "README.md", "\n".join(re.findall(r"```python\n(.*?)```", readme, re.DOTALL)) + "\n" + \
        "\n".join(re.findall(r"`([^`\n]+)`", readme))


def public(module: types.ModuleType) -> set[str]:
    names = getattr(module, "__all__", None)
    assert names is not None, f"{module.__name__} has no __all__: say what is public"
    return set(names)


def is_submodule(name: str) -> bool:
    return importlib.util.find_spec(f"graphleaf_edu.{name}") is not None


def uses(text: str) -> set[tuple[str, str]]:
    """``(module, name)`` for every package name the text uses."""
    found = set()
    for first, second in ATTRIBUTE.findall(text):
        if is_submodule(first):
            if second:
                found.add((f"graphleaf_edu.{first}", second))
        else:
            found.add(("graphleaf_edu", first))
    for module, wrapped, names in FROM_IMPORT.findall(text):
        for name in (n.strip() for n in (wrapped or names).split(",")):
            if name and not (not module and is_submodule(name)):
                found.add((f"graphleaf_edu.{module}" if module else "graphleaf_edu", name))
    for alias in MODULE_ALIAS.findall(text):
        if is_submodule(alias):
            found |= {(f"graphleaf_edu.{alias}", name) for name in re.findall(rf"\b{alias}\.(\w+)", text)}
    return found


@pytest.mark.parametrize(("where", "text"), list(texts()), ids=lambda value: str(value)[:40])
def test_every_package_name_used_is_public(where, text):
    private = sorted(f"{module}.{name}" for module, name in uses(text)
                     if name not in public(importlib.import_module(module)))
    assert not private, f"{where} uses names outside their module's __all__: {private}"


def test_the_check_sees_the_names_a_notebook_uses():
    text = 'gl.draw(y)\nprint(gl.views.scenario_view(s).text())\nfrom graphleaf_edu import exercises\nexercises.check_cache_fix(M)'
    assert uses(text) == {("graphleaf_edu", "draw"), ("graphleaf_edu.views", "scenario_view"),
                          ("graphleaf_edu.exercises", "check_cache_fix")}
    assert ("graphleaf_edu.gpu", "_listing") in uses("gl.gpu._listing(x)")
    assert uses("`graphleaf_edu.exercises.check_*` runs") == set()
