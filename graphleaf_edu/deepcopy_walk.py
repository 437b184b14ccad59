"""What ``copy.deepcopy`` walks, found by deepcopy's own protocol, read-only and without recursion.

For each object, the same decision ``copy.deepcopy`` makes, in the same order:
``copy._deepcopy_dispatch`` (by exact type), then a class' ``__deepcopy__``, then
``copyreg.dispatch_table``, then ``__reduce_ex__(4)`` and the state it returns (``__getstate__``).
Where the answer is known without calling anything (built-in containers, tensors, modules, the
``__deepcopy__`` that ``torch.nn.utils.parametrize`` and ``torch.fx.GraphModule`` add, the reducers
of ``deque``, ``defaultdict``, ``OrderedDict``, ``SimpleNamespace``, sets and partials), the stored
values are read directly. Otherwise the walk calls ``__reduce_ex__(4)``, a ``copyreg`` reducer or
``__getstate__``, exactly as deepcopy does, and walks what they return. Properties and
``__getattr__`` are never called. A ``__deepcopy__`` nobody can look inside is recorded as opaque.
"""
from __future__ import annotations

import collections
import copy
import copyreg
import enum
import functools
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

# Edge kinds: how a child is reached from its parent (graphleaf_edu.paths renders each).
ATTR, MEMBER, SLOT, PARAM, BUFFER, CHILD = "attr", "member", "slot", "param", "buffer", "child"
INDEX, FIELD, VALUE, KEY, GRAD = "index", "field", "value", "key", "grad"
STATE, STATE_ITEM = "state", "state item"  # what a custom __getstate__ returns, and its entries
REDUCED = "reduced"  # the tuple __reduce_ex__(4) or a copyreg reducer returns (key: "reduce_ex"/"copyreg")
REDUCED_ITEM, REDUCED_KEY, REDUCED_VALUE = "reduced item", "reduced key", "reduced value"
DICT_KEY = "dict key"  # walked as KEY, after everything else

# Classes that copy.deepcopy returns as they are (through their own __deepcopy__ or __reduce__).
_ATOMIC_CLASSES = (
    type, enum.Enum, types.FunctionType, types.BuiltinFunctionType, types.ModuleType,
    torch.device, torch.dtype, torch.layout, torch.memory_format, torch.Size,
)
_MODULE_STORES = {"_parameters": PARAM, "_buffers": BUFFER, "_modules": CHILD}
_MISSING = object()
_POINTER = tuple.__itemsize__  # the size of one object reference
_NAMEDTUPLE_NEWARGS = collections.namedtuple("_Probe", "field").__getnewargs__.__code__


@dataclass
class Walk:
    """Every object deepcopy would reach from the root, as nodes ``(obj, parent, kind, key)``."""

    nodes: list = field(default_factory=list)
    nonleaf: list[int] = field(default_factory=list)  # node indices of the culprits
    opaque: list[tuple[int, str]] = field(default_factory=list)  # node index, why it was not looked inside
    keep_alive: list = field(default_factory=list)  # what reducers returned: ids must stay unique

    def leaves_with_nonleaf_grad(self) -> list[torch.Tensor]:
        """Leaves whose ``.grad`` is a non-leaf: ``Tensor.__deepcopy__`` copies ``.grad`` by calling
        its ``__deepcopy__`` directly (not through the memo), so copying needs them too."""
        return [
            obj for obj, *_ in self.nodes
            if isinstance(obj, torch.Tensor) and obj.is_leaf and plan_of(obj) is _tensor_plan
            and obj.grad is not None and not obj.grad.is_leaf
        ]


def walk(root: Any) -> Walk:
    """Breadth-first: each object once, on a shortest path; dict keys and set members last, so
    a path goes through a key only when nothing else reaches the object."""
    result = Walk(nodes=[(root, -1, "", None)])
    nodes, seen = result.nodes, {id(root)}
    deferred_keys: list = []
    index = 0
    while index < len(nodes) or deferred_keys:
        if index == len(nodes):
            for node in deferred_keys:
                if id(node[0]) not in seen:
                    seen.add(id(node[0]))
                    nodes.append(node)
            deferred_keys.clear()
            continue
        obj = nodes[index][0]
        if isinstance(obj, torch.Tensor) and not obj.is_leaf and plan_of(obj) is not _data_only_plan:
            result.nonleaf.append(index)
            index += 1
            continue
        try:
            children = plan_of(obj)(obj, result.keep_alive)
            for kind, key, child in children:
                if _skippable(child) or id(child) in seen:
                    continue
                if kind == DICT_KEY:
                    deferred_keys.append((child, index, KEY, key))
                else:
                    seen.add(id(child))
                    nodes.append((child, index, kind, key))
        except Opaque as reason:
            result.opaque.append((index, str(reason)))
        except Exception as error:  # noqa: BLE001 - deepcopy raises the same error here
            result.opaque.append((index, f"copy.deepcopy fails here: {type(error).__name__}: {error}"))
        index += 1
    return result


class Opaque(Exception):
    """Raised by a plan for an object whose copy nobody can look inside."""


def _skippable(child: Any) -> bool:
    cls = type(child)
    if cls in _EMPTY_SKIPPABLE:
        return not child
    return plan_of_class(cls) is _atomic_plan


def plan_of(obj: Any):
    plan = plan_of_class(type(obj))
    return plan(obj) if plan is _numpy_plan else plan


@functools.lru_cache(maxsize=2048)
def plan_of_class(cls: type):
    """How copy.deepcopy treats instances of ``cls``: the function that lists their children."""
    if cls is ReducedParts:
        return _reduced_parts_plan
    dispatched = copy._deepcopy_dispatch.get(cls)
    if dispatched is not None:
        return _DISPATCH_PLANS.get(cls, _atomic_plan)
    if issubclass(cls, _ATOMIC_CLASSES):
        return _atomic_plan
    own_deepcopy = class_lookup(cls, "__deepcopy__")
    if own_deepcopy is not _MISSING:
        return _deepcopy_plan(cls, own_deepcopy)
    if cls in copyreg.dispatch_table:
        return _copyreg_plan
    if _default_reduce(cls) and not _custom_newargs(cls) and not _state_beyond_dict_and_slots(cls):
        getstate = class_lookup(cls, "__getstate__")
        if issubclass(cls, nn.Module) and getstate is nn.Module.__getstate__:
            return _module_plan
        return _default_plan if getstate is object.__getstate__ else _getstate_plan
    for base, plan in _KNOWN_REDUCERS.items():
        if issubclass(cls, base) and _reducers_of(cls) == _reducers_of(base):
            return plan
    return _reduce_plan


def class_lookup(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


def _reducers_of(cls: type) -> tuple:
    return tuple(class_lookup(cls, name) for name in ("__reduce_ex__", "__reduce__", "__getstate__"))


def _default_reduce(cls: type) -> bool:
    return (
        class_lookup(cls, "__reduce_ex__") is object.__dict__["__reduce_ex__"]
        and class_lookup(cls, "__reduce__") is object.__dict__["__reduce__"]
    )


def _state_beyond_dict_and_slots(cls: type) -> bool:
    """C-level state the default reduce cannot save (a lock): ``object.__reduce_ex__`` refuses it
    with "cannot pickle ... object", the rule CPython's ``object.__getstate__`` applies. Such an
    object is reduced for real, so that the walk reports the refusal deepcopy will meet."""
    if issubclass(cls, (list, dict, tuple)) or class_lookup(cls, "__getnewargs__") is not _MISSING:
        return False
    expected = object.__basicsize__ + _POINTER * (
        bool(cls.__dictoffset__) + bool(cls.__weakrefoffset__) + len(copyreg._slotnames(cls))
    )
    return cls.__basicsize__ > expected


def _custom_newargs(cls: type) -> bool:
    """Arguments for ``__new__`` other than a tuple's own items (a namedtuple's are those)."""
    newargs = class_lookup(cls, "__getnewargs__")
    if class_lookup(cls, "__getnewargs_ex__") is not _MISSING:
        return True
    return newargs not in (_MISSING, tuple.__getnewargs__) and getattr(newargs, "__code__", None) is not _NAMEDTUPLE_NEWARGS


def _deepcopy_plan(cls: type, own_deepcopy: Any):
    if own_deepcopy is torch.Tensor.__deepcopy__:
        return _tensor_plan
    if issubclass(cls, torch.Tensor) and own_deepcopy in _DATA_ONLY_DEEPCOPIES:
        return _data_only_plan
    if own_deepcopy is enum.Enum.__dict__.get("__deepcopy__"):
        return _atomic_plan
    if _copies_whole_dict(own_deepcopy):
        return _whole_module_plan
    if _qualified_name(own_deepcopy) == ("torch.fx.graph", "Graph.__deepcopy__"):
        return _atomic_plan  # nodes are rebuilt; their meta is copied shallowly, so nothing raises
    if cls.__module__ == "numpy" and cls.__name__ == "ndarray":
        return _numpy_plan
    if cls.__module__ == "numpy" and issubclass(cls, (int, float, complex, bool, str, bytes)):
        return _atomic_plan  # numpy scalars
    return _opaque_plan


def _qualified_name(function: Any) -> tuple[str | None, str | None]:
    return getattr(function, "__module__", None), getattr(function, "__qualname__", None)


def _copies_whole_dict(function: Any) -> bool:
    """The ``__deepcopy__`` of parametrized modules and of ``torch.fx.GraphModule``: both
    deep-copy the module's whole ``__dict__`` (its slots too)."""
    return _qualified_name(function) in {
        ("torch.nn.utils.parametrize", "_inject_new_class.<locals>.default_deepcopy"),
        ("torch.fx.graph_module", "GraphModule.__deepcopy__"),
    }


_DATA_ONLY_DEEPCOPIES = {
    nn.Parameter.__deepcopy__,  # copies .data only: no .grad, no __dict__, never raises
    nn.parameter.UninitializedTensorMixin.__dict__.get("__deepcopy__"),
} - {None}


# --- plans: each lists (kind, key, child) for one object ------------------------------------------

Children = Iterator[tuple[str, Any, Any]]


def _atomic_plan(obj: Any, keep_alive: list) -> Children:
    return iter(())


def _opaque_plan(obj: Any, keep_alive: list) -> Children:
    raise Opaque("copies itself (its own __deepcopy__): cannot look inside")


def _numpy_plan(array: Any):
    # Only an object array can hold Python objects; ndarray.__deepcopy__ copies those.
    return _opaque_plan if array.dtype.hasobject else _atomic_plan


def _data_only_plan(obj: Any, keep_alive: list) -> Children:
    return iter(())


def _tensor_plan(t: torch.Tensor, keep_alive: list) -> Children:
    grad = t.grad
    if grad is None and type(t) is torch.Tensor and not instance_dict(t):
        return iter(())  # the common case, kept cheap
    grad_child = [] if grad is None else [(GRAD, None, grad)]
    return _chain(grad_child, _slot_children(t), _attribute_children(t))


def _list_plan(items: list, keep_alive: list) -> Children:
    return ((INDEX, i, item) for i, item in enumerate(list.__iter__(items)))


def _tuple_plan(items: tuple, keep_alive: list) -> Children:
    return ((INDEX, i, item) for i, item in enumerate(tuple.__iter__(items)))


def _dict_plan(mapping: dict, keep_alive: list) -> Children:
    for i, (key, value) in enumerate(dict.items(mapping)):
        yield DICT_KEY, i, key
        yield VALUE, (i, key), value


def _method_plan(method: types.MethodType, keep_alive: list) -> Children:
    return iter([(MEMBER, "__self__", method.__self__)])


def _module_plan(module: nn.Module, keep_alive: list) -> Children:
    """``Module.__getstate__``: its ``__dict__`` minus ``_compiled_call_impl``."""
    for name, value in dict.items(instance_dict(module)):
        if name != "_compiled_call_impl":
            yield from _module_entry(name, value)


def _whole_module_plan(module: nn.Module, keep_alive: list) -> Children:
    for name, value in dict.items(instance_dict(module)):
        yield from _module_entry(name, value)
    yield from _slot_children(module)


def _module_entry(name: str, value: Any) -> Children:
    kind = _MODULE_STORES.get(name)
    if kind is None or type(value) not in (dict, collections.OrderedDict):
        yield ATTR, name, value
    else:
        yield from ((kind, entry, child) for entry, child in dict.items(value))


def _default_plan(obj: Any, keep_alive: list) -> Children:
    """``object.__reduce_ex__(4)`` with the default ``__getstate__``: the ``__dict__``, the slots,
    the items of a list or dict subclass, the fields of a tuple subclass."""
    parts = [_attribute_children(obj), _slot_children(obj)]
    if isinstance(obj, tuple):
        parts.insert(0, _sequence_children(obj))
    elif isinstance(obj, list):
        parts.append(_sequence_children(obj))
    elif isinstance(obj, dict):
        parts.append(_dict_plan(obj, keep_alive))
    return _chain(*parts)


def _getstate_plan(obj: Any, keep_alive: list) -> Children:
    """A custom ``__getstate__``: what it returns is what deepcopy copies. Entries that are the
    very objects stored on the instance keep their attribute path."""
    state = type(obj).__getstate__(obj)
    keep_alive.append(state)
    stored = instance_dict(obj)
    parts = []
    if isinstance(obj, tuple):
        parts.append(_sequence_children(obj))
    if type(state) is dict:
        parts.append(_state_entries(obj, state, stored))
    elif state is not None:
        parts.append([(STATE, None, state)])
    if isinstance(obj, list):
        parts.append(_sequence_children(obj))
    elif isinstance(obj, dict):
        parts.append(_dict_plan(obj, keep_alive))
    return _chain(*parts)


def _state_entries(obj: Any, state: dict, stored: dict) -> Children:
    module = isinstance(obj, nn.Module)
    for name, value in state.items():
        if stored.get(name, _MISSING) is value:
            yield from _module_entry(name, value) if module else [(ATTR, name, value)]
        else:
            yield STATE_ITEM, name, value


def _reduce_plan(obj: Any, keep_alive: list) -> Children:
    return _reduced_children(obj, "reduce_ex", obj.__reduce_ex__(4), keep_alive)


def _copyreg_plan(obj: Any, keep_alive: list) -> Children:
    return _reduced_children(obj, "copyreg", copyreg.dispatch_table[type(obj)](obj), keep_alive)


def _reduced_children(obj: Any, how: str, reduced: Any, keep_alive: list) -> Children:
    """What ``copy._reconstruct`` deep-copies from a reduce value: its args, state, list items and
    dict items (the callable and a state setter are kept as they are)."""
    if isinstance(reduced, str):
        return iter(())  # deepcopy returns the object itself
    parts = list(reduced) + [None] * (6 - len(reduced))
    listitems = None if parts[3] is None else list(parts[3])
    dictitems = None if parts[4] is None else list(parts[4])
    walked = ReducedParts((parts[1], parts[2], listitems, dictitems))
    keep_alive.append((reduced, walked))
    return iter([(REDUCED, how, walked)])


class ReducedParts(tuple):
    """``(args, state, listitems, dictitems)`` of one reduce value: a node of its own."""


def _reduced_parts_plan(walked: ReducedParts, keep_alive: list) -> Children:
    args, state, listitems, dictitems = walked
    for i, arg in enumerate(args or ()):
        yield REDUCED_ITEM, (1, i), arg
    if state is not None:
        yield REDUCED_ITEM, (2, None), state
    for i, item in enumerate(listitems or ()):
        yield REDUCED_ITEM, (3, i), item
    for i, (key, value) in enumerate(dictitems or ()):
        yield REDUCED_KEY, i, key
        yield REDUCED_VALUE, i, value


def _set_plan(members: set | frozenset, keep_alive: list) -> Children:
    iterate = set.__iter__ if isinstance(members, set) else frozenset.__iter__
    return _chain(((KEY, i, member) for i, member in enumerate(iterate(members))), _attribute_children(members))


def _ordered_dict_plan(mapping: dict, keep_alive: list) -> Children:
    return _chain(_dict_plan(mapping, keep_alive), _attribute_children(mapping))


def _defaultdict_plan(mapping: collections.defaultdict, keep_alive: list) -> Children:
    factory = [(MEMBER, "default_factory", mapping.default_factory)]
    return _chain(factory, _dict_plan(mapping, keep_alive), _attribute_children(mapping))


def _deque_plan(items: collections.deque, keep_alive: list) -> Children:
    return _chain(((INDEX, i, item) for i, item in enumerate(collections.deque.__iter__(items))),
                  _attribute_children(items))


def _namespace_plan(namespace: types.SimpleNamespace, keep_alive: list) -> Children:
    return _attribute_children(namespace)


def _partial_plan(partial: functools.partial, keep_alive: list) -> Children:
    parts = [(MEMBER, "func", partial.func), (MEMBER, "args", partial.args), (MEMBER, "keywords", partial.keywords)]
    return _chain(parts, _attribute_children(partial))


_DISPATCH_PLANS = {list: _list_plan, tuple: _tuple_plan, dict: _dict_plan, types.MethodType: _method_plan}
_KNOWN_REDUCERS = {
    collections.defaultdict: _defaultdict_plan,  # before OrderedDict/dict: most specific first
    collections.OrderedDict: _ordered_dict_plan,
    collections.Counter: _ordered_dict_plan,
    collections.deque: _deque_plan,
    types.SimpleNamespace: _namespace_plan,
    functools.partial: _partial_plan,
    set: _set_plan,
    frozenset: _set_plan,
}
_EMPTY_SKIPPABLE = frozenset({dict, list, tuple, set, frozenset, collections.OrderedDict})


# --- reading stored values -------------------------------------------------------------------------

def _chain(*parts) -> Children:
    for part in parts:
        yield from part


def _sequence_children(seq: list | tuple) -> Children:
    fields = getattr(type(seq), "_fields", None) if isinstance(seq, tuple) else None
    base = tuple if isinstance(seq, tuple) else list
    for i, item in enumerate(base.__iter__(seq)):
        if fields and i < len(fields):
            yield FIELD, (i, fields[i]), item
        else:
            yield INDEX, i, item


def _attribute_children(obj: Any) -> Children:
    return ((ATTR, name, value) for name, value in dict.items(instance_dict(obj)))


def instance_dict(obj: Any) -> dict:
    try:
        state = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return {}
    return state if isinstance(state, dict) else {}


def _slot_children(obj: Any) -> Children:
    for name, descriptor in _slot_descriptors(type(obj)):
        try:
            value = descriptor.__get__(obj, type(obj))
        except AttributeError:  # an empty slot
            continue
        yield SLOT, name, value


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
            if isinstance(descriptor, types.MemberDescriptorType) and class_lookup(cls, stored) is descriptor:
                found.append((stored, descriptor))
    return tuple(found)


def _mangle(cls: type, name: str) -> str:
    if name.startswith("__") and not name.endswith("__"):
        return f"_{cls.__name__.lstrip('_')}{name}"
    return name
