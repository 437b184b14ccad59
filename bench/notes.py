"""What ``python -m graphleaf_edu`` costs a training script that never fails: origins off, on, and
``--keep-going`` (its hooks on every deepcopy and send, and origins on).

Two real loops (bench/loops/): the capstone's fixed loop (fork DataLoader workers, a forward hook, an EMA
teacher), which its workers dominate, and a compute-bound MLP loop, where autograd's anomaly mode
(``--origins`` records each ``grad_fn``'s creation stack) costs the most. Each variant is a fresh
interpreter; a ratio divides the loop's own CPU seconds (``cpu_s=``, printed by the script: user and
system time of the process and of its finished DataLoader workers) under the runner by the plain
script's, the variants taking turns in each repeat; medians over the repeats. CPU time, because the
machine is shared and wall-clock times swing with other people's load (the wall-clock ratio of the
loop is reported beside it); one torch thread (``OMP_NUM_THREADS=1``) for the same reason.
"""
from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import format_table
from bench.imports import installed_environment

LOOPS = Path(__file__).resolve().parent / "loops"
RUNNER = [sys.executable, "-m", "graphleaf_edu"]
VARIANTS = {  # name: the command before the script
    "plain": [sys.executable],
    "runner": RUNNER,
    "origins": [*RUNNER, "--origins"],
    "keep_going": [*RUNNER, "--keep-going"],
}
SIZES = {"capstone_like": ("4", "1"), "compute_bound": ("400", "40")}  # (full, quick) epochs or steps
LOOP_TIME = re.compile(r"^loop_s=([0-9.]+) cpu_s=([0-9.]+)$", re.MULTILINE)


def one_run(command: list[str], loop: str, size: str) -> tuple[float, float, float]:
    """(the loop's CPU seconds, its wall seconds, the whole process' wall seconds) of one run."""
    environment = installed_environment() | {"OMP_NUM_THREADS": "1"}
    started = time.perf_counter()
    completed = subprocess.run([*command, str(LOOPS / f"{loop}.py"), size], capture_output=True, text=True,
                               check=True, env=environment, timeout=600)
    wall = time.perf_counter() - started
    match = LOOP_TIME.search(completed.stdout)
    if match is None:
        raise RuntimeError(f"{loop} printed no loop_s= cpu_s= line: {completed.stdout[-300:]!r}")
    return float(match.group(2)), float(match.group(1)), wall


def measure_loop(loop: str, repeats: int, quick: bool, variants: dict[str, list[str]]) -> dict:
    size = SIZES[loop][1 if quick else 0]
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in variants}
    for repeat in range(repeats):
        names = list(variants)
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:  # each variant leads in turn
            samples[name].append(one_run(variants[name], loop, size))
    medians = {measure: {name: statistics.median(s[i] for s in runs) for name, runs in samples.items()}
               for i, measure in enumerate(("cpu_s", "loop_s", "process_s"))}
    row = {"loop": loop, "size": int(size), "repeats": repeats, **medians}
    for name in variants:
        if name != "plain":
            row[f"{name}_vs_plain"] = medians["cpu_s"][name] / medians["cpu_s"]["plain"]
            row[f"{name}_wall_vs_plain"] = medians["loop_s"][name] / medians["loop_s"]["plain"]
    return row


def run(quick: bool = False, variants: dict[str, list[str]] | None = None) -> dict:
    chosen = variants or VARIANTS
    repeats = 1 if quick else 5
    rows = [measure_loop(loop, repeats, quick, chosen) for loop in SIZES]
    others = [name for name in chosen if name != "plain"]
    print(format_table(
        ["loop", "plain: CPU s", *[f"{name} / plain, CPU" for name in others],
         *[f"{name} / plain, wall" for name in others]],
        [[r["loop"], r["cpu_s"]["plain"], *[r[f"{n}_vs_plain"] for n in others],
          *[r[f"{n}_wall_vs_plain"] for n in others]] for r in rows]))
    return {"rows": rows, "variants": others}


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
