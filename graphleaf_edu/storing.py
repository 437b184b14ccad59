"""The user's line that stored a culprit where the copy or send found it, and the change to that line.

A finding's path says what holds the tensor (``root[0].features``: the attribute ``features`` of
``root[0]``; ``root.losses[3]``: an item of the list ``losses``). The line that put it there is
looked for, in the user's own source (``places.is_users``), among the code that can have run it,
in this order: the hooks registered on the module that holds it (``module._forward_hooks`` and the
others: a hook's code object has its file and line), the methods of the holder's class (``forward``,
a dataset's ``__init__``, a callable hook object's ``__call__``), the function whose line created the
tensor, and the function that copied or sent it. A store is a statement of one shape: ``x.name = v``,
``x.name[key] = v``, ``x.name.update(key=v)``, ``x.name.append(v)``; for a tensor sent as it is, the
``put``/``send`` of the sending line. A container built at the copying or sending line is read there:
``copy.deepcopy({"losses": losses, "last": out})`` leads ``root['losses'][3]`` to the stores into
``losses`` and ``root['last']`` to ``out`` on that line. Literals (``None``, ``[]``) are not what a culprit was stored as.

The change appends ``.detach()`` to the stored value (``(a + b).detach()`` for an operator): a tensor
stays a tensor that shares the value's memory, so the script computes what it did (the clone rule,
``messages.CLONE_RULE``). No change is derived where that could alter the script: a value that spans
lines, or an attribute read back later in the same function (``self.attention = …`` then
``return self.attention @ x``: detaching it would cut the gradient).
"""
from __future__ import annotations

import ast
import functools
import inspect
import linecache
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from torch import nn

from graphleaf_edu import places
from graphleaf_edu.paths import expression, resolve

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_PASSING_CALLS = {"put", "put_nowait", "send", "deepcopy"}  # a tensor sent or copied as it is: their argument
_ATTR, _ITEM = "attribute", "item"


@dataclass(frozen=True)
class Edit:
    """One line of a user's file, as it is and as it should be."""

    filename: str
    lineno: int
    before: str  # the whole line, its indentation included
    after: str


@dataclass(frozen=True)
class Store:
    """The user's line that stored a culprit, and the change to it where one is safe."""

    frame: places.Frame
    edit: Edit | None


def storing_line(root: Any, path: str, users_frames: Iterable[places.Frame], site: places.Frame | None) -> Store | None:
    """The line that stored the culprit at ``root`` + ``path``. ``users_frames``: the user's frames
    to search after the holder's own code (the creation's, the copy's), innermost first;
    ``site``: the user's line that copied or sent root (its argument, for a tensor copied or sent as it is)."""
    steps = _steps(path)
    if steps is None:
        return None
    call = _passing_call(site) if site is not None else None
    argument, built = _into_display(call.args[0], steps) if call is not None else (None, 0)
    if built == len(steps):  # the tensor itself was passed, as it is or inside a container built there
        return None if site is None or call is None else _store(site.filename, argument if built else call, argument)
    kind, key = steps[-1]
    holder = _resolved(root, steps[:-1])
    if kind == _ATTR:
        wanted, owner = _Wanted(attribute=key), holder
    else:
        container = _name_of(steps[:-1]) if len(steps) - built > 1 else _plain_name(argument)
        if container is None:
            return None
        wanted, owner = _Wanted(container=container, key=key), _resolved(root, steps[:-2])
    for filename, scope in _scopes(owner, users_frames):
        found = _first_store(filename, scope, wanted)
        if found is not None:
            return found
    if kind == _ITEM:  # the container may be a hook object's, kept on the module under another name too
        for function, name in _hooks_holding(root, holder):
            where = _scope_of(function)
            found = _first_store(*where, _Wanted(container=name, key=key)) if where else None
            if found is not None:
                return found
    return None


@dataclass(frozen=True)
class _Wanted:
    attribute: str | None = None  # x.attribute = v
    container: str | None = None  # x.container[key] = v, .update(key=v), .append(v)
    key: Any = None


def _steps(path: str) -> list[tuple[str, Any]] | None:
    """``root.a[0]['k']`` as ``[(attribute, "a"), (item, 0), (item, "k")]``; None for other paths."""
    try:
        node = ast.parse(expression(path), mode="eval").body
    except SyntaxError:
        return None
    steps: list[tuple[str, Any]] = []
    while not (isinstance(node, ast.Name) and node.id == "root"):
        if isinstance(node, ast.Attribute):
            steps.append((_ATTR, node.attr))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            steps.append((_ITEM, node.slice.value))
        else:
            return None
        node = node.value  # type: ignore[assignment]
    return steps[::-1]


def _resolved(root: Any, steps: list[tuple[str, Any]]) -> Any:
    path = "".join(f".{key}" if kind == _ATTR else f"[{key!r}]" for kind, key in steps)
    try:
        return resolve(root, path) if path else root
    except (ValueError, LookupError, AttributeError, TypeError):
        return None


def detach_in_place(root: Any, path: str) -> bool:
    """Replace the tensor at ``root`` + ``path`` (an attribute or an item of a list or dict) by its
    ``.detach()``; False where the path has another shape or its holder cannot be changed."""
    steps = _steps(path)
    if not steps:
        return False
    (kind, key), holder = steps[-1], _resolved(root, steps[:-1])
    try:
        tensor = getattr(holder, key) if kind == _ATTR else holder[key]
        if kind == _ATTR:
            setattr(holder, key, tensor.detach())
        else:
            holder[key] = tensor.detach()
    except (AttributeError, TypeError, LookupError):
        return False
    return True


def _name_of(steps: list[tuple[str, Any]]) -> str | None:
    return steps[-1][1] if steps and steps[-1][0] == _ATTR else None


# --- where to look -----------------------------------------------------------------------------

def _scopes(owner: Any, users_frames: Iterable[places.Frame]) -> Iterator[tuple[str, ast.AST]]:
    """The user's code that can have stored into ``owner``, as (file, AST of a function or module)."""
    for function in [*_hooks_of(owner), *_methods_of(owner)]:
        where = _scope_of(function)
        if where is not None:
            yield where
    for frame in users_frames:
        scope = _enclosing(frame.filename, frame.lineno)
        if scope is not None:
            yield frame.filename, scope


def _scope_of(function: Any) -> tuple[str, ast.AST] | None:
    """A function of the user's own source, as (file, AST of its ``def``)."""
    code = getattr(function, "__code__", None)
    if code is None or not places.is_users(code.co_filename):
        return None
    scope = _function_at(code.co_filename, code.co_firstlineno)
    return None if scope is None else (code.co_filename, scope)


def _hooks_holding(root: Any, container: Any) -> Iterator[tuple[Any, str]]:
    """The hooks registered on ``root`` or its submodules whose object keeps ``container`` (the very dict or
    list) as an attribute: each hook's function and that attribute's name (``stats`` for
    ``self.stats[key] = out`` in a monitor's hook, when ``model.monitor_stats = monitor.stats``)."""
    if not isinstance(root, nn.Module) or container is None:
        return
    for module in root.modules():
        for hook in _registered_hooks(module):
            owner = getattr(getattr(hook, "func", hook), "__self__", hook)
            for name, value in getattr(owner, "__dict__", {}).items():
                if value is container:
                    yield _function_of(hook), name


def _hooks_of(owner: Any) -> list[Any]:
    return [_function_of(hook) for hook in _registered_hooks(owner)] if isinstance(owner, nn.Module) else []


def _registered_hooks(module: nn.Module) -> list[Any]:
    return [hook for name in _HOOK_DICTS for hook in dict.values(getattr(module, name, None) or {})]


def _function_of(hook: Any) -> Any:
    hook = getattr(hook, "func", hook)  # functools.partial
    hook = getattr(hook, "__func__", hook)  # a bound method
    if not inspect.isfunction(hook) and callable(hook):
        return getattr(type(hook).__call__, "__func__", type(hook).__call__)  # a callable hook object
    return inspect.unwrap(hook) if inspect.isfunction(hook) else hook


def _methods_of(owner: Any) -> list[Any]:
    if owner is None:
        return []
    found = []
    for cls in type(owner).__mro__:
        for value in vars(cls).values():
            function = getattr(value, "__func__", value)
            if inspect.isfunction(function):
                found.append(function)
    return found


@functools.lru_cache(maxsize=256)
def _tree(filename: str) -> ast.Module | None:
    source = "".join(linecache.getlines(filename))
    try:
        return ast.parse(source) if source else None
    except SyntaxError:
        return None


def _function_at(filename: str, first_line: int) -> ast.AST | None:
    """The function whose code starts at ``first_line`` (its ``def``, or its first decorator)."""
    tree = _tree(filename)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and first_line in (
                node.lineno, *(d.lineno for d in node.decorator_list)):
            return node
    return None


def _enclosing(filename: str, lineno: int) -> ast.AST | None:
    """The innermost function around ``lineno``, else the module."""
    tree = _tree(filename)
    found: ast.AST | None = tree
    for node in ast.walk(tree) if tree is not None else ():
        inside = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= lineno <= (node.end_lineno or 0)
        if inside and (found is tree or node.lineno >= getattr(found, "lineno", 0)):
            found = node
    return found


# --- the store and its change -----------------------------------------------------------------

def _first_store(filename: str, scope: ast.AST, wanted: _Wanted) -> Store | None:
    for node in sorted(_nodes(scope), key=lambda n: (n.lineno, n.col_offset)):
        value = _stored_value(node, wanted)
        if value is not None and not _literal(value):
            read_back = wanted.attribute is not None and _read_after(scope, node, wanted.attribute)
            return _store(filename, node, None if read_back else value)
    return None


def _nodes(scope: ast.AST) -> Iterator[ast.stmt | ast.expr]:
    for node in ast.walk(scope):
        if isinstance(node, (ast.Assign, ast.Call)):
            yield node


def _stored_value(node: ast.AST, wanted: _Wanted) -> ast.expr | None:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if wanted.attribute is not None and isinstance(target, ast.Attribute) and target.attr == wanted.attribute:
                return node.value
            if (wanted.container is not None and isinstance(target, ast.Subscript) and _names(target.value, wanted.container)
                    and isinstance(target.slice, ast.Constant) and target.slice.value == wanted.key):
                return node.value
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and wanted.container is not None
            and _names(node.func.value, wanted.container)):
        return None
    if node.func.attr == "append" and len(node.args) == 1 and isinstance(wanted.key, int):
        return node.args[0]
    if node.func.attr == "update" and isinstance(wanted.key, str):
        for keyword in node.keywords:
            if keyword.arg == wanted.key:
                return keyword.value
        if node.args and isinstance(node.args[0], ast.Dict):
            for key, value in zip(node.args[0].keys, node.args[0].values):
                if isinstance(key, ast.Constant) and key.value == wanted.key:
                    return value
    return None


def _names(node: ast.expr, name: str) -> bool:
    """``x.name`` or a plain ``name``."""
    return (isinstance(node, ast.Attribute) and node.attr == name) or (isinstance(node, ast.Name) and node.id == name)


def _literal(value: ast.expr) -> bool:
    return isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.Set)) and not (
        isinstance(value, ast.Tuple) and value.elts)


def _read_after(scope: ast.AST, store: ast.AST, attribute: str) -> bool:
    return any(isinstance(node, ast.Attribute) and node.attr == attribute and isinstance(node.ctx, ast.Load)
               and (node.lineno, node.col_offset) > (store.lineno, store.col_offset)  # type: ignore[attr-defined]
               for node in ast.walk(scope))


def _into_display(argument: ast.expr, steps: list[tuple[str, Any]]) -> tuple[ast.expr, int]:
    """Where the first steps of the path lead inside a container built at the copying or sending line
    (``{"losses": losses}``, ``(step, norms)``, ``dict(last=out)``): the expression there, and how many
    steps led to it (``losses`` and 1 for ``root['losses'][3]`` in ``copy.deepcopy({"losses": losses})``)."""
    taken = 0
    for kind, key in steps:
        element = _element(argument, key) if kind == _ITEM else None
        if element is None:
            break
        argument, taken = element, taken + 1
    return argument, taken


def _element(display: ast.expr, key: Any) -> ast.expr | None:
    if isinstance(display, ast.Dict):
        return next((value for name, value in zip(display.keys, display.values)
                     if isinstance(name, ast.Constant) and name.value == key), None)
    if isinstance(display, (ast.List, ast.Tuple)) and isinstance(key, int):
        plain = not any(isinstance(element, ast.Starred) for element in display.elts)
        return display.elts[key] if plain and 0 <= key < len(display.elts) else None
    if isinstance(display, ast.Call) and isinstance(display.func, ast.Name) and display.func.id == "dict" and not display.args:
        return next((keyword.value for keyword in display.keywords if keyword.arg == key), None)
    return None


def _plain_name(argument: ast.expr | None) -> str | None:
    """The name a container was passed by (``losses`` in ``copy.deepcopy(losses)``, ``self.losses``)."""
    return argument.id if isinstance(argument, ast.Name) else getattr(argument, "attr", None)


def _passing_call(line: places.Frame) -> ast.Call | None:
    """The ``put``, ``send`` or ``deepcopy`` call of one argument on that line."""
    tree = _tree(line.filename)
    for node in ast.walk(tree) if tree is not None else ():
        if (isinstance(node, ast.Call) and getattr(node, "lineno", 0) == line.lineno and len(node.args) == 1
                and getattr(node.func, "attr", getattr(node.func, "id", None)) in _PASSING_CALLS):
            return node
    return None


def _store(filename: str, node: ast.AST, value: ast.expr | None) -> Store:
    frame = places.Frame(filename, node.lineno, _function_name(filename, node.lineno))  # type: ignore[attr-defined]
    return Store(frame, _edit(filename, value) if value is not None else None)


def _function_name(filename: str, lineno: int) -> str:
    scope = _enclosing(filename, lineno)
    return getattr(scope, "name", "<module>")


def _edit(filename: str, value: ast.expr) -> Edit | None:
    """``value`` with ``.detach()`` appended, where it sits on one line."""
    if value.lineno != value.end_lineno or value.end_col_offset is None:
        return None
    line = linecache.getline(filename, value.lineno).rstrip("\n")
    encoded = line.encode()
    start, end = encoded[:value.col_offset].decode(), encoded[:value.end_col_offset].decode()
    text = line[len(start):len(end)]
    if text.endswith(".detach()"):
        return None
    simple = isinstance(value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
    detached = f"{text}.detach()" if simple else f"({text}).detach()"
    return Edit(filename, value.lineno, line, line[:len(start)] + detached + line[len(end):])
