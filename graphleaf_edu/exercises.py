"""Classroom exercises: ``check_*`` functions with instant feedback, and the students' copies.

A check runs the student's answer for real (builds the model, copies it, trains a step, runs a
DataLoader under spawn) and returns a ``Feedback``: a short confirmation, "not yet" while the
answer is still nbgrader's stub (``raise NotImplementedError()``), or hints aimed at the
misconception behind a wrong answer, never the answer itself. Checks never raise, so "Run All"
goes on; while nbgrader validates or autogrades (it sets ``NBGRADER_EXECUTION``), a check that
does not pass raises ``AssertionError`` with its feedback, so nbgrader marks the cell failed.
Test cells ``print(feedback)``: nbgrader would read a returned value as a partial score.

Student copies come from nbgrader's own preprocessors, so they match what
``nbgrader generate_assignment`` releases (``make student`` runs this):

    python -m graphleaf_edu.exercises student instructor/exercises notebooks/exercises
"""
from __future__ import annotations

import argparse
import copy
import functools
import os
import sys
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader

from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.errors import COWARDLY, cause_line, error_line
from graphleaf_edu.graphs import AutogradGraph, draw, leaves_behind

CORRECT, NOT_YET, TRY_AGAIN = "correct", "not yet", "try again"
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
        head = textwrap.fill(f"{_MARKS[self.status]} {self.exercise} — {self.status}: {self.summary}", _WIDTH)
        hints = [textwrap.fill(hint, _WIDTH, initial_indent="  - ", subsequent_indent="    ") for hint in self.hints]
        return "\n".join([head, *hints])

    def __repr__(self) -> str:
        return self.message


class _NotYet(Exception):
    """The answer still raises nbgrader's stub, NotImplementedError."""


class _Wrong(Exception):
    """A wrong answer: a summary, then hints."""

    def __init__(self, summary: str, *hints: str):
        super().__init__(summary)
        self.summary = summary
        self.hints = hints


def _exercise(title: str):
    """Turn a judge (returns a summary, or raises _NotYet/_Wrong) into a check returning Feedback."""

    def decorate(judge: Callable[..., str]) -> Callable[..., Feedback]:
        @functools.wraps(judge)
        def check(*args, **kwargs) -> Feedback:
            try:
                # Warnings would print to stderr: nondeterministic output, and nbgrader scores a
                # test cell that writes to stderr as failed.
                with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    feedback = Feedback(title, CORRECT, judge(*args, **kwargs))
            except _NotYet as stub:
                feedback = Feedback(title, NOT_YET, (
                    f"{stub} still raises NotImplementedError: replace `raise NotImplementedError()` "
                    "with your answer, run that cell, then run this one again."))
            except _Wrong as wrong:
                feedback = Feedback(title, TRY_AGAIN, wrong.summary, wrong.hints)
            if not feedback.passed and os.environ.get("NBGRADER_EXECUTION"):
                raise AssertionError(feedback.message)
            return feedback

        return check

    return decorate


def _call(function: Any, what: str, *args: Any) -> Any:
    """Run the student's code; its stub becomes "not yet", any other error a hint to debug it."""
    try:
        return function(*args)
    except NotImplementedError:
        raise _NotYet(what) from None
    except Exception as error:  # noqa: BLE001 (any error in the student's code is feedback, not a crash)
        raise _Wrong(f"{what} raised {error_line(error)}",
                     "Call it in a cell of its own to see the full traceback.") from None


def _require_function(answer: Any) -> str:
    if isinstance(answer, type) or not callable(answer):
        raise _Wrong(f"pass your function itself (its name, without calling it), not {type(answer).__name__}.")
    return getattr(answer, "__name__", "your function")


def _require_class(answer: Any) -> str:
    if not isinstance(answer, type):
        raise _Wrong(f"pass the class itself (its name, without parentheses), not a {type(answer).__name__}.")
    return answer.__name__


def _grad_fn(t: torch.Tensor) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# --- Exercise 1: predict is_leaf, requires_grad and grad_fn -------------------------------------

LEAVES_LESSON = "01_leaves_and_grad_fn"

LEAF_QUIZ = """\
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
"""


@dataclass(frozen=True)
class _Question:
    """One tensor of the quiz: what PyTorch does (the hints are written for it) and the hints."""

    expected: tuple[bool, bool, str | None]
    leaf_hint: str
    requires_grad_hint: str


_LEAF_QUESTIONS = {
    "c": _Question(
        (False, True, "MulBackward0"),
        "'created explicitly by the user' means made directly (torch.tensor, torch.randn, ...), not "
        "computed in your code: autograd records an operation whose input requires grad.",
        "requires_grad spreads: a result requires grad when any of its inputs does."),
    "d": _Question(
        (True, False, None),
        "being computed is not what makes a non-leaf; being recorded is. Does anything in `b * 2` "
        "require grad?",
        "a result requires grad only when one of its inputs does; look at b."),
    "e": _Question(
        (False, True, "SelectBackward0"),
        "indexing is an operation too: a[0] is a view of a, and autograd records how it was made.",
        "a view of a tensor that requires grad requires grad as well."),
    "f": _Question(
        (False, True, "CloneBackward0"),
        "clone() copies the data, but the clone is recorded so that gradients flow back to a: "
        "copying data is not the same as leaving the graph.",
        "clone() keeps requires_grad: gradients flow through it."),
    "g": _Question(
        (True, False, None),
        "detach() returns a tensor with no history at all (it shares a's memory, not a's graph).",
        "detach() returns a tensor that does not require grad."),
    "h": _Question(
        (True, True, None),
        "nn.Linear creates its weight directly (an nn.Parameter), it does not compute it from "
        "another tensor: that is why an optimizer can update it in place.",
        "an nn.Parameter requires grad unless you switch it off."),
    "k": _Question(
        (False, True, "SumBackward0"),
        "b does not require grad, but the layer's weight and bias do, so the forward pass is recorded.",
        "b does not require grad, but the layer's parameters do."),
    "m": _Question(
        (True, False, None),
        "inside torch.no_grad() autograd records nothing, so a result there has no history.",
        "under torch.no_grad() results do not require grad, whatever their inputs."),
    "n": _Question(
        (True, True, None),
        "detach() drops the history; requires_grad_() then starts a new graph at this tensor.",
        "requires_grad_() switches requires_grad on, in place."),
}
LEAF_QUIZ_NAMES = tuple(_LEAF_QUESTIONS)


def leaf_quiz_tensors() -> dict[str, torch.Tensor]:
    """The tensors of ``LEAF_QUIZ``, made fresh by running it."""
    namespace: dict[str, Any] = {"torch": torch, "nn": nn}
    exec(LEAF_QUIZ, namespace)  # noqa: S102 (the quiz is this module's own code)
    return {name: namespace[name] for name in LEAF_QUIZ_NAMES}


def leaf_flags(t: torch.Tensor) -> tuple[bool, bool, str | None]:
    """``(is_leaf, requires_grad, grad_fn class name or None)``."""
    return t.is_leaf, t.requires_grad, _grad_fn(t)


@_exercise("Exercise 1 · leaf flags")
def check_leaf_flags(predict: Callable[[], dict]) -> str:
    """``predict()`` returns ``{name: (is_leaf, requires_grad, grad_fn or None)}`` for c ... n."""
    name = _require_function(predict)
    predictions = _call(predict, f"{name}()")
    _check_prediction_keys(predictions, LEAF_QUIZ_NAMES, f"{name}()")
    tensors = leaf_quiz_tensors()
    hints, wrong = [], set()
    for key in LEAF_QUIZ_NAMES:
        for hint in _leaf_hints(key, _leaf_prediction(key, predictions[key]), leaf_flags(tensors[key])):
            hints.append(f"{key}, {hint}")
            wrong.add(key)
    if hints:
        raise _Wrong(f"{len(LEAF_QUIZ_NAMES) - len(wrong)} of {len(LEAF_QUIZ_NAMES)} tensors right. "
                     f"Think again about these (see {LEAVES_LESSON}):", *hints)
    names = [f"{key}: {_grad_fn(tensors[key])}" for key in LEAF_QUIZ_NAMES if not tensors[key].is_leaf]
    return (f"all {len(LEAF_QUIZ_NAMES)} tensors right. PyTorch names each grad_fn after its "
            f"operation: {', '.join(names)}.")


def _leaf_hints(key: str, predicted: tuple, actual: tuple) -> list[str]:
    question = _LEAF_QUESTIONS[key]
    hints = []
    if predicted[0] != actual[0]:
        hints.append(f"is_leaf: {question.leaf_hint}")
    elif (predicted[2] is None) != (actual[2] is None):
        hints.append("grad_fn: a tensor is a leaf exactly when its grad_fn is None; your is_leaf and "
                     "grad_fn disagree.")
    if predicted[1] != actual[1]:
        hints.append(f"requires_grad: {question.requires_grad_hint}")
    return hints


def _check_prediction_keys(predictions: Any, keys: tuple[str, ...], what: str) -> None:
    if not isinstance(predictions, dict):
        raise _Wrong(f"{what} should return a dict, keyed by {', '.join(map(repr, keys))}; "
                     f"it returned a {type(predictions).__name__}.")
    missing = [key for key in keys if key not in predictions]
    if missing:
        raise _Wrong(f"{what} has no prediction for {', '.join(map(repr, missing))}.")


def _leaf_prediction(key: str, value: Any) -> tuple[bool, bool, str | None]:
    shape_hint = (f"the prediction for {key!r} should be a tuple (is_leaf, requires_grad, grad_fn), "
                  "e.g. (True, False, None) or (False, True, 'MulBackward0')")
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise _Wrong(shape_hint + f"; got {value!r}.")
    is_leaf, requires_grad, grad_fn = value
    if not isinstance(is_leaf, bool) or not isinstance(requires_grad, bool):
        raise _Wrong(shape_hint + f"; is_leaf and requires_grad are True or False, got {value!r}.")
    if grad_fn is not None and not isinstance(grad_fn, str):
        raise _Wrong(shape_hint + f"; grad_fn is None or the operation's name, got {grad_fn!r}.")
    return is_leaf, requires_grad, None if grad_fn in (None, "", "None") else grad_fn


# --- Exercise 2: copy.copy of a non-leaf cuts the graph --------------------------------------------

DEEPCOPY_LESSON = "02_what_deepcopy_does"

_COPY_QUESTIONS = {  # question: (what PyTorch does, the hint written for it)
    "same_object": (False, (
        "copy.copy does not hand back y itself: it rebuilds a tensor from y's storage "
        "(Tensor.__reduce_ex__). Check with `y_copy is y`.")),
    "is_leaf": (True, (
        "the rebuilt tensor gets y's data and requires_grad flag, but not y's grad_fn; a tensor "
        "without a grad_fn is a leaf.")),
    "requires_grad": (True, (
        "copy.copy keeps requires_grad, which is what makes the cut silent: nothing complains when "
        "you compute with the copy.")),
    "shares_memory": (True, (
        "copy.copy is shallow: the new tensor views the same storage as y. Compare y_copy.data_ptr() "
        "with y.data_ptr().")),
    "grad_reaches_x": (False, (
        "backward() walks grad_fn links; the copy has none pointing back to y, so it stops at the copy.")),
}
COPY_QUESTION_NAMES = tuple(_COPY_QUESTIONS)


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


@_exercise("Exercise 2 · what copy.copy returns")
def check_copy_predictions(predict: Callable[[], dict]) -> str:
    """``predict()`` returns ``{question: True or False}`` for ``COPY_QUESTION_NAMES``."""
    name = _require_function(predict)
    predictions = _call(predict, f"{name}()")
    _check_prediction_keys(predictions, COPY_QUESTION_NAMES, f"{name}()")
    facts = copy_copy_facts()
    hints = []
    for key in COPY_QUESTION_NAMES:
        if not isinstance(predictions[key], bool):
            raise _Wrong(f"each prediction is True or False; {key!r} is {predictions[key]!r}.")
        if predictions[key] != facts[key]:
            hints.append(f"{key}: {_COPY_QUESTIONS[key][1]}")
    if hints:
        right = len(COPY_QUESTION_NAMES) - len(hints)
        raise _Wrong(f"{right} of {len(COPY_QUESTION_NAMES)} right (see {DEEPCOPY_LESSON}):", *hints)
    return ("copy.copy gives a new leaf that requires grad and shares y's memory, "
            "and backward() through it never reaches x. Nothing warns you.")


def _losses_for(make_losses: Callable, name: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    result = _call(make_losses, f"{name}(x)", x)
    if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)):
        raise _Wrong(f"{name}(x) should return two tensors, (loss_via_y, loss_via_copy); "
                     f"it returned {type(result).__name__}.")
    return result


def _reaches(loss: torch.Tensor, x: torch.Tensor) -> bool:
    return torch.autograd.grad(loss.sum(), x, allow_unused=True, retain_graph=True)[0] is not None


@_exercise("Exercise 2 · the cut, in code")
def check_copy_cut(make_losses: Callable) -> str:
    """``make_losses(x)`` returns ``(loss_via_y, loss_via_copy)`` with ``y = x * 3``."""
    name = _require_function(make_losses)
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss_via_y, loss_via_copy = _losses_for(make_losses, name, x)
    if not loss_via_y.requires_grad or not _reaches(loss_via_y, x):
        raise _Wrong("your first loss does not depend on x through autograd.",
                     "Compute y from x (y = x * 3) and the first loss from y, with no copy in between.")
    if not loss_via_copy.requires_grad:
        raise _Wrong("your second loss does not require grad at all.",
                     "That is what detach() gives: an honest cut. copy.copy keeps requires_grad=True, "
                     "which is why its cut goes unnoticed. Compute the second loss from copy.copy(y).")
    if _reaches(loss_via_copy, x):
        raise _Wrong("gradients of your second loss still reach x.",
                     "Is it computed from y itself rather than from copy.copy(y)?")
    cut_at = [leaf for leaf in leaves_behind([loss_via_copy]) if leaf is not x and leaf.requires_grad]
    if not cut_at:
        raise _Wrong("your second loss does not start from a copy of y that requires grad.")
    return ("the loss through y reaches x; the loss through copy.copy(y) stops at the copy, "
            "a leaf that requires grad, so backward() runs without an error and x.grad stays None.")


def draw_copy_cut(make_losses: Callable) -> AutogradGraph | Feedback:
    """One picture of both losses that ``make_losses(x)`` returns, with x and the copy named.

    Where there is nothing to draw yet (a stub, or not two tensors), the check's feedback instead.
    """
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    try:
        loss_via_y, loss_via_copy = _losses_for(make_losses, _require_function(make_losses), x)
    except (_NotYet, _Wrong):
        return check_copy_cut(make_losses)
    names = {"x": x}
    copies = [leaf for leaf in leaves_behind([loss_via_copy]) if leaf is not x]
    if copies:
        names["the copy"] = copies[0]
    return draw([loss_via_y, loss_via_copy], names=names)


# --- Exercise 3: find the tensor that breaks copy.deepcopy ---------------------------------------

FIND_LESSON = "07_fix_toolbox"
FEATURES, WIDTH = 4, 8


class Encoder(nn.Module):
    """Linear, ReLU, LayerNorm; counts its calls in a buffer, and may keep its last output."""

    def __init__(self, keep_output: bool = False):
        super().__init__()
        self.embed = nn.Linear(FEATURES, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.keep_output = keep_output
        self.last_output = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        output = self.norm(torch.relu(self.embed(x)))
        if self.keep_output:
            self.last_output = output
        return output


class Tagger(nn.Module):
    """A shared encoder with two heads; it logs a little about every batch it tags."""

    def __init__(self, confident_heads=("ner",), keep_hidden: bool = False, keep_history: bool = False):
        super().__init__()
        self.encoder = Encoder(keep_output=keep_hidden)
        self.heads = nn.ModuleDict({"pos": nn.Linear(WIDTH, 3), "ner": nn.Linear(WIDTH, 5)})
        self.labels = {"pos": ["noun", "verb", "other"], "ner": ["person", "place", "thing", "time", "none"]}
        self.confident_heads = tuple(confident_heads)
        self.log = {"batches": 0, "confidence": {}}
        self.history = [] if keep_history else None

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        hidden = self.encoder(x)
        scores = {name: head(hidden) for name, head in self.heads.items()}
        self.log["batches"] += 1
        for name in self.confident_heads:
            self.log["confidence"][name] = scores[name].softmax(-1).amax(-1).mean()
        if self.history is not None:
            self.history.append(hidden.mean(0))
        return scores


# (Tagger options, batches tagged, the paths of the tensors that break deepcopy)
TAGGER_VARIANTS = (
    ({}, 1, (".log['confidence']['ner']",)),
    ({"confident_heads": ("pos", "ner"), "keep_hidden": True}, 1,
     (".encoder.last_output", ".log['confidence']['pos']", ".log['confidence']['ner']")),
    ({"confident_heads": (), "keep_history": True}, 2, (".history[0]", ".history[1]")),
    ({"confident_heads": ()}, 1, ()),
)


def culprit_model(variant: int = 0) -> Tagger:
    """A ``Tagger`` (options of ``TAGGER_VARIANTS[variant]``) that has tagged its batches."""
    if variant not in range(len(TAGGER_VARIANTS)):
        raise ValueError(f"variant is an index into TAGGER_VARIANTS, 0 to {len(TAGGER_VARIANTS) - 1}; got {variant!r}")
    options, batches, _ = TAGGER_VARIANTS[variant]
    generator = torch.Generator().manual_seed(variant)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(variant)
        model = Tagger(**options)
    for _ in range(batches):
        model(torch.randn(6, FEATURES, generator=generator))
    return model


def _normalise_path(path: str) -> str:
    path = path.strip()
    for prefix in ("root", "model"):
        if path.startswith(prefix) and path[len(prefix):len(prefix) + 1] in (".", "["):
            return path[len(prefix):]
    return path


def _resolve(model: nn.Module, path: str) -> Any:
    try:
        return eval("root" + path, {"__builtins__": {}}, {"root": model})
    except Exception as error:  # noqa: BLE001
        raise _Wrong(f"root{path} does not evaluate: {error_line(error)}",
                     "Write the path as find_nonleaf does, from the model: e.g. \".encoder.embed.weight\" "
                     "or \".labels['pos'][0]\".") from None


def _why_not_culprit(path: str, value: Any) -> str:
    where = f"root{path}"
    if isinstance(value, nn.Parameter):
        return (f"{where} is a parameter. Parameters are leaves (made directly, not computed), and "
                "deepcopy copies them. Look for a tensor that forward() computed and kept.")
    if isinstance(value, torch.Tensor) and value.is_leaf:
        return (f"{where} is a leaf tensor (grad_fn=None), so deepcopy copies it; updating a tensor "
                "in place with values that need no gradient keeps it a leaf.")
    if isinstance(value, (dict, list, tuple)):
        return f"{where} is a {type(value).__name__}: the culprit may be inside it. Go one level deeper."
    if isinstance(value, nn.Module):
        return (f"{where} is a module: its parameters copy fine. What else does it store? "
                f"Try vars({where.replace('root', 'model', 1)}).")
    return f"{where} is a {type(value).__name__}, not a tensor."


@_exercise("Exercise 3 · find it by hand")
def check_culprit_by_hand(culprit_path: Callable[[], str]) -> str:
    """``culprit_path()`` returns the path in ``culprit_model()`` of the tensor deepcopy rejects."""
    name = _require_function(culprit_path)
    path = _call(culprit_path, f"{name}()")
    if not isinstance(path, str):
        raise _Wrong(f"{name}() should return the path as a string, like \".encoder.embed.weight\"; "
                     f"it returned a {type(path).__name__}.")
    model = culprit_model()
    path = _normalise_path(path)
    value = _resolve(model, path)
    if not isinstance(value, torch.Tensor) or value.is_leaf:
        raise _Wrong("that is not the tensor deepcopy rejects.", _why_not_culprit(path, value))
    return (f"root{path} has grad_fn={_grad_fn(value)}: forward() computed it and the model kept it, "
            "graph and all.")


@_exercise("Exercise 3 · find them all with find_nonleaf")
def check_culprit_finder(find_culprits: Callable[[nn.Module], list]) -> str:
    """``find_culprits(model)`` returns the paths of every tensor that breaks deepcopy of ``model``."""
    name = _require_function(find_culprits)
    answers = []
    for variant, (options, _, expected) in enumerate(TAGGER_VARIANTS):
        model = culprit_model(variant)
        paths = _paths_from(_call(find_culprits, f"{name}(model)", model), name)
        answers.append(paths)
        described = f"Tagger({', '.join(f'{k}={v!r}' for k, v in options.items())})"
        extra = sorted(paths - set(expected))
        if extra:
            raise _Wrong(f"for {described} you listed root{extra[0]}, which deepcopy copies fine.",
                         _why_not_culprit(extra[0], _resolve(model, extra[0])))
        if paths != set(expected):
            missed = len(set(expected) - paths)
            raise _Wrong(f"for {described} your function misses {missed} of the {len(expected)} tensors "
                         "that break deepcopy.", _finder_hint(answers))
    return (f"your function found every culprit in {len(TAGGER_VARIANTS)} models "
            f"({len(TAGGER_VARIANTS) - 1} of them new to you), and nothing else.")


def _paths_from(result: Any, name: str) -> set[str]:
    if not isinstance(result, (list, tuple, set)):
        raise _Wrong(f"{name}(model) should return a list of paths (strings); it returned a "
                     f"{type(result).__name__}. find_nonleaf returns a list of Finding objects: each has a .path.")
    if any(not isinstance(item, str) for item in result):
        raise _Wrong(f"{name}(model) should return paths as strings; it returned "
                     f"{type(next(item for item in result if not isinstance(item, str))).__name__} items.",
                     "Each Finding that find_nonleaf returns has its path in .path.")
    return {_normalise_path(path) for path in result}


def _finder_hint(answers: list[set[str]]) -> str:
    if len(answers) > 1 and all(paths == answers[0] for paths in answers):
        return ("It returns the same paths for every model: look at the model it is given, "
                "not at the one in the notebook.")
    return ("find_nonleaf(model) walks everything deepcopy walks: attributes, dicts, lists, submodules "
            f"({FIND_LESSON}).")


# --- Exercise 4: a Dataset that spawn workers can load ---------------------------------------------

LOADER_LESSON = "05_scenario_dataloader_workers"
SPAWN_ROWS, SPAWN_BATCH = 8, 4
SPAWN_TIMEOUT_S = 60.0


def _quiet_worker(worker_id: int) -> None:
    """worker_init_fn: a worker's stderr goes nowhere, so nothing it prints lands in the notebook."""
    devnull = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the worker)
    os.dup2(devnull.fileno(), 2)
    sys.stderr = devnull


def _spawn_batches(dataset) -> tuple[list[torch.Tensor], str | None]:
    """All batches of a real DataLoader with two spawn workers, or the error as a line; never hangs."""
    loader = DataLoader(dataset, batch_size=SPAWN_BATCH, num_workers=2, multiprocessing_context="spawn",
                        timeout=SPAWN_TIMEOUT_S, worker_init_fn=_quiet_worker)
    iterator = None
    try:
        iterator = iter(loader)
        return list(iterator), None
    except Exception as error:  # noqa: BLE001 (the error is the feedback)
        if "exited unexpectedly" in str(error):  # the message names process ids: keep it deterministic
            return [], f"{type(error).__name__}: a DataLoader worker exited unexpectedly"
        return [], cause_line(error)
    finally:
        if hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()  # workers must not outlive the check


def _spawn_data() -> torch.Tensor:
    generator = torch.Generator().manual_seed(4)
    x = torch.randn(SPAWN_ROWS, 3, generator=generator, requires_grad=True)
    return x * 2


@_exercise("Exercise 4 · a Dataset for spawn workers")
def check_spawn_dataset(dataset_class: type) -> str:
    """Build ``dataset_class(data)`` from non-leaf ``data`` and load it with two spawn workers."""
    name = _require_class(dataset_class)
    if dataset_class.__module__ == "__main__":
        raise _Wrong(f"{name} is defined in the notebook itself, in the module __main__.",
                     "A spawn worker is a fresh Python process: it imports the dataset's class by module "
                     "and name, and the notebook's __main__ does not exist there (the worker dies with "
                     "\"AttributeError: Can't get attribute ...\"). Keep the class in the module file "
                     f"that the %%writefile cell writes, and import it from there ({LOADER_LESSON}).")
    data = _spawn_data()
    before = data.detach().clone()
    dataset = _call(dataset_class, f"{name}(data)", data)
    if data.is_leaf or not torch.equal(data.detach(), before):
        raise _Wrong(f"{name}(data) changed the tensor it was given.",
                     "The caller's tensor may still be needed for backward(): an in-place change such "
                     "as detach_() cuts its graph too. Leave the argument alone; keep something else.")
    batches, error = _spawn_batches(dataset)
    if error:
        raise _Wrong(f"the DataLoader with two spawn workers failed: {error}", _spawn_hint(error))
    if not all(isinstance(batch, torch.Tensor) for batch in batches):
        raise _Wrong("each row should be a tensor, as in the dataset given: __getitem__ returns data[index].")
    rows = torch.cat(batches) if batches else torch.empty(0)
    if rows.shape != before.shape or not torch.equal(rows, before):
        raise _Wrong("the workers delivered rows that differ from the data the dataset was given.",
                     "Detaching keeps the values; only the history goes.")
    return (f"two spawn workers loaded all {SPAWN_ROWS} rows, equal to the data, and the caller's "
            "tensor kept its graph.")


def _spawn_hint(error: str) -> str:
    if COWARDLY in error:
        return ("spawn sends the whole dataset to each worker by pickling it, and PyTorch refuses to "
                "pickle a tensor that has a grad_fn. Detaching a row in __getitem__ is too late: the "
                "dataset travels before any row is read. Take the data out of the graph once, when the "
                f"dataset is built ({LOADER_LESSON}).")
    if "exited unexpectedly" in error:
        return ("a worker died before it could report an error, typically because it could not "
                "import the dataset's class: keep the class in a module file, not in the notebook.")
    if "timed out" in error:
        return (f"no batch arrived within {SPAWN_TIMEOUT_S:.0f} s; run the DataLoader yourself with "
                "num_workers=0 to see why.")
    return "Run the same DataLoader with num_workers=0 in a cell to see the error in this process."


# --- Exercise 5: a model that caches an activation -------------------------------------------------

CACHE_LESSON = "06_scenario_model_cache"


class CachingNetAsGiven(nn.Module):
    """Exercise 5's model as given: forward keeps its hidden activation for a monitor to read."""

    def __init__(self, features: int = 4, hidden: int = 8):
        super().__init__()
        self.hidden = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, 1)
        self.last_hidden = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.hidden(x))
        self.last_hidden = h  # read by a monitoring callback after each step
        return self.out(h)


@_exercise("Exercise 5 · fix the cache")
def check_cache_fix(model_class: type) -> str:
    """Deepcopy must work after a forward; outputs, the cache and one training step must not change."""
    name = _require_class(model_class)
    torch.manual_seed(5)
    reference = CachingNetAsGiven()
    model = _call(model_class, f"{name}()")
    if not isinstance(model, nn.Module):
        raise _Wrong(f"{name}() should make an nn.Module; it made a {type(model).__name__}.")
    if _shapes(model) != _shapes(reference):
        raise _Wrong(f"{name} has different layers from CachingNetAsGiven.",
                     "Keep __init__ as given: only what forward() keeps needs to change.")
    model.load_state_dict(reference.state_dict())
    x, target = torch.randn(5, 4), torch.randn(5, 1)
    output = _call(model, f"{name}()(x)", x)
    expected = reference(x)
    if not isinstance(output, torch.Tensor) or output.shape != expected.shape or not torch.allclose(output, expected):
        raise _Wrong("the model's output changed.", "The fix is about what forward() keeps, not what it returns.")
    _check_cache(model, reference)
    _check_deepcopy(model, "after a forward pass")
    _check_training_step(model, reference, output, expected, target)
    _check_deepcopy(model, "after backward() and an optimizer step")
    return ("deepcopy works after forward and after a training step; outputs, gradients, the step "
            "and the cached values are exactly as before.")


def _shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {name: tuple(value.shape) for name, value in model.state_dict().items()}


def _check_cache(model: nn.Module, reference: CachingNetAsGiven) -> None:
    cache = getattr(model, "last_hidden", None)
    if not isinstance(cache, torch.Tensor):
        what = "None" if cache is None else f"a {type(cache).__name__}, not a tensor"
        raise _Wrong(f"deepcopy may work now, but model.last_hidden is {what}.",
                     "The monitoring callback still needs the activation's values after each step: "
                     "keep them, without what makes deepcopy fail.")
    if cache.shape != reference.last_hidden.shape or not torch.allclose(cache, reference.last_hidden):
        raise _Wrong("model.last_hidden does not hold the hidden activation any more.",
                     "Keep the values of relu(self.hidden(x)) that forward computes.")


def _check_deepcopy(model: nn.Module, when: str) -> None:
    try:
        copy.deepcopy(model)
    except Exception as error:  # noqa: BLE001 (the error is the feedback)
        findings = find_nonleaf(model)
        if not findings:
            raise _Wrong(f"copy.deepcopy(model) fails {when}: {error_line(error)}") from None
        culprit = findings[0]
        hint = {
            "ReluBackward0": ("it is still the very tensor forward computed. Assigning it under "
                              "torch.no_grad() or to another name does not change a tensor that already "
                              "has a history."),
            "CloneBackward0": "clone() copies the values but is recorded: the clone is still in the graph.",
        }.get(culprit.grad_fn, "a tensor with a history is not a leaf, and deepcopy copies only leaves.")
        raise _Wrong(f"copy.deepcopy(model) still fails {when}: model{culprit.path} has "
                     f"grad_fn={culprit.grad_fn}.", f"{hint} ({CACHE_LESSON})") from None


def _check_training_step(model, reference, output, expected, target) -> None:
    nn.functional.mse_loss(output, target).backward()
    nn.functional.mse_loss(expected, target).backward()
    gradients = dict(reference.named_parameters())
    for param_name, param in model.named_parameters():
        if param.grad is None:
            raise _Wrong(f"training changed: no gradient reaches {param_name}.",
                         "The forward pass goes on from a tensor that was cut from the graph. Cut only "
                         "the tensor you keep, not the one the computation continues with.")
        if not torch.allclose(param.grad, gradients[param_name].grad):
            raise _Wrong(f"training changed: the gradient of {param_name} differs.",
                         "Keeping an activation must not change the computation it comes from.")
    for net in (model, reference):
        torch.optim.SGD(net.parameters(), lr=0.1).step()
    if any(not torch.allclose(p, q) for p, q in zip(model.parameters(), reference.parameters())):
        raise _Wrong("training changed: one SGD step moves the weights differently.")


# --- Exercise 6: an EMA update that never breaks deepcopy ------------------------------------------

EMA_LESSON = "08_in_the_wild"
EMA_DECAY, EMA_STEPS = 0.8, 3


def _ema_setup() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(6)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    return model, torch.randn(8, 3), torch.randn(8, 1)


@_exercise("Exercise 6 · an EMA that deepcopy can copy")
def check_ema_update(ema_class: type) -> str:
    """Train a few steps calling ``ema.update(model)``; the shadow must follow the formula, stay out
    of the graph (deepcopy works), and leave the model alone."""
    name = _require_class(ema_class)
    model, x, target = _ema_setup()
    ema = _call(ema_class, f"{name}(model, decay={EMA_DECAY})", model, EMA_DECAY)
    shadow = getattr(ema, "shadow", None)
    if not isinstance(shadow, dict) or set(shadow) != {n for n, _ in model.named_parameters()}:
        raise _Wrong(f"{name}(model) should keep a dict `shadow`, one tensor per named parameter, as given.")
    expected = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1, EMA_STEPS + 1):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), target).backward()
        optimizer.step()
        weights = {n: p.detach().clone() for n, p in model.named_parameters()}
        _call(getattr(ema, "update", None), f"ema.update(model) (step {step})", model)
        _check_model_untouched(model, weights)
        _check_ema_copyable(ema, model, step)
        previous = expected
        expected = {n: EMA_DECAY * previous[n] + (1 - EMA_DECAY) * weights[n] for n in weights}
        _check_ema_values(ema.shadow, expected, previous, weights, step)
    return (f"{EMA_STEPS} updates follow decay * shadow + (1 - decay) * weight, the shadow stays out of "
            "the graph (deepcopy works at every step), and the model trains as before.")


def _check_model_untouched(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    for param_name, param in model.named_parameters():
        if not torch.equal(param.detach(), weights[param_name]):
            raise _Wrong(f"ema.update(model) changed the model's {param_name}.",
                         "The average follows the model; the model never follows the average.")


def _check_ema_copyable(ema: Any, model: nn.Module, step: int) -> None:
    if not isinstance(getattr(ema, "shadow", None), dict):
        raise _Wrong(f"after update {step}, ema.shadow is not a dict any more: update the tensors in it.")
    for param_name, param in model.named_parameters():
        if not isinstance(ema.shadow.get(param_name), torch.Tensor):
            raise _Wrong(f"after update {step}, shadow[{param_name!r}] is "
                         f"{type(ema.shadow.get(param_name)).__name__}, not a tensor.")
        if ema.shadow[param_name].untyped_storage().data_ptr() == param.untyped_storage().data_ptr():
            raise _Wrong(f"after update {step}, shadow[{param_name!r}] shares memory with the parameter.",
                         "Then it is not an average: it changes with every optimizer step. The shadow "
                         "needs memory of its own.")
    findings = find_nonleaf(ema)
    if findings:
        first = findings[0]
        raise _Wrong(f"after update {step}, copy.deepcopy(ema) fails: ema{first.path} has "
                     f"grad_fn={first.grad_fn}.",
                     "The update read the parameters while autograd was recording, so the shadow joined "
                     "the training graph. The average is bookkeeping, not part of training: compute it "
                     f"where autograd records nothing ({EMA_LESSON}).")


def _check_ema_values(shadow: dict, expected: dict, previous: dict, weights: dict, step: int) -> None:
    for param_name, value in expected.items():
        if torch.allclose(shadow[param_name], value, atol=1e-6):
            continue
        swapped = (1 - EMA_DECAY) * previous[param_name] + EMA_DECAY * weights[param_name]
        if torch.allclose(shadow[param_name], swapped, atol=1e-6):
            hint = (f"With decay={EMA_DECAY} the shadow keeps {EMA_DECAY:.0%} of its old value and moves "
                    f"{1 - EMA_DECAY:.0%} of the way to the weights; yours does the opposite.")
        else:
            hint = "Each update: new shadow = decay * old shadow + (1 - decay) * the model's weight."
        raise _Wrong(f"after update {step}, shadow[{param_name!r}] is not the moving average.", hint)


# --- student copies --------------------------------------------------------------------------------

def student_copy(notebook):
    """What students get from a solution notebook: nbgrader's ClearSolutions, ClearHiddenTests and
    ClearOutput applied to a copy (the argument is not modified)."""
    try:
        from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "Making student copies needs nbgrader: install the project's test extra "
            "(pip install -e '.[test]') or `pip install nbgrader`.") from error
    result, resources = copy.deepcopy(notebook), {}
    for preprocessor in (ClearSolutions(), ClearHiddenTests(), ClearOutput()):
        result, resources = preprocessor.preprocess(result, resources)
    return result


def write_student_copies(source: str | Path, destination: str | Path) -> list[Path]:
    """Write the student copy of every notebook in ``source`` to ``destination``; return their paths.

    Notebooks in ``destination`` without a source are removed, so the folder mirrors ``source``.
    """
    import nbformat

    source, destination = Path(source), Path(destination)
    notebooks = sorted(source.glob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"no notebooks in {source}: give the folder of the solution notebooks.")
    if destination.resolve() == source.resolve():
        raise ValueError("the student copies need a folder of their own: they would overwrite the solutions.")
    destination.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        target = destination / path.name
        nbformat.write(student_copy(nbformat.read(path, as_version=4)), target)
        written.append(target)
    for stale in set(destination.glob("*.ipynb")) - set(written):
        stale.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graphleaf_edu.exercises", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    student = commands.add_parser("student", help="write the student copies of the solution notebooks")
    student.add_argument("source", help="folder of the solution notebooks, e.g. instructor/exercises")
    student.add_argument("destination", help="folder for the student copies, e.g. notebooks/exercises")
    args = parser.parse_args(argv)
    written = write_student_copies(args.source, args.destination)
    print(f"wrote {len(written)} student copies to {args.destination}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
