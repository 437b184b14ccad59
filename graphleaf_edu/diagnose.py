"""Name every tensor that makes ``copy.deepcopy`` raise the graph-leaves error, by its path.

``find_nonleaf(obj)`` walks what ``copy.deepcopy`` walks (containers, ``__dict__``, ``__slots__``,
module parameters, buffers and submodules, optimizers, bound methods, partials, a plain tensor's
``.grad``), breadth-first and without recursion. It only reads stored values: no property,
``__getattr__`` or ``__getstate__`` is ever called, and nothing is mutated. Objects that copy
themselves (their own ``__deepcopy__``, ``__reduce_ex__`` or ``__reduce__``) are not walked.
"""
from __future__ import annotations

import ast
import copy
import copyreg
import enum
import functools
import html
import io
import keyword
import math
import tokenize
import types
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.utils.prune import BasePruningMethod
from torch.nn.utils.spectral_norm import SpectralNorm
from torch.nn.utils.weight_norm import WeightNorm
from torch.optim import Optimizer
from torch.utils.data import Dataset

# Values copy.deepcopy returns as they are (or refuses outright): nothing inside them to walk.
_ATOMIC = (
    type(None), bool, int, float, complex, str, bytes, range, type, enum.Enum,
    types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.ModuleType,
    property, weakref.ref, type(Ellipsis), type(NotImplemented),
    torch.device, torch.dtype, torch.layout, torch.memory_format, torch.Size,
)
_CONTAINERS = (dict, list, tuple, set, frozenset)
_PLAIN_CONTAINERS = frozenset({dict, OrderedDict, list, tuple, set, frozenset})  # empty: skipped
_OPTIMIZER_STATE = ("defaults", "state", "param_groups")  # what Optimizer.__getstate__ keeps
_TUPLEGETTER = type(namedtuple("_Probe", "field").field)
_MISSING = object()
GRAPH_LEAVES_ERROR = "Only Tensors created explicitly by the user (graph leaves)"

# Edge kinds: how a child is reached from its parent.
_ATTR, _MEMBER, _SLOT, _PARAM, _BUFFER, _CHILD = "attr", "member", "slot", "param", "buffer", "child"
_INDEX, _FIELD, _VALUE, _KEY, _GRAD = "index", "field", "value", "key", "grad"
_DICT_KEY = "dict key"  # walked as _KEY, after everything else


@dataclass(frozen=True)
class TensorInfo:
    """What autograd and ``copy.deepcopy`` think of one tensor."""

    is_leaf: bool
    requires_grad: bool
    grad_fn: str | None
    retains_grad: bool
    device: str
    dtype: str
    shape: tuple[int, ...]
    is_view: bool
    deepcopy_ok: bool
    deepcopy_blocker: str | None

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{name}</th><td><code>{html.escape(repr(value))}</code></td></tr>"
            for name, value in vars(self).items()
        )
        return f"<table>{rows}</table>"


@dataclass(frozen=True, eq=False)
class Finding:
    """One tensor that makes ``copy.deepcopy`` raise: ``eval("root" + path)`` is ``tensor``."""

    path: str
    tensor: torch.Tensor
    grad_fn: str
    cause: str
    fix: str

    def __repr__(self) -> str:
        return (
            f"Finding(path={self.path!r}, grad_fn={self.grad_fn!r}, "
            f"shape={shape_of(self.tensor)}, cause={self.cause!r})"
        )


class Findings(list[Finding]):
    """The non-leaf tensors reachable from one object, shortest path first."""

    def __init__(self, findings=(), subject: str = "object"):
        super().__init__(findings)
        self.subject = subject

    def report(self) -> str:
        """What breaks ``copy.deepcopy``, where, and the fix for each finding."""
        if not self:
            return (
                f"Nothing to fix: no non-leaf tensor is reachable from this {self.subject}, "
                "so copy.deepcopy(root) will not raise the graph-leaves error."
            )
        count = f"{len(self)} non-leaf tensor" + ("s" if len(self) > 1 else "")
        lines = [f"copy.deepcopy(root) fails for this {self.subject}: {count}.", ""]
        for number, finding in enumerate(self, 1):
            tensor = finding.tensor
            where = f"root{finding.path}  ({finding.grad_fn}, shape {shape_of(tensor)}, {tensor.device.type})"
            lines += [
                f"{number}. {where}",
                f"   cause: {finding.cause}",
                f"   fix:   {finding.fix}",
            ]
        lines += ["", "graphleaf_edu.safe_deepcopy(root) copies it anyway, with these tensors detached."]
        return "\n".join(lines)

    def explain(self) -> None:
        """Print ``report()``."""
        print(self.report())

    def __repr__(self) -> str:
        if not self:
            return "Findings([])"
        return "Findings([\n" + "".join(f"    {finding!r},\n" for finding in self) + "])"

    def _repr_html_(self) -> str:
        if not self:
            return f"<p>{html.escape(self.report())}</p>"
        header = "".join(f"<th>{name}</th>" for name in ("#", "path", "grad_fn", "shape", "cause", "fix"))
        rows = "".join(
            f"<tr><td>{number}</td><td><code>root{html.escape(f.path)}</code></td>"
            f"<td>{html.escape(f.grad_fn)}</td><td>{shape_of(f.tensor)}</td>"
            f"<td>{html.escape(f.cause)}</td><td>{html.escape(f.fix)}</td></tr>"
            for number, f in enumerate(self, 1)
        )
        return f"<table><tr>{header}</tr>{rows}</table>"


def describe(t: torch.Tensor) -> TensorInfo:
    """Leaf or not, its ``grad_fn``, and whether ``copy.deepcopy(t)`` would work (and why not)."""
    _require_tensor(t, "describe")
    blocker = deepcopy_blocker(t)
    return TensorInfo(
        is_leaf=t.is_leaf,
        requires_grad=t.requires_grad,
        grad_fn=_grad_fn_name(t),
        retains_grad=t.retains_grad,
        device=t.device.type,
        dtype=str(t.dtype).removeprefix("torch."),
        shape=shape_of(t),
        is_view=t._is_view(),
        deepcopy_ok=blocker is None,
        deepcopy_blocker=blocker,
    )


def deepcopy_blocker(t: torch.Tensor) -> str | None:
    """Why ``copy.deepcopy(t)`` raises, in one line, or None when it copies.

    The one verdict the package gives about a tensor. In the order ``Tensor.__deepcopy__``
    checks: the tensor is a non-leaf (the graph-leaves error); torch cannot copy its layout or
    type at all (sparse CSR/CSC/BSR/BSC, strided nested tensors, subclasses whose ``new_empty``
    or ``clone`` does not return their own type); its ``.grad`` or an attribute is a non-leaf.
    """
    _require_tensor(t, "deepcopy_blocker")
    if not t.is_leaf:
        return f"non-leaf (grad_fn={_grad_fn_name(t)})"
    if not _copies_like_tensor(t):
        return None  # nn.Parameter (and its subclasses) copy their data only
    unsupported = _unsupported_by_torch(t)
    if unsupported:
        return unsupported
    findings, _ = _scan(t)
    return _blocker(findings[0]) if findings else None


def shape_of(t: torch.Tensor) -> tuple[int | None, ...]:
    """``tuple(t.shape)``, with None for the ragged dimensions of a nested tensor."""
    if t.is_nested and type(t) is torch.Tensor:  # strided nested tensors have no sizes()
        sizes = t._nested_tensor_size().tolist()
        ragged = tuple(None if len({row[d] for row in sizes}) > 1 else sizes[0][d] for d in range(t.dim() - 1))
        return (len(sizes), *ragged) if sizes else (0,)
    return tuple(dimension if isinstance(dimension, int) else None for dimension in t.shape)


def _require_tensor(t: Any, function: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(
            f"{function}() takes one torch.Tensor, got {type(t).__name__}; "
            "for modules, containers and other objects use find_nonleaf(obj)"
        )


_SPARSE_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


def _unsupported_by_torch(t: torch.Tensor) -> str | None:
    """Leaf tensors that ``Tensor.__deepcopy__`` itself cannot copy, whatever their graph."""
    if t.layout in _SPARSE_COMPRESSED:
        layout = str(t.layout).removeprefix("torch.")
        return f"{layout} layout: Tensor.__deepcopy__ cannot copy it (NotImplementedError, no storage)"
    if t.is_nested and type(t) is torch.Tensor:
        return "strided nested tensor: Tensor.__deepcopy__ cannot copy it (NotImplementedError); use layout=torch.jagged"
    if type(t) is torch.Tensor:
        return None
    return _subclass_blocker(t)


def _subclass_blocker(t: torch.Tensor) -> str | None:
    """What the default ``__deepcopy__`` does with a subclass: it dispatches through the
    subclass' ``__torch_function__`` and checks the type of ``clone()``/``new_empty()``; a
    probe copy is the only faithful answer."""
    try:
        copy.deepcopy(t, {})
    except Exception as error:  # noqa: BLE001 - any error is the verdict
        message = str(error).split("\n", 1)[0]
        if GRAPH_LEAVES_ERROR in message:
            return None  # an attribute: the walk names it
        return f"{type(t).__name__} (tensor subclass): copy.deepcopy raises {type(error).__name__}: {message}"
    return None


def find_nonleaf(obj: Any) -> Findings:
    """Every tensor reachable from ``obj`` that makes ``copy.deepcopy(obj)`` raise, by path.

    One finding per tensor object, on a shortest path, breadth-first:
    ``eval("root" + finding.path, {"root": obj}) is finding.tensor``. Names that are not
    identifiers are indexed (``[0]``, ``['my-layer']``, ``[(1, 'a')]``); a dict key without a
    literal repr is named ``[list(root...)[i]]``, and a set member or a tensor used as a key
    ``.__iter__().__reduce__()[1][0][i]`` (its position in iteration order).
    """
    return _scan(obj)[0]


def resolve(root: Any, path: str) -> Any:
    """The object a finding's ``path`` names inside ``root``: ``resolve(root, f.path) is f.tensor``.

    Follows the path step by step (so paths too deep for ``eval`` work too) and only the steps
    a path can contain: attributes, subscripts, ``list(...)[i]`` for dict keys without a literal
    repr, the reduce/state calls ``copy.deepcopy`` itself makes (``.__iter__()``, ``.__reduce__()``,
    ``.__reduce_ex__(4)``, ``.__getstate__()``) and ``copyreg.dispatch_table[type(x)](x)``.
    Anything else is refused with a ValueError, so nothing but reading happens.
    """
    if not isinstance(path, str):
        raise TypeError(f"resolve(root, path) takes the path as a str (Finding.path), got {type(path).__name__}")
    expression = path if path[:1].isalpha() else "root" + path
    try:
        tokens = [
            token for token in tokenize.generate_tokens(io.StringIO(expression).readline)
            if token.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)
        ]
        closing = _matching_brackets(tokens)
    except (tokenize.TokenError, IndexError, SyntaxError) as error:
        raise ValueError(f"resolve(): {path!r} is not a path find_nonleaf writes ({error})") from None
    walker = _PathWalker(root, expression, tokens, closing)
    value, end = walker.expression(0)
    if end != len(tokens):
        walker.refuse(end)
    return value


_PATH_CALLS = {"__iter__": (), "__reduce__": (), "__getstate__": (), "__reduce_ex__": (4,)}


def _matching_brackets(tokens: list) -> dict[int, int]:
    closing, stack = {}, []
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

    def __init__(self, root: Any, text: str, tokens: list, closing: dict[int, int]):
        self.root, self.text, self.tokens, self.closing = root, text, tokens, closing

    def refuse(self, index: int):
        where = self.tokens[index].start[1] if index < len(self.tokens) else len(self.text)
        raise ValueError(
            f"resolve(): cannot follow {self.text!r} at {self.text[where:where + 20]!r}: "
            "a path holds only attributes, subscripts and the reduce/state calls deepcopy makes"
        )

    def string(self, index: int) -> str:
        return self.tokens[index].string if index < len(self.tokens) else ""

    def expression(self, index: int) -> tuple[Any, int]:
        value, index = self.primary(index)
        while True:
            step = self.string(index)
            if step == "." and self.tokens[index + 1].type == tokenize.NAME:
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
        arguments = ast.literal_eval(f"({source},)") if source else ()
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


def explain(obj: Any) -> None:
    """Print what breaks ``copy.deepcopy(obj)``, where, and how to fix it (or that nothing does)."""
    find_nonleaf(obj).explain()


def _blocker(finding: Finding) -> str:
    where = f"{finding.path} is non-leaf" if finding.path else "non-leaf"
    return f"{where} (grad_fn={finding.grad_fn})"


def _grad_fn_name(t: torch.Tensor) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _scan(root: Any) -> tuple[Findings, list[torch.Tensor]]:
    """Breadth-first walk: the findings, and the plain leaves whose ``.grad`` is a non-leaf.

    ``Tensor.__deepcopy__`` copies ``.grad`` by calling its ``__deepcopy__`` directly, so those
    leaves need their own treatment when copying; that is why the second list exists. Dict keys
    are walked last, so a path goes through a key only when nothing else reaches the object.
    """
    nodes: list[tuple[Any, int, str, Any]] = [(root, -1, "", None)]
    seen = {id(root)}
    dict_keys: list[tuple[Any, int, str, Any]] = []
    nonleaf: list[int] = []
    index = 0
    while index < len(nodes) or dict_keys:
        if index == len(nodes):
            _append_unseen(dict_keys, nodes, seen)
            dict_keys.clear()
            continue
        obj = nodes[index][0]
        if isinstance(obj, torch.Tensor) and not obj.is_leaf:
            nonleaf.append(index)
            index += 1
            continue
        for kind, key, child in _tensor_children(obj) if isinstance(obj, torch.Tensor) else _children(obj):
            if _is_atomic(type(child)) or id(child) in seen or (type(child) in _PLAIN_CONTAINERS and not child):
                continue
            if kind == _DICT_KEY:
                dict_keys.append((child, index, _KEY, key))
            else:
                seen.add(id(child))
                nodes.append((child, index, kind, key))
        index += 1
    findings = Findings((_finding(nodes, i) for i in nonleaf), subject=type(root).__name__)
    return findings, _leaves_with_nonleaf_grad(nodes)


def _append_unseen(new_nodes: list, nodes: list, seen: set[int]) -> None:
    for node in new_nodes:
        if id(node[0]) not in seen:
            seen.add(id(node[0]))
            nodes.append(node)


def _leaves_with_nonleaf_grad(nodes: list) -> list[torch.Tensor]:
    return [
        obj for obj, *_ in nodes
        if isinstance(obj, torch.Tensor) and obj.is_leaf and _copies_like_tensor(obj)
        and obj.grad is not None and not obj.grad.is_leaf
    ]


def _finding(nodes: list, index: int) -> Finding:
    tensor = nodes[index][0]
    cause, fix = _diagnosis(nodes, index)
    return Finding(_render_path(nodes, index), tensor, _grad_fn_name(tensor), cause, fix)


# --- what copy.deepcopy walks --------------------------------------------------------------------

Child = tuple[str, Any, Any]


@functools.lru_cache(maxsize=1024)
def _is_atomic(cls: type) -> bool:
    return issubclass(cls, _ATOMIC)


def _copies_like_tensor(t: torch.Tensor) -> bool:
    # nn.Parameter's __deepcopy__ copies the data only (no .grad, no __dict__).
    return type(t).__deepcopy__ is torch.Tensor.__deepcopy__


def _tensor_children(t: torch.Tensor) -> Iterator[Child] | tuple:
    if not _copies_like_tensor(t):
        return ()
    grad = t.grad
    if grad is None and type(t) is torch.Tensor and not _instance_dict(t):
        return ()  # the common case, kept cheap
    return _chain([] if grad is None else [(_GRAD, None, grad)], _attribute_children(t))


def _children(obj: Any) -> Iterator[Child]:
    if _copies_itself(type(obj)):
        return iter(())
    if isinstance(obj, nn.Module):
        return _module_children(obj)
    if isinstance(obj, Optimizer):
        state = _instance_dict(obj)
        return ((_ATTR, name, state[name]) for name in _OPTIMIZER_STATE if name in state)
    if isinstance(obj, dict):
        return _chain(_dict_children(obj), _attribute_children(obj))
    if isinstance(obj, (list, tuple)):
        return _chain(_sequence_children(obj), _attribute_children(obj))
    if isinstance(obj, (set, frozenset)):
        members = ((_KEY, i, member) for i, member in enumerate(_iterate(obj)))
        return _chain(members, _attribute_children(obj))
    if isinstance(obj, types.MethodType):
        return iter([(_MEMBER, "__self__", obj.__self__)])
    if isinstance(obj, functools.partial):
        parts = [(_MEMBER, "func", obj.func), (_MEMBER, "args", obj.args), (_MEMBER, "keywords", obj.keywords)]
        return _chain(parts, _attribute_children(obj))
    if _reduces_itself(type(obj)):
        return iter(())
    return _attribute_children(obj)


@functools.lru_cache(maxsize=1024)
def _copies_itself(cls: type) -> bool:
    """A class with its own ``__deepcopy__`` decides what deepcopy copies: it is not walked."""
    return _class_lookup(cls, "__deepcopy__") is not _MISSING


@functools.lru_cache(maxsize=1024)
def _reduces_itself(cls: type) -> bool:
    """Its own ``__reduce_ex__``/``__reduce__``: deepcopy copies what they return (a logger,
    for one, comes back as itself), so ``__dict__`` is not walked. A custom ``__getstate__`` is
    different: it usually returns ``__dict__`` minus a few entries, so ``__dict__`` is walked."""
    return any(_class_lookup(cls, name) is not object.__dict__[name] for name in ("__reduce_ex__", "__reduce__"))


def _chain(*parts) -> Iterator[Child]:
    for part in parts:
        yield from part


def _iterate(obj: list | tuple | set | frozenset) -> Iterator[Any]:
    # The built-in iterator, so that an overridden __iter__ is not called.
    base = next(base for base in (list, tuple, set, frozenset) if isinstance(obj, base))
    return base.__iter__(obj)


def _dict_children(d: dict) -> Iterator[Child]:
    for i, (key, value) in enumerate(dict.items(d)):
        yield _DICT_KEY, i, key
        yield _VALUE, (i, key), value


def _sequence_children(seq) -> Iterator[Child]:
    fields = getattr(type(seq), "_fields", None) if isinstance(seq, tuple) else None
    for i, item in enumerate(_iterate(seq)):
        if fields and i < len(fields):
            yield _FIELD, (i, fields[i]), item
        else:
            yield _INDEX, i, item


def _module_children(module: nn.Module) -> Iterator[Child]:
    kinds = {"_parameters": _PARAM, "_buffers": _BUFFER, "_modules": _CHILD}
    for name, value in dict.items(_instance_dict(module)):
        kind = kinds.get(name)
        if kind is None:
            yield _ATTR, name, value
        else:
            yield from ((kind, entry, child) for entry, child in dict.items(value))
    yield from _slot_children(module)


def _attribute_children(obj: Any) -> Iterator[Child]:
    for name, value in dict.items(_instance_dict(obj)):
        yield _ATTR, name, value
    yield from _slot_children(obj)


def _instance_dict(obj: Any) -> dict:
    try:
        state = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return {}
    return state if isinstance(state, dict) else {}


def _slot_children(obj: Any) -> Iterator[Child]:
    for name, descriptor in _slot_descriptors(type(obj)):
        try:
            value = descriptor.__get__(obj, type(obj))
        except AttributeError:  # an empty slot
            continue
        yield _SLOT, name, value


@functools.lru_cache(maxsize=1024)
def _slot_descriptors(cls: type) -> tuple[tuple[str, Any], ...]:
    # A slot shadowed by a subclass attribute is skipped: deepcopy reads slots by getattr(),
    # so it copies whatever the shadowing attribute returns, never the slot itself.
    found = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            stored = _mangle(klass, name)
            descriptor = klass.__dict__.get(stored)
            if isinstance(descriptor, types.MemberDescriptorType) and _class_lookup(cls, stored) is descriptor:
                found.append((stored, descriptor))
    return tuple(found)


def _mangle(cls: type, name: str) -> str:
    if name.startswith("__") and not name.endswith("__"):
        return f"_{cls.__name__.lstrip('_')}{name}"
    return name


# --- paths -----------------------------------------------------------------------------------------

def _render_path(nodes: list, index: int) -> str:
    steps = []
    while index > 0:
        _, parent, kind, key = nodes[index]
        steps.append((nodes[parent][0], kind, key))
        index = parent
    path = ""
    for holder, kind, key in reversed(steps):
        path += _STEPS[kind](holder, key, path)
    return path


def _attr_step(holder: Any, name: str, path: str) -> str:
    if _is_plain_name(name) and not _is_data_descriptor(_class_lookup(type(holder), name)):
        return f".{name}"
    return f".__dict__[{name!r}]"


def _module_step(store: str):
    def step(module: nn.Module, name: str, path: str) -> str:
        if store == "_modules":
            indexed = _container_index(module, name)
            if indexed:
                return indexed
        if (
            _is_plain_name(name)
            and type(module).__getattr__ is nn.Module.__getattr__
            and name not in _instance_dict(module)
            and _class_lookup(type(module), name) is _MISSING
        ):
            return f".{name}"
        return f".{store}[{name!r}]"

    return step


def _container_index(module: nn.Module, name: str) -> str | None:
    getitem = getattr(type(module), "__getitem__", None)
    if getitem is nn.ModuleDict.__getitem__:
        return f"[{name!r}]"
    positional = getitem in (nn.Sequential.__getitem__, nn.ModuleList.__getitem__)
    if positional and name.isdecimal() and list(_instance_dict(module)["_modules"]).index(name) == int(name):
        return f"[{int(name)}]"
    return None


def _field_step(holder: tuple, key: tuple[int, str], path: str) -> str:
    i, name = key
    if _is_plain_name(name) and isinstance(_class_lookup(type(holder), name), _TUPLEGETTER):
        return f".{name}"
    return f"[{i}]"


def _value_step(holder: dict, key: tuple[int, Any], path: str) -> str:
    i, dict_key = key
    if _is_literal(dict_key):
        return f"[{dict_key!r}]"
    return f"[list(root{path})[{i}]]"


_STEPS = {
    _ATTR: _attr_step,
    _MEMBER: lambda holder, name, path: f".{name}",
    _SLOT: lambda holder, name, path: f".{name}",
    _PARAM: _module_step("_parameters"),
    _BUFFER: _module_step("_buffers"),
    _CHILD: _module_step("_modules"),
    _INDEX: lambda holder, i, path: f"[{i}]",
    _FIELD: _field_step,
    _VALUE: _value_step,
    # A dict key or set member: the built-in iterator's __reduce__ lists them in iteration order.
    _KEY: lambda holder, i, path: f".__iter__().__reduce__()[1][0][{i}]",
    _GRAD: lambda holder, key, path: ".grad",
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


def _class_lookup(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


def _is_data_descriptor(attribute: Any) -> bool:
    return hasattr(type(attribute), "__set__") or hasattr(type(attribute), "__delete__")


# --- causes and fixes ------------------------------------------------------------------------------

_ROOT_TENSOR = (
    "the object itself is a non-leaf tensor",
    "copy `t.detach().clone()` instead, or compute it under `torch.no_grad()` if no gradient is needed",
)
_NONLEAF_GRAD = (
    ".grad is non-leaf (backward with create_graph=True)",
    (
        "once the higher-order step is done, drop the gradient's graph: "
        "`x.grad = x.grad.detach()` (or `x.grad = None`)"
    ),
)
_KEYED = (
    "non-leaf tensor used as a dict key or set member",
    "key by something without a graph (a name, an index, or `t.detach()`)",
)
_CACHED = (
    "cached activation in a module attribute",
    (
        "store `output.detach()` where it is cached (in `forward` or the forward hook), "
        "or set the attribute to None before copying"
    ),
)
_BUFFER_ASSIGNED = (
    "buffer re-assigned to a non-leaf tensor",
    "update the buffer under `torch.no_grad()` or assign `value.detach()`",
)
_MODULE_CONTAINER = (
    "activations kept in a list/dict attribute of a module",
    "store `.detach()`ed tensors in it, or clear it before copying",
)
_DATASET = (
    "dataset holds a non-leaf tensor",
    "build the data under `torch.no_grad()` or store `tensor.detach()` in the dataset",
)
_OPTIMIZER = (
    "optimizer state holds a non-leaf tensor",
    "update optimizer state under `torch.no_grad()` (as `optimizer.step()` does)",
)
_TENSOR_ATTRIBUTE = (
    "non-leaf tensor stored as an attribute of a tensor",
    "store `value.detach()` on the tensor instead",
)
_OBJECT_ATTRIBUTE = (
    "non-leaf tensor in an object attribute",
    "store `tensor.detach()` unless you still need to backpropagate through it",
)
_CONTAINED = (
    "non-leaf tensor in a container",
    "put `tensor.detach()` in the container; keep the graph only where you call backward",
)


def _diagnosis(nodes: list, index: int) -> tuple[str, str]:
    _, parent, kind, key = nodes[index]
    if parent < 0:
        return _ROOT_TENSOR
    if kind == _GRAD:
        return _NONLEAF_GRAD
    if kind == _KEY:
        return _KEYED
    holder = nodes[parent][0]
    if isinstance(holder, nn.Module) and kind in (_ATTR, _SLOT):
        return _module_attribute_diagnosis(holder, key)
    if isinstance(holder, nn.Module) and kind == _BUFFER:
        return _BUFFER_ASSIGNED
    owner = _owner(nodes, parent)
    if isinstance(owner, Dataset):
        return _DATASET
    if isinstance(owner, nn.Module):
        return _MODULE_CONTAINER
    if isinstance(owner, Optimizer):
        return _OPTIMIZER
    if isinstance(owner, torch.Tensor):
        return _TENSOR_ATTRIBUTE
    return _CONTAINED if owner is None else _OBJECT_ATTRIBUTE


def _owner(nodes: list, index: int) -> Any:
    """The nearest enclosing object that is not a plain container (None: containers up to the root)."""
    while index >= 0 and isinstance(nodes[index][0], _CONTAINERS):
        index = nodes[index][1]
    return nodes[index][0] if index >= 0 else None


def _module_attribute_diagnosis(module: nn.Module, name: str) -> tuple[str, str]:
    for hook in _instance_dict(module).get("_forward_pre_hooks", {}).values():
        hook_state = _instance_dict(hook)
        if isinstance(hook, WeightNorm) and hook_state.get("name") == name:
            return (
                "old torch.nn.utils.weight_norm",
                (
                    "use `torch.nn.utils.parametrizations.weight_norm` (it deep-copies), or call "
                    f"`torch.nn.utils.remove_weight_norm(module, {name!r})` before copying"
                ),
            )
        if isinstance(hook, SpectralNorm) and hook_state.get("name") == name:
            return (
                "spectral_norm (old API) after a forward",
                (
                    "use `torch.nn.utils.parametrizations.spectral_norm`, or call "
                    f"`torch.nn.utils.remove_spectral_norm(module, {name!r})` before copying"
                ),
            )
        if isinstance(hook, BasePruningMethod) and hook_state.get("_tensor_name") == name:
            return (
                "torch.nn.utils.prune reparametrisation",
                (
                    f"make the pruning permanent with `torch.nn.utils.prune.remove(module, {name!r})` "
                    "before copying, or copy the `state_dict()` into a new instance"
                ),
            )
    return _CACHED
