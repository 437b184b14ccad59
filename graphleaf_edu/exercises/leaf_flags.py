"""Exercise 1: predict ``is_leaf``, ``requires_grad`` and ``grad_fn`` for the quiz's tensors."""
from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from graphleaf_edu import messages as M
from graphleaf_edu.exercises.feedback import (
    Wrong,
    exercise,
    grad_fn_name,
    predictions_of,
)
from graphleaf_edu.i18n import say

LEAVES_LESSON = "00_start_here"

@dataclass(frozen=True)
class Question:
    """One tensor of the quiz: what PyTorch does (the hints are written for it) and the hints."""

    expected: tuple[bool, bool, str | None]
    leaf_hint: str
    requires_grad_hint: str

    @classmethod
    def of(cls, record: M.Record) -> Question:
        """A question as ``[leaf_quiz.NAME]`` of ``graphleaf_edu/messages.toml`` writes it (no grad_fn: a leaf)."""
        grad_fn = record.get("grad_fn")
        return cls((record["is_leaf"] is True, record["requires_grad"] is True, None if grad_fn is None else str(grad_fn)),
                   str(record["leaf_hint"]), str(record["requires_grad_hint"]))


LEAF_QUESTIONS = {name: Question.of(record) for name, record in M.records("leaf_quiz").items()}
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
