"""Property tests: random nests of containers, parametrized modules, objects with their own
``__getstate__`` or ``copyreg`` reducer, deques and namespaces, tensor subclasses with slots,
tensors (leaf or not) carrying attributes, objects with an instance-level ``__deepcopy__`` and
generators, around leaf and non-leaf tensors (with aliases), checked against the real ``copy.deepcopy``."""
from __future__ import annotations

import collections
import copy
import copyreg
import dataclasses
import functools
import types
import warnings
from collections import namedtuple

import pytest
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


class Slotted(torch.Tensor):
    """A tensor subclass with a slot, which ``copy.deepcopy`` copies (``new_empty`` keeps the class)."""

    __slots__ = ("tag",)

    def new_empty(self, *args, **kwargs):
        return super().new_empty(*args, **kwargs).as_subclass(type(self))


def slotted(tensor: torch.Tensor, content) -> Slotted:
    """``tensor`` as a ``Slotted`` (a non-leaf where ``tensor`` requires grad) holding ``content``."""
    result = tensor.as_subclass(Slotted)
    result.tag = content
    return result


def tagged(tensor: torch.Tensor, content) -> torch.Tensor:
    """A new tensor computed from ``tensor`` (a non-leaf where it requires grad) carrying ``content``."""
    result = tensor * 1
    result.extra = content
    return result


def steps():
    yield 1


POOL_SIZE = len(tensor_pool())

specs = st.recursive(
    st.integers(0, POOL_SIZE - 1) | st.sampled_from(["text", 2.5, None]) | st.just("generator"),
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
        st.tuples(st.integers(0, POOL_SIZE - 1), inner).map(lambda pair: ("slotted", pair)),
        st.tuples(st.integers(0, POOL_SIZE - 1), inner).map(lambda pair: ("tagged", pair)),
    ),
    max_leaves=12,
)


def build(spec, pool):
    if spec == "generator":
        return steps()
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
        if kind in ("slotted", "tagged"):
            index, inner = body
            return (slotted if kind == "slotted" else tagged)(pool[index], build(inner, pool))
        content = build(body, pool)
        if kind == "module":
            return parametrized(content)
        if kind == "deque":
            return collections.deque([content])
        if kind == "namespace":
            return types.SimpleNamespace(content=content)
        return Box(content)
    return spec


def inside(value) -> list | None:
    """What copy.deepcopy copies of a value of this file, by its protocol (None: an atom)."""
    if isinstance(value, torch.Tensor):
        held = [value.grad] if value.is_leaf and type(value) is torch.Tensor and value.grad is not None else []
        slot = [value.tag] if isinstance(value, Slotted) and hasattr(value, "tag") else []
        return held + slot + list(vars(value).values())
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, (list, tuple, collections.deque)):
        return list(value)
    if isinstance(value, (Trimmed, Registered)):
        return [value.kept]  # what their protocol copies; .dropped is never reached
    if isinstance(value, nn.Module):
        return [value.held, *value.parameters()]
    if isinstance(value, (Box, types.SimpleNamespace)):
        return [value.content]
    return None


def reachable(obj) -> list:
    """Every distinct object deepcopy reaches from obj, in first-visit order (the tests' oracle)."""
    found, seen, stack = [], set(), [obj]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        found.append(value)
        stack.extend(reversed(inside(value) or []))
    return found


def tensors_of(obj) -> list[torch.Tensor]:
    return [value for value in reachable(obj) if isinstance(value, torch.Tensor)]


def generators_of(obj) -> list:
    return [value for value in reachable(obj) if isinstance(value, types.GeneratorType)]


def state(obj):
    """Everything that must not change in the original: structure, ids, grad_fns, values."""
    def shape_of(value):
        inner = inside(value)
        if inner is None or id(value) in on_the_way:
            return ("atom", id(value)) if isinstance(value, types.GeneratorType) else ("atom", value)
        on_the_way.add(id(value))
        return (type(value).__name__, id(value), [shape_of(v) for v in inner])

    on_the_way: set[int] = set()
    tensors = [(id(t), t.grad_fn, t.grad if t.is_leaf else None, t.detach().clone()) for t in tensors_of(obj)]
    return shape_of(obj), tensors


def same_state(before, after) -> bool:
    (shape1, tensors1), (shape2, tensors2) = before, after
    return shape1 == shape2 and all(
        i1 == i2 and f1 is f2 and g1 is g2 and torch.equal(v1, v2)
        for (i1, f1, g1, v1), (i2, f2, g2, v2) in zip(tensors1, tensors2, strict=True)
    )


def pairs(original, duplicate, seen: set[int] | None = None):
    """(original tensor, its copy) for every tensor position, walking both in step."""
    seen = set() if seen is None else seen
    if id(original) in seen:
        return
    seen.add(id(original))
    if isinstance(original, torch.Tensor):
        yield original, duplicate
        assert type(duplicate) is type(original)
        if isinstance(original, Slotted):
            assert hasattr(duplicate, "tag") == hasattr(original, "tag")
        assert sorted(vars(duplicate)) == sorted(vars(original))
    inner, twin_inner = inside(original), inside(duplicate)
    if inner is not None:
        for a, b in zip(inner, twin_inner, strict=True):
            yield from pairs(a, b, seen)


PROPERTY_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


def deepcopy_error(obj, memo=None) -> Exception | None:
    try:
        copy.deepcopy(obj, memo)
    except Exception as error:  # noqa: BLE001 - the error is the verdict
        return error
    return None


@PROPERTY_SETTINGS
@given(specs)
def test_every_nonleaf_is_found_once_with_a_path_that_evaluates_to_it(spec):
    obj = build(spec, tensor_pool())
    findings = find_nonleaf(obj)
    expected = {id(t) for t in tensors_of(obj) if not t.is_leaf}
    assert sorted(id(f.tensor) for f in findings) == sorted(expected)
    for finding in findings:
        assert resolve(obj, finding.path) is finding.tensor
    generators = generators_of(obj)
    assert sorted(id(resolve(obj, o.path)) for o in findings.uncopyable) == sorted(map(id, generators))
    assert all(o.blocks_copy for o in findings.opaque)  # nothing here copies itself
    error = deepcopy_error(obj)
    assert (error is None) == (not findings and not generators)
    if not generators:  # then a graph-leaves error exactly when a culprit is found
        assert error is None or (isinstance(error, RuntimeError) and GRAPH_LEAVES in str(error))
    # With each generator already in the memo (copied as None), deepcopy meets only the tensors:
    error = deepcopy_error(obj, {id(g): None for g in generators})
    assert bool(findings) == (isinstance(error, RuntimeError) and GRAPH_LEAVES in str(error))
    assert error is None or GRAPH_LEAVES in str(error)


@PROPERTY_SETTINGS
@given(specs)
def test_safe_deepcopy_detaches_shares_nothing_keeps_aliases_and_touches_nothing(spec):
    obj = build(spec, tensor_pool())
    before = state(obj)
    generators = generators_of(obj)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetachedTensorsWarning)
        if generators:
            with pytest.raises(TypeError, match="safe_deepcopy cannot copy this") as raised:
                safe_deepcopy(obj)
            assert "cannot pickle 'generator' object" in str(raised.value)
            assert same_state(before, state(obj))
            return
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


class Holder:
    """Copied by a ``__deepcopy__`` set on the instance, which ``copy.deepcopy`` finds with getattr."""

    def __init__(self, content):
        self.content = content
        self.__deepcopy__ = functools.partial(_copy_holder, self)


def _copy_holder(holder: Holder, memo):
    duplicate = Holder.__new__(Holder)
    memo[id(holder)] = duplicate
    duplicate.content = copy.deepcopy(holder.content, memo)
    return duplicate


HIDING = {"class": CopiesItself, "instance": Holder}
opaque_specs = st.lists(specs, min_size=1, max_size=3).flatmap(
    lambda parts: st.tuples(st.just(parts), st.lists(st.sampled_from([None, *HIDING]), min_size=len(parts),
                                                     max_size=len(parts)))
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
    parts, hiding = spec
    pool = tensor_pool()
    built = [build(part, pool) for part in parts]
    obj = [HIDING[how](value) if how else value for value, how in zip(built, hiding, strict=True)]
    findings = find_nonleaf(obj)
    assert [o.path for o in findings.opaque if not o.blocks_copy] == [f"[{i}]" for i, how in enumerate(hiding) if how]
    shown = [value for value, how in zip(built, hiding, strict=True) if not how]
    hidden = [value for value, how in zip(built, hiding, strict=True) if how]
    outside = {id(t) for value in shown for t in tensors_of(value)}
    unreachable_culprit = any(raises_inside_deepcopy(t) and id(t) not in outside
                              for value in hidden for t in tensors_of(value))
    shown_generator = any(generators_of(value) for value in shown)
    hidden_generator = any(generators_of(value) for value in hidden)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetachedTensorsWarning)
        try:
            safe_deepcopy(obj)
            failed = False
        except TypeError as error:
            assert shown_generator or hidden_generator
            assert ("safe_deepcopy cannot copy this" in str(error)) == shown_generator
            failed = True
        except RuntimeError as error:
            assert "cannot reach" in str(error) and "copies itself" in str(error)
            assert not shown_generator and unreachable_culprit
            failed = True
    assert failed == (unreachable_culprit or shown_generator or hidden_generator)
