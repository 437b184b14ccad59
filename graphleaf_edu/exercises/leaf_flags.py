"""Exercise 1: predict ``is_leaf``, ``requires_grad`` and ``grad_fn`` for the quiz's tensors."""
from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from graphleaf_edu.exercises.feedback import (
    Wrong,
    exercise,
    grad_fn_name,
    predictions_of,
)
from graphleaf_edu.i18n import N_, say

LEAVES_LESSON = "00_start_here"

@dataclass(frozen=True)
class Question:
    """One tensor of the quiz: what PyTorch does (the hints are written for it) and the hints."""

    expected: tuple[bool, bool, str | None]
    leaf_hint: str
    requires_grad_hint: str


LEAF_QUESTIONS = {
    "c": Question(
        (False, True, "MulBackward0"),
        N_("'created explicitly by the user' means made directly (torch.tensor, torch.randn, ...), not "
           "computed in your code: autograd records an operation whose input requires grad."),
        N_("requires_grad spreads: a result requires grad when any of its inputs does.")),
    "d": Question(
        (True, False, None),
        N_("being computed is not what makes a non-leaf; being recorded is. Does anything in `b * 2` "
           "require grad?"),
        N_("a result requires grad only when one of its inputs does; look at b.")),
    "e": Question(
        (False, True, "SelectBackward0"),
        N_("indexing is an operation too: a[0] is a view of a, and autograd records how it was made."),
        N_("a view of a tensor that requires grad requires grad as well.")),
    "f": Question(
        (False, True, "CloneBackward0"),
        N_("clone() copies the data, but the clone is recorded so that gradients flow back to a: "
           "copying data is not the same as leaving the graph."),
        N_("clone() keeps requires_grad: gradients flow through it.")),
    "g": Question(
        (True, False, None),
        N_("detach() returns a tensor with no history at all (it shares a's memory, not a's graph)."),
        N_("detach() returns a tensor that does not require grad.")),
    "h": Question(
        (True, True, None),
        N_("nn.Linear creates its weight directly (an nn.Parameter), it does not compute it from "
           "another tensor: that is why an optimizer can update it in place."),
        N_("an nn.Parameter requires grad unless you switch it off.")),
    "k": Question(
        (False, True, "SumBackward0"),
        N_("b does not require grad, but the layer's weight and bias do, so the forward pass is recorded."),
        N_("b does not require grad, but the layer's parameters do.")),
    "m": Question(
        (True, False, None),
        N_("inside torch.no_grad() autograd records nothing, so a result there has no history."),
        N_("under torch.no_grad() results do not require grad, whatever their inputs.")),
    "n": Question(
        (True, True, None),
        N_("detach() drops the history; requires_grad_() then starts a new graph at this tensor."),
        N_("requires_grad_() switches requires_grad on, in place.")),
}
LEAF_QUIZ_NAMES = tuple(LEAF_QUESTIONS)


def leaf_quiz_tensors() -> dict[str, torch.Tensor]:
    """The quiz's tensors, made fresh. Its body is the quiz cell of the exercise (a test checks it)."""
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([4.0, 5.0, 6.0])
    layer = nn.Linear(3, 2)

    c = a * 2
    d = b * 2
    e = a[0]
    f = a.clone()
    g = a.detach()
    h = layer.weight
    k = layer(b).sum()
    with torch.no_grad():
        m = a * 2
    n = (a * 2).detach().requires_grad_()
    return {"c": c, "d": d, "e": e, "f": f, "g": g, "h": h, "k": k, "m": m, "n": n}


def leaf_quiz_code() -> str:
    """The quiz as the exercise shows it: the body of ``leaf_quiz_tensors``, without its return."""
    lines = inspect.getsource(leaf_quiz_tensors).splitlines()
    body = lines[2:-1]  # after the signature and the docstring, before the return
    return textwrap.dedent("\n".join(body)) + "\n"


def leaf_flags(t: torch.Tensor) -> tuple[bool, bool, str | None]:
    """``(is_leaf, requires_grad, grad_fn class name or None)``."""
    return t.is_leaf, t.requires_grad, grad_fn_name(t)


@exercise("Exercise 1 · leaf flags")
def check_leaf_flags(predict: Callable[[], dict]) -> str:
    """``predict()`` returns ``{name: (is_leaf, requires_grad, grad_fn or None)}`` for c ... n."""
    predictions = predictions_of(predict, LEAF_QUIZ_NAMES)
    tensors = leaf_quiz_tensors()
    hints, wrong = [], set()
    for key in LEAF_QUIZ_NAMES:
        for hint in _leaf_hints(key, _leaf_prediction(key, predictions[key]), leaf_flags(tensors[key])):
            hints.append(f"{key}, {hint}")
            wrong.add(key)
    if hints:
        raise Wrong(say("{right} of {count} tensors right. Think again about these (see {lesson}):",
                        right=len(LEAF_QUIZ_NAMES) - len(wrong), count=len(LEAF_QUIZ_NAMES), lesson=LEAVES_LESSON),
                    *hints)
    names = [f"{key}: {grad_fn_name(tensors[key])}" for key in LEAF_QUIZ_NAMES if not tensors[key].is_leaf]
    return say("all {count} tensors right. PyTorch names each grad_fn after its operation: {names}.",
               count=len(LEAF_QUIZ_NAMES), names=", ".join(names))


def _leaf_hints(key: str, predicted: tuple, actual: tuple) -> list[str]:
    question = LEAF_QUESTIONS[key]
    hints = []
    if predicted[0] != actual[0]:
        hints.append(f"is_leaf: {say(question.leaf_hint)}")
    elif (predicted[2] is None) != (actual[2] is None):
        hints.append(say("grad_fn: a tensor is a leaf exactly when its grad_fn is None; your is_leaf and "
                         "grad_fn disagree."))
    if predicted[1] != actual[1]:
        hints.append(f"requires_grad: {say(question.requires_grad_hint)}")
    return hints


def _leaf_prediction(key: str, value: Any) -> tuple[bool, bool, str | None]:
    shape_hint = say("the prediction for {key!r} should be a tuple (is_leaf, requires_grad, grad_fn), "
                     "e.g. (True, False, None) or (False, True, 'MulBackward0')", key=key)
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise Wrong(shape_hint + say("; got {value!r}.", value=value))
    is_leaf, requires_grad, grad_fn = value
    if not isinstance(is_leaf, bool) or not isinstance(requires_grad, bool):
        raise Wrong(shape_hint + say("; is_leaf and requires_grad are True or False, got {value!r}.", value=value))
    if grad_fn is not None and not isinstance(grad_fn, str):
        raise Wrong(shape_hint + say("; grad_fn is None or the operation's name, got {grad_fn!r}.", grad_fn=grad_fn))
    return is_leaf, requires_grad, None if grad_fn in (None, "", "None") else grad_fn
