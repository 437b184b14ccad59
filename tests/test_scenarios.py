"""Every scenario raises its real error on the installed PyTorch, every fix works, code() is what ran."""
import copy
import inspect
import pickle
import queue
import re
import subprocess
import sys
import traceback
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.errors import COWARDLY, GRAPH_LEAVES, error_line
from graphleaf_edu.scenarios import NONE, SCENARIOS, ExpectedError, Fix, Scenario
from graphleaf_edu.scenarios.catalog import dataset_getitem, model_cache
from graphleaf_edu.scenarios.source import shown_code

SEED_SCENARIOS = ["intermediate_tensor", "model_output", "dataset_getitem", "model_cache"]
FIXES = [(s.key, f.key) for s in SCENARIOS.values() for f in s.fixes if f.key != NONE]
# The fixes whose copy is, by design, the original's memory (their cost says so).
SHARES_MEMORY = {("intermediate_tensor", "detach"), ("model_output", "detach"), ("mp_queue", "detach")}
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
    elif fix.setup is None:
        assert left_in_original == [scenario.culprit], "the original lost its graph"
        assert_same_values(outcome.original, scenario.namespace(fix_key)[scenario.target])

    if not isinstance(outcome.original, Dataset):
        shared = bool(storages(outcome.copied) & storages(outcome.original))
        assert shared == ((key, fix_key) in SHARES_MEMORY)
    assert_same_values(outcome.copied, outcome.original)


def run_shown_code(code: str, setup_name: str, copy_name: str):
    """Run the shown text on its own: define everything it shows, call the setup, then the copy."""
    fresh = {}
    exec(compile(code, "<shown code>", "exec"), fresh)  # noqa: S102 (the text must run by itself)
    made = fresh[setup_name]()
    names = inspect.signature(fresh[copy_name]).parameters
    return fresh[copy_name](*(made[name] for name in names))


# Run here on its own, without the outcome's recorder: the warnings come out.
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::graphleaf_edu.DetachedTensorsWarning")
@pytest.mark.parametrize(("key", "fix_key"), [(s.key, f.key) for s in SCENARIOS.values() for f in s.fixes])
def test_code_is_exactly_what_runs(key, fix_key):
    scenario = SCENARIOS[key]
    fix = scenario.fix(fix_key)
    setup = fix.setup or scenario.setup
    outcome = scenario.run(fix_key)
    assert outcome.code == scenario.code(fix_key)
    assert inspect.getsource(setup) in outcome.code and inspect.getsource(fix.copy) in outcome.code
    assert fix.copy_code == inspect.getsource(fix.copy)
    for line in outcome.code.splitlines():  # every shown line is a line of the catalog
        assert not line.strip() or any(line in catalog_lines(module) for module in {setup.__module__, fix.copy.__module__})

    if outcome.ok:
        assert_same_values(run_shown_code(outcome.code, setup.__name__, fix.copy.__name__), outcome.copied)
    else:
        with pytest.raises(scenario.error.type) as raised:
            run_shown_code(outcome.code, setup.__name__, fix.copy.__name__)
        assert error_line(raised.value) == outcome.error_line


def catalog_lines(module: str) -> set[str]:
    return set(inspect.getsource(sys.modules[module]).splitlines())


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_traceback_lines_point_into_the_shown_code(key):
    scenario = SCENARIOS[key]
    copy_function = scenario.fix(NONE).copy
    outcome = scenario.run(NONE)
    ours = [frame for frame in traceback.extract_tb(outcome.error.__traceback__)
            if frame.filename == inspect.getsourcefile(copy_function) and frame.name == copy_function.__name__]
    assert ours, "no traceback frame in the scenario's code"
    assert ours[0].line in outcome.code
    assert ours[0].line in scenario.fix(NONE).copy_code


def test_the_namespace_holds_what_the_shown_code_names_and_what_setup_made():
    namespace = SCENARIOS["model_cache"].namespace("state_dict")
    assert namespace["Cached"] is model_cache.Cached and namespace["torch"] is torch and "copy" not in namespace
    assert namespace["load_state_dict_into_a_new_model"] is model_cache.load_state_dict_into_a_new_model
    assert isinstance(namespace["model"], model_cache.Cached) and not namespace["output"].is_leaf
    assert "CachedDetached" not in namespace  # not part of this fix's code


def test_shown_code_takes_only_what_the_functions_use():
    code = SCENARIOS["model_cache"].code("detach_at_source")
    assert "class Cached(nn.Module):" in code and "class CachedDetached(Cached):" in code
    assert "CachedWithGetstate" not in code and "SCENARIO" not in code and "graphleaf_edu.scenarios" not in code
    assert code.startswith("import copy\n\nimport torch\nfrom torch import nn\n\n\nclass Cached")


def test_shown_code_merges_the_imports_of_two_modules():
    shown = shown_code(model_cache.setup_with_deepcopy, SCENARIOS["model_cache"].fix("safe_deepcopy").copy)
    imports = shown.text.split("\n\n\n")[0]
    assert imports == "import copy\n\nimport torch\nfrom torch import nn\n\nfrom graphleaf_edu import safe_deepcopy"


def test_the_catalog_is_ruff_clean():
    catalog = Path(model_cache.__file__).parent.parent
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(catalog)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_spawn_workers_unpickle_the_catalog_datasets():
    dataset = dataset_getitem.setup_detached_at_construction()["dataset"]
    loader = DataLoader(dataset, batch_size=4, num_workers=1, multiprocessing_context="spawn", timeout=120)
    batches = list(loader)
    assert torch.equal(torch.cat(batches), dataset.data)


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


def test_code_stays_short_enough_to_read_in_a_widget():
    for scenario in SCENARIOS.values():
        for fix in scenario.fix_keys():
            assert len(scenario.code(fix).splitlines()) <= 60, (scenario.key, fix)


def test_unknown_fix_names_the_choices():
    with pytest.raises(KeyError, match="choose one of .*'detach_clone'"):
        SCENARIOS["intermediate_tensor"].run("clone")


def a_leaf():
    return {"y": torch.ones(2, requires_grad=True)}


def deepcopy_y(y):
    return copy.deepcopy(y)


def test_fixes_must_start_with_none_and_have_unique_keys():
    fix = Fix("detach", "detach()", deepcopy_y, "shares memory")
    with pytest.raises(ValueError, match="the first being 'none'"):
        Scenario("s", "t", "", a_leaf, "y", "", ExpectedError(RuntimeError, ""), (fix,), "wild")


def test_reproduce_says_so_when_pytorch_stops_raising():
    harmless = Scenario(
        "harmless", "a leaf", "", a_leaf, "y", "",
        ExpectedError(RuntimeError, GRAPH_LEAVES), (Fix(NONE, "deepcopy", deepcopy_y, ""),), "wild",
    )
    assert harmless.run(NONE).ok
    assert harmless.code() == "import copy\n\nimport torch\n\n\n" + inspect.getsource(a_leaf) + "\n\n" + inspect.getsource(deepcopy_y)
    with pytest.raises(AssertionError, match="did not fail on torch"):
        harmless.reproduce()


def test_a_copy_function_needs_names_the_setup_makes():
    def copy_z(z):
        return z

    broken = Scenario("broken", "t", "", a_leaf, "y", "", ExpectedError(RuntimeError, ""),
                      (Fix(NONE, "copy z", copy_z, ""),), "wild")
    with pytest.raises(TypeError, match=r"copy_z\(\) takes \['z'\], which the scenario's setup does not return"):
        broken.run()


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


@pytest.mark.parametrize(("key", "fix"), [(k, f) for k, s in SCENARIOS.items() for f in s.fix_keys()])
def test_the_script_an_explorer_shows_is_plain_code_that_does_what_the_fix_does(key, fix):
    """The explorer shows the student's code (classes, statements, `copied = ...`), not the engine's
    setup functions; run as it stands, it fails or copies exactly as the fix's run does."""
    scenario = SCENARIOS[key]
    shown = scenario.script(fix)
    assert "def setup" not in shown and shown.rstrip().splitlines()[-1].startswith(("copied", "queue", "ema"))
    namespace: dict = {}
    torch.manual_seed(0)
    if scenario.run(fix).ok:
        exec(compile(shown, f"{key}-{fix}", "exec"), namespace)  # noqa: S102 (the catalog's own code)
        assert "copied" in namespace
    else:
        with pytest.raises(scenario.error.type, match=re.escape(scenario.error.contains)):
            exec(compile(shown, f"{key}-{fix}", "exec"), namespace)  # noqa: S102


def test_the_model_output_scenario_feeds_plain_data_as_lesson_01_does():
    scenario = SCENARIOS["model_output"]
    for fix in scenario.fix_keys():
        inputs = scenario.run(fix).namespace["inputs"]
        assert inputs.is_leaf and not inputs.requires_grad, fix
    assert "requires_grad=True" not in scenario.code()


def test_the_custom_deepcopy_code_explains_new_and_memo_where_it_uses_them():
    lines = SCENARIOS["model_cache"].code("custom_deepcopy").splitlines()
    for word in ("__new__", "memo[id(self)]", "__setstate__"):
        line = next(i for i, text in enumerate(lines) if word in text and "def " not in text)
        assert "#" in lines[line] or lines[line - 1].strip().startswith("#"), word
