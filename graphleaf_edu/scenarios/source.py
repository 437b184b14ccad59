"""The code a scenario shows: the real source of the functions it runs, and what they use.

``shown_code(*functions)`` reads the modules the functions are defined in and keeps the
top-level statements the functions need, transitively (imports, classes, helper functions,
constants), with their own text. Nothing is generated: every shown line is a line of a module,
and the functions that run are the ones shown. Imports come first (standard library, third
party, this package); then each module's definitions, in the order the functions were given
and, within a module, in the module's order.
"""
from __future__ import annotations

import ast
import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ShownCode", "shown_code"]


@dataclass(frozen=True)
class ShownCode:
    """Source text, and the top-level names it binds (``{name: module}``)."""

    text: str
    bound: tuple[tuple[str, str], ...]

    def namespace(self) -> dict[str, Any]:
        """The objects the shown code binds, as their modules hold them."""
        return {name: vars(sys.modules[module])[name] for name, module in self.bound}


def shown_code(*functions: Callable) -> ShownCode:
    """The statements of the functions' modules that the functions need."""
    modules = list(dict.fromkeys(function.__module__ for function in functions))
    chosen = {module: _needed(module, {f.__name__ for f in functions if f.__module__ == module})
              for module in modules}
    imports = list(dict.fromkeys(s.text for statements in chosen.values() for s in statements if s.is_import))
    imports.sort(key=_import_group)
    groups = ["\n".join(group) for group in _grouped(imports)]
    definitions = [s.text for statements in chosen.values() for s in statements if not s.is_import]
    bound = tuple(sorted({(name, module) for module, statements in chosen.items()
                          for s in statements for name in s.binds}))
    return ShownCode("\n\n".join(groups) + ("\n\n\n" if groups else "") + "\n\n\n".join(definitions) + "\n", bound)


def _needed(module: str, names: set[str]) -> list[_Statement]:
    """The statements of ``module`` that bind ``names``, and what those use, in the module's order."""
    statements = _statements(module)
    wanted, kept = set(names), set()
    while True:
        more = {i for i, statement in enumerate(statements) if statement.binds & wanted} - kept
        if not more:
            return [statements[i] for i in sorted(kept)]
        kept |= more
        for i in more:
            wanted |= statements[i].uses


@dataclass(frozen=True)
class _Statement:
    text: str
    binds: frozenset[str]
    uses: frozenset[str]
    is_import: bool


@functools.cache
def _statements(module: str) -> tuple[_Statement, ...]:
    source = inspect.getsource(sys.modules[module])
    lines = source.splitlines()
    statements = []
    for node in ast.parse(source).body:
        if _is_docstring(node) or isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        text = "\n".join(lines[first - 1:node.end_lineno])
        is_import = isinstance(node, (ast.Import, ast.ImportFrom))
        statements.append(_Statement(text, frozenset(_bound(node)), frozenset(_used(node)), is_import))
    return tuple(statements)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return {name.id for target in targets if target is not None for name in ast.walk(target)
            if isinstance(name, ast.Name)}


def _used(node: ast.stmt) -> set[str]:
    return {name.id for name in ast.walk(node) if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load)}


def _import_group(text: str) -> tuple[int, bool, str]:
    """isort's order: the standard library, then third party, then this package; plain imports first."""
    top = text.split()[1].split(".")[0]
    group = 0 if top in sys.stdlib_module_names else 2 if top == __name__.split(".")[0] else 1
    return group, text.startswith("from "), text


def _grouped(imports: list[str]) -> list[list[str]]:
    groups: dict[int, list[str]] = {}
    for text in imports:
        groups.setdefault(_import_group(text)[0], []).append(text)
    return [groups[key] for key in sorted(groups)]
