"""graphleaf_edu: see, diagnose and fix PyTorch's "graph leaves ... deepcopy" error.

Public names (notebooks import only these):
    setup_notebook      the setup every notebook shares
    draw                a picture of the autograd graph (-> AutogradGraph)
    SCENARIOS           every failure as a Scenario: its shown code, reproduce(), run(fix) -> Outcome
    run_loader          a real DataLoader run for one configuration (-> LoaderOutcome); outcome_table
    TensorRows          the dataset of the DataLoader lessons; DetachedTensorRows is its fix
    describe            one tensor: leaf?, grad_fn, can deepcopy? (-> TensorInfo); deepcopy_blocker: why not
    find_nonleaf        every tensor that breaks deepcopy, by path (-> Findings of Finding); explain;
                        resolve(root, path) follows a finding's path
    safe_deepcopy       deepcopy with non-leaf tensors detached (warns DetachedTensorsWarning)
    scenario_explorer   widgets: scenario x fix -> code, result, graph; also leaf_playground,
                        dataloader_lab, fix_comparison (callbacks in graphleaf_edu.widgets)
    gpu_lesson          run one of GPU_LESSONS on CUDA and check it, or say what it expects there
"""
from graphleaf_edu.copying import DetachedTensorsWarning, safe_deepcopy
from graphleaf_edu.dataloading import DetachedTensorRows, LoaderOutcome, TensorRows, outcome_table, run_loader
from graphleaf_edu.diagnose import Finding, Findings, TensorInfo, deepcopy_blocker, describe, explain, find_nonleaf, resolve
from graphleaf_edu.gpu import GPU_LESSONS, GpuFactChanged, GpuLesson, gpu_lesson
from graphleaf_edu.graphs import AutogradGraph, draw
from graphleaf_edu.notebook import VERIFIED_TORCH, setup_notebook
from graphleaf_edu.scenarios import SCENARIOS, Fix, Outcome, Scenario
from graphleaf_edu.widgets import dataloader_lab, fix_comparison, leaf_playground, scenario_explorer

__version__ = "0.1.0"

__all__ = ["VERIFIED_TORCH", "setup_notebook", "AutogradGraph", "draw",
           "SCENARIOS", "Scenario", "Fix", "Outcome",
           "run_loader", "LoaderOutcome", "outcome_table", "TensorRows", "DetachedTensorRows",
           "describe", "TensorInfo", "deepcopy_blocker", "find_nonleaf", "Finding", "Findings", "explain", "resolve",
           "safe_deepcopy", "DetachedTensorsWarning",
           "scenario_explorer", "leaf_playground", "dataloader_lab", "fix_comparison",
           "gpu_lesson", "GPU_LESSONS", "GpuLesson", "GpuFactChanged"]
