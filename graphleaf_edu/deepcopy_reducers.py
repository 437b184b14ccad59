"""The children of objects that ``copy.deepcopy`` copies through a reducer, and whether a class' reduce is object's own.

Two cases: an object whose reducer the walk calls, as deepcopy does (``__reduce_ex__(4)``, a
``copyreg`` reducer), and walks what ``copy._reconstruct`` would copy of the reduce value; and the
standard types whose reducer is known (``defaultdict``, ``OrderedDict``, ``Counter``, ``deque``,
``SimpleNamespace``, ``partial``, sets), whose stored values are read directly instead.
"""
from __future__ import annotations

import collections
import copyreg
import functools
import types
from collections.abc import Callable
from typing import Any

from graphleaf_edu.stored_values import (
    INDEX,
    KEY,
    MEMBER,
    MISSING,
    REDUCED,
    REDUCED_ITEM,
    REDUCED_KEY,
    REDUCED_VALUE,
    Children,
    attribute_children,
    chain,
    class_lookup,
    dict_children,
)

Plan = Callable[[Any, list[Any]], Children]  # lists the children of one object; keeps alive what it makes
_POINTER = tuple.__itemsize__  # the size of one object reference
_NAMEDTUPLE_NEWARGS = collections.namedtuple("_Probe", "field").__dict__["__getnewargs__"].__code__
_TUPLE_NEWARGS = tuple.__dict__["__getnewargs__"]


class ReducedParts(tuple[Any, ...]):
    """``(args, state, listitems, dictitems)`` of one reduce value: a node of its own."""


def reduce_plan(obj: Any, keep_alive: list[Any]) -> Children:
    return _reduced_children("reduce_ex", obj.__reduce_ex__(4), keep_alive)


def copyreg_plan(obj: Any, keep_alive: list[Any]) -> Children:
    return _reduced_children("copyreg", copyreg.dispatch_table[type(obj)](obj), keep_alive)


def _reduced_children(how: str, reduced: Any, keep_alive: list[Any]) -> Children:
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


def reduced_parts_plan(walked: ReducedParts, keep_alive: list[Any]) -> Children:
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


def _set_plan(members: set[Any] | frozenset[Any], keep_alive: list[Any]) -> Children:
    iterate = set.__iter__ if isinstance(members, set) else frozenset.__iter__
    members_children = ((KEY, i, member) for i, member in enumerate(iterate(members)))  # type: ignore[arg-type]
    return chain(members_children, attribute_children(members))


def _ordered_dict_plan(mapping: dict[Any, Any], keep_alive: list[Any]) -> Children:
    return chain(dict_children(mapping), attribute_children(mapping))


def _defaultdict_plan(mapping: collections.defaultdict[Any, Any], keep_alive: list[Any]) -> Children:
    factory = [(MEMBER, "default_factory", mapping.default_factory)]
    return chain(factory, dict_children(mapping), attribute_children(mapping))


def _deque_plan(items: collections.deque[Any], keep_alive: list[Any]) -> Children:
    return chain(((INDEX, i, item) for i, item in enumerate(collections.deque.__iter__(items))),
                 attribute_children(items))


def _namespace_plan(namespace: types.SimpleNamespace, keep_alive: list[Any]) -> Children:
    return attribute_children(namespace)


def _partial_plan(partial: functools.partial[Any], keep_alive: list[Any]) -> Children:
    parts = [(MEMBER, "func", partial.func), (MEMBER, "args", partial.args), (MEMBER, "keywords", partial.keywords)]
    return chain(parts, attribute_children(partial))


# Standard types whose reducer is known: the plan that reads their stored values instead.
KNOWN_REDUCERS: dict[type, Plan] = {
    collections.defaultdict: _defaultdict_plan,  # before OrderedDict/dict: most specific first
    collections.OrderedDict: _ordered_dict_plan,
    collections.Counter: _ordered_dict_plan,
    collections.deque: _deque_plan,
    types.SimpleNamespace: _namespace_plan,
    functools.partial: _partial_plan,
    set: _set_plan,
    frozenset: _set_plan,
}


# --- whether a class reduces as object does (then its stored values are read, not reduced) ---------

def reducers_of(cls: type) -> tuple[Any, ...]:
    return tuple(class_lookup(cls, name) for name in ("__reduce_ex__", "__reduce__", "__getstate__"))


def default_reduce(cls: type) -> bool:
    return (
        class_lookup(cls, "__reduce_ex__") is object.__dict__["__reduce_ex__"]
        and class_lookup(cls, "__reduce__") is object.__dict__["__reduce__"]
    )


def state_beyond_dict_and_slots(cls: type) -> bool:
    """C-level state the default reduce cannot save (a lock): ``object.__reduce_ex__`` refuses it
    with "cannot pickle ... object", the rule CPython's ``object.__getstate__`` applies. Such an
    object is reduced for real, so that the walk reports the refusal deepcopy will meet."""
    if issubclass(cls, (list, dict, tuple)) or class_lookup(cls, "__getnewargs__") is not MISSING:
        return False
    expected = object.__basicsize__ + _POINTER * (
        bool(cls.__dictoffset__) + bool(cls.__weakrefoffset__) + len(copyreg._slotnames(cls))  # type: ignore[attr-defined]
    )
    return cls.__basicsize__ > expected


def custom_newargs(cls: type) -> bool:
    """Arguments for ``__new__`` other than a tuple's own items (a namedtuple's are those)."""
    newargs = class_lookup(cls, "__getnewargs__")
    if class_lookup(cls, "__getnewargs_ex__") is not MISSING:
        return True
    return newargs not in (MISSING, _TUPLE_NEWARGS) and getattr(newargs, "__code__", None) is not _NAMEDTUPLE_NEWARGS
