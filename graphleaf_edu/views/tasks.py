"""The lessons' explorer tasks, by name: what to do, and the check that says it is done.

A lesson writes ``gl.scenario_explorer("model_cache", task="fix at the source")``; the check lives
here, so a lesson shows the task and its sign, never the checking code. Each check reads the
explorer's current view and measures what the run really did (``measure_fix``), never a fix's key.

    >>> TASKS["independent snapshot"].done(scenario_view(SCENARIOS["intermediate_tensor"], "detach"))
    False
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from graphleaf_edu.i18n import N_, say
from graphleaf_edu.paths import resolve
from graphleaf_edu.scenarios import NONE, Scenario
from graphleaf_edu.scenarios.measure import FixMeasurement, measure_fix
from graphleaf_edu.views.common import (
    Task,
    cached,
    keeping_random_state,
    translated_cell,
)
from graphleaf_edu.views.fixes import FixComparison
from graphleaf_edu.views.loader import LoaderView
from graphleaf_edu.views.playground import PlaygroundView
from graphleaf_edu.views.scenario import ScenarioView

__all__ = ["TASKS", "task_named"]


@functools.lru_cache(maxsize=32)
def _measured(scenario: Scenario, fix: str) -> FixMeasurement:
    """One measurement per scenario and fix (their setups are seeded), made without touching the
    notebook's random numbers: a task's check and its reason read the same run."""
    with keeping_random_state():
        return measure_fix(scenario, fix)


cached(_measured.cache_clear)


@dataclass(frozen=True)
class _CopiedCulprit:
    """What a fix's run did to the class, and what its copy holds where the original held the culprit."""

    class_name: str  # the original's class after the fix
    unfixed_class_name: str  # the class the scenario builds without a fix
    copy_holds: str  # "values": the culprit's values; else what the copy holds there ("None", a type name)


@functools.lru_cache(maxsize=32)
def _copied_culprit(scenario: Scenario, fix: str) -> _CopiedCulprit:
    """One run per scenario and fix, measured on its objects (seeded, the notebook's random numbers kept)."""
    with keeping_random_state():
        unfixed = scenario.namespace(NONE)[scenario.target]
        outcome = scenario.run(fix)
    holds = "-"
    if outcome.ok:
        original, copied = _at(outcome.original, scenario.culprit), _at(outcome.copied, scenario.culprit)
        if (isinstance(copied, torch.Tensor) and isinstance(original, torch.Tensor)
                and copied.shape == original.shape and torch.equal(copied.detach().cpu(), original.detach().cpu())):
            holds = "values"
        else:
            holds = "None" if copied is None else type(copied).__name__
    return _CopiedCulprit(type(outcome.original).__name__, type(unfixed).__name__, holds)


cached(_copied_culprit.cache_clear)


def _at(root: object, path: str) -> object:
    try:
        return resolve(root, path)
    except (AttributeError, KeyError, IndexError, TypeError):
        return None


def copyable_affine(view: PlaygroundView) -> bool:
    """The expression starts from ``w @ x + b`` and ``copy.deepcopy`` accepts its result."""
    return view.ok and view.info is not None and "w @ x + b" in view.expression and view.info.deepcopy_ok


def _copies_but_not_from_the_affine(view: PlaygroundView) -> str | None:
    """Why a copyable result that does not start from ``w @ x + b`` is not the answer: it is a new result
    (``w.detach() @ x.detach() + b.detach()`` computes one from detached inputs); the task wants ``w @ x + b``'s own."""
    if not (view.ok and view.info is not None and view.info.deepcopy_ok) or "w @ x + b" in view.expression:
        return None
    if ".detach()" in view.expression:
        return say("not this one: it copies, but it does not start from w @ x + b: detaching the inputs computes a "
                   "new result, not the output of w @ x + b made copyable")
    return say("not this one: it copies, but it does not start from w @ x + b: it is a new result, not the output "
               "of w @ x + b made copyable")


def independent_snapshot(view: ScenarioView) -> bool:
    """The copy was made, and it keeps its numbers in memory of its own."""
    measured = _measured(view.scenario, view.fix)
    return measured.works and measured.shares_memory is False


def copy_and_keep_training(view: ScenarioView) -> bool:
    """The copy was made, and the original still has its ``grad_fn`` (training can backpropagate)."""
    measured = _measured(view.scenario, view.fix)
    return measured.works and measured.keeps_graph is True


def fixed_at_the_source(view: ScenarioView) -> bool:
    """The copy was made without changing the original, and the tensor that broke it is stored without
    its graph: every later copy, pickle or checkpoint works too."""
    measured = _measured(view.scenario, view.fix)
    return measured.works and measured.original_changed == "no" and measured.keeps_graph is False


def copies_without_constructor_or_change(view: ScenarioView) -> bool:
    """The copy works, the original is unchanged and keeps its graph, and the model's class was never built."""
    measured = _measured(view.scenario, view.fix)
    return (measured.works and measured.original_changed == "no" and measured.keeps_graph is True
            and not measured.rebuilds)


def copies_the_cache_class_unedited(view: ScenarioView) -> bool:
    """The copy works and holds the culprit's values; the original is unchanged and of the class the scenario
    builds without a fix (the model given was not rebuilt as another class, a subclass included)."""
    measured, copied = _measured(view.scenario, view.fix), _copied_culprit(view.scenario, view.fix)
    return (measured.works and measured.original_changed == "no" and copied.class_name == copied.unfixed_class_name
            and copied.copy_holds == "values")


def _why_not_class_unedited(view: ScenarioView) -> str | None:
    """The original changed, the model was rebuilt as another class, or the copy lost the culprit's values: the
    first that holds."""
    if (reason := _works_but(view)) is not None or not _measured(view.scenario, view.fix).works:
        return reason
    copied = _copied_culprit(view.scenario, view.fix)
    if copied.class_name != copied.unfixed_class_name:
        return say("not this one: the copy works, but the fix rebuilds {target} as another class: it is a {fixed}, "
                   "not the {unfixed} you were given", target=view.scenario.target, fixed=copied.class_name,
                   unfixed=copied.unfixed_class_name)
    if copied.copy_holds != "values":
        return say("not this one: the copy works, but copied{path} is {value}: the copy lost its values",
                   path=view.scenario.culprit, value=copied.copy_holds)
    return None


def spawn_workers_deliver(view: LoaderView) -> bool:
    """The latest run used fresh-interpreter workers (spawn or forkserver) and every batch arrived."""
    run = view.outcome
    return run.start_method in ("spawn", "forkserver") and run.num_workers > 0 and run.ok


def spawn_workers_deliver_deepcopied_rows(view: LoaderView) -> bool:
    """As ``spawn_workers_deliver``, with ``__getitem__`` still deep-copying each row."""
    return spawn_workers_deliver(view) and view.outcome.deepcopy_in_getitem


def a_failure_that_only_times_out(view: LoaderView) -> bool:
    """The latest run's workers failed, and this process saw no error from them: only the loader's timeout,
    with the workers' own failure left in what they printed."""
    run = view.outcome
    return (run.num_workers > 0 and not run.ok and "DataLoader timed out" in str(run.error_line)
            and bool(run.worker_stderr.strip()))


def _reached_here(view: LoaderView) -> str | None:
    """Why a DataLoader run that did not only time out is not the answer, in one line."""
    run = view.outcome
    if run.num_workers == 0:
        return say("not this one: with num_workers=0 no worker runs: this process reads the rows itself and "
                   "sends nothing")
    if run.ok:
        return say("not this one: the batches arrived")
    return say("not this one: this error reached this process")


def _works_but(view: ScenarioView, *, changes: bool = True, shares: bool = False, graph: bool | None = None,
               rebuilds: bool = False) -> str | None:
    """Why a fix whose copy works is not the answer, in one line: the first measured reason the task cares
    about (the original changed, memory shared, the culprit's graph kept or lost, the constructor run)."""
    measured = _measured(view.scenario, view.fix)
    if not measured.works:
        return None
    target, path = view.scenario.target, view.scenario.target + view.scenario.culprit
    if changes and measured.original_changed != "no":
        return say("not this one: the copy works, but it changes the original {target} ({changed})",
                   target=target, changed=translated_cell(measured.original_changed))
    if shares and measured.shares_memory:
        return say("not this one: the copy works, but it shares {target}'s memory: a change to one shows in both",
                   target=target)
    if graph is True and measured.keeps_graph is not True:
        return say("not this one: the copy works, but {target} has no graph left to train through", target=target)
    if graph is False and measured.keeps_graph is True:
        return say("not this one: the copy works, but {path} in the original still has a grad_fn: the model "
                   "itself still holds its graph", path=path)
    if rebuilds and measured.rebuilds:
        return say("not this one: the copy works, but it builds a new {target} with the constructor's arguments",
                   target=target)
    return None


def no_fix_changes_the_original(view: FixComparison) -> bool:
    """In the comparison shown, every fix that works leaves the original unchanged, as measured."""
    works, changed = view.column("works"), view.column("original changed")
    return all(change == "no" for worked, change in zip(works, changed, strict=True) if worked)


TASKS: dict[str, Task] = {
    "copyable affine": Task(N_("Type an expression that starts from w @ x + b, has the same values, and gives a "
                               "tensor copy.deepcopy accepts."), copyable_affine,
                            solved=N_("Solved: a tensor without a grad_fn."), why_not=_copies_but_not_from_the_affine),
    "independent snapshot": Task(N_("Find a fix whose copy works and shares no memory with y."), independent_snapshot,
                                 solved=N_("Solved: an independent snapshot."),
                                 why_not=lambda view: _works_but(view, changes=False, shares=True)),
    "copy and keep training": Task(N_("Find a fix that gives the output's values outside the graph, so they copy, "
                                      "and keeps the output in the graph, so training can still backpropagate "
                                      "through it."), copy_and_keep_training,
                                   solved=N_("Solved: the values kept outside the graph, and training goes on."),
                                   why_not=lambda view: _works_but(view, graph=True)),
    "fix at the source": Task(N_("Find the fix after which the model itself holds no graph, so that every later "
                                 "copy works, without the copy changing the model."), fixed_at_the_source,
                              solved=N_("Solved: fixed where the tensor is stored."),
                              why_not=lambda view: _works_but(view, graph=False)),
    "a class you cannot edit": Task(N_("Cached comes from a library, and you must work with the model you were "
                                       "given, already built: you cannot edit its class or rebuild it as another "
                                       "class. Copy the model so that copied.cache holds the cache's values, "
                                       "leaving the original model exactly as it was."),
                                    copies_the_cache_class_unedited,
                                    solved=N_("Solved: the copy holds the cache's values; the model you were given "
                                              "is as it was, class and all."),
                                    why_not=_why_not_class_unedited),
    "copy without changing anything": Task(N_("Copy the model without its constructor, leaving the original "
                                              "exactly as it was."), copies_without_constructor_or_change,
                                           solved=N_("Solved: a copy that changes nothing."),
                                           why_not=lambda view: _works_but(view, rebuilds=True)),
    "spawn workers": Task(N_("Make spawn (or forkserver) workers deliver their batches."), spawn_workers_deliver,
                          solved=N_("Solved: fresh worker processes received the dataset.")),
    "a failure that only times out": Task(
        N_("Find a setting in which a worker fails but no error reaches this process: the loader only waits, until "
           "its timeout."), a_failure_that_only_times_out,
        solved=N_("Solved: the worker failed while sending, and only timeout= ended the wait."),
        why_not=_reached_here),
    "spawn workers, deepcopy in __getitem__": Task(
        N_("Make spawn workers deliver batches while __getitem__ still deep-copies."),
        spawn_workers_deliver_deepcopied_rows, solved=N_("Solved: spawn workers, rows deep-copied, batches delivered.")),
    "no fix changes the original": Task(N_("Find a model whose working fixes all leave the original unchanged."),
                                        no_fix_changes_the_original, solved=N_("Solved: no fix here changes your model.")),
}


def task_named(task: Task | str | None) -> Task | None:
    """A ``Task`` given as itself or by its name in ``TASKS``; an unknown name says which exist."""
    if task is None or isinstance(task, Task):
        return task
    if task not in TASKS:
        raise KeyError(say("no task named {task!r}; the tasks are {tasks} (or pass a graphleaf_edu.views.Task)",
                           task=task, tasks=sorted(TASKS)))
    return TASKS[task]

