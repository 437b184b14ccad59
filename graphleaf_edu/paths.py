"""Paths to what ``copy.deepcopy`` reaches: written for a node of the walk, followed by ``resolve``.

A path is Python that names the object from ``root``: ``root`` + path (``.cache``,
``[0].weight``, ``._modules['0'].z``), or, where a reduce value's iterator has to be listed
first, a whole expression (``list(root.d.__reduce_ex__(4)[3])[0]``). ``expression(path)`` gives
the Python either way, and ``resolve(root, path)`` follows it without ``eval``.
"""
from __future__ import annotations

import ast
import copyreg
import io
import keyword
import math
import tokenize
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NoReturn

from torch import nn

from graphleaf_edu import stored_values as sv
from graphleaf_edu.i18n import say
from graphleaf_edu.stored_values import Node

Step = Callable[[Any, Any, str], str]  # (holder, key, path so far) -> path
_TUPLEGETTER = type(namedtuple("_Probe", "field").__dict__["field"])


def expression(path: str) -> str:
    """The Python expression a path stands for, in terms of ``root``."""
    return path if path[:1].isalpha() else "root" + path


def render_path(nodes: list[Node], index: int) -> str:
    steps: list[tuple[Any, str, Any]] = []
    while index > 0:
        _, parent, kind, key = nodes[index]
        steps.append((nodes[parent][0], kind, key))
        index = parent
    path = ""
    for holder, kind, key in reversed(steps):
        path = _STEPS[kind](holder, key, path)
    return path


def _attr_step(holder: Any, name: str, path: str) -> str:
    if _is_plain_name(name) and not _is_data_descriptor(sv.class_lookup(type(holder), name)):
        return f"{path}.{name}"
    return f"{path}.__dict__[{name!r}]"


def _module_step(store: str) -> Step:
    def step(module: nn.Module, name: str, path: str) -> str:
        if store == "_modules":
            indexed = _container_index(module, name)
            if indexed:
                return path + indexed
        if (
            _is_plain_name(name)
            and type(module).__getattr__ is nn.Module.__getattr__
            and name not in sv.instance_dict(module)
            and sv.class_lookup(type(module), name) is sv.MISSING
        ):
            return f"{path}.{name}"
        return f"{path}.{store}[{name!r}]"

    return step


def _container_index(module: nn.Module, name: str) -> str | None:
    getitem = getattr(type(module), "__getitem__", None)
    if getitem is nn.ModuleDict.__getitem__:
        return f"[{name!r}]"
    positional = getitem in (nn.Sequential.__getitem__, nn.ModuleList.__getitem__)
    if positional and name.isdecimal() and list(sv.instance_dict(module)["_modules"]).index(name) == int(name):
        return f"[{int(name)}]"
    return None


def _field_step(holder: tuple[Any, ...], key: tuple[int, str], path: str) -> str:
    i, name = key
    if _is_plain_name(name) and isinstance(sv.class_lookup(type(holder), name), _TUPLEGETTER):
        return f"{path}.{name}"
    return f"{path}[{i}]"


def _value_step(holder: dict[Any, Any], key: tuple[int, Any], path: str) -> str:
    i, dict_key = key
    if _is_literal(dict_key):
        return f"{path}[{dict_key!r}]"
    return f"{path}[list({expression(path)})[{i}]]"


def _state_item_step(holder: Any, key: Any, path: str) -> str:
    if _is_literal(key):
        return f"{path}.__getstate__()[{key!r}]"
    getstate: Any = type(holder).__getstate__
    return f"list({expression(path)}.__getstate__().values())[{list(getstate(holder)).index(key)}]"


def _reduced_step(holder: Any, how: str, path: str) -> str:
    if how == "copyreg":
        return f"copyreg.dispatch_table[type({expression(path)})]({expression(path)})"
    return f"{path}.__reduce_ex__(4)"


def _reduced_item_step(holder: tuple[Any, ...], key: tuple[int, int | None], path: str) -> str:
    part, i = key
    if part == 3:  # list items come from an iterator
        return f"list({expression(path)}[3])[{i}]"
    return f"{path}[{part}]" + ("" if i is None else f"[{i}]")


_STEPS: dict[str, Step] = {
    sv.ATTR: _attr_step,
    sv.MEMBER: lambda holder, name, path: f"{path}.{name}",
    sv.SLOT: lambda holder, name, path: f"{path}.{name}",
    sv.PARAM: _module_step("_parameters"),
    sv.BUFFER: _module_step("_buffers"),
    sv.CHILD: _module_step("_modules"),
    sv.INDEX: lambda holder, i, path: f"{path}[{i}]",
    sv.FIELD: _field_step,
    sv.VALUE: _value_step,
    # A dict key or set member: the built-in iterator's __reduce__ lists them in iteration order.
    sv.KEY: lambda holder, i, path: f"{path}.__iter__().__reduce__()[1][0][{i}]",
    sv.GRAD: lambda holder, key, path: f"{path}.grad",
    sv.STATE: lambda holder, key, path: f"{path}.__getstate__()",
    sv.STATE_ITEM: _state_item_step,
    sv.REDUCED: _reduced_step,
    sv.REDUCED_ITEM: _reduced_item_step,
    sv.REDUCED_KEY: lambda holder, i, path: f"list({expression(path)}[4])[{i}][0]",
    sv.REDUCED_VALUE: lambda holder, i, path: f"list({expression(path)}[4])[{i}][1]",
}


def _is_plain_name(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _is_literal(key: Any) -> bool:
    """True when ``repr(key)`` evaluates back to an equal key."""
    kind = type(key)
    if kind in (str, bytes, int, bool, type(None)):
        return True
    if kind is float:
        return math.isfinite(key)
    return kind is tuple and all(_is_literal(item) for item in key)


def _is_data_descriptor(attribute: Any) -> bool:
    return hasattr(type(attribute), "__set__") or hasattr(type(attribute), "__delete__")


# --- resolve -------------------------------------------------------------------------------------

def resolve(root: Any, path: str) -> Any:
    """The object a finding's ``path`` names inside ``root``: ``resolve(root, f.path) is f.tensor``.

    Follows the path step by step (so paths too deep for ``eval`` work too) and only the steps
    a path can contain: attributes, subscripts, ``list(...)[i]``, the reduce/state calls
    ``copy.deepcopy`` itself makes (``.__iter__()``, ``.__reduce__()``, ``.__reduce_ex__(4)``,
    ``.__getstate__()``, ``.values()``) and ``copyreg.dispatch_table[type(x)](x)``. Anything else
    is refused with a ValueError, so nothing but reading happens.

    Args:
        root: the object ``find_nonleaf`` was given.
        path: a ``Finding.path``.

    Returns:
        The object at the end of the path (for a finding, its tensor).

    Raises:
        TypeError: ``path`` is not a string.
        ValueError: ``path`` holds a step that no path of ``find_nonleaf`` holds.

    Example:
        >>> model = torch.nn.Linear(2, 2)
        >>> model.cache = model(torch.ones(1, 2))
        >>> finding = gl.find_nonleaf(model)[0]
        >>> gl.resolve(model, finding.path) is model.cache
        True
    """
    if not isinstance(path, str):
        raise TypeError(say("resolve(root, path) takes the path as a str (Finding.path), got {type_name}",
                            type_name=type(path).__name__))
    text = expression(path)
    try:
        tokens = [
            token for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)
        ]
        closing = _matching_brackets(tokens)
    except (tokenize.TokenError, IndexError, SyntaxError) as error:
        raise ValueError(say("resolve(): {path!r} is not a path find_nonleaf writes ({error})", path=path,
                             error=error)) from None
    walker = _PathWalker(root, text, tokens, closing)
    value, end = walker.expression(0)
    if end != len(tokens):
        walker.refuse(end)
    return value


_PATH_CALLS = {"__iter__": (), "__reduce__": (), "__getstate__": (), "values": (), "__reduce_ex__": (4,)}


def _matching_brackets(tokens: list[tokenize.TokenInfo]) -> dict[int, int]:
    closing: dict[int, int] = {}
    stack: list[int] = []
    for index, token in enumerate(tokens):
        if token.string in ("(", "["):
            stack.append(index)
        elif token.string in (")", "]"):
            closing[stack.pop()] = index
    if stack:
        raise SyntaxError("unbalanced brackets")
    return closing


class _PathWalker:
    """Evaluates the small expression language of paths, left to right, without ``eval``."""

    def __init__(self, root: Any, text: str, tokens: list[tokenize.TokenInfo], closing: dict[int, int]) -> None:
        self.root, self.text, self.tokens, self.closing = root, text, tokens, closing

    def refuse(self, index: int) -> NoReturn:
        where = self.tokens[index].start[1] if index < len(self.tokens) else len(self.text)
        raise ValueError(say(
            "resolve(): cannot follow {path!r} at {at!r}: a path holds only attributes, subscripts and the "
            "reduce/state calls deepcopy makes", path=self.text[:80], at=self.text[where:where + 20]))

    def string(self, index: int) -> str:
        return self.tokens[index].string if index < len(self.tokens) else ""

    def expression(self, index: int) -> tuple[Any, int]:
        value, index = self.primary(index)
        while True:
            step = self.string(index)
            if step == "." and index + 1 < len(self.tokens) and self.tokens[index + 1].type == tokenize.NAME:
                name = self.tokens[index + 1].string
                index += 2
                if self.string(index) == "(":
                    value, index = self.call(value, name, index)
                else:
                    value = getattr(value, name)
            elif step == "[":
                end = self.closing[index]
                value = value[self.argument(index + 1, end)]
                index = end + 1
            else:
                return value, index

    def primary(self, index: int) -> tuple[Any, int]:
        name = self.string(index)
        if name == "root":
            return self.root, index + 1
        if name in ("list", "type") and self.string(index + 1) == "(":
            end = self.closing[index + 1]
            inner = self.argument(index + 2, end)
            return (list(inner) if name == "list" else type(inner)), end + 1
        if name == "copyreg" and [self.string(index + k) for k in (1, 2, 3)] == [".", "dispatch_table", "["]:
            end = self.closing[index + 3]
            reducer = copyreg.dispatch_table[self.argument(index + 4, end)]
            if self.string(end + 1) != "(":
                self.refuse(end + 1)
            call_end = self.closing[end + 1]
            return reducer(self.argument(end + 2, call_end)), call_end + 1
        self.refuse(index)

    def call(self, value: Any, name: str, index: int) -> tuple[Any, int]:
        end = self.closing[index]
        source = self.source(index + 1, end)
        try:
            arguments = ast.literal_eval(f"({source},)") if source else ()
        except (ValueError, SyntaxError):
            self.refuse(index + 1)
        if _PATH_CALLS.get(name) != arguments:
            self.refuse(index - 1)
        return getattr(value, name)(*arguments), end + 1

    def argument(self, start: int, end: int) -> Any:
        """A subscript or call argument: a literal, or a nested path expression."""
        source = self.source(start, end)
        try:
            return ast.literal_eval(source)
        except (ValueError, SyntaxError):
            pass
        value, stop = self.expression(start)
        if stop != end:
            self.refuse(stop)
        return value

    def source(self, start: int, end: int) -> str:
        if start >= end:
            return ""
        return self.text[self.tokens[start].start[1]:self.tokens[end - 1].end[1]]
