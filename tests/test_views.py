"""The views: what the explorers show, as plain functions of data (no kernel, no browser)."""
import collections

import pytest
import torch

from graphleaf_edu import SCENARIOS, describe, views
from graphleaf_edu.scenarios import NONE
from graphleaf_edu.views import common

SVG_START = b"<?xml"
SCENARIO_FIXES = [(key, fix) for key, scenario in SCENARIOS.items() for fix in scenario.fix_keys()]


# --- scenario_view -------------------------------------------------------------------------------

@pytest.mark.parametrize("key", list(SCENARIOS))
def test_no_fix_shows_the_real_error_and_marks_the_culprit(key):
    scenario = SCENARIOS[key]
    view = views.scenario_view(SCENARIOS[key])
    assert not view.ok
    assert view.code == scenario.code(NONE)
    assert view.error_line.startswith(scenario.error.type.__name__ + ": ")
    assert scenario.error.contains in view.result_text
    assert f"{scenario.target}{scenario.culprit}: non-leaf" in view.caption
    assert "cannot deepcopy" in view.graph.source
    assert view.picture.startswith(SVG_START)


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_safe_deepcopy_succeeds_and_draws_the_detached_copy_beside_the_original(key):
    view = views.scenario_view(SCENARIOS[key], "safe_deepcopy")
    assert view.ok and view.error_line is None
    assert view.result_text.startswith("✓ the copy worked")
    assert "DetachedTensorsWarning" in view.result_text
    assert "copy OK" in view.graph.source and "cannot deepcopy" in view.graph.source
    assert view.picture.startswith(SVG_START)
    assert view.picture != views.scenario_view(SCENARIOS[key]).picture


@pytest.mark.parametrize(("key", "fix"), SCENARIO_FIXES)
def test_every_view_agrees_with_a_fresh_run_of_the_scenario(key, fix):
    outcome = SCENARIOS[key].run(fix)
    view = views.scenario_view(SCENARIOS[key], fix)
    assert (view.ok, view.error_line, view.code) == (outcome.ok, outcome.error_line, outcome.code)
    assert view.fix == fix and SCENARIOS[key].fix(fix).title in view.result_text
    assert "0x" not in view.text(), "views are printed in checked notebook cells: no addresses"


def test_views_are_cached_and_their_text_is_deterministic():
    first = views.scenario_view(SCENARIOS["model_cache"], "detach_at_source")
    assert views.scenario_view(SCENARIOS["model_cache"], "detach_at_source") is first
    views.clear_caches()
    again = views.scenario_view(SCENARIOS["model_cache"], "detach_at_source")
    assert again is not first
    assert (again.text(), again.picture) == (first.text(), first.picture)


def test_a_fix_that_changes_the_original_says_so():
    view = views.scenario_view(SCENARIOS["model_cache"], "clear_cache")
    assert view.ok and "changes the original model" in view.result_text
    assert "model.cache: None" in view.caption
    assert view.graph is None and view.picture is None and "no graph to draw" in view.text()


def test_a_tensor_deepcopy_never_reaches_is_not_marked():
    # parametrizations recompute weight on access: deepcopy copies original0/original1 instead.
    view = views.scenario_view(SCENARIOS["old_weight_norm"], "parametrizations")
    assert view.ok
    assert "model.weight: non-leaf, grad_fn=WeightNormInterfaceBackward0, but copy.deepcopy never reaches it" in view.caption
    assert "cannot deepcopy" not in view.graph.source and "copy OK" not in view.graph.source


def test_the_copy_inside_a_wrapper_is_found_through_module():
    view = views.scenario_view(SCENARIOS["ema_copy"], "safe_deepcopy")
    assert "copied.module.stats['mean']: leaf" in view.caption


def test_leaves_are_named_by_their_path_in_the_namespace():
    view = views.scenario_view(SCENARIOS["model_cache"])
    assert "model.linear.weight" in view.graph.source
    assert "model.cache, output" in view.graph.source  # forward() returned the tensor it cached


def test_a_scenario_is_passed_as_itself_and_an_unknown_fix_names_the_choices():
    with pytest.raises(TypeError, match=r"pass a Scenario, e.g. SCENARIOS\['model_cache'\], not str 'model_cache'"):
        views.scenario_view("model_cache")
    with pytest.raises(KeyError, match="detach_at_source"):
        views.scenario_view(SCENARIOS["model_cache"], "no_such_fix")


# --- playground_view ------------------------------------------------------------------------------

@pytest.mark.parametrize("expression", [e for e in views.PLAYGROUND_EXAMPLES if "deepcopy(x * 2)" not in e])
def test_examples_give_a_tensor_described_and_drawn(expression):
    view = views.playground_view(expression)
    expected = describe(eval(expression, {}, views.playground_namespace()))
    assert view.ok and view.info == expected
    mark = "copy OK" if expected.deepcopy_ok else "cannot deepcopy"
    assert mark in view.graph.source
    assert view.picture.startswith(SVG_START)


def test_names_in_the_graph_are_only_the_tensors_it_involves():
    view = views.playground_view("w @ x + b")
    for name in ("w\\n", "x\\n", "b\\n", "w @ x + b\\n"):
        assert name in view.graph.source
    source = views.playground_view("x * 2").graph.source
    assert "w\\n" not in source and "b\\n" not in source


@pytest.mark.parametrize(("expression", "message"), [
    ("", "Type an expression over torch, copy, x, w, b"),
    ("x +", "That is not valid Python"),
    ("y = x * 2", "is a statement; type an expression instead"),
    ("z * 2", "name 'z' is not defined. Names you can use: torch, copy, x, w, b."),
    ("open('notes.txt')", "name 'open' is not defined"),
    ("__import__('os')", "name '__import__' is not defined"),
    ("x.add_(1)", "x.add_(1) raised RuntimeError: a leaf Variable that requires grad"),
    ("copy.deepcopy(x * 2)", "raised RuntimeError: Only Tensors created explicitly by the user (graph leaves)"),
    ("x.grad", "x.grad is None, not a tensor"),
    ("x.is_leaf", "x.is_leaf is a bool (True), not a tensor"),
])
def test_mistakes_become_friendly_messages(expression, message):
    view = views.playground_view(expression)
    assert not view.ok and view.graph is None and view.info is None
    assert message in view.message


def test_each_expression_gets_fresh_tensors():
    assert views.playground_view("x.requires_grad_(False)").info.requires_grad is False
    assert views.playground_view("x").info.requires_grad is True


def test_warnings_are_shown_in_the_message_not_printed(recwarn):
    view = views.playground_view("(x * 2).grad")
    assert "warning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed" in view.message
    assert not recwarn.list


def test_missing_graphviz_gives_the_install_hint_instead_of_a_picture(monkeypatch):
    monkeypatch.setattr(common, "_pictures", collections.OrderedDict())
    monkeypatch.setenv("PATH", "/nonexistent")
    view = views.playground_view("x * 3")
    assert view.ok and view.picture is None
    assert "apt-get install graphviz" in view.message and "MulBackward0" in view.message


# --- loader_view and fix_comparison_view ----------------------------------------------------------

def test_loader_view_appends_to_a_copy_of_the_history():
    config = {"start_method": "fork", "num_workers": 0, "detach_at_construction": False}
    first = views.loader_view(**config, deepcopy_in_getitem=True)
    assert not first.outcome.ok and "graph leaves" in first.outcome.error_line
    history = first.history
    second = views.loader_view(history, **config, deepcopy_in_getitem=False, batch_size=None)
    assert history == (first.outcome,)
    assert second.history == (first.outcome, second.outcome)
    assert second.outcome.ok
    table = second.table().splitlines()
    assert len(table) == 4 and "deepcopy in __getitem__" in table[0]
    assert second.text().startswith("latest: ok: 8 batches")


@pytest.mark.slow
def test_loader_view_runs_real_workers():
    view = views.loader_view(start_method="fork", num_workers=1, deepcopy_in_getitem=True,
                               detach_at_construction=False)
    assert view.outcome.error_line == "RuntimeError: Caught RuntimeError in DataLoader worker process 0."


@pytest.mark.parametrize("scenario", views.model_scenarios(), ids=lambda scenario: scenario.key)
def test_fix_comparison_runs_every_fix_of_a_model(scenario):
    comparison = views.fix_comparison_view(scenario)
    assert [row[0] for row in comparison.rows] == scenario.fix_keys()
    assert comparison.column("works") == [scenario.run(fix).ok for fix in scenario.fix_keys()]
    assert comparison.column("original untouched") == [not fix.mutates_original for fix in scenario.fixes]
    assert comparison.column("result")[0].startswith("RuntimeError: Only Tensors")
    lines = comparison.table().splitlines()
    assert lines[0].split(" | ")[0].strip() == "fix" and len(lines) == len(scenario.fixes) + 2
    assert comparison.html().count("<tr>") == len(scenario.fixes) + 1


def test_fix_comparison_takes_a_notebook_measure_and_caches_per_measure():
    calls = []

    def shares_memory(scenario, fix):
        calls.append(fix)
        outcome = scenario.run(fix)
        return {"works": outcome.ok, "copy is original": outcome.copied is outcome.original}

    pruning = SCENARIOS["pruning"]
    first = views.fix_comparison_view(pruning, shares_memory)
    assert first.columns == ("works", "copy is original")
    assert first.rows == (("none", False, False), ("prune_remove", True, False), ("safe_deepcopy", True, False))
    assert views.fix_comparison_view(pruning, shares_memory) is first and len(calls) == 3
    assert views.fix_comparison_view(pruning).columns[0] == "how"
    assert ">copy is original</th>" in first.html()


def test_fix_comparison_offers_models_only():
    keys = [scenario.key for scenario in views.model_scenarios()]
    assert {"model_cache", "old_weight_norm", "forward_hook"} <= set(keys) and "intermediate_tensor" not in keys


# --- caches and tasks ------------------------------------------------------------------------------

def test_caches_are_bounded_and_cleared_by_one_public_call():
    views.clear_caches()
    view = views.scenario_view(SCENARIOS["model_cache"])
    assert views.scenario_view(SCENARIOS["model_cache"]) is view and common._pictures
    views.clear_caches()
    assert not common._pictures and views.scenario_view(SCENARIOS["model_cache"]) is not view
    keys = [(s, fix) for s in SCENARIOS.values() for fix in s.fix_keys()]
    for scenario, fix in keys * 3:
        views.scenario_view(scenario, fix)
    assert len(common._pictures) <= views.PICTURE_CACHE_SIZE
    from graphleaf_edu.views import scenario as scenario_module

    assert scenario_module._scenario_view.cache_info().maxsize is not None


def test_a_task_is_solved_when_its_view_shows_a_solution():
    task = views.Task("Make the copy work without changing the original.",
                      lambda view: view.ok and "changes the original" not in view.result_text, solved="Solved: a clean copy.")
    model_cache = SCENARIOS["model_cache"]
    assert task.status(None) == "task: Make the copy work without changing the original."
    assert task.status(views.scenario_view(model_cache)) == task.status(None)
    assert task.status(views.scenario_view(model_cache, "clear_cache")) == task.status(None)
    assert task.status(views.scenario_view(model_cache, "detach_at_source")).endswith("\n✔ Solved: a clean copy.")




def test_views_leave_the_notebooks_random_state_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    views.clear_caches()
    views.scenario_view(SCENARIOS["model_cache"], "safe_deepcopy")  # its code calls torch.manual_seed(0)
    views.playground_view("torch.randn(3) * x")
    views.loader_view(start_method="fork", num_workers=0, deepcopy_in_getitem=False, detach_at_construction=True)
    views.fix_comparison_view(SCENARIOS["forward_hook"], lambda scenario, fix: {"ok": scenario.run(fix).ok})
    assert torch.equal(torch.get_rng_state(), before)


# --- leaf_table and copy_table ----------------------------------------------------------------------

def test_leaf_table_tries_deepcopy_and_agrees_with_describe():
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        quiet = x * 2
    tensors = {"x": x, "x * 2": x * 2, "x[0]": x[0], "quiet": quiet, "x.detach()": x.detach()}
    lines = views.leaf_table(**tensors).splitlines()
    assert lines[0].split() == ["tensor", "is_leaf", "requires_grad", "grad_fn", "deepcopy"]
    for line, t in zip(lines[1:], tensors.values()):
        assert line.split()[-1] == ("works" if describe(t).deepcopy_ok else "raises")
    assert lines[2].split()[-2:] == ["MulBackward0", "raises"]


def test_copy_table_measures_each_way():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    table = views.copy_table({"y.detach()": y.detach(), "y.clone()": y.clone()}, original=y, source=x)
    header, detached, cloned = table.splitlines()
    assert header.split()[:4] == ["shares", "memory", "gradient", "to"]
    assert detached.split()[1:] == ["True", "False", "True", "False", "works"]
    assert cloned.split()[1:] == ["False", "True", "False", "True", "raises"]
    assert x.grad is None  # asking autograd whether a gradient reaches x accumulates nothing


@pytest.mark.parametrize("key", ["intermediate_tensor", "model_output"])
def test_a_detach_fix_is_reported_as_no_copy_and_a_clone_as_a_copy(key):
    """``detach()`` makes no copy (lesson 01): the explorer says so instead of "the copy worked" (issue 34)."""
    detached = views.scenario_view(SCENARIOS[key], "detach")
    assert detached.ok and detached.result_text.startswith("✓ no copy made, none needed")
    assert views.scenario_view(SCENARIOS[key], "detach_clone").result_text.startswith("✓ the copy worked")
