"""Every scenario raises its real error on the installed PyTorch, every fix works, code() is what ran."""
import copy
import pickle
import queue
import re
import traceback
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
from torch import nn
from torch.utils.data import Dataset

from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.errors import COWARDLY, GRAPH_LEAVES, error_line
from graphleaf_edu.scenarios import (
    NONE,
    PRELUDE,
    SCENARIOS,
    ExpectedError,
    Fix,
    Scenario,
)

SEED_SCENARIOS = ["intermediate_tensor", "model_output", "dataset_getitem", "model_cache"]
FIXES = [(s.key, f.key) for s in SCENARIOS.values() for f in s.fixes if f.key != NONE]
# The fixes whose copy is, by design, the original's memory (their cost says so).
SHARES_MEMORY = {("intermediate_tensor", "detach"), ("mp_queue", "detach")}
PROBE = torch.randn(2, 4, generator=torch.Generator().manual_seed(1))
ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")


def assert_same_values(copied, original):
    """Equal values: tensors element-wise, modules by their output on PROBE (eval mode, no graph)."""
    if isinstance(copied, Dataset):
        copied, original = copied.data, original.data
    elif isinstance(original, Dataset):  # the dataset scenario copies its first batch
        original = original.data[: len(copied)]
    if isinstance(original, nn.Module):
        copied.eval(), original.eval()
        with torch.no_grad():
            assert torch.equal(copied(PROBE), original(PROBE))
    else:
        assert torch.equal(copied.detach(), original.detach())


def storages(obj):
    tensors = [obj] if isinstance(obj, torch.Tensor) else list(obj.parameters()) + list(obj.buffers())
    return {t.untyped_storage().data_ptr() for t in tensors}


def test_seed_scenarios_come_first_in_reading_order_then_the_wild_ones():
    assert list(SCENARIOS)[:4] == SEED_SCENARIOS
    assert [s.source for s in SCENARIOS.values()] == ["seed"] * 4 + ["wild"] * (len(SCENARIOS) - 4)
    assert {"old_weight_norm", "old_spectral_norm", "pruning", "forward_hook", "ema_copy", "nonleaf_grad",
            "mp_queue"} <= set(SCENARIOS)


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_scenario_raises_its_real_error(key):
    scenario = SCENARIOS[key]
    outcome = scenario.run(NONE)
    assert not outcome.ok and outcome.copied is None
    assert type(outcome.error) is scenario.error.type
    assert scenario.error.matches(outcome.error), outcome.error_line
    with pytest.raises(scenario.error.type, match=re.escape(scenario.error.contains)):
        scenario.reproduce()


def test_the_errors_are_the_deepcopy_one_except_for_the_queue():
    for scenario in SCENARIOS.values():
        expected = COWARDLY if scenario.key == "mp_queue" else GRAPH_LEAVES
        assert scenario.error == ExpectedError(RuntimeError, expected)


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_culprit_is_the_one_tensor_find_nonleaf_names(key):
    scenario = SCENARIOS[key]
    target = scenario.namespace()[scenario.target]
    assert [finding.path for finding in find_nonleaf(target)] == [scenario.culprit]


@pytest.mark.parametrize(("key", "fix_key"), FIXES)
def test_fix_works_and_the_copy_behaves(key, fix_key):
    scenario = SCENARIOS[key]
    fix = scenario.fix(fix_key)
    outcome = scenario.run(fix_key)
    assert outcome.ok, outcome.error_line
    assert outcome.error is None and outcome.error_line is None
    assert find_nonleaf(outcome.copied) == [], "the copy still holds a grad_fn somewhere"
    copy.deepcopy(outcome.copied)  # and so it can be deep-copied again

    left_in_original = [finding.path for finding in find_nonleaf(outcome.original)]
    if fix.mutates_original:
        assert left_in_original == [], "the fix says it changes the original, but the graph is still there"
    elif fix.setup_code is None:
        assert left_in_original == [scenario.culprit], "the original lost its graph"
        assert_same_values(outcome.original, scenario.namespace(fix_key)[scenario.target])

    if not isinstance(outcome.original, Dataset):
        shared = bool(storages(outcome.copied) & storages(outcome.original))
        assert shared == ((key, fix_key) in SHARES_MEMORY)
    assert_same_values(outcome.copied, outcome.original)


# Run here with a plain exec, without the outcome's recorder: the warnings come out.
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::graphleaf_edu.DetachedTensorsWarning")
@pytest.mark.parametrize(("key", "fix_key"), [(s.key, f.key) for s in SCENARIOS.values() for f in s.fixes])
def test_code_is_exactly_what_runs(key, fix_key):
    scenario = SCENARIOS[key]
    fix = scenario.fix(fix_key)
    outcome = scenario.run(fix_key)
    assert outcome.code == scenario.code(fix_key) == PRELUDE + (fix.setup_code or scenario.setup_code) + "\n" + fix.copy_code

    fresh = {}
    if outcome.ok:
        exec(outcome.code, fresh)  # noqa: S102
        assert_same_values(fresh["copied"], outcome.copied)
    else:
        with pytest.raises(scenario.error.type) as raised:
            exec(outcome.code, fresh)  # noqa: S102
        assert error_line(raised.value) == outcome.error_line


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_traceback_lines_point_into_the_shown_code(key):
    scenario = SCENARIOS[key]
    outcome = scenario.run(NONE)
    ours = [frame for frame in traceback.extract_tb(outcome.error.__traceback__)
            if frame.filename == f"<scenario {key}, fix {NONE}>"]
    assert ours, "no traceback frame in the scenario's code"
    lines = outcome.code.splitlines()
    assert ours[0].line == lines[ours[0].lineno - 1].strip()
    assert lines[ours[0].lineno - 1] in scenario.fix(NONE).copy_code.splitlines()


def test_error_lines_are_deterministic_and_free_of_addresses():
    first = {key: s.run(NONE).error_line for key, s in SCENARIOS.items()}
    second = {key: s.run(NONE).error_line for key, s in SCENARIOS.items()}
    assert first == second
    for line in first.values():
        assert "\n" not in line and not ADDRESS.search(line)
    assert first["intermediate_tensor"] == (
        "RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
        "protocol at the moment.  If you were attempting to deepcopy a module, this may be because of a "
        "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
    )


def test_every_run_starts_from_a_fresh_namespace():
    scenario = SCENARIOS["model_cache"]
    mutated = scenario.run("clear_cache")
    assert mutated.original.cache is None
    again = scenario.run("clear_cache")
    assert again.namespace is not mutated.namespace and again.original is not mutated.original
    assert scenario.namespace()["model"].cache is not None
    assert "copied" not in scenario.namespace()


def test_namespace_of_a_fix_runs_that_fix_setup():
    scenario = SCENARIOS["model_cache"]
    assert scenario.namespace("detach_at_source")["model"].cache.is_leaf
    assert not scenario.namespace()["model"].cache.is_leaf


def test_warnings_are_recorded_in_the_outcome_not_printed(recwarn):
    outcome = SCENARIOS["old_weight_norm"].run(NONE)
    assert any(w.startswith("FutureWarning: `torch.nn.utils.weight_norm` is deprecated") for w in outcome.warnings)
    assert len(recwarn) == 0
    fixed = SCENARIOS["model_cache"].run("safe_deepcopy")
    assert fixed.warnings == (
        "DetachedTensorsWarning: safe_deepcopy detached 1 non-leaf tensor (their copies have no grad_fn): root.cache",
    )


def test_setup_code_stays_short_enough_to_read_in_a_widget():
    for scenario in SCENARIOS.values():
        for text in [scenario.setup_code] + [f.setup_code for f in scenario.fixes if f.setup_code]:
            assert len(text.splitlines()) <= 18, (scenario.key, text)


def test_unknown_fix_names_the_choices():
    with pytest.raises(KeyError, match="choose one of .*'detach_clone'"):
        SCENARIOS["intermediate_tensor"].run("clone")


def test_fixes_must_start_with_none_and_have_unique_keys():
    fix = Fix("detach", "detach()", "copied = y.detach()", "shares memory")
    with pytest.raises(ValueError, match="the first being 'none'"):
        Scenario("s", "t", "", "y = 1", "y", "", ExpectedError(RuntimeError, ""), (fix,), "wild")


def test_reproduce_says_so_when_pytorch_stops_raising():
    harmless = Scenario(
        "harmless", "a leaf", "", "y = torch.ones(2, requires_grad=True)", "y", "",
        ExpectedError(RuntimeError, GRAPH_LEAVES), (Fix(NONE, "deepcopy", "copied = copy.deepcopy(y)", ""),), "wild",
    )
    assert harmless.run(NONE).ok
    with pytest.raises(AssertionError, match="did not fail on torch"):
        harmless.reproduce()


# --- the facts the scenarios' summaries state ---------------------------------------------------


def test_queue_put_only_prints_the_refusal_and_the_receiver_waits(capfd):
    y = torch.ones(2, requires_grad=True) * 2
    channel = torch.multiprocessing.get_context("fork").Queue()
    channel.put(y)  # returns: pickling happens in the feeder thread
    with pytest.raises(queue.Empty):
        channel.get(timeout=1)
    channel.close()
    channel.join_thread()
    assert COWARDLY in capfd.readouterr().err


def test_only_torch_multiprocessing_pickler_refuses_plain_pickle_drops_the_graph():
    y = torch.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=COWARDLY):
        ForkingPickler.dumps(y)  # torch registers its reducers on import
    loaded = pickle.loads(pickle.dumps(y))
    assert loaded.is_leaf and loaded.requires_grad and loaded.grad_fn is None


def test_parametrized_spectral_norm_copies_but_is_not_the_same_function():
    torch.manual_seed(0)
    old = nn.utils.spectral_norm(nn.Linear(4, 3))
    torch.manual_seed(0)
    new = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 3))
    old(PROBE), new(PROBE)
    copy.deepcopy(new)
    old.eval(), new.eval()
    with torch.no_grad():
        assert not torch.allclose(old(PROBE), new(PROBE), atol=1e-3)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_parameters_drop_a_nonleaf_grad_when_copied_plain_tensors_do_not():
    parameter = nn.Parameter(torch.ones(3))
    (parameter ** 3).sum().backward(create_graph=True)
    assert not parameter.grad.is_leaf
    assert copy.deepcopy(parameter).grad is None
