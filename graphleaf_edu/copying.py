"""``safe_deepcopy``: ``copy.deepcopy`` that detaches non-leaf tensors instead of failing on them.

The original is only read. First ``graphleaf_edu.diagnose.scan`` walks it once (objects, not
bytes: cheap next to the copy) and names the non-leaf tensors; their detached copies go into
``copy.deepcopy``'s memo, and then one ``copy.deepcopy`` runs: it keeps every alias itself and
never reaches those tensors. Nothing of a failed attempt is ever reused, so the copy is exactly
what deepcopy makes, or an error is raised: a non-leaf the walk could not see (inside an object
whose own ``__deepcopy__`` it cannot look into) stops the copy with the paths of those objects.
"""
from __future__ import annotations

import copy
import warnings
from typing import Any, TypeVar

import torch

from graphleaf_edu import messages as M
from graphleaf_edu.diagnose import Scan, scan
from graphleaf_edu.errors import GRAPH_LEAVES
from graphleaf_edu.findings import Findings, OpaqueObject
from graphleaf_edu.i18n import say, say_n
from graphleaf_edu.paths import expression
from graphleaf_edu.stored_values import slot_children, tensor_attributes

T = TypeVar("T")

_LISTED_PATHS = 20

class DetachedTensorsWarning(UserWarning):
    """``safe_deepcopy`` replaced non-leaf tensors by detached copies; ``paths`` says where.

    Attributes:
        paths: the ``find_nonleaf`` path of each detached tensor.

    Example:
        >>> import warnings
        >>> state = {"y": torch.ones(2, requires_grad=True) * 2}
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     copied = gl.safe_deepcopy(state)
        >>> caught[0].message.paths
        ("['y']",)
    """

    def __init__(self, message: str, paths: tuple[str, ...] = ()):
        super().__init__(message)
        self.paths = tuple(paths)


def safe_deepcopy(obj: T, *, warn: bool = True) -> T:
    """A deep copy of ``obj`` in which every non-leaf tensor becomes ``t.detach().clone()``.

    Everything else is exactly what ``copy.deepcopy`` makes (aliases, devices, dtypes, Parameters,
    buffers, ``training``, a detached tensor's own attributes, slots and retained ``.grad``). ``obj``
    is never modified; if the copy fails, the original error propagates. With ``warn=True``, one
    ``DetachedTensorsWarning`` lists the paths (as in ``find_nonleaf``) of the tensors detached.

    Args:
        obj: what to copy: a tensor, a module, an optimizer, containers of these, any object.
        warn: warn with the paths of the detached tensors (``False``: copy silently).

    Returns:
        The copy, of the same type as ``obj``.

    Raises:
        TypeError: ``warn`` is not a bool; or ``obj`` holds something ``copy.deepcopy`` cannot
            copy at all (a generator, a lock): raised before anything is copied, naming each path
            (of deepcopy's own error type where that is a built-in one).
        RuntimeError: whatever ``copy.deepcopy`` raises for another reason, or the graph-leaves
            error when the non-leaf tensor is hidden where no walk can see it (then the message says so).

    Example:
        >>> model = torch.nn.Linear(2, 2)
        >>> model.cache = model(torch.ones(1, 2))
        >>> copied = gl.safe_deepcopy(model, warn=False)
        >>> copied.cache.grad_fn is None, model.cache.grad_fn is not None
        (True, True)
        >>> torch.equal(copied.cache, model.cache)
        True
    """
    if not isinstance(warn, bool):
        raise TypeError(say(M.BAD_WARN, warn=warn))
    scanned = scan(obj)
    findings = scanned.findings
    if findings.uncopyable:
        raise _cannot_copy(findings.uncopyable) from findings.uncopyable[0].error
    warning = _detached_warning(findings) if warn and findings else None
    try:
        duplicate = copy.deepcopy(obj, _detached_memo(scanned))
    except RuntimeError as error:
        if GRAPH_LEAVES not in str(error):
            raise
        hidden = "; ".join(o.line() for o in findings.opaque) or say(M.NOWHERE_NAMED)
        raise RuntimeError(say(M.HIDDEN_NONLEAF, hidden=hidden)) from error
    if warning:
        warnings.warn(warning, stacklevel=2)
    return duplicate


def _detached_memo(scanned: Scan) -> dict[int, Any]:
    """A memo for ``copy.deepcopy`` in which each found non-leaf tensor is already copied, detached,
    and so is each leaf ``Tensor.__deepcopy__`` would fail on or write to (``Walk.leaves_to_copy``).
    All twins go in first, then what they hold (``.grad``, slots, attributes) is copied through the
    same memo, so aliases among them are kept."""
    memo: dict[int, Any] = {}
    keep_alive = memo.setdefault(id(memo), [])  # ids in memo must not be reused meanwhile
    twins = []
    for finding in scanned.findings:
        tensor = finding.tensor
        twins.append((tensor, tensor.detach().clone()))  # a view's clone holds only its own elements
    for leaf in scanned.walk.leaves_to_copy:
        twins.append((leaf, copy.deepcopy(leaf.detach(), memo).requires_grad_(leaf.requires_grad)))
    for tensor, twin in twins:
        memo[id(tensor)] = twin
        keep_alive.append(tensor)
    for tensor, twin in twins:
        _copy_held(tensor, twin, memo)
    return memo


def _copy_held(tensor: torch.Tensor, twin: torch.Tensor, memo: dict[int, Any]) -> None:
    """What ``Tensor.__deepcopy__`` copies besides the data: ``.grad``, slots, ``__dict__``."""
    if tensor.is_leaf or tensor.retains_grad:
        twin.grad = copy.deepcopy(tensor.grad, memo)
    for _, name, value in slot_children(tensor):
        setattr(twin, name, copy.deepcopy(value, memo))
    state = tensor_attributes(tensor)
    if state:
        twin.__dict__ = copy.deepcopy(state, memo)


def _cannot_copy(uncopyable: tuple[OpaqueObject, ...]) -> Exception:
    """The error for what deepcopy cannot copy at all, naming each path: of the type deepcopy
    raises where that is a built-in error (a TypeError, mostly), else a TypeError."""
    message = say(M.CANNOT_COPY, where="; ".join(o.line() for o in uncopyable))
    raised = uncopyable[0].error
    if raised is not None and type(raised).__module__ == "builtins":
        return type(raised)(message)
    return TypeError(message)


def _detached_warning(findings: Findings) -> DetachedTensorsWarning:
    paths = tuple(finding.path for finding in findings)
    listed = ", ".join(expression(path) for path in paths[:_LISTED_PATHS])
    if len(paths) > _LISTED_PATHS:
        listed += say(M.MORE_PATHS, more=len(paths) - _LISTED_PATHS)
    message = say_n("safe_deepcopy detached {n} non-leaf tensor (their copies have no grad_fn): {listed}",
                    "safe_deepcopy detached {n} non-leaf tensors (their copies have no grad_fn): {listed}",
                    len(paths), listed=listed)
    return DetachedTensorsWarning(message, paths)
