"""Property tests: random nests of containers, parametrized modules, objects with their own
``__getstate__`` or ``copyreg`` reducer, deques and namespaces, around leaf and non-leaf tensors
(with aliases), checked against the real ``copy.deepcopy``."""
from __future__ import annotations

import collections
import copy
import copyreg
import dataclasses
import types
import warnings
from collections import namedtuple

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn
from torch_cases import tensor_pool

from graphleaf_edu.copying import DetachedTensorsWarning, safe_deepcopy
from graphleaf_edu.diagnose import find_nonleaf, resolve
from graphleaf_edu.errors import GRAPH_LEAVES

Pair = namedtuple("Pair", "left right")


@dataclasses.dataclass
class Box:
    content: object
    label: str = "box"


class Trimmed:
    """Its ``__getstate__`` leaves ``dropped`` out: deepcopy never reaches it."""

    def __init__(self, kept, dropped):
        self.kept, self.dropped = kept, dropped

    def __getstate__(self):
        return {"kept": self.kept, "dropped": None}


class Registered:
    """Copied through a ``copyreg`` reducer that keeps only ``kept``."""

    def __init__(self, kept, dropped):
        self.kept, self.dropped = kept, dropped


def _reduce_registered(obj):
    return (Registered, (obj.kept, None))


copyreg.pickle(Registered, _reduce_registered)


class Doubled(nn.Module):
    def forward(self, weight):
        return weight * 2


def parametrized(content):
    """A parametrized module (its injected ``__deepcopy__``) holding ``content`` as an attribute."""
    layer = nn.Linear(2, 2)
    nn.utils.parametrize.register_parametrization(layer, "weight", Doubled())
    layer.held = content
    return layer


POOL_SIZE = len(tensor_pool())

specs = st.recursive(
    st.integers(0, POOL_SIZE - 1) | st.sampled_from(["text", 2.5, None]),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(lambda items: ("tuple", items)),
        st.dictionaries(st.text(max_size=3) | st.integers(-2, 2), inner, max_size=3),
        st.tuples(inner, inner).map(lambda pair: ("pair", pair)),
        inner.map(lambda content: ("box", content)),
        inner.map(lambda content: ("module", content)),
        inner.map(lambda content: ("deque", content)),
        inner.map(lambda content: ("namespace", content)),
        st.tuples(inner, inner).map(lambda pair: ("trimmed", pair)),
        st.tuples(inner, inner).map(lambda pair: ("registered", pair)),
    ),
    max_leaves=12,
)


def build(spec, pool):
    if isinstance(spec, int):
        return pool[spec]
    if isinstance(spec, list):
        return [build(item, pool) for item in spec]
    if isinstance(spec, dict):
        return {key: build(value, pool) for key, value in spec.items()}
    if isinstance(spec, tuple):
        kind, body = spec
        if kind == "tuple":
            return tuple(build(item, pool) for item in body)
        if kind == "pair":
            return Pair(*(build(item, pool) for item in body))
        if kind in ("trimmed", "registered"):
            kept, dropped = (build(item, pool) for item in body)
            return (Trimmed if kind == "trimmed" else Registered)(kept, dropped)
        content = build(body, pool)
        if kind == "module":
            return parametrized(content)
        if kind == "deque":
            return collections.deque([content])
        if kind == "namespace":
            return types.SimpleNamespace(content=content)
        return Box(content)
    return spec


def tensors_of(obj) -> list[torch.Tensor]:
    """Distinct tensors (and plain tensors' grads) in obj, in first-visit order (test oracle)."""
    found, seen = [], set()
    stack = [obj]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            found.append(value)
            if value.is_leaf and value.grad is not None and type(value) is torch.Tensor:
                stack.append(value.grad)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple, collections.deque)):
            stack.extend(value)
        elif isinstance(value, (Trimmed, Registered)):
            stack.append(value.kept)  # what their protocol copies; .dropped is never reached
        elif isinstance(value, nn.Module):
            stack.extend([value.held, *value.parameters()])
        elif isinstance(value, (Box, types.SimpleNamespace)):
            stack.append(value.content)
    return found


def state(obj):
    """Everything that must not change in the original: structure, ids, grad_fns, values."""
    def shape_of(value):
        if isinstance(value, torch.Tensor):
            return ("tensor", id(value))
        if isinstance(value, dict):
            return ("dict", id(value), [(k, shape_of(v)) for k, v in value.items()])
        if isinstance(value, (list, tuple)):
            return (type(value).__name__, id(value), [shape_of(v) for v in value])
        if isinstance(value, collections.deque):
            return ("deque", id(value), [shape_of(v) for v in value])
        inner = inside(value)
        if inner is not None:
            return (type(value).__name__, id(value), [shape_of(v) for v in inner])
        return ("atom", value)

    tensors = [(id(t), t.grad_fn, t.grad if t.is_leaf else None, t.detach().clone()) for t in tensors_of(obj)]
    return shape_of(obj), tensors


def same_state(before, after) -> bool:
    (shape1, tensors1), (shape2, tensors2) = before, after
    return shape1 == shape2 and all(
        i1 == i2 and f1 is f2 and g1 is g2 and torch.equal(v1, v2)
        for (i1, f1, g1, v1), (i2, f2, g2, v2) in zip(tensors1, tensors2, strict=True)
    )


def pairs(original, duplicate):
    """(original tensor, its copy) for every tensor position, walking both in step."""
    if isinstance(original, torch.Tensor):
        yield original, duplicate
        if original.is_leaf and original.grad is not None and type(original) is torch.Tensor:
            yield original.grad, duplicate.grad
    elif isinstance(original, dict):
        for key in original:
            yield from pairs(original[key], duplicate[key])
    elif isinstance(original, (list, tuple, collections.deque)):
        for a, b in zip(original, duplicate, strict=True):
            yield from pairs(a, b)
    elif isinstance(original, (Trimmed, Registered)):
        yield from pairs(original.kept, duplicate.kept)
    elif isinstance(original, nn.Module):
        yield from pairs(original.held, duplicate.held)
    elif isinstance(original, (Box, types.SimpleNamespace)):
        yield from pairs(original.content, duplicate.content)


def inside(value):
    """The generated values an object of this file holds (None: not one of them)."""
    if isinstance(value, (Box, types.SimpleNamespace)):
        return [value.content]
    if isinstance(value, (Trimmed, Registered)):
        return [value.kept, value.dropped]
    if isinstance(value, nn.Module):
        return [value.held]
    return None


PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


@PROPERTY_SETTINGS
@given(specs)
def test_every_nonleaf_is_found_once_with_a_path_that_evaluates_to_it(spec):
    obj = build(spec, tensor_pool())
    findings = find_nonleaf(obj)
    expected = {id(t) for t in tensors_of(obj) if not t.is_leaf}
    assert sorted(id(f.tensor) for f in findings) == sorted(expected)
    for finding in findings:
        assert resolve(obj, finding.path) is finding.tensor
    assert findings.opaque == ()
    try:
        copy.deepcopy(obj)
        deepcopy_fails = False
    except RuntimeError as error:
        assert GRAPH_LEAVES in str(error)
        deepcopy_fails = True
    assert deepcopy_fails == bool(findings)


@PROPERTY_SETTINGS
@given(specs)
def test_safe_deepcopy_detaches_shares_nothing_keeps_aliases_and_touches_nothing(spec):
    obj = build(spec, tensor_pool())
    before = state(obj)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetachedTensorsWarning)
        duplicate = safe_deepcopy(obj)
    assert same_state(before, state(obj))

    copies = tensors_of(duplicate)
    assert all(t.grad_fn is None for t in copies)
    assert find_nonleaf(duplicate) == []
    original_storages = {t.untyped_storage().data_ptr() for t in tensors_of(obj)}
    assert original_storages.isdisjoint(t.untyped_storage().data_ptr() for t in copies)

    mapping: dict[int, torch.Tensor] = {}
    for original, twin in pairs(obj, duplicate):
        assert mapping.setdefault(id(original), twin) is twin  # one original -> one copy
        assert torch.equal(original.detach(), twin) and twin.dtype == original.dtype
        assert twin.requires_grad == (original.is_leaf and original.requires_grad)
    assert len({id(t) for t in mapping.values()}) == len(mapping)  # distinct originals stay distinct


class CopiesItself:
    """Its own ``__deepcopy__``, which no walk can look inside: find_nonleaf reports it as opaque."""

    def __init__(self, content):
        self.content = content

    def __deepcopy__(self, memo):
        duplicate = CopiesItself.__new__(CopiesItself)
        memo[id(self)] = duplicate
        duplicate.content = copy.deepcopy(self.content, memo)
        return duplicate


opaque_specs = st.lists(specs, min_size=1, max_size=3).flatmap(
    lambda parts: st.tuples(st.just(parts), st.lists(st.booleans(), min_size=len(parts), max_size=len(parts)))
)


def raises_inside_deepcopy(tensor: torch.Tensor) -> bool:
    """Whether Tensor.__deepcopy__ raises on this tensor, whatever the memo holds for its .grad."""
    if not tensor.is_leaf:
        return True
    grad = tensor.grad if type(tensor) is torch.Tensor else None
    return grad is not None and not grad.is_leaf


@PROPERTY_SETTINGS
@given(opaque_specs)
def test_safe_deepcopy_succeeds_exactly_when_every_culprit_is_reachable(spec):
    parts, hidden_flags = spec
    pool = tensor_pool()
    built = [build(part, pool) for part in parts]
    obj = [CopiesItself(value) if hidden else value for value, hidden in zip(built, hidden_flags, strict=True)]
    findings = find_nonleaf(obj)
    assert [o.path for o in findings.opaque] == [f"[{i}]" for i, hidden in enumerate(hidden_flags) if hidden]
    outside = {id(t) for value, hidden in zip(built, hidden_flags, strict=True) if not hidden for t in tensors_of(value)}
    inside = [t for value, hidden in zip(built, hidden_flags, strict=True) if hidden for t in tensors_of(value)]
    unreachable_culprit = any(raises_inside_deepcopy(t) and id(t) not in outside for t in inside)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetachedTensorsWarning)
        try:
            safe_deepcopy(obj)
            failed = False
        except RuntimeError as error:
            assert "cannot reach" in str(error) and "copies itself" in str(error)
            failed = True
    assert failed == unreachable_culprit
