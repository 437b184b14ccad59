"""What ``copy.deepcopy`` walks, found by deepcopy's own protocol, read-only and without recursion.

For each object, the same decision ``copy.deepcopy`` makes, in the same order:
``copy._deepcopy_dispatch`` (by exact type), then a class' ``__deepcopy__``, then
``copyreg.dispatch_table``, then ``__reduce_ex__(4)`` and the state it returns (``__getstate__``).
Where the answer is known without calling anything (built-in containers, tensors, modules, the
``__deepcopy__`` that ``torch.nn.utils.parametrize`` and ``torch.fx.GraphModule`` add, the known
reducers of ``graphleaf_edu.deepcopy_reducers``), the stored values are read directly
(``graphleaf_edu.stored_values``). Otherwise the walk calls ``__reduce_ex__(4)``, a ``copyreg``
reducer or ``__getstate__``, exactly as deepcopy does, and walks what they return. Properties and
``__getattr__`` are never called. A ``__deepcopy__`` nobody can look inside (a class', or one set on
the instance, which deepcopy's ``getattr`` finds first) is recorded as opaque; an object deepcopy
cannot copy at all (its reducer raises) as uncopyable. A non-leaf tensor is a culprit, and what it
holds (``.grad`` when retained, slots, attributes) is walked too: ``safe_deepcopy`` copies those onto
its detached copy. A non-leaf of a subclass whose ``__torch_function__`` may implement
``Tensor.__deepcopy__`` is copied once, alone, to tell whether it is a culprit.

``walk(root, rules=SEND)`` follows what torch.multiprocessing's ``ForkingPickler`` sends instead
(queues, a spawned process' arguments, a DataLoader's dataset): its registered reducers first, so a
tensor sends its data only (no ``.grad``, no ``__dict__``) and is refused when it requires grad and
is not a leaf; then pickle's own rules, which never call ``__deepcopy__``.
"""
from __future__ import annotations

import collections
import copy
import copyreg
import enum
import functools
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from multiprocessing.process import AuthenticationString  # type: ignore[attr-defined]
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch
import torch.multiprocessing
from torch import nn
from torch.multiprocessing.reductions import reduce_tensor

from graphleaf_edu.deepcopy_reducers import (
    KNOWN_REDUCERS,
    Plan,
    ReducedParts,
    copyreg_plan,
    custom_newargs,
    default_reduce,
    reduce_plan,
    reduced_parts_plan,
    reducers_of,
    state_beyond_dict_and_slots,
)
from graphleaf_edu.errors import GRAPH_LEAVES
from graphleaf_edu.i18n import say
from graphleaf_edu.stored_values import (
    ATTR,
    BUFFER,
    CHILD,
    DICT_KEY,
    GRAD,
    KEY,
    MEMBER,
    MISSING,
    PARAM,
    STATE,
    STATE_ITEM,
    Children,
    Node,
    attribute_children,
    chain,
    class_lookup,
    dict_children,
    holds_cleared_caches,
    instance_dict,
    sequence_children,
    slot_children,
    tensor_attributes,
)

# Classes that copy.deepcopy returns as they are (through their own __deepcopy__ or __reduce__).
_ATOMIC_CLASSES = (
    type, enum.Enum, types.FunctionType, types.BuiltinFunctionType, types.ModuleType,
    torch.device, torch.dtype, torch.layout, torch.memory_format, torch.Size,
)
_MODULE_STORES = {"_parameters": PARAM, "_buffers": BUFFER, "_modules": CHILD}
DEEPCOPY, SEND = "deepcopy", "send"  # the rules a walk follows: copy.deepcopy's, or ForkingPickler's


@dataclass
class Walk:
    """Every object deepcopy would reach from the root, as nodes ``(obj, parent, kind, key)``."""

    nodes: list[Node] = field(default_factory=list)
    nonleaf: list[int] = field(default_factory=list)  # node indices of the culprits
    opaque: list[tuple[int, str]] = field(default_factory=list)  # node index, why it was not looked inside
    uncopyable: list[tuple[int, Exception]] = field(default_factory=list)  # node index, what deepcopy raises there
    # Leaves that safe_deepcopy copies itself, as Tensor.__deepcopy__ would but without what makes
    # that fail or write to them: a non-leaf .grad (Tensor.__deepcopy__ copies .grad by its own
    # __deepcopy__, not through the memo), or caches it would clear from them (a jagged tensor's sizes).
    leaves_to_copy: list[torch.Tensor] = field(default_factory=list)
    keep_alive: list[Any] = field(default_factory=list)  # what reducers returned: ids must stay unique
    rules: str = DEEPCOPY


def walk(root: Any, rules: str = DEEPCOPY) -> Walk:
    """Breadth-first: each object once, on a shortest path; dict keys and set members last, so
    a path goes through a key only when nothing else reaches the object. ``rules``: ``DEEPCOPY``
    or ``SEND`` (what torch.multiprocessing pickles)."""
    if rules not in (DEEPCOPY, SEND):
        raise ValueError(f"rules= takes {DEEPCOPY!r} or {SEND!r}, got {rules!r}")
    sending = rules == SEND
    result = Walk(nodes=[(root, -1, "", None)], rules=rules)
    nodes, seen = result.nodes, {id(root)}
    deferred_keys: list[Node] = []
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
        if sending:
            cls: type = type(obj)
            plan = sent_plan_of_class(cls)
            if plan is _sent_tensor_plan and obj.requires_grad and not obj.is_leaf:
                result.nonleaf.append(index)
        else:
            plan = _plan_noting_tensors(obj, index, result)
        try:
            children = plan(obj, result.keep_alive)
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
            result.uncopyable.append((index, error))
        index += 1
    return result


def _plan_noting_tensors(obj: Any, index: int, result: Walk) -> Plan:
    """The plan for ``obj``; for a tensor, what ``Tensor.__deepcopy__`` makes of it is noted in
    ``result`` on the way, and the plan lists what to walk in it.

    A non-leaf is a culprit, and its ``.grad``, slots and attributes are walked too:
    ``safe_deepcopy`` copies them onto its detached copy. Copied once, alone, to tell: a non-leaf
    of a subclass whose ``__torch_function__`` may implement ``Tensor.__deepcopy__`` (for a
    non-leaf, the default implementation refuses before it copies anything), and a leaf of a
    layout torch cannot copy (its refusal is then recorded where it is)."""
    plan = plan_of(obj)
    if plan not in _TENSOR_PLANS:
        return plan
    t: torch.Tensor = obj
    if (not t.is_leaf and plan is _torch_function_plan) or (t.is_leaf and storage_torch_cannot_copy(t)):
        try:
            copy.deepcopy(t, {})
        except Exception as error:  # noqa: BLE001 - what deepcopy raises is the verdict
            if t.is_leaf or GRAPH_LEAVES not in str(error):
                result.uncopyable.append((index, error))
                return _atomic_plan
        else:
            return _atomic_plan  # it copied, all it holds included
    if t.is_leaf:
        if plan is _tensor_plan and ((t.grad is not None and not t.grad.is_leaf) or holds_cleared_caches(t)):
            result.leaves_to_copy.append(t)
        return _tensor_plan
    result.nonleaf.append(index)
    return _tensor_plan


SPARSE_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


def storage_torch_cannot_copy(t: torch.Tensor) -> bool:
    """A layout ``Tensor.__deepcopy__`` cannot copy even as a leaf: sparse CSR/CSC/BSR/BSC, strided nested."""
    return t.layout in SPARSE_COMPRESSED or (t.is_nested and type(t) is torch.Tensor)


class Opaque(Exception):
    """Raised by a plan for an object whose copy nobody can look inside."""


def _skippable(child: Any) -> bool:
    cls: type = type(child)
    if cls in _EMPTY_SKIPPABLE:
        return not child
    return plan_of_class(cls) is _atomic_plan


def plan_of(obj: Any) -> Plan:
    """How copy.deepcopy treats ``obj``: by its class, unless the instance itself holds a
    ``__deepcopy__`` (deepcopy looks it up with ``getattr``, so the instance's comes first)."""
    cls: type = type(obj)
    plan = plan_of_class(cls)
    if plan not in _DISPATCHED and "__deepcopy__" in instance_dict(obj):
        return _instance_deepcopy_plan
    return plan


@functools.lru_cache(maxsize=2048)
def plan_of_class(cls: type) -> Plan:
    """How copy.deepcopy treats instances of ``cls``: the function that lists their children."""
    if cls is ReducedParts:
        return reduced_parts_plan
    dispatched = copy._deepcopy_dispatch.get(cls)  # type: ignore[attr-defined]
    if dispatched is not None:
        return _DISPATCH_PLANS.get(cls, _atomic_plan)
    if issubclass(cls, _ATOMIC_CLASSES):
        return _atomic_plan
    own_deepcopy = class_lookup(cls, "__deepcopy__")
    if own_deepcopy is not MISSING:
        return _deepcopy_plan(cls, own_deepcopy)
    return _reduced_plan_of_class(cls)


@functools.lru_cache(maxsize=2048)
def sent_plan_of_class(cls: type) -> Plan:
    """How ``ForkingPickler`` sends instances of ``cls``: its registered reducers (tensors,
    storages, bound methods), then pickle's rules (which ignore ``__deepcopy__``)."""
    reducer = ForkingPickler._extra_reducers.get(cls)  # type: ignore[attr-defined]
    if getattr(reducer, "__wrapped__", reducer) is reduce_tensor:  # also as python -m graphleaf_edu --keep-going wraps it
        return _sent_tensor_plan
    if reducer is not None:
        return {types.MethodType: _method_plan, functools.partial: KNOWN_REDUCERS[functools.partial]}.get(
            cls, _atomic_plan)  # storages, events, descriptors, sockets: handles, not Python objects
    if issubclass(cls, torch.Tensor):
        return _sent_subclass_plan
    if issubclass(cls, AuthenticationString):
        return _atomic_plan  # a process' authkey: Popen sends it while spawning, refused otherwise
    if cls is ReducedParts or cls in copy._deepcopy_dispatch or issubclass(cls, _ATOMIC_CLASSES):  # type: ignore[attr-defined]
        return plan_of_class(typing.cast(type, cls))
    return _reduced_plan_of_class(cls)


def _reduced_plan_of_class(cls: type) -> Plan:
    """What deepcopy does after ``__deepcopy__``, and pickle does for any object it has no rule for."""
    if cls in copyreg.dispatch_table:
        return copyreg_plan
    if default_reduce(cls) and not custom_newargs(cls) and not state_beyond_dict_and_slots(cls):
        getstate = class_lookup(cls, "__getstate__")
        if issubclass(cls, nn.Module) and getstate is nn.Module.__getstate__:
            return _module_plan
        return _default_plan if getstate is object.__getstate__ else _getstate_plan
    for base, plan in KNOWN_REDUCERS.items():
        if issubclass(cls, base) and reducers_of(cls) == reducers_of(base):
            return plan
    return reduce_plan


def _deepcopy_plan(cls: type, own_deepcopy: Any) -> Plan:
    if own_deepcopy is torch.Tensor.__deepcopy__:
        return _torch_function_plan if _own_torch_function(cls) else _tensor_plan
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


def _own_torch_function(cls: type) -> bool:
    """A ``__torch_function__`` that may handle ``Tensor.__deepcopy__`` itself (the default one,
    the disabled one and the nested tensor's hand it on to the default ``__deepcopy__``)."""
    handler = class_lookup(cls, "__torch_function__")
    return handler not in _HANDS_DEEPCOPY_ON and _qualified_name(getattr(handler, "__func__", handler)) != (
        "torch.nested._internal.nested_tensor", "NestedTensor.__torch_function__")


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
    nn.parameter.UninitializedTensorMixin.__dict__.get("__deepcopy__"),  # type: ignore[attr-defined]
} - {None}


# --- plans: each lists (kind, key, child) for one object ------------------------------------------

def _atomic_plan(obj: Any, keep_alive: list[Any]) -> Children:
    return iter(())


def _opaque_plan(obj: Any, keep_alive: list[Any]) -> Children:
    raise Opaque(say("copies itself (its own __deepcopy__): cannot look inside"))


def _instance_deepcopy_plan(obj: Any, keep_alive: list[Any]) -> Children:
    raise Opaque(say("copies itself (a __deepcopy__ set on the object itself): cannot look inside"))


def _numpy_plan(array: Any, keep_alive: list[Any]) -> Children:
    # Only an object array can hold Python objects; ndarray.__deepcopy__ copies those.
    return _opaque_plan(array, keep_alive) if array.dtype.hasobject else iter(())


def _data_only_plan(obj: Any, keep_alive: list[Any]) -> Children:
    return iter(())


def _sent_tensor_plan(t: torch.Tensor, keep_alive: list[Any]) -> Children:
    return iter(())  # torch.multiprocessing's reduce_tensor sends the storage and sizes only


def _sent_subclass_plan(t: torch.Tensor, keep_alive: list[Any]) -> Children:
    return chain(slot_children(t), attribute_children(t))  # Tensor.__reduce_ex__: data and state, no .grad


def _tensor_plan(t: torch.Tensor, keep_alive: list[Any]) -> Children:
    """What ``Tensor.__deepcopy__`` copies besides the data: ``.grad``, slots, ``__dict__``."""
    grad = t.grad if t.is_leaf or t.retains_grad else None  # a non-leaf's .grad warns unless retained
    state = tensor_attributes(t)
    if grad is None and type(t) is torch.Tensor and not state:
        return iter(())  # the common case, kept cheap
    grad_child = [] if grad is None else [(GRAD, None, grad)]
    return chain(grad_child, slot_children(t), ((ATTR, name, value) for name, value in dict.items(state)))


def _torch_function_plan(t: torch.Tensor, keep_alive: list[Any]) -> Children:
    """A subclass whose ``__torch_function__`` may copy it its own way (``_plan_noting_tensors``
    probes a non-leaf); a leaf's parts are walked as the default ``__deepcopy__`` copies them."""
    return _tensor_plan(t, keep_alive)


def _sequence_plan(items: list[Any] | tuple[Any, ...], keep_alive: list[Any]) -> Children:
    return sequence_children(items)


def _dict_plan(mapping: dict[Any, Any], keep_alive: list[Any]) -> Children:
    return dict_children(mapping)


def _method_plan(method: types.MethodType, keep_alive: list[Any]) -> Children:
    return iter([(MEMBER, "__self__", method.__self__)])


def _module_plan(module: nn.Module, keep_alive: list[Any]) -> Children:
    """``Module.__getstate__``: its ``__dict__`` minus ``_compiled_call_impl``."""
    for name, value in dict.items(instance_dict(module)):
        if name != "_compiled_call_impl":
            yield from _module_entry(name, value)


def _whole_module_plan(module: nn.Module, keep_alive: list[Any]) -> Children:
    for name, value in dict.items(instance_dict(module)):
        yield from _module_entry(name, value)
    yield from slot_children(module)


def _module_entry(name: str, value: Any) -> Children:
    kind = _MODULE_STORES.get(name)
    if kind is None or type(value) not in (dict, collections.OrderedDict):
        yield ATTR, name, value
    else:
        yield from ((kind, entry, child) for entry, child in dict.items(value))


def _default_plan(obj: Any, keep_alive: list[Any]) -> Children:
    """``object.__reduce_ex__(4)`` with the default ``__getstate__``: the ``__dict__``, the slots,
    the items of a list or dict subclass, the fields of a tuple subclass."""
    parts = [attribute_children(obj), slot_children(obj)]
    if isinstance(obj, tuple):
        parts.insert(0, sequence_children(obj))
    elif isinstance(obj, list):
        parts.append(sequence_children(obj))
    elif isinstance(obj, dict):
        parts.append(dict_children(obj))
    return chain(*parts)


def _getstate_plan(obj: Any, keep_alive: list[Any]) -> Children:
    """A custom ``__getstate__``: what it returns is what deepcopy copies. Entries that are the
    very objects stored on the instance keep their attribute path."""
    state = type(obj).__getstate__(obj)  # type: ignore[call-arg]
    keep_alive.append(state)
    stored = instance_dict(obj)
    parts: list[Iterable[tuple[str, Any, Any]]] = []
    if isinstance(obj, tuple):
        parts.append(sequence_children(obj))
    if type(state) is dict:
        parts.append(_state_entries(obj, state, stored))
    elif state is not None:
        parts.append([(STATE, None, state)])
    if isinstance(obj, list):
        parts.append(sequence_children(obj))
    elif isinstance(obj, dict):
        parts.append(dict_children(obj))
    return chain(*parts)


def _state_entries(obj: Any, state: dict[str, Any], stored: dict[str, Any]) -> Children:
    module = isinstance(obj, nn.Module)
    for name, value in state.items():
        if stored.get(name, MISSING) is value:
            yield from _module_entry(name, value) if module else [(ATTR, name, value)]
        else:
            yield STATE_ITEM, name, value


_DISPATCH_PLANS: dict[type, Plan] = {list: _sequence_plan, tuple: _sequence_plan, dict: _dict_plan, types.MethodType: _method_plan}
_DISPATCHED = frozenset({_atomic_plan, reduced_parts_plan, *_DISPATCH_PLANS.values()})  # chosen before getattr
_TENSOR_PLANS = frozenset({_tensor_plan, _torch_function_plan})
_HANDS_DEEPCOPY_ON = [torch.Tensor.__dict__["__torch_function__"], torch._C._disabled_torch_function_impl]
_EMPTY_SKIPPABLE = frozenset({dict, list, tuple, set, frozenset, collections.OrderedDict})
