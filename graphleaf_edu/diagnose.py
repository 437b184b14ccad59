"""Name every tensor that makes ``copy.deepcopy`` raise the graph-leaves error, by its path.

``find_nonleaf(obj)`` follows ``copy.deepcopy``'s own protocol (``graphleaf_edu.deepcopy_walk``):
containers, ``__dict__`` and slots, module parameters, buffers and submodules, what
``__reduce_ex__(4)``, ``copyreg`` reducers and ``__getstate__`` return, a plain tensor's ``.grad``.
It reads; it never mutates, and never calls a property or ``__getattr__``. An object whose own
``__deepcopy__`` nobody can look inside is listed in ``Findings.opaque`` by path, so that an
empty result never claims more than the walk saw (``graphleaf_edu.findings`` words the report).
``deepcopy_blocker(t)`` is the one verdict about a single tensor; ``resolve(root, path)`` follows a
finding's path.
"""
from __future__ import annotations

import copy
import html
from dataclasses import dataclass
from typing import Any

import torch

from graphleaf_edu import causes
from graphleaf_edu import deepcopy_walk as dw
from graphleaf_edu.errors import GRAPH_LEAVES
from graphleaf_edu.findings import (
    Finding,
    Findings,
    OpaqueObject,
    error_kind,
    grad_fn_name,
    shape_of,
)
from graphleaf_edu.i18n import say
from graphleaf_edu.paths import resolve

__all__ = [
    "Finding", "Findings", "OpaqueObject", "Scan", "TensorInfo",
    "deepcopy_blocker", "describe", "explain", "find_nonleaf", "resolve", "scan", "shape_of",
]


@dataclass(frozen=True)
class TensorInfo:
    """What autograd and ``copy.deepcopy`` think of one tensor, as ``describe`` returns it.

    Attributes:
        is_leaf: no ``grad_fn``: created by the user (or detached), not computed by autograd.
        requires_grad: autograd records operations on it.
        grad_fn: the name of the backward node that made it (``"MulBackward0"``), or ``None``.
        retains_grad: a non-leaf whose ``.grad`` is kept (``retain_grad()``).
        device: ``"cpu"``, ``"cuda"``, ...; dtype: ``"float32"``, ...
        shape: its sizes (``None`` for the ragged dimensions of a nested tensor).
        is_view: it shares another tensor's storage (a view of a leaf is a non-leaf).
        deepcopy_ok: ``copy.deepcopy`` of it works.
        deepcopy_blocker: why it does not (``deepcopy_blocker(t)``), else ``None``.

    Example:
        >>> info = gl.describe(torch.ones(2, requires_grad=True) * 2)
        >>> info.is_leaf, info.grad_fn, info.deepcopy_ok
        (False, 'MulBackward0', False)
    """

    is_leaf: bool
    requires_grad: bool
    grad_fn: str | None
    retains_grad: bool
    device: str
    dtype: str
    shape: tuple[int | None, ...]
    is_view: bool
    deepcopy_ok: bool
    deepcopy_blocker: str | None

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{name}</th><td><code>{html.escape(repr(value))}</code></td></tr>"
            for name, value in vars(self).items()
        )
        return f"<table>{rows}</table>"


def describe(t: torch.Tensor) -> TensorInfo:
    """Leaf or not, its ``grad_fn``, and whether ``copy.deepcopy(t)`` would work (and why not).

    Args:
        t: the tensor to describe.

    Returns:
        A ``TensorInfo`` (shown as a table in Jupyter).

    Raises:
        TypeError: ``t`` is not a tensor (for modules and containers, use ``find_nonleaf``).

    Example:
        >>> x = torch.ones(2, requires_grad=True)
        >>> gl.describe(x * 2)
        TensorInfo(is_leaf=False, requires_grad=True, grad_fn='MulBackward0', retains_grad=False, device='cpu', dtype='float32', shape=(2,), is_view=False, deepcopy_ok=False, deepcopy_blocker='non-leaf (grad_fn=MulBackward0)')
        >>> gl.describe(x).deepcopy_ok
        True
    """
    _require_tensor(t, "describe")
    blocker = deepcopy_blocker(t)
    return TensorInfo(
        is_leaf=t.is_leaf,
        requires_grad=t.requires_grad,
        grad_fn=grad_fn_name(t),
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

    Args:
        t: the tensor to judge.

    Returns:
        The reason in one line, or ``None`` when ``copy.deepcopy(t)`` works.

    Raises:
        TypeError: ``t`` is not a tensor.

    Example:
        >>> x = torch.ones(2, requires_grad=True)
        >>> gl.deepcopy_blocker(x * 2)
        'non-leaf (grad_fn=MulBackward0)'
        >>> gl.deepcopy_blocker(x) is None
        True
    """
    _require_tensor(t, "deepcopy_blocker")
    findings = scan(t).findings
    if findings and not findings[0].path:
        return _blocker(findings[0])  # the tensor itself
    plan = dw.plan_of(t)
    if plan is dw.plan_of_class(torch.nn.Parameter):
        return None  # nn.Parameter (and its subclasses) copy their data only
    if plan is not dw.plan_of_class(torch.Tensor):
        return _subclass_blocker(t, walkable=False)  # it copies itself: only a probe copy can tell
    unsupported = _unsupported_by_torch(t)
    if unsupported:
        return unsupported
    return _blocker(findings[0]) if findings else None


def _require_tensor(t: Any, function: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(say("{function}() takes one torch.Tensor, got {type_name}; for modules, containers and "
                            "other objects use find_nonleaf(obj)", function=function, type_name=type(t).__name__))


def _unsupported_by_torch(t: torch.Tensor) -> str | None:
    """Leaf tensors that ``Tensor.__deepcopy__`` itself cannot copy, whatever their graph."""
    if dw.storage_torch_cannot_copy(t):
        if t.is_nested:
            return say("strided nested tensor: Tensor.__deepcopy__ cannot copy it (NotImplementedError); "
                       "use layout=torch.jagged")
        layout = str(t.layout).removeprefix("torch.")
        return say("{layout} layout: Tensor.__deepcopy__ cannot copy it (NotImplementedError, no storage)",
                   layout=layout)
    if type(t) is torch.Tensor:
        return None
    return _subclass_blocker(t, walkable=True)


def _subclass_blocker(t: torch.Tensor, walkable: bool) -> str | None:
    """What the default ``__deepcopy__`` does with a subclass: it dispatches through the
    subclass' ``__torch_function__`` and checks the type of ``clone()``/``new_empty()``; a
    probe copy is the only faithful answer."""
    try:
        copy.deepcopy(t, {})
    except Exception as error:  # noqa: BLE001 - any error is the verdict
        message = str(error).split("\n", 1)[0]
        if GRAPH_LEAVES in message and walkable:
            return None  # its .grad or an attribute: the walk names it
        return say("{type_name} (tensor subclass): copy.deepcopy raises {error_type}: {message}",
                   type_name=type(t).__name__, error_type=type(error).__name__, message=message)
    return None


def find_nonleaf(obj: Any, error: str | BaseException = "deepcopy") -> Findings:
    """Every tensor reachable from ``obj`` that makes ``copy.deepcopy(obj)`` raise, by path.

    One finding per tensor object, on a shortest path, breadth-first:
    ``resolve(obj, finding.path) is finding.tensor`` (and ``eval(finding.where, {"root": obj})``
    where it is shallow enough to compile). Names that are not identifiers are indexed (``[0]``,
    ``['my-layer']``, ``[(1, 'a')]``); a dict key without a literal repr is named
    ``[list(root...)[i]]``, a set member or a tensor used as a key
    ``.__iter__().__reduce__()[1][0][i]``, and what a reducer returns ``.__reduce_ex__(4)[...]``.
    Objects the walk cannot look inside are in ``.opaque``, those deepcopy cannot copy at all (a
    generator, a lock) also in ``.uncopyable``. Walks what ``copy.deepcopy`` walks, by its own
    protocol (a ``__deepcopy__`` set on an instance included), and inside each non-leaf tensor what
    ``safe_deepcopy`` copies onto its detached copy; reads only, never modifies ``obj``. With
    ``error="multiprocessing"`` it walks what torch.multiprocessing sends instead (pickle's rules:
    a tensor's data only, not its ``.grad`` nor its attributes) and names the tensors it refuses.

    Args:
        obj: anything ``copy.deepcopy`` would be given: a tensor, a module, an optimizer, a
            dataset, containers of these.
        error: ``"deepcopy"``, ``"multiprocessing"``, or the exception raised (its message decides).

    Returns:
        ``Findings``: a list of ``Finding``, empty when ``copy.deepcopy(obj)`` meets no non-leaf tensor.

    Raises:
        ValueError: ``error`` is neither a known kind nor an exception; any object is walked.

    Example:
        >>> model = torch.nn.Linear(2, 2)
        >>> model.cache = model(torch.ones(1, 2))
        >>> gl.find_nonleaf(model)
        Findings([
            Finding(path='.cache', grad_fn='AddmmBackward0', shape=(1, 2), cause='cached activation in a module attribute'),
        ])
        >>> gl.find_nonleaf(torch.nn.Linear(2, 2))
        Findings([])
    """
    return scan(obj, error).findings


def explain(obj: Any, error: str | BaseException = "deepcopy") -> None:
    """Print what breaks ``copy.deepcopy(obj)`` (or, with ``error="multiprocessing"``, sending it
    through torch.multiprocessing), where, and how to fix it; or that nothing does.

    Args:
        obj: what was being copied or sent.
        error: ``"deepcopy"``, ``"multiprocessing"``, or the exception raised (its message decides).

    Returns:
        None; the report is printed (``find_nonleaf(obj).report()`` returns it as text).

    Raises:
        ValueError: ``error`` is neither a known kind nor an exception.

    Example:
        >>> model = torch.nn.Linear(2, 2)
        >>> model.cache = model(torch.ones(1, 2))
        >>> gl.explain(model)
        copy.deepcopy(root) fails for this Linear: 1 non-leaf tensor.
        <BLANKLINE>
        1. root.cache  (AddmmBackward0, shape (1, 2), cpu)
           cause: cached activation in a module attribute
           fix:   store `output.detach()` where it is cached (in `forward` or the forward hook), or set the attribute to None before copying
        <BLANKLINE>
        graphleaf_edu.safe_deepcopy(root) copies it anyway, with these tensors detached.
    """
    find_nonleaf(obj, error).explain(error)


def _blocker(finding: Finding) -> str:
    if finding.path:
        return say("{path} is non-leaf (grad_fn={grad_fn})", path=finding.path, grad_fn=finding.grad_fn)
    return say("non-leaf (grad_fn={grad_fn})", grad_fn=finding.grad_fn)


@dataclass(frozen=True)
class Scan:
    """One walk of what ``copy.deepcopy`` reaches from an object, and what it found there.

    Attributes:
        walk: every object deepcopy would reach, as nodes (``graphleaf_edu.deepcopy_walk.Walk``).
        findings: the report of that walk (``find_nonleaf`` returns it).
    """

    walk: dw.Walk
    findings: Findings


def scan(obj: Any, error: str | BaseException = "deepcopy") -> Scan:
    """Walk ``obj`` once as ``copy.deepcopy`` would, and name what the walk found.

    ``find_nonleaf(obj)`` is ``scan(obj).findings``; ``safe_deepcopy`` also needs the walk itself.
    With ``error="multiprocessing"`` the walk follows what torch.multiprocessing sends instead.

    Args:
        obj: anything ``copy.deepcopy`` would be given.
        error: ``"deepcopy"``, ``"multiprocessing"``, or the exception raised (its message decides).

    Returns:
        A ``Scan``: the walk and its ``Findings``.

    Raises:
        ValueError: ``error`` is neither a known kind nor an exception; any object is walked.

    Example:
        >>> scanned = gl.diagnose.scan({"y": torch.ones(2, requires_grad=True) * 2})
        >>> [f.path for f in scanned.findings], len(scanned.walk.nodes)
        (["['y']"], 2)
    """
    walked = dw.walk(obj, dw.SEND if error_kind(error) == "multiprocessing" else dw.DEEPCOPY)
    judged = [(index, causes.diagnose(walked.nodes, index)) for index in walked.nonleaf]
    unseen: list[tuple[int, str | Exception]] = sorted([*walked.opaque, *walked.uncopyable], key=lambda e: e[0])
    return Scan(walked, Findings.of_walk(walked.nodes, judged, unseen, subject=type(obj).__name__))
