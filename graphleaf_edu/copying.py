"""``safe_deepcopy``: ``copy.deepcopy`` that detaches non-leaf tensors instead of failing on them.

The original is only read. A plain ``copy.deepcopy`` is tried first (nothing to detach: no
overhead). If it hits the graph-leaves error, ``find_nonleaf``'s walk names the culprits, their
detached copies go into ``copy.deepcopy``'s memo, and deepcopy runs again: it keeps every alias
itself, never reaches those tensors, and reuses the tensors the failed attempt had finished.
"""
from __future__ import annotations

import copy
import warnings
from typing import Any, TypeVar

import torch

from graphleaf_edu.diagnose import Findings, _scan
from graphleaf_edu.errors import GRAPH_LEAVES

T = TypeVar("T")

_LISTED_PATHS = 20


class DetachedTensorsWarning(UserWarning):
    """``safe_deepcopy`` replaced non-leaf tensors by detached copies; ``paths`` says where."""

    def __init__(self, message: str, paths: tuple[str, ...] = ()):
        super().__init__(message)
        self.paths = tuple(paths)


def safe_deepcopy(obj: T, *, warn: bool = True) -> T:
    """A deep copy of ``obj`` in which every non-leaf tensor becomes ``t.detach().clone()``.

    Everything else is exactly what ``copy.deepcopy`` makes (aliases, devices, dtypes,
    Parameters, buffers, ``training``). ``obj`` is never modified; if the copy fails, the
    original error propagates. With ``warn=True``, one ``DetachedTensorsWarning`` lists the
    paths (as in ``find_nonleaf``) of the tensors that were detached.
    """
    if not isinstance(warn, bool):
        raise TypeError(f"safe_deepcopy(obj, warn=...) takes True or False, got {warn!r}")
    memo: dict[int, Any] = {}
    try:
        return copy.deepcopy(obj, memo)  # the common case costs exactly one deepcopy
    except RuntimeError as error:
        if GRAPH_LEAVES not in str(error):
            raise
        findings, leaves_with_nonleaf_grad = _scan(obj)
        if not findings:
            raise RuntimeError(
                "copy.deepcopy met a non-leaf tensor that find_nonleaf cannot reach (hidden behind "
                "a custom __deepcopy__, __reduce__ or __getstate__): detach it where it is stored"
            ) from error
    duplicate = _deepcopy_detached(obj, findings, leaves_with_nonleaf_grad, _finished_copies(memo))
    if warn:
        warnings.warn(_detached_warning(findings), stacklevel=2)
    return duplicate


def _finished_copies(memo: dict[int, Any]) -> dict[int, Any]:
    """What a failed ``copy.deepcopy`` had finished and can be reused: tensors and storages.

    Containers and reconstructed objects enter the memo before they are filled, so they are
    dropped; a tensor enters only once complete. The keep-alive list comes along, so that no id
    in the memo can be reused by a new object.
    """
    finished = {
        key: value for key, value in memo.items()
        if isinstance(value, (torch.Tensor, torch.UntypedStorage, torch.TypedStorage))
    }
    finished[id(finished)] = memo.get(id(memo), [])
    return finished


def _deepcopy_detached(
    obj: T, findings: Findings, leaves_with_nonleaf_grad: list[torch.Tensor], memo: dict[int, Any] | None = None
) -> T:
    """``copy.deepcopy(obj, memo)`` after copying the found non-leaf tensors (and the leaves that
    hold one as ``.grad``) detached into the memo."""
    memo = {} if memo is None else memo
    keep_alive = memo.setdefault(id(memo), [])  # ids in memo must not be reused meanwhile
    for finding in findings:
        tensor = finding.tensor
        memo[id(tensor)] = tensor.detach().clone()  # a view's clone holds only its own elements
        keep_alive.append(tensor)
    for leaf in leaves_with_nonleaf_grad:
        memo[id(leaf)] = _copy_leaf(leaf, memo)
        keep_alive.append(leaf)
    return copy.deepcopy(obj, memo)


def _copy_leaf(leaf: torch.Tensor, memo: dict[int, Any]) -> torch.Tensor:
    # What Tensor.__deepcopy__ does, except that .grad goes through the memo (where its
    # detached copy already is) instead of its own __deepcopy__, which would raise.
    duplicate = copy.deepcopy(leaf.detach(), memo).requires_grad_(leaf.requires_grad)
    duplicate.grad = copy.deepcopy(leaf.grad, memo)
    duplicate.__dict__.update(copy.deepcopy(leaf.__dict__, memo))
    return duplicate


def _detached_warning(findings: Findings) -> DetachedTensorsWarning:
    paths = tuple(finding.path for finding in findings)
    listed = ", ".join(f"root{path}" for path in paths[:_LISTED_PATHS])
    if len(paths) > _LISTED_PATHS:
        listed += f", ... ({len(paths) - _LISTED_PATHS} more in the warning's .paths)"
    noun = "tensor" if len(paths) == 1 else "tensors"
    return DetachedTensorsWarning(
        f"safe_deepcopy detached {len(paths)} non-leaf {noun} (their copies have no grad_fn): {listed}",
        paths,
    )
