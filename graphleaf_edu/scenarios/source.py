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
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ShownCode", "script", "shown_code"]


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


def script(setup: Callable, copy: Callable) -> str:
    """The code of ``setup`` then ``copy`` as a student would write it: the classes and helpers they use,
    then the setup's body (a call to another setup inlined, the seed and the ``return {...}`` left out)
    and ``copied = ...`` from the copy function. Code of another shape is shown as ``shown_code`` shows it."""
    try:
        lines = [*_setup_lines(setup), *_copy_lines(copy)]
    except _NotPlain:
        return shown_code(setup, copy).text
    used = _loaded_names("\n".join(lines))
    chosen = [s for module in dict.fromkeys((setup.__module__, copy.__module__))
              for s in _needed(module, used - {setup.__name__, copy.__name__})]
    imports = sorted(dict.fromkeys(s.text for s in chosen if s.is_import), key=_import_group)
    groups = ["\n".join(group) for group in _grouped(imports)]
    definitions = list(dict.fromkeys(s.text for s in chosen if not s.is_import))
    parts = ["\n\n".join(groups), "\n\n\n".join(definitions), "\n".join(lines)]
    return "\n\n\n".join(part for part in parts if part) + "\n"


class _NotPlain(Exception):
    """The functions are not of the plain shape ``script`` rewrites."""


def _function_node(function: Callable) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    if not isinstance(node, ast.FunctionDef):
        raise _NotPlain(function)
    return node


def _setup_lines(setup: Callable) -> list[str]:
    """The setup's statements, with a ``return other_setup(argument)`` inlined."""
    node, arguments, keywords = _function_node(setup), [], []
    if len(node.body) == 1 and isinstance(node.body[0], ast.Return) and isinstance(node.body[0].value, ast.Call):
        call = node.body[0].value
        callee = vars(sys.modules[setup.__module__]).get(getattr(call.func, "id", ""))
        if not callable(callee):
            raise _NotPlain(setup)
        node, arguments, keywords = _function_node(callee), call.args, call.keywords
    params = [a.arg for a in node.args.args]
    values = dict(zip(params[len(params) - len(node.args.defaults):], node.args.defaults, strict=True))
    values.update(zip(params, arguments, strict=False))
    values.update({keyword.arg: keyword.value for keyword in keywords if keyword.arg in params})
    *steps, last = [_Substitute(values).visit(statement) for statement in node.body]
    if not isinstance(last, ast.Return) or not isinstance(last.value, ast.Dict):
        raise _NotPlain(setup)
    lines = [ast.unparse(step) for step in steps if not _is_seed(step)]
    for key, value in zip(last.value.keys, last.value.values, strict=True):
        if not isinstance(key, ast.Constant):
            raise _NotPlain(setup)
        if not (isinstance(value, ast.Name) and value.id == key.value):
            lines.append(f"{key.value} = {ast.unparse(value)}")
    return lines


def _copy_lines(copy: Callable) -> list[str]:
    *steps, last = _function_node(copy).body
    if not isinstance(last, ast.Return) or last.value is None:
        raise _NotPlain(copy)
    lines = [ast.unparse(step) for step in steps]
    if not (isinstance(last.value, ast.Name) and last.value.id == "copied"):
        lines.append(f"copied = {ast.unparse(last.value)}")
    return lines


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.values.get(node.id, node) if isinstance(node.ctx, ast.Load) else node


def _is_seed(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and ast.unparse(statement.value).startswith("torch.manual_seed(")


def _loaded_names(source: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


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
