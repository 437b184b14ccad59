"""The lessons' explorer tasks (graphleaf_edu.views.TASKS): each is solved by the fixes that really do
what it asks, measured on real runs, and by nothing else; explorers take a task by its name."""
import multiprocessing

import pytest

from graphleaf_edu import run_loader, views, widgets
from graphleaf_edu.scenarios import SCENARIOS

SOLVED_BY = [
    ("intermediate_tensor", "independent snapshot", ["detach_clone", "safe_deepcopy"]),
    ("model_output", "copy and keep training", ["detach_clone", "detach", "safe_deepcopy"]),
    ("model_cache", "fix at the source", ["detach_at_source"]),
    ("forward_hook", "fix at the source", ["detach_at_source"]),
    ("model_cache", "copy without changing anything", ["custom_deepcopy", "getstate", "safe_deepcopy"]),
    ("model_cache", "a class you cannot edit", ["safe_deepcopy"]),
]


@pytest.mark.parametrize(("scenario", "task", "solutions"), SOLVED_BY, ids=lambda v: v if isinstance(v, str) else "")
def test_a_scenario_task_is_solved_by_exactly_the_fixes_that_do_what_it_asks(scenario, task, solutions):
    scenario = SCENARIOS[scenario]
    solved = [fix for fix in scenario.fix_keys() if views.TASKS[task].done(views.scenario_view(scenario, fix))]
    assert solved == solutions


@pytest.mark.parametrize(("expression", "solves"), [
    ("w @ x + b", False), ("(w @ x + b).detach()", True), ("(w @ x + b).detach().clone()", True),
    ("x.detach()", False), ("(w @ x + b) * 0", False), ("w @ x +", False),
])
def test_the_playground_task_wants_the_affine_result_without_its_graph(expression, solves):
    assert views.TASKS["copyable affine"].done(views.playground_view(expression)) is solves


def test_the_loader_tasks_want_fresh_interpreter_workers_that_deliver():
    kwargs = {"num_workers": 1, "deepcopy_in_getitem": True, "timeout": 60}
    broken = views.loader_view(start_method="spawn", detach_at_construction=False, **kwargs)
    fixed = views.loader_view(broken.history, start_method="spawn", detach_at_construction=True, **kwargs)
    in_fork = views.loader_view(start_method="fork", detach_at_construction=True, **kwargs)
    for name in ("spawn workers", "spawn workers, deepcopy in __getitem__"):
        task = views.TASKS[name]
        assert (task.done(broken), task.done(fixed), task.done(in_fork)) == (False, True, False), name
    plain = views.LoaderView(run_loader(start_method="fork", num_workers=0, deepcopy_in_getitem=False,
                                        detach_at_construction=True), ())
    assert not views.TASKS["spawn workers"].done(plain), "no worker process at all"


def test_the_playground_says_why_detached_inputs_do_not_count():
    """Detaching the inputs gives a leaf of the same values, but a new computation: the task says so."""
    task = views.TASKS["copyable affine"]
    solved, reason = task.check(views.playground_view("w.detach() @ x.detach() + b.detach()"))
    assert not solved and "does not start from w @ x + b" in reason and "detaching the inputs" in reason
    assert task.check(views.playground_view("w @ x + b")) == (False, None)
    solved, reason = task.check(views.playground_view("torch.ones(3)"))
    assert not solved and "a new result" in reason and "detach" not in reason
    assert task.check(views.playground_view("(w @ x + b).detach()"))[0]


def test_the_timeout_task_wants_a_worker_failure_that_only_times_out():
    """Lesson 03's lab: a fork worker with batch_size=None sends its non-leaf rows unstacked; its queue's
    feeder thread refuses them, so this process sees only the timeout. Every other run says why not."""
    import torch
    from torch import nn

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method here")
    torch.manual_seed(0)
    features = nn.Linear(4, 4)(torch.randn(8, 4))
    task = views.TASKS["a failure that only times out"]
    kwargs = {"deepcopy_in_getitem": False, "timeout": 5, "data": features}
    silent = views.loader_view(start_method="fork", num_workers=1, detach_at_construction=False, batch_size=None,
                               **kwargs)
    assert task.check(silent)[0], silent.outcome.summary()
    assert "Cowardly refusing to serialize non-leaf tensor" in silent.outcome.worker_stderr
    # The row says the refusal is what the worker printed: only the timeout was raised here.
    assert "; printed by the worker, not raised here: RuntimeError: Cowardly refusing" in silent.outcome.summary()
    for config, reason in [
        ({"start_method": "fork", "num_workers": 1, "detach_at_construction": False}, "this error reached this process"),
        ({"start_method": "spawn", "num_workers": 1, "detach_at_construction": False, "batch_size": None},
         "this error reached this process"),
        ({"start_method": "fork", "num_workers": 1, "detach_at_construction": True, "batch_size": None},
         "the batches arrived"),
        ({"start_method": "fork", "num_workers": 0, "detach_at_construction": False, "batch_size": None},
         "with num_workers=0 no worker runs"),
    ]:
        solved, line = task.check(views.loader_view(**config, **kwargs))
        assert not solved and reason in line, (config, line)


def test_an_explorer_takes_a_task_and_a_scenario_by_name():
    explorer = widgets.scenario_explorer("model_cache", task="fix at the source")
    assert explorer.scenario.value is SCENARIOS["model_cache"]
    assert explorer.task is views.TASKS["fix at the source"]
    assert "holds no graph" in explorer.task_status.value and "graphleaf-solved" not in explorer.task_status.value
    explorer.fix.value = "detach_at_source"
    explorer.deepcopy.click()
    assert "graphleaf-solved" in explorer.task_status.value
    assert widgets.leaf_playground(task="copyable affine").task is views.TASKS["copyable affine"]


def test_an_unknown_task_or_scenario_name_lists_the_names():
    with pytest.raises(KeyError, match=r"no task named 'snapshot'; the tasks are \['a class you cannot edit', 'a failure that only times out', 'copy and keep training'"):
        widgets.dataloader_lab(task="snapshot")
    with pytest.raises(KeyError, match=r"no scenario 'cache'; the scenarios are \["):
        widgets.scenario_explorer("cache")


WHY_NOT = [
    ("model_output", "copy and keep training", "no_grad", "output has no graph left to train through"),
    ("model_cache", "fix at the source", "custom_deepcopy", "model.cache in the original still has a grad_fn"),
    ("model_cache", "fix at the source", "safe_deepcopy", "model.cache in the original still has a grad_fn"),
    ("model_cache", "fix at the source", "clear_cache", "it changes the original model"),
    ("intermediate_tensor", "independent snapshot", "detach", "it shares y's memory"),
    ("model_cache", "copy without changing anything", "state_dict", "with the constructor's arguments"),
    ("model_cache", "a class you cannot edit", "detach_at_source", "rebuilds model as another class: it is a CachedDetached, not the Cached you were given"),
    ("model_cache", "a class you cannot edit", "custom_deepcopy", "rebuilds model as another class: it is a CachedWithDeepcopy, not the Cached you were given"),
    ("model_cache", "a class you cannot edit", "getstate", "rebuilds model as another class: it is a CachedWithGetstate, not the Cached you were given"),
    ("model_cache", "a class you cannot edit", "state_dict", "copied.cache is None: the copy lost its values"),
    ("model_cache", "a class you cannot edit", "clear_cache", "it changes the original model"),
]


@pytest.mark.parametrize(("scenario", "task", "fix", "reason"), WHY_NOT, ids=lambda v: v if isinstance(v, str) else "")
def test_a_copy_that_works_but_is_no_solution_says_why_in_one_line(scenario, task, fix, reason):
    status = views.TASKS[task].status(views.scenario_view(SCENARIOS[scenario], fix))
    _, sign = status.split("\n")
    assert sign.startswith("→ not this one: the copy works, but ") and reason in sign


def test_a_failing_copy_or_a_solution_gives_no_reason():
    task = views.TASKS["fix at the source"]
    assert "\n" not in task.status(views.scenario_view(SCENARIOS["model_cache"], "none"))
    assert task.status(views.scenario_view(SCENARIOS["model_cache"], "detach_at_source")).split("\n")[1].startswith("✔")


def test_the_explorer_shows_the_reason_apart_from_the_solved_sign():
    explorer = widgets.scenario_explorer("model_cache", "getstate", task="fix at the source")
    explorer.deepcopy.click()
    assert "graphleaf-not-yet" in explorer.task_status.value and "graphleaf-solved" not in explorer.task_status.value
    assert "still has a grad_fn" in explorer.task_status.value


def test_lesson_01s_solved_sign_agrees_with_a_detach_that_copies_nothing():
    view = views.scenario_view(SCENARIOS["model_output"], "detach")
    assert view.result_text.startswith("✓ no copy made, none needed")
    solved = views.TASKS["copy and keep training"].status(view).split("\n")[1]
    assert solved.startswith("✔ Solved:") and "copy" not in solved.lower()


def test_checking_a_task_leaves_the_notebooks_random_numbers_alone():
    import torch
    view = views.scenario_view(SCENARIOS["intermediate_tensor"], "detach")
    views.clear_caches()
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    views.TASKS["independent snapshot"].status(view)
    assert torch.equal(torch.rand(3), expected)


def test_a_task_measures_each_fix_once_for_its_check_and_its_reason(monkeypatch):
    runs = []
    measure = views.tasks.measure_fix
    monkeypatch.setattr(views.tasks, "measure_fix", lambda scenario, fix: runs.append(fix) or measure(scenario, fix))
    views.clear_caches()
    view = views.scenario_view(SCENARIOS["model_cache"], "getstate")
    for _ in range(2):
        assert views.TASKS["fix at the source"].check(view) == (False, views.TASKS["fix at the source"].why_not(view))
    assert runs == ["getstate"]
