"""`make test-gpu`: the whole suite on a CUDA machine that has torch but no Jupyter and no network.

    python3 tools/test_gpu.py [--out DIR] [--wheels DIR] [--rehearse]

1. Records the machine: GPU, driver, CUDA, torch, Python. Without CUDA it stops there (exit 3),
   unless ``--rehearse``: then every step runs anyway, to check this script on a CPU machine, and
   the summary says that it is not a GPU result.
2. Installs what ``make gpu-wheels`` saved (``--wheels``, default ``wheels/``) offline into a
   scratch folder, and makes Graphviz's ``dot`` runnable from the saved Debian packages when the
   machine has none; installs the ``graphleaf-cpu`` and ``graphleaf-gpu`` kernels there.
3. Runs the GPU lessons (``graphleaf_edu.gpu.main``), the package tests (the CUDA device included),
   and nbval over every notebook on the ``graphleaf-gpu`` kernel, then on the ``graphleaf-cpu``
   kernel of the same machine: same torch, CUDA hidden. A notebook that fails on both kernels
   differs by torch version; one that fails only on the GPU kernel differs on the GPU.
4. Writes ``summary.md`` (pass/fail per step and notebook, versions, GPU, run time) and the logs
   to ``--out`` (default ``test-artifacts/gpu``). Exit 0 when everything passed, else 1.

Only the standard library is used here: nothing else is installed before step 2.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

REPO = Path(__file__).resolve().parent.parent
GPU_SANITIZE = REPO / "tests" / "nbval_sanitize_gpu.cfg"
VERSION_WARNING = "These notebooks were verified with torch"  # graphleaf_edu.notebook's warning
# Not run here: JupyterLab in Chromium, nbgrader courses, benchmarks (none is installed or GPU-related).
PACKAGE_TESTS = ["tests", "-m", "not slow and not browser", "--ignore=tests/test_browser.py",
                 "--ignore=tests/test_exercises.py", "--ignore=tests/test_bench.py"]
IMPORTS = "import nbval, nbclient, nbformat, ipykernel, ipywidgets, torchviz, graphviz, graphleaf_edu"
FACTS = """
import json, platform, torch
facts = {"python": platform.python_version(), "torch": torch.__version__,
         "cuda_build": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
if facts["cuda_available"]:
    properties = torch.cuda.get_device_properties(0)
    facts.update(gpu=torch.cuda.get_device_name(0), gpu_count=torch.cuda.device_count(),
                 capability=f"{properties.major}.{properties.minor}",
                 gpu_memory_gib=round(properties.total_memory / 2**30))
print(json.dumps(facts))
"""
TIMED_OUT, NOT_RUN = 124, 125
NO_CUDA = ("No CUDA device is visible to {python}: this run needs a GPU machine, so nothing was tested.\n"
           "(To check this script itself on a CPU machine, run it with --rehearse.)")


@dataclass
class Step:
    name: str
    passed: bool
    detail: str
    seconds: float = 0.0


@dataclass
class Run:
    out: Path
    rehearsal: bool
    started: float = field(default_factory=time.monotonic)
    facts: dict = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    notebooks: dict[str, dict[str, str]] = field(default_factory=dict)  # notebook -> kernel -> verdict
    notes: list[str] = field(default_factory=list)
    deadline: float = float("inf")  # time.monotonic() by which every step must have ended

    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(step.passed for step in self.steps) and all(
            verdict.startswith("pass") for kernels in self.notebooks.values() for verdict in kernels.values())

    def log(self, text: str) -> None:
        print(text, flush=True)
        with open(self.out / "run.log", "a") as log:
            log.write(text + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "test-artifacts" / "gpu")
    parser.add_argument("--wheels", type=Path, default=REPO / "wheels")
    parser.add_argument("--rehearse", action="store_true", help="run every step even without CUDA")
    parser.add_argument("--kernels", default="graphleaf-gpu,graphleaf-cpu", help="nbval passes, in order")
    parser.add_argument("--unpack-graphviz", action="store_true",
                        help="use the saved Graphviz even where the machine has its own dot")
    parser.add_argument("--budget", type=float, default=0, metavar="SECONDS",
                        help="stop starting steps after this long, so the summary is written in time (0: no limit)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "run.log").write_text("")
    run = Run(out=args.out.resolve(), rehearsal=args.rehearse)
    if args.budget:
        run.deadline = run.started + args.budget
    run.log(f"graphleaf-edu GPU run, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")

    run.facts = machine_facts(run)
    if not run.facts.get("cuda_available") and not run.rehearsal:
        run.log(NO_CUDA.format(python=sys.executable))
        write_summary(run)
        return 3
    with tempfile.TemporaryDirectory(prefix="graphleaf-gpu-run-") as scratch:
        env = prepare(run, args.wheels.resolve(), Path(scratch), args.unpack_graphviz)
        if env is not None:
            for step in [run_lessons, run_package_tests,
                         *[functools.partial(run_notebooks, kernel=k) for k in args.kernels.split(",")]]:
                step(run, env)
                write_summary(run)  # after each step: a run stopped from outside still leaves one
    write_summary(run)
    run.log(f"summary: {run.out / 'summary.md'}")
    return 0 if run.passed else 1


# --- the steps --------------------------------------------------------------------------------------

def machine_facts(run: Run) -> dict:
    done = subprocess.run([sys.executable, "-c", FACTS], capture_output=True, text=True, check=False)
    facts = json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr.strip()[-2000:]}
    facts["python_executable"] = sys.executable
    facts["driver"] = _nvidia_smi("driver_version")
    run.log("machine: " + json.dumps(facts))
    return facts


def prepare(run: Run, wheels: Path, scratch: Path, unpack_graphviz: bool = False) -> dict[str, str] | None:
    """Install the wheels, Graphviz and the kernels; return the environment for the steps, or None."""
    site, started = scratch / "site", time.monotonic()
    found = sorted(wheels.glob("*.whl"))
    if not found:
        run.steps.append(Step("install", False, f"no wheels in {wheels}: run `make gpu-wheels` where packages "
                                                "can be downloaded, then carry the folder here"))
        run.log(run.steps[-1].detail)
        return None
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), str(REPO), env.get("PYTHONPATH")]))
    env.update(JUPYTER_PATH=str(scratch / "share" / "jupyter"), JUPYTER_RUNTIME_DIR=str(scratch / "runtime"),
               IPYTHONDIR=str(scratch / "ipython"), PYTHONDONTWRITEBYTECODE="1")
    install = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
               "--disable-pip-version-check", "--quiet", "--target", str(site), *map(str, found)]
    kernels = f"from graphleaf_edu.kernels import install; install(prefix={str(scratch)!r})"
    for what, command in [("install the wheels", install), ("import", [sys.executable, "-c", IMPORTS]),
                          ("install the kernels", [sys.executable, "-c", kernels])]:
        done = _run(run, command, env, "run.log", timeout=600)
        if done != 0:
            run.steps.append(Step("install", False, f"{what} failed (see run.log)", time.monotonic() - started))
            return None
    env["PATH"] = graphviz_path(run, wheels / "debs", scratch / "graphviz", env["PATH"], unpack_graphviz)
    if _torch_minor(run.facts.get("torch", "")) != _verified_torch():
        env["PYTHONWARNINGS"] = f"ignore:{VERSION_WARNING}"
        run.notes.append(
            f"torch {run.facts.get('torch')} runs here; the stored outputs were made with torch {_verified_torch()}. "
            "The setup cell's version line is sanitized and its version warning silenced (PYTHONWARNINGS). "
            "Other outputs may legitimately differ between torch versions: compare the two kernels' columns.")
    run.steps.append(Step("install", True, f"{len(found)} wheels, kernels, Graphviz: {run.facts.get('graphviz')}",
                          time.monotonic() - started))
    return env


def graphviz_path(run: Run, debs: Path, prefix: Path, path: str, unpack: bool = False) -> str:
    """PATH with a runnable ``dot``: the machine's own (unless ``unpack``), else the one unpacked from ``debs``."""
    if shutil.which("dot", path=path) and not unpack:
        run.facts["graphviz"] = "the machine's own dot"
        return path
    done = _run(run, ["bash", str(REPO / "tools" / "unpack_graphviz.sh"), str(debs), str(prefix)],
                dict(os.environ), "run.log", timeout=300)
    if done != 0:
        run.facts["graphviz"] = "MISSING: graph cells fall back to text and fail nbval"
        return path
    run.facts["graphviz"] = "dot unpacked from the saved Debian packages"
    return os.pathsep.join([str(prefix / "bin"), path])


def run_lessons(run: Run, env: dict[str, str]) -> None:
    started = time.monotonic()
    program = "import sys; from graphleaf_edu.gpu import main; sys.exit(main())"
    code = _run(run, [sys.executable, "-c", program], env, "gpu-lessons.txt", timeout=600)
    verdict = {0: "every lesson as expected", 1: "a lesson differs", 2: "not run: no CUDA"}.get(code, _exit(code))
    passed = code == 0 or (code == 2 and run.rehearsal)
    run.steps.append(Step("GPU lessons", passed, verdict + " (gpu-lessons.txt)", time.monotonic() - started))


def run_package_tests(run: Run, env: dict[str, str]) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        command = [sys.executable, "-m", "pytest", *PACKAGE_TESTS, "-p", "no:cacheprovider", "-q", "-rfEs",
                   f"--junitxml={report}"]
        code = _run(run, command, env, "package-tests.log", timeout=900)
        counts = junit_counts(report)
    run.steps.append(Step("package tests", code == 0, f"{counts} (package-tests.log)", time.monotonic() - started))


def run_notebooks(run: Run, env: dict[str, str], kernel: str) -> None:
    started, failed = time.monotonic(), 0
    for notebook in notebooks():
        name = str(notebook.relative_to(REPO / "notebooks"))
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "junit.xml"
            command = [sys.executable, "-m", "pytest", "--nbval", "--nbval-sanitize-with", str(GPU_SANITIZE),
                       "--nbval-kernel-name", kernel, "--nbval-cell-timeout", "300", "-p", "no:cacheprovider",
                       "-q", f"--junitxml={report}", str(notebook)]
            code = _run(run, command, env, f"nbval-{kernel}.log", timeout=600)
            counts = junit_counts(report)
        verdict = f"pass ({counts})" if code == 0 else f"FAIL ({counts}; {_exit(code)})"
        failed += code != 0
        run.notebooks.setdefault(name, {})[kernel] = verdict
        run.log(f"  {kernel} {name}: {verdict}")
    run.steps.append(Step(f"nbval on {kernel}", failed == 0, f"{failed} notebook(s) failed (nbval-{kernel}.log)",
                          time.monotonic() - started))


# --- reading and writing results ----------------------------------------------------------------

def notebooks() -> list[Path]:
    return sorted(p for p in (REPO / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def junit_counts(report: Path) -> str:
    """``'12 passed, 1 failed, 2 skipped'`` from a pytest JUnit XML report."""
    if not report.exists():
        return "no report"
    suite = ElementTree.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    total, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    parts = [f"{total - failed - skipped} passed"] + [f"{n} {what}" for n, what in
                                                      [(failed, "failed"), (skipped, "skipped")] if n]
    return ", ".join(parts)


def write_summary(run: Run) -> Path:
    facts, kernels = run.facts, sorted({k for verdicts in run.notebooks.values() for k in verdicts}, reverse=True)
    if not facts.get("cuda_available"):
        verdict = "REHEARSAL without CUDA: not a GPU result" if run.rehearsal else "NOT RUN: no CUDA device"
    else:
        verdict = "PASS" if run.passed else "FAIL"
    when = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    lines = [f"# GPU run of graphleaf-edu: {verdict}", "",
             f"Run {when} by `tools/test_gpu.py`, {time.monotonic() - run.started:.0f} s in all.", "",
             "| machine | |", "| --- | --- |"]
    for key, label in [("gpu", "GPU"), ("gpu_count", "GPUs visible"), ("capability", "compute capability"),
                       ("gpu_memory_gib", "GPU memory (GiB)"), ("driver", "NVIDIA driver"),
                       ("cuda_build", "CUDA (torch build)"), ("torch", "torch"), ("python", "Python"),
                       ("graphviz", "Graphviz"), ("error", "error")]:
        if facts.get(key) not in (None, ""):
            lines.append(f"| {label} | {facts[key]} |")
    lines.append(f"| CUDA visible | {'yes' if facts.get('cuda_available') else 'no'} |")
    if run.steps:
        lines += ["", "| step | result | seconds |", "| --- | --- | --- |"]
    lines += [f"| {s.name} | {'pass' if s.passed else 'FAIL'}: {s.detail} | {s.seconds:.0f} |" for s in run.steps]
    if run.notebooks:
        lines += ["", "| notebook | " + " | ".join(kernels) + " |", "| --- |" + " --- |" * len(kernels)]
        lines += [f"| {name} | " + " | ".join(verdicts.get(k, "not run") for k in kernels) + " |"
                  for name, verdicts in run.notebooks.items()]
    if run.notes:
        lines += [""] + [f"- {note}" for note in run.notes]
    path = run.out / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    (run.out / "facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    return path


def _run(run: Run, command: list[str], env: dict[str, str], log_name: str, timeout: float) -> int:
    """Run ``command`` in the repository, appending its output to ``log_name``; its exit status."""
    with open(run.out / log_name, "a") as log:
        log.write(f"\n$ {' '.join(command)}\n")
        log.flush()
        timeout = min(timeout, run.seconds_left())
        if timeout < 10:
            log.write("not run: the time budget is spent\n")
            return NOT_RUN
        try:
            return subprocess.run(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False).returncode
        except subprocess.TimeoutExpired:
            log.write(f"\nTIMED OUT after {timeout:.0f} s\n")
            return TIMED_OUT


def _exit(code: int) -> str:
    return {TIMED_OUT: "timed out", NOT_RUN: "not run: time budget spent"}.get(code, f"exit {code}")


def _nvidia_smi(query: str) -> str:
    if not shutil.which("nvidia-smi"):
        return ""
    done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else ""


def _torch_minor(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def _verified_torch() -> str:
    """``VERIFIED_TORCH`` of graphleaf_edu.notebook, read as text: torch may not import in this process."""
    for line in (REPO / "graphleaf_edu" / "notebook.py").read_text().splitlines():
        if line.startswith("VERIFIED_TORCH ="):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise RuntimeError("graphleaf_edu/notebook.py defines no VERIFIED_TORCH")


if __name__ == "__main__":
    sys.exit(main())
