"""graphleaf_edu: see, diagnose and fix PyTorch's "graph leaves ... deepcopy" error.

The core needs torch only and loads with the package:
    describe            one tensor: leaf?, grad_fn, can deepcopy? (-> TensorInfo); deepcopy_blocker: why not
    find_nonleaf        every tensor that breaks deepcopy, by path (-> Findings of Finding); explain;
                        resolve(root, path) follows a finding's path
    safe_deepcopy       deepcopy with non-leaf tensors detached (warns DetachedTensorsWarning)
    explain_errors      `with explain_errors(): ...`: a graph-leaves error gets notes naming each culprit;
                        also `%load_ext graphleaf_edu` (IPython) and `python -m graphleaf_edu SCRIPT`
    check_copyable      a library's test: one training step, then deepcopy, a torch.multiprocessing send
                        and a state_dict round trip (-> CopyableCheck; fails with NotCopyableError);
                        `pytest --graphleaf` (graphleaf_edu_pytest) explains errors in every test

Everything else loads on first use (``_LAZY`` below), so a training job that imports the package
pays for none of it; a name whose extra is missing says which one to install:
    setup_notebook      the setup every notebook shares
    draw                a picture of the autograd graph (-> AutogradGraph)           [graphs]
    SCENARIOS           every failure as a Scenario: its shown code, reproduce(), run(fix) -> Outcome
    run_loader          a real DataLoader run for one configuration (-> LoaderOutcome); outcome_table
    TensorRows          the dataset of the DataLoader lessons; DetachedTensorRows is its fix
    scenario_explorer   widgets: scenario x fix -> code, result, graph; also leaf_playground,
                        dataloader_lab, fix_comparison (callbacks in graphleaf_edu.widgets)  [lab]
    gpu_lesson          run one of GPU_LESSONS on CUDA and check it, or say what it expects there

The API reference is docs/api.md (tools/api_docs.py writes it from the docstrings).

Package map (data flows down; only notebooks import ``widgets``; docs/package-map.md has it too):
    errors              PyTorch's messages, error_line (the bottom layer); messages: the package's own
                        words (causes, fixes, notes); places: where in the user's code (file:line)
    deepcopy_walk       what copy.deepcopy reaches, by its protocol; stored_values reads __dict__,
                        slots, items; deepcopy_reducers: reduced objects and known reducers
    paths, causes       each finding's path from root (resolve follows it); its cause and fix
    diagnose, findings  the one verdict (deepcopy_blocker), find_nonleaf, explain; Finding(s), reports
    storing, patches    the user's line that stored a culprit and the change to it; those changes as a diff
    copying             safe_deepcopy; copyable: check_copyable; on_error: notes on a graph error at the user's line;
                        keep_going: python -m graphleaf_edu --keep-going, every cause in one run;
                        keep_going_report: its summary; ranks: under torchrun, one summary for all ranks
    graphs              draw, the one grad_fn walk; graph_picture: the picture itself
    scenarios/          engine, source (the real code shown), catalog/ (one module per scenario),
                        measure (what a fix really did)
    dataloading         real DataLoader runs; tables: text and HTML tables
    views/, widgets     pure views (Task, clear_caches), then thin ipywidgets explorers
    exercises/          feedback framework, one module per exercise, student_copies
    gpu, gpu_probes     GPU lessons as GpuStep records; notebook, kernels
"""
from __future__ import annotations

import importlib.util
from importlib import metadata
from typing import TYPE_CHECKING, Any

from graphleaf_edu.copyable import CopyableCheck, NotCopyableError, check_copyable
from graphleaf_edu.copying import DetachedTensorsWarning, safe_deepcopy
from graphleaf_edu.diagnose import (
    Finding,
    Findings,
    TensorInfo,
    deepcopy_blocker,
    describe,
    explain,
    find_nonleaf,
    resolve,
)
from graphleaf_edu.on_error import explain_errors

if TYPE_CHECKING:  # what type checkers see of _LAZY; tests/test_public_api.py keeps the two equal
    from graphleaf_edu.dataloading import (
        DetachedTensorRows,
        LoaderOutcome,
        TensorRows,
        outcome_table,
        run_loader,
    )
    from graphleaf_edu.gpu import GPU_LESSONS, GpuFactChanged, GpuLesson, gpu_lesson
    from graphleaf_edu.graphs import AutogradGraph, draw
    from graphleaf_edu.notebook import VERIFIED_TORCH, run_script, setup_notebook
    from graphleaf_edu.scenarios import SCENARIOS, Fix, Outcome, Scenario
    from graphleaf_edu.widgets import (
        dataloader_lab,
        fix_comparison,
        leaf_playground,
        scenario_explorer,
    )

# Public name -> the module that defines it, imported on first use.
_LAZY: dict[str, str] = {
    **dict.fromkeys(["VERIFIED_TORCH", "run_script", "setup_notebook"], "graphleaf_edu.notebook"),
    **dict.fromkeys(["AutogradGraph", "draw"], "graphleaf_edu.graphs"),
    **dict.fromkeys(["SCENARIOS", "Scenario", "Fix", "Outcome"], "graphleaf_edu.scenarios"),
    **dict.fromkeys(["run_loader", "LoaderOutcome", "outcome_table", "TensorRows", "DetachedTensorRows"],
                    "graphleaf_edu.dataloading"),
    **dict.fromkeys(["scenario_explorer", "leaf_playground", "dataloader_lab", "fix_comparison"],
                    "graphleaf_edu.widgets"),
    **dict.fromkeys(["gpu_lesson", "GPU_LESSONS", "GpuLesson", "GpuFactChanged"], "graphleaf_edu.gpu"),
}
# The pip extra a module needs beyond torch (pyproject.toml); modules not named need torch only.
_EXTRA: dict[str, str] = {
    "graphleaf_edu.graphs": "graphs",
    "graphleaf_edu.views": "graphs",
    "graphleaf_edu.widgets": "lab",
    "graphleaf_edu.exercises": "lab",
    "graphleaf_edu.kernels": "lab",
}

# The eager names and _LAZY's, spelled out for type checkers and linters (tests/test_public_api.py
# checks that nothing is missing).
__all__ = [
    "GPU_LESSONS",
    "SCENARIOS",
    "VERIFIED_TORCH",
    "AutogradGraph",
    "CopyableCheck",
    "DetachedTensorRows",
    "DetachedTensorsWarning",
    "Finding",
    "Findings",
    "Fix",
    "GpuFactChanged",
    "GpuLesson",
    "LoaderOutcome",
    "NotCopyableError",
    "Outcome",
    "Scenario",
    "TensorInfo",
    "TensorRows",
    "check_copyable",
    "dataloader_lab",
    "deepcopy_blocker",
    "describe",
    "draw",
    "explain",
    "explain_errors",
    "find_nonleaf",
    "fix_comparison",
    "gpu_lesson",
    "leaf_playground",
    "outcome_table",
    "resolve",
    "run_loader",
    "run_script",
    "safe_deepcopy",
    "scenario_explorer",
    "setup_notebook",
]

try:
    __version__ = metadata.version("graphleaf-edu")
except metadata.PackageNotFoundError:  # a source checkout on sys.path, never installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    """Load a lazy public name, or a submodule used as ``gl.widgets``, on first use (PEP 562)."""
    if name in _LAZY:
        value = getattr(_import(_LAZY[name], name), name)
        globals()[name] = value  # later uses skip this function
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return _import(f"{__name__}.{name}", name)  # importing it binds it here too
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return [*sorted(__all__), "__version__"]


def _import(module_name: str, wanted: str) -> Any:
    """Import module_name; if a package it needs is missing, say which extra brings it."""
    try:
        # __import__ (the import statement's hook) rather than importlib.import_module, so that
        # `python -X importtime` reports the lazily loaded module under its own name.
        return __import__(module_name, fromlist=["__name__"])
    except ModuleNotFoundError as missing:
        extra = _EXTRA.get(module_name)
        if extra is None or (missing.name or "").partition(".")[0] == __name__:
            raise
        from graphleaf_edu.i18n import say

        raise ModuleNotFoundError(
            say("graphleaf_edu.{wanted} needs {missing!r}, which is not installed. Install the extra that brings "
                "it: pip install 'graphleaf-edu[{extra}]'", wanted=wanted, missing=missing.name, extra=extra),
            name=missing.name,
        ) from missing


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext graphleaf_edu``: a cell's graph-leaves error ends with notes naming each culprit.
    IPython hands in its shell; this package never imports IPython itself."""
    from graphleaf_edu.on_error import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from graphleaf_edu.on_error import unload_ipython_extension as unload

    unload(ipython)
