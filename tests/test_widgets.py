"""The explorers, driven from Python (no browser): thin widgets over the views."""
import pytest

from graphleaf_edu import SCENARIOS, views, widgets
from graphleaf_edu.scenarios import NONE

SVG_START = b"<?xml"


# --- the widgets, driven from Python --------------------------------------------------------------

def test_scenario_explorer_runs_on_deepcopy_then_redraws_on_every_change():
    explorer = widgets.scenario_explorer(SCENARIOS["model_cache"])
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

    explorer.scenario.value = SCENARIOS["old_weight_norm"]
    assert explorer.fix.value == NONE
    assert [key for _, key in explorer.fix.options] == SCENARIOS["old_weight_norm"].fix_keys()
    assert "weight_norm(nn.Linear(4, 3))" in explorer.code.value and "graph leaves" in explorer.result.value


def test_scenario_explorer_offers_the_fixes_a_lesson_names_for_its_first_scenario_only():
    explorer = widgets.scenario_explorer("model_cache", "state_dict", fixes=["safe_deepcopy", "state_dict"])
    assert [key for _, key in explorer.fix.options] == ["none", "state_dict", "safe_deepcopy"]  # the catalog's order
    explorer.scenario.value = SCENARIOS["old_weight_norm"]
    assert [key for _, key in explorer.fix.options] == SCENARIOS["old_weight_norm"].fix_keys()
    explorer.scenario.value = SCENARIOS["model_cache"]
    assert [key for _, key in explorer.fix.options] == ["none", "state_dict", "safe_deepcopy"]
    assert len(widgets.scenario_explorer("model_cache").fix.options) == len(SCENARIOS["model_cache"].fixes)
    with pytest.raises(KeyError, match="has no fix 'detach'; choose one of"):
        widgets.scenario_explorer("model_cache", fixes=["detach"])


def test_scenario_explorer_escapes_code():
    explorer = widgets.scenario_explorer(SCENARIOS["ema_copy"])
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
    assert ">deepcopy_ok</th>" in playground.info.value and "is_view" not in playground.info.value


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
    lab.deepcopy_in_getitem.value = True
    lab.run.click()
    assert [status.startswith("<b>running…</b>") and disabled for status, disabled in seen] == [True, True]
    assert not lab.run.disabled
    assert len(lab.history) == 2 and lab.history[0].ok and not lab.history[1].ok
    assert lab.table.value.count("(main process)") == 2
    lab.clear.click()
    assert lab.history == () and lab.table.value == ""


def lesson_03_features():
    """The features lesson 03 builds (its setup seeds torch with 0) and hands to its lab."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    encoder = nn.Linear(4, 4)
    return encoder(torch.randn(8, 4))


def test_dataloader_lab_starts_as_lesson_03_does_and_fork_fails_in_stack():
    """Lesson 03's dataset deep-copies nothing: the lab starts so, on the lesson's features, without the
    deepcopy checkbox or column, and its fork run fails as 03's does (an error that reaches this process)."""
    features = lesson_03_features()
    lab = widgets.dataloader_lab(features, task="a failure that only times out", offer_deepcopy=False)
    assert lab.data is features
    assert (lab.deepcopy_in_getitem.value, lab.detach_at_construction.value) == (False, False)
    shown = [w for box in lab.children if hasattr(box, "children") for w in box.children]
    assert lab.detach_at_construction in shown and lab.deepcopy_in_getitem not in shown
    if "fork" not in lab.start_method.options:
        pytest.skip("no fork start method here")
    lab.start_method.value = "fork"
    lab.run.click()
    outcome = lab.history[-1]
    assert not outcome.ok and "stack(): functions with out=" in outcome.cause_line
    assert "graphleaf-solved" not in lab.task_status.value
    assert "this error reached this process" in lab.task_status.value
    assert "detach at construction" in lab.table.value and "deepcopy in __getitem__" not in lab.table.value


def test_dataloader_lab_loads_the_rows_it_is_given():
    import torch

    rows = torch.ones(6, 3, requires_grad=True) * 2
    lab = widgets.dataloader_lab(rows)
    lab.num_workers.value = 0
    lab.detach_at_construction.value = True
    lab.run.click()
    assert lab.history[-1].ok and (lab.history[-1].batches, lab.history[-1].batch_shape) == (2, (4, 3))
    with pytest.raises(TypeError, match="data must be a tensor with one row per item, not str"):
        widgets.dataloader_lab("spawn workers")


def test_fix_comparison_switches_model():
    explorer = widgets.fix_comparison()
    assert "store out.detach() in forward" in explorer.table.value
    explorer.model.value = SCENARIOS["old_weight_norm"]
    assert "torch.nn.utils.parametrizations.weight_norm" in explorer.table.value


def test_package_exports_the_four_explorers():
    import graphleaf_edu as gl

    for name in ("scenario_explorer", "leaf_playground", "dataloader_lab", "fix_comparison"):
        assert getattr(gl, name) is getattr(widgets, name) and name in gl.__all__


def test_explorers_have_a_short_plain_text_form():
    for explorer in (widgets.scenario_explorer(), widgets.leaf_playground(), widgets.fix_comparison()):
        text = explorer._repr_mimebundle_()["text/plain"]
        assert text.startswith(type(explorer).__name__ + ": an interactive explorer") and "\n" not in text


def test_an_explorers_plain_text_form_speaks_the_notebooks_language():
    """A Chinese notebook viewed where widgets cannot render (GitHub, the book's text) says so in Chinese."""
    from graphleaf_edu import i18n

    i18n.set_language("zh-CN")
    try:
        text = widgets.dataloader_lab()._repr_mimebundle_()["text/plain"]
    finally:
        i18n.set_language(None)
    assert text.startswith("DataLoaderLab：") and "Jupyter" in text and "interactive" not in text


def test_fix_comparison_takes_a_measure_and_offers_models_only():
    def shares_memory(scenario, fix):
        outcome = scenario.run(fix)
        return {"works": outcome.ok, "copy is original": outcome.copied is outcome.original}

    explorer = widgets.fix_comparison(SCENARIOS["pruning"], measure=shares_memory)
    assert ">copy is original</th>" in explorer.table.value
    with pytest.raises(ValueError, match="compares models"):
        widgets.fix_comparison(SCENARIOS["intermediate_tensor"])
    with pytest.raises(TypeError, match="pass a Scenario"):
        widgets.fix_comparison("pruning")


def test_an_explorer_with_a_task_shows_it_and_its_solved_sign():
    task = views.Task("Copy the model and keep its cache's values.", lambda view: view.ok and view.fix == "detach_at_source",
                      solved="Solved: the cache is detached where it is made.")
    explorer = widgets.scenario_explorer(SCENARIOS["model_cache"], task=task)
    assert explorer.children[0] is explorer.task_status
    assert "Copy the model" in explorer.task_status.value and "graphleaf-solved" not in explorer.task_status.value
    explorer.deepcopy.click()
    assert "graphleaf-solved" not in explorer.task_status.value
    explorer.fix.value = "detach_at_source"
    assert "✔ Solved: the cache is detached where it is made." in explorer.task_status.value
    assert all("graphleaf-task" not in child._dom_classes for child in widgets.leaf_playground().children)


