"""Suite time against its floor: every notebook under notebooks/ executed on the graphleaf-cpu kernel.

The floor is a notebook whose only cell imports torch, torchviz, ipywidgets and graphleaf_edu: the
price of opening any notebook before its first lesson runs. Each notebook gets a kernel of its own,
as in JupyterLab, nbval and a classroom, so the floor of a suite of N notebooks is N floors and the
goal reads: total <= 1.5 x N x floor. The total is also shown against a single floor.

A run's time is from asking for a kernel until its last cell has finished, read by a probe cell
appended to a copy of the notebook; kernel shutdown is left out. The same probe reads the kernel's
memory, which ``bench.footprint`` reports. Notebooks and the floor take turns, so they share the
machine's noise. The warm-up is one untimed floor kernel: it loads torch and the kernel's modules
into the page cache, the cold cost every later kernel would otherwise pay unevenly.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from bench.harness import format_table

KERNEL = "graphleaf-cpu"
# A notebook whose finished child processes used at least this many floors of CPU started fresh
# worker interpreters (spawn / forkserver DataLoader workers import torch, about a floor each):
# the suite is also reported without them, so what the lessons cost and what the workers cost show apart.
WORKER_CPU_FLOORS = 0.5
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
FLOOR_SOURCE = "import torch, torchviz, ipywidgets, graphleaf_edu"
GOAL_RATIO = 1.5
PROBE_SOURCE = """\
import json as _json, resource as _resource, time as _time
_status = dict(line.split(":", 1) for line in open("/proc/self/status"))
_self, _children = (_resource.getrusage(who) for who in (_resource.RUSAGE_SELF, _resource.RUSAGE_CHILDREN))
print(_json.dumps({"done_at": _time.time(),
                   "cpu_s": _self.ru_utime + _self.ru_stime + _children.ru_utime + _children.ru_stime,
                   "child_cpu_s": _children.ru_utime + _children.ru_stime,
                   "self_kb": _self.ru_maxrss, "children_kb": _children.ru_maxrss,
                   "anon_kb": int(_status["RssAnon"].split()[0]),
                   "file_kb": int(_status["RssFile"].split()[0])}))"""


@dataclass(frozen=True)
class Run:
    """One notebook in one fresh kernel: wall seconds; CPU seconds of the kernel and its finished
    children (steadier on a shared machine, blind to waits), and of the children alone (DataLoader
    workers, ``dot``); memory in MB: peaks from ``ru_maxrss``
    (the kernel; its largest finished child), and what the kernel still holds after its last cell."""

    seconds: float
    cpu_s: float
    child_cpu_s: float
    peak_rss_mb: float
    peak_child_rss_mb: float
    anon_rss_mb: float
    file_rss_mb: float


def suite_paths(folder: Path = NOTEBOOKS) -> list[Path]:
    """Lessons and exercises, in reading order: the course list's notebooks. The Chinese twins under
    zh-CN/ run their English twin's code (tests/test_twin_sync.py), so they are not timed again."""
    return sorted(p for p in folder.rglob("*.ipynb") if not {".ipynb_checkpoints", "zh-CN"} & set(p.parts))


def floor_notebook() -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_SOURCE)])


def execute(notebook: nbformat.NotebookNode, folder: Path = NOTEBOOKS) -> Run:
    """Run a copy of ``notebook`` plus the probe cell in a fresh kernel started in ``folder``."""
    probed = nbformat.from_dict(notebook)
    probed.cells = [*notebook.cells, nbformat.v4.new_code_cell(PROBE_SOURCE)]
    client = NotebookClient(probed, kernel_name=KERNEL, timeout=600, record_timing=False,
                            shutdown_kernel="immediate", resources={"metadata": {"path": str(folder)}})
    started_at = time.time()
    client.execute(stderr=subprocess.DEVNULL)  # the kernel's own log lines, not the notebook's output
    printed = "".join(o.get("text", "") for o in probed.cells[-1].outputs if o.get("name") == "stdout")
    probe = json.loads(printed.strip().splitlines()[-1])
    return Run(probe["done_at"] - started_at, probe["cpu_s"], probe["child_cpu_s"], probe["self_kb"] / 1024, probe["children_kb"] / 1024,
               probe["anon_kb"] / 1024, probe["file_kb"] / 1024)


def execute_path(path: Path) -> Run | str:
    """A run, or the error that stopped the notebook (the suite is still being written)."""
    try:
        return execute(nbformat.read(path, as_version=4), path.parent)
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
        return f"{type(error).__name__}: {str(error).strip().splitlines()[-1]}"


def take_turns(paths: list[Path], repeats: int) -> tuple[list[Run], dict[Path, list[Run] | str]]:
    """A warm-up floor, then ``repeats`` turns of the floor and every notebook."""
    execute(floor_notebook())
    floor_runs: list[Run] = []
    runs: dict[Path, list[Run] | str] = {path: [] for path in paths}
    for _ in range(repeats):
        floor_runs.append(execute(floor_notebook()))
        for path in paths:
            if not isinstance(runs[path], str):
                run_or_error = execute_path(path)
                runs[path] = run_or_error if isinstance(run_or_error, str) else [*runs[path], run_or_error]
    return floor_runs, runs


def summary(runs: list[Run]) -> dict:
    """Median, min and max seconds; memory of the median-time run, and the highest peak seen."""
    seconds = sorted(runs, key=lambda r: r.seconds)
    middle = seconds[(len(seconds) - 1) // 2]
    return {"median_s": statistics.median(r.seconds for r in runs), "min_s": seconds[0].seconds,
            "max_s": seconds[-1].seconds, "repeats": len(runs),
            "cpu_median_s": statistics.median(r.cpu_s for r in runs),
            "child_cpu_median_s": statistics.median(r.child_cpu_s for r in runs),
            "peak_rss_mb": max(r.peak_rss_mb for r in runs),
            "peak_child_rss_mb": max(r.peak_child_rss_mb for r in runs),
            "anon_rss_mb": middle.anon_rss_mb, "file_rss_mb": middle.file_rss_mb}


def worker_split(rows: list[dict], floor: dict) -> dict:
    """The suite against its floors without the notebooks that start worker interpreters, and those alone."""
    ran = [r for r in rows if "error" not in r]
    starting = [r for r in ran if r["child_cpu_median_s"] >= WORKER_CPU_FLOORS * floor["cpu_median_s"]]
    others = [r for r in ran if r not in starting]

    split: dict = {"worker_notebooks": [r["notebook"] for r in starting], "without_workers_n": len(others)}
    for key, group in (("workers_vs_floors", starting), ("without_workers_vs_floors", others)):
        if group:  # a ratio only where there is something to divide
            split[key] = sum(r["median_s"] for r in group) / (len(group) * floor["median_s"])
    return split


def course_groups(folder: Path = NOTEBOOKS) -> dict[str, str]:
    """Each notebook's group in the course list (notebooks/course.toml): core, deep dive, exercise, ..."""
    listed = tomllib.loads((folder / "course.toml").read_text(encoding="utf-8"))["notebook"]
    return {entry["path"]: entry["group"] for entry in listed}


def group_split(rows: list[dict], floor: dict, groups: dict[str, str]) -> dict:
    """The suite against its floors per group of the course: the core and the deep dives apart."""
    split: dict = {}
    for group in dict.fromkeys(groups.values()):
        members = [r for r in rows if "error" not in r and groups.get(r["notebook"]) == group]
        if members:  # a ratio only where there is something to divide
            split[group] = {"n": len(members),
                            "vs_floors": sum(r["median_s"] for r in members) / (len(members) * floor["median_s"])}
    return {"groups": split}


def run(quick: bool = False) -> dict:
    """``quick``: the floor and the first notebook, once each."""
    paths = suite_paths()[:1] if quick else suite_paths()
    floor_runs, runs = take_turns(paths, repeats=1 if quick else 3)
    floor = summary(floor_runs)
    rows = []
    for path, path_runs in runs.items():
        name = str(path.relative_to(NOTEBOOKS))
        if isinstance(path_runs, str):
            rows.append({"notebook": name, "error": path_runs})
        else:
            row = summary(path_runs)
            rows.append({"notebook": name, **row, "vs_floor": row["median_s"] / floor["median_s"],
                         "cpu_vs_floor": row["cpu_median_s"] / floor["cpu_median_s"]})
    ran = [r for r in rows if "error" not in r]
    total = sum(r["median_s"] for r in ran)
    total_cpu = sum(r["cpu_median_s"] for r in ran)
    result = {
        "kernel": KERNEL, "floor_source": FLOOR_SOURCE, "floor": floor, "notebooks": rows,
        "total_s": total, "floors_in_suite": len(ran), "floors_s": len(ran) * floor["median_s"],
        "total_vs_floors": total / (len(ran) * floor["median_s"]) if ran else None,
        "total_vs_one_floor": total / floor["median_s"],
        "total_cpu_s": total_cpu,
        "total_cpu_vs_floors": total_cpu / (len(ran) * floor["cpu_median_s"]) if ran else None,
        "failed": [r["notebook"] for r in rows if "error" in r],
        "goal_ratio": GOAL_RATIO,
        **worker_split(rows, floor),
        **group_split(rows, floor, course_groups()),
    }
    print_table(result)
    return result


def print_table(result: dict) -> None:
    floor = result["floor"]
    table = [["floor (kernel + imports)", floor["median_s"], floor["min_s"], floor["max_s"], 1.0,
              floor["cpu_median_s"], 1.0, floor["child_cpu_median_s"]]]
    for r in result["notebooks"]:
        table.append([r["notebook"], "failed", "-", "-", "-", "-", "-", r["error"][:70]] if "error" in r else
                     [r["notebook"], r["median_s"], r["min_s"], r["max_s"], r["vs_floor"], r["cpu_median_s"],
                      r["cpu_vs_floor"], r["child_cpu_median_s"]])
    n = result["floors_in_suite"]
    if n:
        table.append([f"total, {n} notebooks", result["total_s"], "-", "-",
                      f"{result['total_vs_floors']:.3g} x {n} ({result['total_vs_one_floor']:.3g} x 1)",
                      result["total_cpu_s"], f"{result['total_cpu_vs_floors']:.3g} x {n}", "-"])
    print(format_table(["notebook", "median s", "min s", "max s", "x floor", "kernel cpu s", "cpu x floor",
                        "children cpu s"], table))
    for group, figures in result["groups"].items():
        print(f"{group}, {figures['n']} notebooks: {figures['vs_floors']:.3g} x their floors")
    if result["worker_notebooks"]:
        print(f"starting worker interpreters (children cpu >= {WORKER_CPU_FLOORS} floor): "
              f"{', '.join(result['worker_notebooks'])}: {result['workers_vs_floors']:.3g} x their floors")
    if result["without_workers_n"]:
        print(f"the other {result['without_workers_n']} notebooks: {result['without_workers_vs_floors']:.3g} x their floors")


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
