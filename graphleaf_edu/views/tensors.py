"""Tensors side by side, one line each: what autograd says of them and what ``copy.deepcopy`` really does.

Facts only, never values or devices, so a lesson's printed table is the same on every machine.

    >>> x = torch.ones(2, requires_grad=True)
    >>> print(leaf_table(x=x, y=x * 2))
    tensor  is_leaf  requires_grad  grad_fn          deepcopy
    x       True     True           None             works
    y       False    True           MulBackward0     raises
"""
from __future__ import annotations

import copy

import torch

__all__ = ["copy_table", "deepcopy_result", "gradient_reaches", "leaf_table"]


def deepcopy_result(t: torch.Tensor) -> str:
    """``copy.deepcopy(t)``, really tried: ``"works"``, or ``"raises"`` when it raises a RuntimeError."""
    try:
        copy.deepcopy(t)
    except RuntimeError:
        return "raises"
    return "works"


def gradient_reaches(t: torch.Tensor, source: torch.Tensor) -> bool:
    """A gradient of ``t.sum()`` flows back to ``source`` (asked of autograd; nothing is accumulated)."""
    if not t.requires_grad:
        return False
    (grad,) = torch.autograd.grad(t.sum(), source, allow_unused=True, retain_graph=True)
    return grad is not None


def leaf_table(**tensors: torch.Tensor) -> str:
    """One line per tensor, by name: ``is_leaf``, ``requires_grad``, ``grad_fn``, and ``deepcopy_result``."""
    width = max(len(name) for name in ["tensor", *tensors]) + 2
    lines = [f"{'tensor':<{width}}{'is_leaf':<9}{'requires_grad':<15}{'grad_fn':<17}deepcopy"]
    for name, t in tensors.items():
        grad_fn = None if t.grad_fn is None else type(t.grad_fn).__name__
        lines.append(f"{name:<{width}}{t.is_leaf!s:<9}{t.requires_grad!s:<15}{grad_fn!s:<17}{deepcopy_result(t)}")
    return "\n".join(lines)


def copy_table(ways: dict[str, torch.Tensor], original: torch.Tensor, source: torch.Tensor,
               source_name: str = "x") -> str:
    """One line per way of copying ``original`` (computed from ``source``): does the result share its
    memory, does a gradient through it reach ``source``, is it a leaf, does it require grad, can it be deep-copied."""
    columns = ["shares memory", f"gradient to {source_name}", "is_leaf", "requires_grad", "deepcopy"]
    width = max(len(name) for name in ways) + 2
    lines = [(" " * width + "".join(f"{c:<15}" for c in columns)).rstrip()]
    for name, t in ways.items():
        shares = t.untyped_storage().data_ptr() == original.untyped_storage().data_ptr()
        row = [shares, gradient_reaches(t, source), t.is_leaf, t.requires_grad, deepcopy_result(t)]
        lines.append((f"{name:<{width}}" + "".join(f"{value!s:<15}" for value in row)).rstrip())
    return "\n".join(lines)
