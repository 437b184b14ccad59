"""The explorers' callbacks as plain functions, and the widgets driven from Python (no browser)."""
import collections

import pytest
import torch

from graphleaf_edu import SCENARIOS, describe, widgets
from graphleaf_edu.scenarios import NONE

SVG_START = b"<?xml"
SCENARIO_FIXES = [(key, fix) for key, scenario in SCENARIOS.items() for fix in scenario.fix_keys()]


# --- scenario_view -------------------------------------------------------------------------------

@pytest.mark.parametrize("key", list(SCENARIOS))
def test_no_fix_shows_the_real_error_and_marks_the_culprit(key):
    scenario = SCENARIOS[key]
    view = widgets.scenario_view(key)
    assert not view.ok
    assert view.code == scenario.code(NONE)
    assert view.error_line.startswith(scenario.error.type.__name__ + ": ")
    assert scenario.error.contains in view.result_text
    assert f"{scenario.target}{scenario.culprit}: non-leaf" in view.caption
    assert "cannot deepcopy" in view.graph.source
    assert view.picture.startswith(SVG_START)


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_safe_deepcopy_succeeds_and_draws_the_detached_copy_beside_the_original(key):
    view = widgets.scenario_view(key, "safe_deepcopy")
    assert view.ok and view.error_line is None
    assert view.result_text.startswith("✓ the copy worked")
    assert "DetachedTensorsWarning" in view.result_text
    assert "copy OK" in view.graph.source and "cannot deepcopy" in view.graph.source
    assert view.picture.startswith(SVG_START)
    assert view.picture != widgets.scenario_view(key).picture


@pytest.mark.parametrize(("key", "fix"), SCENARIO_FIXES)
def test_every_view_agrees_with_a_fresh_run_of_the_scenario(key, fix):
    outcome = SCENARIOS[key].run(fix)
    view = widgets.scenario_view(key, fix)
    assert (view.ok, view.error_line, view.code) == (outcome.ok, outcome.error_line, outcome.code)
    assert view.fix == fix and SCENARIOS[key].fix(fix).title in view.result_text
    assert "0x" not in view.text(), "views are printed in checked notebook cells: no addresses"


def test_views_are_cached_and_their_text_is_deterministic():
    first = widgets.scenario_view("model_cache", "detach_at_source")
    assert widgets.scenario_view("model_cache", "detach_at_source") is first
    widgets._scenario_view.cache_clear()
    again = widgets.scenario_view("model_cache", "detach_at_source")
    assert again is not first
    assert (again.text(), again.picture) == (first.text(), first.picture)


def test_a_fix_that_changes_the_original_says_so():
    view = widgets.scenario_view("model_cache", "clear_cache")
    assert view.ok and "changes the original model" in view.result_text
    assert "model.cache: None" in view.caption
    assert view.graph is None and view.picture is None and "no graph to draw" in view.text()


def test_a_tensor_deepcopy_never_reaches_is_not_marked():
    # parametrizations recompute weight on access: deepcopy copies original0/original1 instead.
    view = widgets.scenario_view("old_weight_norm", "parametrizations")
    assert view.ok
    assert "model.weight: non-leaf, grad_fn=WeightNormInterfaceBackward0, but copy.deepcopy never reaches it" in view.caption
    assert "cannot deepcopy" not in view.graph.source and "copy OK" not in view.graph.source


def test_the_copy_inside_a_wrapper_is_found_through_module():
    view = widgets.scenario_view("ema_copy", "safe_deepcopy")
    assert "copied.module.stats['mean']: leaf" in view.caption


def test_leaves_are_named_by_their_path_in_the_namespace():
    view = widgets.scenario_view("model_cache")
    assert "model.linear.weight" in view.graph.source
    assert "model.cache, output" in view.graph.source  # forward() returned the tensor it cached


def test_unknown_scenario_or_fix_names_the_choices():
    with pytest.raises(KeyError, match="model_cache"):
        widgets.scenario_view("no_such_scenario")
    with pytest.raises(KeyError, match="detach_at_source"):
        widgets.scenario_view("model_cache", "no_such_fix")


# --- playground_view ------------------------------------------------------------------------------

@pytest.mark.parametrize("expression", [e for e in widgets.PLAYGROUND_EXAMPLES if "deepcopy(x * 2)" not in e])
def test_examples_give_a_tensor_described_and_drawn(expression):
    view = widgets.playground_view(expression)
    expected = describe(eval(expression, {}, widgets.playground_namespace()))
    assert view.ok and view.info == expected
    mark = "copy OK" if expected.deepcopy_ok else "cannot deepcopy"
    assert mark in view.graph.source
    assert view.picture.startswith(SVG_START)


def test_names_in_the_graph_are_only_the_tensors_it_involves():
    view = widgets.playground_view("w @ x + b")
    for name in ("w\\n", "x\\n", "b\\n", "w @ x + b\\n"):
        assert name in view.graph.source
    source = widgets.playground_view("x * 2").graph.source
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
    view = widgets.playground_view(expression)
    assert not view.ok and view.graph is None and view.info is None
    assert message in view.message


def test_each_expression_gets_fresh_tensors():
    assert widgets.playground_view("x.requires_grad_(False)").info.requires_grad is False
    assert widgets.playground_view("x").info.requires_grad is True


def test_warnings_are_shown_in_the_message_not_printed(recwarn):
    view = widgets.playground_view("(x * 2).grad")
    assert "warning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed" in view.message
    assert not recwarn.list


def test_missing_graphviz_gives_the_install_hint_instead_of_a_picture(monkeypatch):
    monkeypatch.setattr(widgets, "_pictures", collections.OrderedDict())
    monkeypatch.setenv("PATH", "/nonexistent")
    view = widgets.playground_view("x * 3")
    assert view.ok and view.picture is None
    assert "apt-get install graphviz" in view.message and "MulBackward0" in view.message


# --- loader_view and fix_comparison_view ----------------------------------------------------------

def test_loader_view_appends_to_a_copy_of_the_history():
    config = {"start_method": "fork", "num_workers": 0, "detach_at_construction": False}
    first = widgets.loader_view(**config, deepcopy_in_getitem=True)
    assert not first.outcome.ok and "graph leaves" in first.outcome.error_line
    history = first.history
    second = widgets.loader_view(history, **config, deepcopy_in_getitem=False, batch_size=None)
    assert history == (first.outcome,)
    assert second.history == (first.outcome, second.outcome)
    assert second.outcome.ok
    table = second.table().splitlines()
    assert len(table) == 4 and "deepcopy in __getitem__" in table[0]
    assert second.text().startswith("latest: ok: 8 batches")


@pytest.mark.slow
def test_loader_view_runs_real_workers():
    view = widgets.loader_view(start_method="fork", num_workers=1, deepcopy_in_getitem=True,
                               detach_at_construction=False)
    assert view.outcome.error_line == "RuntimeError: Caught RuntimeError in DataLoader worker process 0."


@pytest.mark.parametrize("key", widgets.model_scenarios())
def test_fix_comparison_runs_every_fix_of_a_model(key):
    comparison = widgets.fix_comparison_view(key)
    scenario = SCENARIOS[key]
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

    first = widgets.fix_comparison_view("pruning", shares_memory)
    assert first.columns == ("works", "copy is original")
    assert first.rows == (("none", False, False), ("prune_remove", True, False), ("safe_deepcopy", True, False))
    assert widgets.fix_comparison_view("pruning", shares_memory) is first and len(calls) == 3
    assert widgets.fix_comparison_view("pruning").columns[0] == "how"
    explorer = widgets.fix_comparison("pruning", measure=shares_memory)
    assert ">copy is original</th>" in explorer.table.value


def test_fix_comparison_offers_models_only():
    assert {"model_cache", "old_weight_norm", "forward_hook"} <= set(widgets.model_scenarios())
    assert "intermediate_tensor" not in widgets.model_scenarios()
    with pytest.raises(ValueError, match="compares models"):
        widgets.fix_comparison("intermediate_tensor")


# --- the widgets, driven from Python --------------------------------------------------------------

def test_scenario_explorer_runs_on_deepcopy_then_redraws_on_every_change():
    explorer = widgets.scenario_explorer("model_cache")
    assert "self.cache = out" in explorer.code.value
    assert "Press <b>deepcopy</b>" in explorer.result.value
    assert explorer.graph.layout.display == "none"

    explorer.deepcopy.click()
    assert "graph leaves" in explorer.result.value
    assert explorer.graph.layout.display is None and bytes(explorer.graph.value).startswith(SVG_START)
    failing_picture = bytes(explorer.graph.value)

    explorer.fix.value = "safe_deepcopy"
    assert "✓ the copy worked" in explorer.result.value
    assert bytes(explorer.graph.value) != failing_picture
    assert "safe_deepcopy(model)" in explorer.code.value

    explorer.scenario.value = "old_weight_norm"
    assert explorer.fix.value == NONE
    assert [key for _, key in explorer.fix.options] == SCENARIOS["old_weight_norm"].fix_keys()
    assert "weight_norm(nn.Linear(4, 3))" in explorer.code.value and "graph leaves" in explorer.result.value


def test_scenario_explorer_escapes_code():
    explorer = widgets.scenario_explorer("ema_copy")
    assert "self.stats[&quot;mean&quot;]" in explorer.code.value


def test_leaf_playground_shows_messages_escaped_and_takes_examples():
    playground = widgets.leaf_playground()
    assert "non-leaf tensor" in playground.message.value and bytes(playground.graph.value).startswith(SVG_START)
    playground.expression.value = "'<b>' + 1"
    assert "&lt;b&gt;" in playground.message.value and "<b>" not in playground.message.value
    assert playground.graph.layout.display == "none" and playground.info.value == ""
    playground.examples.value = "x.detach()"
    assert playground.expression.value == "x.detach()"
    assert ">is_leaf</th>" in playground.info.value and ">True</td>" in playground.info.value


def test_dataloader_lab_says_running_before_it_runs_and_keeps_history(monkeypatch):
    lab = widgets.dataloader_lab()
    seen = []
    real = widgets.loader_view

    def spy(history, **config):
        seen.append((lab.status.value, lab.run.disabled))
        return real(history, **config)

    monkeypatch.setattr(widgets, "loader_view", spy)
    lab.num_workers.value = 0
    lab.run.click()
    lab.deepcopy_in_getitem.value = False
    lab.run.click()
    assert [status.startswith("<b>running…</b>") and disabled for status, disabled in seen] == [True, True]
    assert not lab.run.disabled
    assert len(lab.history) == 2 and lab.history[1].ok
    assert lab.table.value.count("(main process)") == 2
    lab.clear.click()
    assert lab.history == () and lab.table.value == ""


def test_fix_comparison_switches_model():
    explorer = widgets.fix_comparison()
    assert "store out.detach() in forward" in explorer.table.value
    explorer.model.value = "old_weight_norm"
    assert "torch.nn.utils.parametrizations.weight_norm" in explorer.table.value


def test_package_exports_the_four_explorers():
    import graphleaf_edu as gl

    for name in ("scenario_explorer", "leaf_playground", "dataloader_lab", "fix_comparison"):
        assert getattr(gl, name) is getattr(widgets, name) and name in gl.__all__


def test_explorers_have_a_short_plain_text_form():
    for explorer in (widgets.scenario_explorer(), widgets.leaf_playground(), widgets.fix_comparison()):
        text = explorer._repr_mimebundle_()["text/plain"]
        assert text.startswith(type(explorer).__name__ + ": an interactive explorer") and "\n" not in text


def test_views_leave_the_notebooks_random_state_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    widgets._scenario_view.cache_clear()
    widgets.scenario_view("model_cache", "safe_deepcopy")  # its code calls torch.manual_seed(0)
    widgets.playground_view("torch.randn(3) * x")
    widgets.loader_view(start_method="fork", num_workers=0, deepcopy_in_getitem=False, detach_at_construction=True)
    widgets.fix_comparison_view("forward_hook", lambda scenario, fix: {"ok": scenario.run(fix).ok})
    assert torch.equal(torch.get_rng_state(), before)
