"""The graphleaf-cpu / graphleaf-gpu kernelspecs: installed idempotently, and the CPU one hides CUDA."""
import json
import subprocess
import sys

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from graphleaf_edu import kernels


def _specs_under(prefix):
    folder = prefix / "share" / "jupyter" / "kernels"
    return {p.name: json.loads((p / "kernel.json").read_text()) for p in folder.iterdir()}


def test_install_writes_both_kernels_and_is_idempotent(tmp_path):
    kernels.install(prefix=str(tmp_path))
    first = _specs_under(tmp_path)
    kernels.install(prefix=str(tmp_path))
    assert _specs_under(tmp_path) == first
    assert set(first) == {"graphleaf-cpu", "graphleaf-gpu"}
    assert first["graphleaf-cpu"]["display_name"] == "Python 3 (graphleaf, CPU)"
    assert first["graphleaf-cpu"]["env"] == {"CUDA_VISIBLE_DEVICES": ""}
    assert first["graphleaf-gpu"]["display_name"] == "Python 3 (graphleaf, GPU)"
    assert "CUDA_VISIBLE_DEVICES" not in first["graphleaf-gpu"].get("env", {})
    assert first["graphleaf-cpu"]["argv"][0] == sys.executable


def test_module_command_lists_installed_kernels():
    listing = subprocess.run(
        [sys.executable, "-m", "graphleaf_edu.kernels", "list"], capture_output=True, text=True, check=True
    ).stdout
    assert "graphleaf-cpu" in listing and "graphleaf-gpu" in listing
    assert "NOT INSTALLED" not in listing


def test_cpu_kernel_cannot_see_cuda():
    probe = new_notebook(cells=[new_code_cell(
        "import os, torch\nprint(repr(os.environ.get('CUDA_VISIBLE_DEVICES')), torch.cuda.is_available())"
    )])
    NotebookClient(probe, kernel_name="graphleaf-cpu", timeout=120).execute()
    assert probe.cells[0].outputs[0]["text"].strip() == "'' False"
    nbformat.validate(probe)


def test_install_can_leave_the_gpu_kernel_out(tmp_path):
    kernels.install(prefix=str(tmp_path), kernels=(kernels.CPU_KERNEL,))
    assert set(_specs_under(tmp_path)) == {"graphleaf-cpu"}
