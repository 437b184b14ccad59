"""Exercise 2: ``copy.copy`` of a non-leaf tensor silently cuts the graph."""
from __future__ import annotations

import copy
from collections.abc import Callable

import torch

from graphleaf_edu.exercises.feedback import (
    Feedback,
    NotYet,
    Wrong,
    call,
    exercise,
    predictions_of,
    require_function,
)
from graphleaf_edu.graphs import AutogradGraph, draw, leaves_behind
from graphleaf_edu.i18n import N_, say

DEEPCOPY_LESSON = "deep_dives/what_deepcopy_does"

COPY_QUESTIONS = {  # question: (what PyTorch does, the hint written for it)
    "same_object": (False, N_(
        "copy.copy does not hand back y itself: it rebuilds a tensor from y's storage "
        "(Tensor.__reduce_ex__). Check with `y_copy is y`.")),
    "is_leaf": (True, N_(
        "the rebuilt tensor gets y's data and requires_grad flag, but not y's grad_fn; a tensor "
        "without a grad_fn is a leaf.")),
    "requires_grad": (True, N_(
        "copy.copy keeps requires_grad, which is what makes the cut silent: nothing complains when "
        "you compute with the copy.")),
    "shares_memory": (True, N_(
        "copy.copy is shallow: the new tensor views the same storage as y. Compare y_copy.data_ptr() "
        "with y.data_ptr().")),
    "grad_reaches_x": (False, N_(
        "backward() walks grad_fn links; the copy has none pointing back to y, so it stops at the copy.")),
}
COPY_QUESTION_NAMES = tuple(COPY_QUESTIONS)


def copy_copy_facts() -> dict[str, bool]:
    """What ``copy.copy`` of a non-leaf really does, measured now."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 3
    y_copy = copy.copy(y)
    facts = {
        "same_object": y_copy is y,
        "is_leaf": y_copy.is_leaf,
        "requires_grad": y_copy.requires_grad,
        "shares_memory": y_copy.untyped_storage().data_ptr() == y.untyped_storage().data_ptr(),
    }
    if y_copy.requires_grad:
        (y_copy**2).sum().backward()
    facts["grad_reaches_x"] = x.grad is not None
    return facts


@exercise("Exercise 2 · what copy.copy returns")
def check_copy_predictions(predict: Callable[[], dict]) -> str:
    """``predict()`` returns ``{question: True or False}`` for ``COPY_QUESTION_NAMES``."""
    predictions = predictions_of(predict, COPY_QUESTION_NAMES)
    facts = copy_copy_facts()
    hints = []
    for key in COPY_QUESTION_NAMES:
        if not isinstance(predictions[key], bool):
            raise Wrong(say("each prediction is True or False; {key!r} is {prediction!r}.", key=key,
                            prediction=predictions[key]))
        if predictions[key] != facts[key]:
            hints.append(f"{key}: {say(COPY_QUESTIONS[key][1])}")
    if hints:
        right = len(COPY_QUESTION_NAMES) - len(hints)
        raise Wrong(say("{right} of {count} right (see {lesson}):", right=right, count=len(COPY_QUESTION_NAMES),
                        lesson=DEEPCOPY_LESSON), *hints)
    return say("copy.copy gives a new leaf that requires grad and shares y's memory, "
               "and backward() through it never reaches x. Nothing warns you.")


def _losses_for(make_losses: Callable, name: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    result = call(make_losses, f"{name}(x)", x)
    if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)):
        raise Wrong(say("{name}(x) should return two tensors, (loss_via_y, loss_via_copy); it returned {type_name}.",
                        name=name, type_name=type(result).__name__))
    return result


def _reaches(loss: torch.Tensor, x: torch.Tensor) -> bool:
    return torch.autograd.grad(loss.sum(), x, allow_unused=True, retain_graph=True)[0] is not None


@exercise("Exercise 2 · the cut, in code")
def check_copy_cut(make_losses: Callable) -> str:
    """``make_losses(x)`` returns ``(loss_via_y, loss_via_copy)`` with ``y = x * 3``."""
    name = require_function(make_losses)
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss_via_y, loss_via_copy = _losses_for(make_losses, name, x)
    if not loss_via_y.requires_grad or not _reaches(loss_via_y, x):
        raise Wrong(say("your first loss does not depend on x through autograd."),
                    say("Compute y from x (y = x * 3) and the first loss from y, with no copy in between."))
    if not loss_via_copy.requires_grad:
        raise Wrong(say("your second loss does not require grad at all."),
                    say("That is what detach() gives: an honest cut. copy.copy keeps requires_grad=True, "
                        "which is why its cut goes unnoticed. Compute the second loss from copy.copy(y)."))
    if _reaches(loss_via_copy, x):
        raise Wrong(say("gradients of your second loss still reach x."),
                    say("Is it computed from y itself rather than from copy.copy(y)?"))
    cut_at = [leaf for leaf in leaves_behind([loss_via_copy]) if leaf is not x and leaf.requires_grad]
    if not cut_at:
        raise Wrong(say("your second loss does not start from a copy of y that requires grad."))
    return say("the loss through y reaches x; the loss through copy.copy(y) stops at the copy, "
               "a leaf that requires grad, so backward() runs without an error and x.grad stays None.")


def draw_copy_cut(make_losses: Callable) -> AutogradGraph | Feedback:
    """One picture of both losses that ``make_losses(x)`` returns, with x and the copy named.

    Where there is nothing to draw yet (a stub, or not two tensors), the check's feedback instead.
    """
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    try:
        loss_via_y, loss_via_copy = _losses_for(make_losses, require_function(make_losses), x)
    except (NotYet, Wrong):
        return check_copy_cut(make_losses)
    names = {"x": x}
    copies = [leaf for leaf in leaves_behind([loss_via_copy]) if leaf is not x]
    if copies:
        names["the copy"] = copies[0]
    return draw([loss_via_y, loss_via_copy], names=names)
