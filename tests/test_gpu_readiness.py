"""The GPU run, checked on any machine: notebook 10's GPU lessons, the GPU sanitize file, the wheel and
Debian package lists, and tools/test_gpu.py. Where CUDA exists, the lessons are checked for real."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import pytest
import torch
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook
from nbval.plugin import get_sanitize_patterns
from notebook_files import ROOT, all_notebooks, code_cells, read, tags
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from torch.utils.data import Dataset

from graphleaf_edu import gpu, gpu_probes
from graphleaf_edu.notebook import VERIFIED_TORCH

CPU_RULES = ROOT / "tests" / "nbval_sanitize.cfg"
GPU_RULES = ROOT / "tests" / "nbval_sanitize_gpu.cfg"
NOTEBOOK_10 = ROOT / "notebooks" / "deep_dives" / "on_the_gpu.ipynb"
REQUIREMENTS = ROOT / "requirements"
# What the GPU run imports that the GPU image lacks (tools/test_gpu.py's IMPORTS, less the project).
GPU_RUN_ROOTS = ["nbval", "nbclient", "nbformat", "ipykernel", "ipywidgets", "torchviz", "graphviz"]
PYTHON_312_LINUX = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
                    "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
                    "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
# Steps whose outcome on the CPU legitimately differs from the GPU's: everything else a lesson does on
# the CPU must print exactly its GPU expectation with "cuda" read as "cpu".
GPU_ONLY_STEPS = {
    "deepcopy": {"y.cpu()"},
    "copy_through_the_cpu": {"copy_through_the_cpu(model): the original's weight afterwards"},
    "dataloader": {"fork worker, TensorRows(features.detach())"},
    "pin_memory": set(gpu.GPU_LESSONS["pin_memory"].expected) - {
        "a pinned batch, then batch.to('cuda', non_blocking=True)"},
}
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def load_tool(name: str):
    """A script of tools/ as a module (registered, as dataclasses need)."""
    module_name = f"graphleaf_tools_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, ROOT / "tools" / f"{name}.py")
        sys.modules[module_name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[module_name])
    return sys.modules[module_name]


def sanitized(text: str, rules: Path = GPU_RULES) -> str:
    for regex, replace in get_sanitize_patterns(rules.read_text()):
        text = re.sub(regex, replace, text)
    return text


def stored_texts(path: Path):
    """(code cell, text) for every stored text output of a notebook."""
    for cell in code_cells(read(path)):
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")] + [output.get("data", {}).get(m, "") for m in ("text/plain", "text/html")]
            yield from ((cell, text) for text in texts if text)


def lesson_calls(cell) -> list[str]:
    return re.findall(r'gl\.gpu_lesson\("(\w+)"\)', cell.source)


# --- the sanitize file of the GPU run -------------------------------------------------------------

def test_gpu_sanitize_file_starts_with_every_cpu_rule_verbatim_and_in_order():
    cpu_text, gpu_text = CPU_RULES.read_text(), GPU_RULES.read_text()
    assert gpu_text.startswith(cpu_text)
    cpu, gpu_rules = get_sanitize_patterns(cpu_text), get_sanitize_patterns(gpu_text)
    assert cpu and gpu_rules[:len(cpu)] == cpu and len(gpu_rules) > len(cpu)


def test_gpu_rules_equate_what_legitimately_differs_on_the_gpu_kernel():
    assert sanitized(gpu.NEEDS_GPU) == sanitized(gpu.AS_EXPECTED)
    assert sanitized("ran on a CUDA GPU: 1 step(s) differ. Observed on a GPU:") != sanitized(gpu.NEEDS_GPU)
    assert (sanitized(f"torch {VERIFIED_TORCH} | graphleaf_edu ready | Graphviz dot found")
            == sanitized("torch 2.11 | graphleaf_edu ready | Graphviz dot found"))
    assert (sanitized("1. root.weight  (DivBackward0, shape (3, 4), cpu)")
            == sanitized("1. root.weight  (DivBackward0, shape (3, 4), cuda)"))
    assert sanitized("root.stats['mean']  (MeanBackward0, shape (), cuda)").endswith("shape (), DEVICE)")


def test_gpu_rules_equate_a_step_that_allows_two_outcomes_with_either_of_them():
    """The CPU kernel stores every allowed outcome of such a step; the GPU kernel prints the one it met."""
    steps = [(lesson, step) for lesson in gpu.GPU_LESSONS.values() for step in lesson.steps if step.also]
    assert steps, "no step allows two outcomes: drop the GPU sanitize rule for them"
    for _, step in steps:
        stored = sanitized(gpu._listing({step.label: step.allowed}))
        assert "\n      or " in gpu._listing({step.label: step.allowed})
        for outcome in step.allowed:
            assert sanitized(gpu._listing({step.label: outcome})) == stored, outcome
        assert sanitized(gpu._listing({step.label: "RuntimeError: something else"})) != stored


def test_no_stored_output_names_a_device_the_gpu_run_would_see_differently():
    """Outside notebook 10's GPU lessons and source listings (the same text on both kernels), a device
    name in a stored output would read 'cuda' on the GPU kernel: sanitize it or do not print it."""
    for path in all_notebooks():
        for cell, text in stored_texts(path):
            if path == NOTEBOOK_10 and (lesson_calls(cell) or "inspect.getsource" in cell.source):
                continue
            match = re.search(r"\b(cpu|cuda)\b", sanitized(text))
            assert not match, f"{path.name}: {match.group(0)!r} in the output of\n{cell.source}"


# --- notebook 10 ----------------------------------------------------------------------------------

def test_notebook_10_runs_every_gpu_lesson_in_a_checked_cell_that_stores_its_expectation(capsys):
    cells = [cell for cell in code_cells(read(NOTEBOOK_10)) if lesson_calls(cell)]
    assert sorted(name for cell in cells for name in lesson_calls(cell)) == sorted(gpu.GPU_LESSONS)
    for cell in cells:
        assert not tags(cell) & {"nbval-ignore-output", "nbval-skip", "raises-exception"}, cell.source
        with warnings.catch_warnings(), pytest.MonkeyPatch.context() as patch:
            patch.setattr(torch.cuda, "is_available", lambda: False)
            gpu.gpu_lesson(lesson_calls(cell)[0])
        stored = "".join(o.get("text", "") for o in cell.outputs)
        assert stored.startswith(gpu.NEEDS_GPU + "\n")
        assert stored == capsys.readouterr().out, "re-run `make notebooks`: the expectation changed"


def test_gpu_lesson_prints_what_it_observed_and_raises_when_a_fact_changed(monkeypatch, capsys):
    def observe(device):
        warnings.warn("something new", UserWarning, stacklevel=1)
        return [f"ran on {device}"]

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    steps = (gpu.GpuStep("step", "ran on cuda"),)
    monkeypatch.setitem(gpu.GPU_LESSONS, "probe", gpu.GpuLesson("probe", observe, steps))
    with pytest.raises(gpu.GpuFactChanged, match="warnings raised") as raised:
        gpu.gpu_lesson("probe")
    assert "expected: (no such step)\n    observed: UserWarning: something new" in str(raised.value)
    printed = capsys.readouterr().out
    assert printed.startswith("ran on a CUDA GPU: 1 step(s) differ") and "-> ran on cuda" in printed

    monkeypatch.setitem(gpu.GPU_LESSONS, "probe", gpu.GpuLesson("probe", lambda d: [d], (gpu.GpuStep("step", "cuda"),)))
    gpu.gpu_lesson("probe")
    assert capsys.readouterr().out == f"{gpu.AS_EXPECTED}\n  step\n      -> cuda\n"


def test_an_outcome_without_a_step_or_a_step_without_an_outcome_is_a_difference():
    lesson = gpu.GpuLesson("probe", lambda device: ["a", "b"], (gpu.GpuStep("first", "a"),))
    observed = lesson.run("cpu")
    assert observed == {"first": "a", "(step 2 has no label)": "b"}
    assert lesson.differences(observed) == ["(step 2 has no label)\n    expected: (no such step)\n    observed: b"]
    short = gpu.GpuLesson("probe", lambda device: [], (gpu.GpuStep("first", "a"),))
    assert short.differences(short.run("cpu")) == ["first\n    expected: a\n    observed: (no such step)"]


def test_any_outcome_a_step_allows_counts_as_expected_and_the_listing_names_each():
    step = gpu.GpuStep("step", "one", also=("other",))
    assert step.allowed == ("one", "other")
    for observed in ("one", "other"):
        lesson = gpu.GpuLesson("probe", lambda device, seen=observed: [seen], (step,))
        assert lesson.differences(lesson.run("cuda")) == []
    lesson = gpu.GpuLesson("probe", lambda device: ["third"], (step,))
    assert lesson.differences(lesson.run("cuda")) == ["step\n    expected: one | or: other\n    observed: third"]
    assert gpu._listing(lesson.allowed) == "  step\n      -> one\n      or other"


class RaisesWhatCudaChecksRaise(Dataset):
    """Rows whose indexing fails as a CUDA runtime call does where the runtime refuses the process:
    c10::AcceleratorError, worded by c10_cuda_check_implementation ("CUDA error: " + the runtime's
    words, then a help line, then the async-error advice)."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        raise torch.AcceleratorError(
            "CUDA error: initialization error\nSearch for `cudaErrorInitializationError' in "
            "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Device-side assertions were explicitly omitted for this error check; the error probably arose "
            "while initializing the DSA handlers.")


class CallsLazyInit(Dataset):
    """Rows whose indexing initialises CUDA, as the storage constructor of the worker's collate does."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        torch.cuda._lazy_init()


@pytest.mark.parametrize("rows, outcome", [
    (CallsLazyInit(), gpu.BAD_FORK_ERROR), (RaisesWhatCudaChecksRaise(), gpu.FORKED_CUDA_CALL_ERROR),
], ids=["lazy-init-in-a-bad-fork", "cuda-call-refused"])
def test_each_outcome_the_fork_step_allows_is_how_a_fork_worker_reports_that_error(monkeypatch, rows, outcome):
    """Each error a fork worker may meet reaches the loader wrapped, and the lesson prints it as the
    step's allowed outcome says (which one a GPU meets needs a GPU). The worker inherits the bad-fork
    mark as a process forked after CUDA's initialisation does."""
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)
    monkeypatch.setattr(torch.cuda, "_initialized", False)
    step = next(step for step in gpu.GPU_LESSONS["dataloader"].steps if step.also)
    assert outcome in step.allowed
    assert gpu_probes.load_batches(rows, "fork") == outcome


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is initialised here: the constructor has nothing to do")
def test_a_storage_made_on_a_cuda_device_goes_through_torch_cuda_lazy_init():
    """What a fork worker's default collate function makes when the rows are on the GPU: a storage on
    their device (UntypedStorage._new_shared passes a non-CPU device to the constructor). Its C++
    constructor calls torch.cuda._lazy_init, the function that refuses a process forked after its
    parent initialised CUDA; on a wheel without CUDA the same call raises its other refusal."""
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled") as raised:
        torch.UntypedStorage(16, device="cuda")
    assert traceback.extract_tb(raised.value.__traceback__)[-1].name == "_lazy_init"
    assert "return cls(size, device=device)" in inspect.getsource(torch.UntypedStorage._new_shared)


def test_each_step_label_is_written_once():
    source = Path(gpu.__file__).read_text()
    for lesson in gpu.GPU_LESSONS.values():
        for step in lesson.steps:
            assert source.count(f'"{step.label}"') == 1, step.label  # as a string literal


def test_gpu_lesson_names_the_lessons_when_given_an_unknown_one():
    with pytest.raises(ValueError, match="choose one of .*'deepcopy'"):
        gpu.gpu_lesson("no such lesson")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(gpu.GPU_LESSONS))
def test_each_lesson_on_the_cpu_prints_its_gpu_expectation_except_its_gpu_only_steps(name):
    """The CPU runs the same code: every step that does not depend on CUDA must already print what
    the lesson expects on a GPU, so the expectations are checked here against real PyTorch."""
    lesson = gpu.GPU_LESSONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory=True without an accelerator warns
        outcomes = lesson.observe("cpu")
    assert len(outcomes) == len(lesson.steps), "one outcome per step"
    observed = dict(zip(lesson.expected, outcomes))
    for step, expected in lesson.expected.items():
        if step not in GPU_ONLY_STEPS.get(name, set()):
            assert observed[step] == expected.replace("cuda", "cpu"), step


def test_copy_through_the_cpu_leaves_a_failed_copy_s_model_where_the_copy_began():
    model = gpu.caching_linear_after_a_forward("cpu", torch.float64)
    with pytest.raises(RuntimeError, match="graph leaves"):
        gpu.copy_through_the_cpu(model)
    assert model.weight.dtype == torch.float64 and not model.last_output.is_leaf


@needs_cuda
@pytest.mark.parametrize("name", sorted(gpu.GPU_LESSONS))
def test_gpu_lesson_matches_its_expectation_on_cuda(name):
    lesson = gpu.GPU_LESSONS[name]
    observed = lesson.run("cuda")
    assert not lesson.differences(observed), "\n".join(lesson.differences(observed))


# --- what the GPU run installs --------------------------------------------------------------------

def pins(path: Path) -> dict[str, str]:
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return {canonicalize_name(n): v for n, v in (line.split("==") for line in lines if "==" in line)}


def test_gpu_wheels_are_exactly_what_the_gpu_image_lacks_at_the_locked_versions():
    image = {canonicalize_name(line.strip()) for line in (REQUIREMENTS / "gpu-image.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")}
    assert "torch" in image and "pytest" in image
    needed, todo = {}, list(GPU_RUN_ROOTS)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in needed or name in image:
            continue
        distribution = importlib.metadata.distribution(name)
        needed[name] = distribution.version
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if not requirement.marker or requirement.marker.evaluate(PYTHON_312_LINUX):
                todo.append(requirement.name)
    wheels, lock = pins(REQUIREMENTS / "gpu-wheels.txt"), pins(REQUIREMENTS / "maintainer.txt")
    assert wheels == needed
    assert {name: lock.get(name) for name in wheels} == wheels


def test_makefile_runs_the_gpu_scripts_and_the_gpu_kernel_with_the_gpu_sanitize_file():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^gpu-wheels:\n\t.*tools/gpu_wheels\.sh wheels$", makefile, re.MULTILINE)
    assert re.search(r"^test-gpu:\n\t\$\(PYTHON\) tools/test_gpu\.py", makefile, re.MULTILINE)
    gpu_kernel_lines = [line for line in makefile.splitlines() if "--nbval-kernel-name graphleaf-gpu" in line]
    assert gpu_kernel_lines and all("NBVAL_GPU" in line for line in gpu_kernel_lines)
    assert "nbval_sanitize_gpu.cfg" in makefile
    assert "wheels/" in (ROOT / ".gitignore").read_text().split()


def _packages_of(libraries: set[str]) -> set[str]:
    found = subprocess.run(["dpkg", "-S", *sorted(libraries)], capture_output=True, text=True, check=False)
    return {line.split(":")[0] for line in found.stdout.splitlines()}


def debian_bookworm_with_graphviz() -> bool:
    """The saved packages are Debian bookworm's: their names and libraries can be checked only there."""
    release = Path("/etc/os-release")
    return (release.exists() and "VERSION_CODENAME=bookworm" in release.read_text()
            and Path("/usr/bin/dot").exists() and bool(shutil.which("dpkg")) and bool(shutil.which("ldd")))


@pytest.mark.skipif(not debian_bookworm_with_graphviz(), reason="needs Debian bookworm's graphviz, dpkg and ldd")
def test_saved_debian_packages_hold_every_library_that_dot_and_its_plugins_load():
    plugins = Path("/usr/lib/x86_64-linux-gnu/graphviz")
    files = ["/usr/bin/dot", *(str(p) for p in sorted(plugins.glob("libgvplugin_*.so.6"))
                               if re.search(r"_(core|dot_layout|pango)\.", p.name))]
    ldd = subprocess.run(["ldd", *files], capture_output=True, text=True, check=True).stdout
    libraries = {os.path.realpath(m) for m in re.findall(r"=> (/\S+)", ldd)}
    saved = {line.strip() for line in (REQUIREMENTS / "gpu-debs.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")}
    assert _packages_of(libraries) - {"libc6"} <= saved
    assert {"graphviz", "fonts-dejavu-core"} <= saved and "libc6" not in saved


@pytest.mark.slow
@pytest.mark.skipif(not list((ROOT / "wheels" / "debs").glob("*.deb")), reason="run `make gpu-wheels` first")
def test_unpacked_graphviz_renders_with_its_own_libraries_only(tmp_path):
    subprocess.run(["bash", str(ROOT / "tools" / "unpack_graphviz.sh"), str(ROOT / "wheels" / "debs"),
                    str(tmp_path)], check=True, capture_output=True)
    traced = subprocess.run([str(tmp_path / "bin" / "dot"), "-Tpng", "-o", str(tmp_path / "g.png")],
                            input="digraph { a -> b }", capture_output=True, text=True, check=True,
                            env={**os.environ, "LD_DEBUG": "libs"}).stderr
    loaded = set(re.findall(r"calling init: (\S+)", traced))
    outside = {path for path in loaded if not path.startswith(str(tmp_path))}
    assert {Path(p).name for p in outside} <= {"ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6"}
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


def python_3_12() -> str | None:
    """A CPython 3.12 that runs here (PATH, or pyenv's versions), if any."""
    candidates = [shutil.which("python3.12"), *map(str, Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))]
    for candidate in filter(None, candidates):
        probe = [candidate, "-c", "import sys; sys.exit(sys.version_info[:2] != (3, 12))"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return candidate
    return None


@pytest.mark.slow
@pytest.mark.skipif(not list((ROOT / "wheels").glob("*.whl")), reason="run `make gpu-wheels` first")
def test_gpu_wheels_install_offline_into_python_3_12(tmp_path):
    """The compiled wheels must load in CPython 3.12; the rest also needs the image's packages."""
    python = python_3_12()
    if python is None:
        pytest.skip("no CPython 3.12 here")
    site = tmp_path / "site"
    subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet", "--target",
                    str(site), *map(str, sorted((ROOT / "wheels").glob("*.whl")))], check=True)
    probe = "import zmq, tornado, rpds, wcwidth, debugpy, traitlets, jupyter_core, jedi, graphviz; print(zmq.zmq_version())"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr


# --- tools/test_gpu.py ----------------------------------------------------------------------------

def test_gpu_run_says_clearly_that_it_needs_cuda_and_tests_nothing(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "test_gpu.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 3
    assert "No CUDA device is visible" in done.stdout and "nothing was tested" in done.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("# GPU run of graphleaf-edu: NOT RUN: no CUDA device")
    assert f"| torch | {torch.__version__} |" in summary and "| CUDA visible | no |" in summary


def test_gpu_run_without_wheels_says_how_to_get_them(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "test_gpu.py"), "--rehearse", "--out",
                           str(tmp_path), "--wheels", str(tmp_path / "none")],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 1
    summary = (tmp_path / "summary.md").read_text()
    assert "REHEARSAL without CUDA: not a GPU result" in summary
    assert "| install | FAIL: no wheels in" in summary and "make gpu-wheels" in summary


def test_gpu_run_summary_has_a_column_per_kernel_and_a_verdict(tmp_path):
    tool = load_tool("test_gpu")
    run = tool.Run(out=tmp_path, rehearsal=False)
    run.facts = {"cuda_available": True, "gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "driver": "580.1"}
    run.steps = [tool.Step("install", True, "36 wheels"), tool.Step("package tests", False, "1 failed")]
    run.notebooks = {"00_start_here.ipynb": {"graphleaf-gpu": "pass (4 passed)", "graphleaf-cpu": "pass (4 passed)"},
                     "10_on_the_gpu.ipynb": {"graphleaf-gpu": "FAIL (16 passed, 1 failed; exit 1)"}}
    summary = tool.write_summary(run).read_text()
    assert summary.startswith("# GPU run of graphleaf-edu: FAIL")
    assert "| GPU | NVIDIA H200 |" in summary and "| NVIDIA driver | 580.1 |" in summary
    assert "| notebook | graphleaf-gpu | graphleaf-cpu |" in summary
    assert "| 10_on_the_gpu.ipynb | FAIL (16 passed, 1 failed; exit 1) | not run |" in summary
    assert "| package tests | FAIL: 1 failed | 0 |" in summary


def test_gpu_run_reads_pytest_counts_and_the_verified_torch(tmp_path):
    tool = load_tool("test_gpu")
    report = tmp_path / "junit.xml"
    report.write_text('<testsuites><testsuite tests="10" failures="1" errors="1" skipped="3"/></testsuites>')
    assert tool.junit_counts(report) == "5 passed, 2 failed, 3 skipped"
    assert tool.junit_counts(tmp_path / "missing.xml") == "no report"
    assert tool._verified_torch() == VERIFIED_TORCH
    assert tool._torch_minor("2.11.0+cu130") == "2.11"


def test_the_runs_pythonwarnings_silences_only_the_version_warning_in_a_kernel(monkeypatch):
    """nbval cannot sanitize an output away, so the GPU run silences the setup cell's version warning
    (torch there is not the verified one) through PYTHONWARNINGS, which the kernels inherit."""
    cell = ("import warnings, graphleaf_edu.notebook as setup\n"
            "setup.VERIFIED_TORCH = '0.1'\n"
            "setup.setup_notebook()\n"
            "warnings.warn('another warning', UserWarning, stacklevel=1)")

    def stderr_of_the_cell() -> str:
        notebook = new_notebook(cells=[new_code_cell(cell)])
        NotebookClient(notebook, kernel_name="graphleaf-cpu", timeout=120).execute()
        return "".join(o.get("text", "") for o in notebook.cells[0].outputs if o.get("name") == "stderr")

    monkeypatch.delenv("PYTHONWARNINGS", raising=False)  # the GPU run itself sets it
    assert load_tool("test_gpu").VERSION_WARNING in stderr_of_the_cell()
    monkeypatch.setenv("PYTHONWARNINGS", f"ignore:{load_tool('test_gpu').VERSION_WARNING}")
    silenced = stderr_of_the_cell()
    assert "verified with torch" not in silenced and "another warning" in silenced


@pytest.mark.skipif(not (shutil.which("git") and (ROOT / ".git").exists()), reason="needs a git checkout")
def test_wheels_folder_is_ignored_by_git():
    listed = subprocess.run(["git", "check-ignore", "wheels/x.whl"], cwd=ROOT, capture_output=True, check=False)
    assert listed.returncode == 0
