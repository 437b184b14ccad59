"""The feedback framework: a check runs the student's answer and returns a ``Feedback``, never raises.

A judge returns a summary, or raises ``NotYet`` (the answer is still nbgrader's stub) or
``Wrong`` (a summary and hints aimed at the misconception, never the answer). ``exercise(title)``
turns a judge into a check. While nbgrader validates or autogrades (``NBGRADER_EXECUTION`` is
set), a check that does not pass raises ``AssertionError`` with its feedback.
"""
from __future__ import annotations

import functools
import os
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from graphleaf_edu.errors import error_line, gloss
from graphleaf_edu.i18n import N_, say

CORRECT, NOT_YET, TRY_AGAIN = N_("correct"), N_("not yet"), N_("try again")  # said in the user's language
_MARKS = {CORRECT: "✔", NOT_YET: "…", TRY_AGAIN: "✘"}
_WIDTH = 100


@dataclass(frozen=True)
class Feedback:
    """What a check says about one answer; its repr is the message a notebook shows."""

    exercise: str
    status: str
    summary: str
    hints: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == CORRECT

    @property
    def message(self) -> str:
        head = textwrap.fill(say("{mark} {exercise} — {status}: {summary}", mark=_MARKS[self.status],
                                 exercise=say(self.exercise), status=say(self.status), summary=self.summary), _WIDTH)
        hints = [textwrap.fill(hint, _WIDTH, initial_indent="  - ", subsequent_indent="    ") for hint in self.hints]
        return "\n".join([head, *hints])

    def __repr__(self) -> str:
        return self.message


class NotYet(Exception):
    """The answer still raises nbgrader's stub, NotImplementedError."""


class Wrong(Exception):
    """A wrong answer: a summary, then hints."""

    def __init__(self, summary: str, *hints: str):
        super().__init__(summary)
        self.summary = summary
        self.hints = hints


def exercise(title: str):
    """Turn a judge (returns a summary, or raises NotYet/Wrong) into a check returning Feedback."""

    def decorate(judge: Callable[..., str]) -> Callable[..., Feedback]:
        @functools.wraps(judge)
        def check(*args, **kwargs) -> Feedback:
            try:
                # Warnings would print to stderr: nondeterministic output, and nbgrader scores a
                # test cell that writes to stderr as failed.
                with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    feedback = Feedback(title, CORRECT, judge(*args, **kwargs))
            except NotYet as stub:
                feedback = Feedback(title, NOT_YET, say(
                    "{function} still raises NotImplementedError: replace `raise NotImplementedError()` with your "
                    "answer, run that cell, then run this one again.", function=stub))
            except Wrong as wrong:
                feedback = Feedback(title, TRY_AGAIN, wrong.summary, wrong.hints)
            if not feedback.passed and os.environ.get("NBGRADER_EXECUTION"):
                raise AssertionError(feedback.message)
            return feedback

        return check

    return decorate


def call(function: Any, what: str, *args: Any) -> Any:
    """Run the student's code; its stub becomes "not yet", any other error a hint to debug it."""
    try:
        return function(*args)
    except NotImplementedError:
        raise NotYet(what) from None
    except Exception as error:  # noqa: BLE001 (any error in the student's code is feedback, not a crash)
        raised = say("{what} raised {error}", what=what, error=error_line(error))
        raise Wrong(f"{raised} {gloss(raised)}".rstrip(),
                    say("Call it in a cell of its own to see the full traceback.")) from None


def require_function(answer: Any) -> str:
    if isinstance(answer, type) or not callable(answer):
        raise Wrong(say("pass your function itself (its name, without calling it), not {type_name}.",
                        type_name=type(answer).__name__))
    return getattr(answer, "__name__", say("your function"))


def require_class(answer: Any) -> str:
    if not isinstance(answer, type):
        raise Wrong(say("pass the class itself (its name, without parentheses), not a {type_name}.",
                        type_name=type(answer).__name__))
    return answer.__name__


def sgd_step(model: torch.nn.Module, lr: float) -> None:
    """One plain SGD step (``p -= lr * p.grad``), the step ``torch.optim.SGD(..., lr=lr).step()`` takes.

    The checks step by hand because the first optimizer a process creates imports ``torch._dynamo``
    (about 1.5 s), which would make every check of an exercise wait for it.
    """
    with torch.no_grad():
        for param in model.parameters():
            if param.grad is not None:
                param.add_(param.grad, alpha=-lr)


def grad_fn_name(t: torch.Tensor) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def predictions_of(predict: Any, keys: tuple[str, ...]) -> dict:
    """The dict the student's ``predict()`` returns, with a prediction for each of ``keys``."""
    what = f"{require_function(predict)}()"
    predictions = call(predict, what)
    if not isinstance(predictions, dict):
        raise Wrong(say("{what} should return a dict, keyed by {keys}; it returned a {type_name}.", what=what,
                        keys=", ".join(map(repr, keys)), type_name=type(predictions).__name__))
    missing = [key for key in keys if key not in predictions]
    if missing:
        raise Wrong(say("{what} has no prediction for {keys}.", what=what, keys=", ".join(map(repr, missing))))
    return predictions
