"""Code that uses every public name the way a practitioner's typed code would.

``mypy --strict`` checks this file (tests/test_typing.py), and ``assert_type`` makes it check the exact
type each public function returns: a public function without annotations, or one that returns ``Any``
or another type than the one documented, fails the check. test_typing.py also runs this file, so it
stays real code.
"""
from __future__ import annotations

import warnings
from typing import assert_type

import torch

import graphleaf_edu as gl


def core() -> list[str]:
    y = torch.ones(2, requires_grad=True) * 2
    state = {"cache": y}
    info = assert_type(gl.describe(y), gl.TensorInfo)
    findings = assert_type(gl.find_nonleaf(state), gl.Findings)
    first = assert_type(findings[0], gl.Finding)
    assert_type(gl.explain(state), None)
    assert_type(gl.deepcopy_blocker(y), str | None)
    assert gl.resolve(state, first.path) is y
    with gl.explain_errors():
        assert_type(findings.lines(), list[str])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copied = assert_type(gl.safe_deepcopy(state), dict[str, torch.Tensor])
    warning = caught[0].message
    paths = assert_type(warning.paths, tuple[str, ...]) if isinstance(warning, gl.DetachedTensorsWarning) else ()
    assert copied["cache"].grad_fn is None and not assert_type(info.deepcopy_ok, bool)
    checked = assert_type(gl.check_copyable(torch.nn.Linear(2, 2), torch.ones(1, 2), backward=True), gl.CopyableCheck)
    refused = gl.NotCopyableError("a message", failed=("deepcopy",), paths=(".cache",))
    assert isinstance(refused, AssertionError) and assert_type(refused.paths, tuple[str, ...]) == (".cache",)
    assert assert_type(checked.sent, str) == "module" and assert_type(refused.failed, tuple[str, ...])
    return [assert_type(first.path, str), assert_type(findings.report(), str).splitlines()[0], *paths]


def notebooks() -> str:
    device = assert_type(gl.setup_notebook(seed=0, lang="en"), torch.device)
    graph = assert_type(gl.draw(torch.ones(1, requires_grad=True) * 3), gl.AutogradGraph)
    scenario = assert_type(gl.SCENARIOS["intermediate_tensor"], gl.Scenario)
    fix = assert_type(scenario.fix(scenario.fix_keys()[-1]), gl.Fix)
    outcome = assert_type(scenario.run(fix.key), gl.Outcome)
    rows = gl.DetachedTensorRows(torch.ones(4, 2, requires_grad=True) * 2)
    assert isinstance(rows, gl.TensorRows)
    loaded = assert_type(gl.run_loader(start_method="fork", num_workers=0, deepcopy_in_getitem=False,
                                       detach_at_construction=True), gl.LoaderOutcome)
    table = assert_type(gl.outcome_table([loaded]), str)
    lesson = assert_type(gl.GPU_LESSONS[next(iter(gl.GPU_LESSONS))], gl.GpuLesson)
    raised = assert_type(gl.GpuFactChanged("expected on a GPU"), gl.GpuFactChanged)
    explorers = (gl.scenario_explorer(), gl.leaf_playground(), gl.dataloader_lab(), gl.fix_comparison())
    assert assert_type(gl.run_script("--help", cwd="."), int) == 0
    return "\n".join([str(device), assert_type(gl.VERIFIED_TORCH, str), repr(graph), str(outcome.ok),
                      str(len(rows)), table, lesson.title, str(raised), str(len(explorers)),
                      assert_type(gl.__version__, str)])


if __name__ == "__main__":
    print(core())
    print(notebooks())
