"""measure_fix: what a fix did, measured on the run's objects (the fix toolbox's table and tasks use it)."""
import sys

import pytest
import torch
from torch import nn

from graphleaf_edu.scenarios import MOVED_OUT, SCENARIOS, measure_fix, tensors_in

FIXES = [(key, fix) for key, scenario in SCENARIOS.items() for fix in scenario.fix_keys()]


@pytest.mark.parametrize(("key", "fix"), FIXES)
def test_a_measured_change_is_one_the_catalog_declares(key, fix):
    """Declared and measured agree; the one undeclared change is where a queue moves y's memory."""
    declared = SCENARIOS[key].fix(fix).mutates_original
    changed = measure_fix(SCENARIOS[key], fix).original_changed
    if (key, fix) == ("mp_queue", "detach"):
        assert changed == "moved to shared memory"
    else:
        assert (changed != "no") == declared, changed


def test_the_state_dict_route_rebuilds_and_the_others_do_not():
    rebuilt = {(key, fix) for key, fix in FIXES if measure_fix(SCENARIOS[key], fix).rebuilds}
    assert rebuilt == {(key, "state_dict") for key, scenario in SCENARIOS.items() if "state_dict" in scenario.fix_keys()}


def test_constructors_in_the_setup_do_not_count():
    """The setup builds the model too; only what the copy function builds is a rebuild."""
    assert measure_fix(SCENARIOS["model_cache"], "none").rebuilds is False


def test_the_profile_hook_is_put_back():
    def previous(frame, event, arg):
        return None

    sys.setprofile(previous)
    try:
        measure_fix(SCENARIOS["model_cache"], "state_dict")
        assert sys.getprofile() is previous
    finally:
        sys.setprofile(None)


def test_each_question_on_the_fix_that_answers_it():
    cache = SCENARIOS["model_cache"]
    assert measure_fix(SCENARIOS["intermediate_tensor"], "detach").shares_memory is True
    assert measure_fix(SCENARIOS["intermediate_tensor"], "detach_clone").shares_memory is False
    assert measure_fix(cache, "none").shares_memory is None  # no copy to compare
    cleared = measure_fix(cache, "clear_cache")
    assert cleared.works and cleared.original_changed != "no" and cleared.keeps_graph is False
    assert measure_fix(cache, "detach_at_source").keeps_graph is False
    assert measure_fix(SCENARIOS["forward_hook"], "outside_dict").keeps_graph == MOVED_OUT
    safe = measure_fix(cache, "safe_deepcopy")
    assert (safe.works, safe.shares_memory, safe.original_changed, safe.keeps_graph, safe.rebuilds) == \
        (True, False, "no", True, False)


def test_tensors_in_walks_what_deepcopy_walks():
    """A plain leaf's .grad is copied with it; a Parameter's is not (nn.Parameter.__deepcopy__ drops it)."""
    leaf = torch.ones(2, requires_grad=True)
    layer = nn.Linear(2, 1)
    (layer(leaf.unsqueeze(0)).sum()).backward()
    found = tensors_in({"leaf": leaf, "layer": layer, "kept": [torch.zeros(1)]}).values()
    assert any(t is leaf.grad for t in found)
    assert any(t is layer.weight for t in found) and not any(t is layer.weight.grad for t in found)
