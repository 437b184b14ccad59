"""What a fix really did, measured on the objects of a run rather than read from its description.

Four questions, each answered from the objects themselves:
    shares memory     does the copy use the same storage as the original (a write to one is a write to both)?
    original changed  compared with a fresh run of the same seeded setup: tensors removed or replaced,
                      a graph cut, values, memory moved into shared memory
    keeps graph       does the tensor that caused the error (``scenario.culprit``) still have a ``grad_fn``?
    rebuilds          while the copy was made, was the class of the model (or of a submodule) constructed?
                      Then the fix needs the constructor's arguments.

    >>> measured = measure_fix(SCENARIOS["model_cache"], "state_dict")
    >>> measured.works, measured.shares_memory, measured.keeps_graph, measured.rebuilds
    (True, False, True, True)
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from graphleaf_edu import deepcopy_walk as dw
from graphleaf_edu.i18n import N_
from graphleaf_edu.paths import render_path, resolve
from graphleaf_edu.scenarios.engine import Scenario

__all__ = ["MOVED_OUT", "FixMeasurement", "measure_fix", "tensors_in"]

MOVED_OUT = N_("moved out")  # keeps_graph when the culprit's path no longer leads to anything
_UNCHANGED = N_("no")


@dataclass(frozen=True)
class FixMeasurement:
    """One fix of one scenario, measured.

    Attributes:
        works: the copy was made.
        shares_memory: the copy and the original share storage (``None`` when there is no copy).
        original_changed: ``"no"``, or what changed in the original, e.g. ``"graph cut, values"``.
        keeps_graph: the culprit still has a ``grad_fn`` in the original (``MOVED_OUT`` when it is gone).
        rebuilds: the copy constructed the model's class or a submodule's.
    """

    works: bool
    shares_memory: bool | None
    original_changed: str
    keeps_graph: bool | str
    rebuilds: bool

    def columns(self) -> dict[str, Any]:
        """The fix comparison's columns (``"-"`` where there is no copy to compare)."""
        return {N_("works"): self.works,
                N_("shares memory"): "-" if self.shares_memory is None else self.shares_memory,
                N_("original changed"): self.original_changed, N_("keeps graph"): self.keeps_graph,
                N_("rebuilds"): self.rebuilds}


def measure_fix(scenario: Scenario, fix: str) -> FixMeasurement:
    """Run ``fix`` of ``scenario`` and measure it against a fresh run of the same (seeded) setup."""
    fresh = scenario.namespace(fix)[scenario.target]
    with _constructions_inside(scenario.fix(fix).copy) as constructed:
        outcome = scenario.run(fix)
    original = outcome.original
    model_classes = {type(module) for module in original.modules()} if isinstance(original, nn.Module) else set()
    return FixMeasurement(
        works=outcome.ok,
        shares_memory=bool(_storages(outcome.copied) & _storages(original)) if outcome.ok else None,
        original_changed=_what_changed(_fingerprint(fresh), _fingerprint(original)),
        keeps_graph=_keeps_graph(original, scenario.culprit),
        rebuilds=bool(model_classes & constructed),
    )


def tensors_in(obj: Any) -> dict[str, torch.Tensor]:
    """Every tensor ``copy.deepcopy`` reaches from ``obj`` (``.grad`` included), by its path."""
    walked = dw.walk(obj)
    return {render_path(walked.nodes, index): node[0] for index, node in enumerate(walked.nodes)
            if isinstance(node[0], torch.Tensor)}


def _storages(obj: Any) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors_in(obj).values() if t.numel()}


def _fingerprint(obj: Any) -> dict[str, tuple[bool, bool, list]]:
    return {path: (t.grad_fn is not None, t.is_shared(), t.detach().cpu().tolist())
            for path, t in tensors_in(obj).items()}


def _what_changed(before: dict, after: dict) -> str:
    changes = [N_("tensors removed/replaced")] if set(before) != set(after) else []
    common = [(before[path], after[path]) for path in before.keys() & after.keys()]
    for index, change in enumerate([N_("graph cut"), N_("moved to shared memory"), N_("values")]):
        if any(old[index] != new[index] for old, new in common):
            changes.append(change)
    return ", ".join(changes) or _UNCHANGED


def _keeps_graph(original: Any, culprit: str) -> bool | str:
    try:
        tensor = resolve(original, culprit)
    except (AttributeError, KeyError, IndexError):
        return MOVED_OUT
    return isinstance(tensor, torch.Tensor) and tensor.grad_fn is not None


@contextlib.contextmanager
def _constructions_inside(function: Any) -> Iterator[set[type]]:
    """The classes whose ``__init__`` runs while ``function`` is on the stack (a profile hook, this thread)."""
    code = function.__code__
    constructed: set[type] = set()

    def profile(frame, event, _arg):
        if event == "call" and frame.f_code.co_name == "__init__" and _called_from(frame, code):
            instance = frame.f_locals.get("self")
            if instance is not None:
                constructed.add(type(instance))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield constructed
    finally:
        sys.setprofile(previous)


def _called_from(frame: Any, code: Any) -> bool:
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False
