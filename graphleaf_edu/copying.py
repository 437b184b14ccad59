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

from graphleaf_edu.diagnose import Scan, scan
from graphleaf_edu.errors import GRAPH_LEAVES
from graphleaf_edu.findings import Findings
from graphleaf_edu.paths import expression

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

    Everything else is exactly what ``copy.deepcopy`` makes (aliases, devices, dtypes,
    Parameters, buffers, ``training``, a detached tensor's own attributes). ``obj`` is never
    modified; if the copy fails, the original error propagates. With ``warn=True``, one
    ``DetachedTensorsWarning`` lists the paths (as in ``find_nonleaf``) of the tensors detached.

    Args:
        obj: what to copy: a tensor, a module, an optimizer, containers of these, any object.
        warn: warn with the paths of the detached tensors (``False``: copy silently).

    Returns:
        The copy, of the same type as ``obj``.

    Raises:
        TypeError: ``warn`` is not a bool.
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
        raise TypeError(f"safe_deepcopy(obj, warn=...) takes True or False, got {warn!r}")
    scanned = scan(obj)
    findings = scanned.findings
    try:
        duplicate = copy.deepcopy(obj, _detached_memo(scanned))
    except RuntimeError as error:
        if GRAPH_LEAVES not in str(error):
            raise
        hidden = "; ".join(o.line() for o in findings.opaque) or "nowhere the walk could name"
        raise RuntimeError(
            "copy.deepcopy met a non-leaf tensor that find_nonleaf cannot reach; it hides inside an "
            f"object that copies itself: {hidden}. Detach it where it is stored"
        ) from error
    if warn and findings:
        warnings.warn(_detached_warning(findings), stacklevel=2)
    return duplicate


def _detached_memo(scanned: Scan) -> dict[int, Any]:
    """A memo for ``copy.deepcopy`` holding detached copies of the found non-leaf tensors (and of
    the leaves that hold one as ``.grad``)."""
    memo: dict[int, Any] = {}
    keep_alive = memo.setdefault(id(memo), [])  # ids in memo must not be reused meanwhile
    for finding in scanned.findings:
        tensor = finding.tensor
        memo[id(tensor)] = tensor.detach().clone()  # a view's clone holds only its own elements
        keep_alive.append(tensor)
    for finding in scanned.findings:  # their attributes and .grad, through the same memo (aliases kept)
        _copy_tensor_extras(finding.tensor, memo[id(finding.tensor)], memo)
    for leaf in scanned.walk.leaves_with_nonleaf_grad:
        memo[id(leaf)] = _copy_leaf(leaf, memo)
        keep_alive.append(leaf)
    return memo


def _copy_tensor_extras(tensor: torch.Tensor, duplicate: torch.Tensor, memo: dict[int, Any]) -> None:
    # What Tensor.__deepcopy__ would also have copied: .grad (of a retain_grad() tensor) and __dict__.
    if tensor.retains_grad and tensor.grad is not None:
        duplicate.grad = copy.deepcopy(tensor.grad, memo)
    if tensor.__dict__:
        duplicate.__dict__.update(copy.deepcopy(tensor.__dict__, memo))


def _copy_leaf(leaf: torch.Tensor, memo: dict[int, Any]) -> torch.Tensor:
    # What Tensor.__deepcopy__ does, except that .grad goes through the memo (where its
    # detached copy already is) instead of its own __deepcopy__, which would raise.
    duplicate = copy.deepcopy(leaf.detach(), memo).requires_grad_(leaf.requires_grad)
    duplicate.grad = copy.deepcopy(leaf.grad, memo)
    duplicate.__dict__.update(copy.deepcopy(leaf.__dict__, memo))
    return duplicate


def _detached_warning(findings: Findings) -> DetachedTensorsWarning:
    paths = tuple(finding.path for finding in findings)
    listed = ", ".join(expression(path) for path in paths[:_LISTED_PATHS])
    if len(paths) > _LISTED_PATHS:
        listed += f", ... ({len(paths) - _LISTED_PATHS} more in the warning's .paths)"
    noun = "tensor" if len(paths) == 1 else "tensors"
    return DetachedTensorsWarning(
        f"safe_deepcopy detached {len(paths)} non-leaf {noun} (their copies have no grad_fn): {listed}",
        paths,
    )
