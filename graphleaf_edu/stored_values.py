"""What an object stores, read without running any of its code: ``__dict__``, slots, items.

Each child comes as ``(kind, key, child)``: the edge kind says how the child is reached from its
parent (``graphleaf_edu.paths`` writes each kind as Python). Reading goes through ``object`` and the
built-in types' own methods, so no property, ``__getattr__`` or overridden ``__iter__`` runs.
"""
from __future__ import annotations

import functools
import types
from collections.abc import Iterable, Iterator
from typing import Any

# Edge kinds: how a child is reached from its parent.
ATTR, MEMBER, SLOT, PARAM, BUFFER, CHILD = "attr", "member", "slot", "param", "buffer", "child"
INDEX, FIELD, VALUE, KEY, GRAD = "index", "field", "value", "key", "grad"
STATE, STATE_ITEM = "state", "state item"  # what a custom __getstate__ returns, and its entries
REDUCED = "reduced"  # the tuple __reduce_ex__(4) or a copyreg reducer returns (key: "reduce_ex"/"copyreg")
REDUCED_ITEM, REDUCED_KEY, REDUCED_VALUE = "reduced item", "reduced key", "reduced value"
DICT_KEY = "dict key"  # walked as KEY, after everything else

Children = Iterator[tuple[str, Any, Any]]
Node = tuple[Any, int, str, Any]  # one object the walk reached: (obj, parent index, edge kind, key)
MISSING = object()  # what class_lookup returns for a name no class in the MRO defines


def class_lookup(cls: type, name: str) -> Any:
    """``name`` as the first class in ``cls.__mro__`` stores it (no descriptor is called), or ``MISSING``."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return MISSING


def instance_dict(obj: Any) -> dict[str, Any]:
    """``obj.__dict__`` read through ``object``, or ``{}`` where it has none."""
    try:
        state = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return {}
    return state if isinstance(state, dict) else {}


# What Tensor._clear_non_serializable_cached_data pops from a tensor's __dict__ before
# Tensor.__deepcopy__ copies it (a wrapper subclass' cached sizes, PyCapsules no copy can make).
_CLEARED_BEFORE_COPY = frozenset({
    "_sym_sizes_capsule", "_sym_sizes_capsule_len", "_sym_strides_capsule", "_sym_strides_capsule_len",
})


def tensor_attributes(t: Any) -> dict[str, Any]:
    """A tensor's ``__dict__`` as ``Tensor.__deepcopy__`` copies it: without the caches it clears first."""
    state = instance_dict(t)
    if _CLEARED_BEFORE_COPY.isdisjoint(state):
        return state
    return {name: value for name, value in state.items() if name not in _CLEARED_BEFORE_COPY}


def holds_cleared_caches(t: Any) -> bool:
    """Whether ``Tensor.__deepcopy__`` would clear caches from this tensor's ``__dict__`` (write to it)."""
    return not _CLEARED_BEFORE_COPY.isdisjoint(instance_dict(t))


def chain(*parts: Iterable[tuple[str, Any, Any]]) -> Children:
    for part in parts:
        yield from part


def attribute_children(obj: Any) -> Children:
    return ((ATTR, name, value) for name, value in dict.items(instance_dict(obj)))


def dict_children(mapping: dict[Any, Any]) -> Children:
    """Each key (walked after everything else), then its value."""
    for i, (key, value) in enumerate(dict.items(mapping)):
        yield DICT_KEY, i, key
        yield VALUE, (i, key), value


def sequence_children(seq: list[Any] | tuple[Any, ...]) -> Children:
    """The items of a list or tuple (subclass); a namedtuple's by field."""
    fields = getattr(type(seq), "_fields", None) if isinstance(seq, tuple) else None
    iterate = tuple.__iter__ if isinstance(seq, tuple) else list.__iter__
    for i, item in enumerate(iterate(seq)):  # type: ignore[arg-type]
        if fields and i < len(fields):
            yield FIELD, (i, fields[i]), item
        else:
            yield INDEX, i, item


def slot_children(obj: Any) -> Children:
    cls: type = type(obj)
    for name, descriptor in _slot_descriptors(cls):
        try:
            value = descriptor.__get__(obj, cls)
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
