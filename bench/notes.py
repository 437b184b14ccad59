"""What ``python -m graphleaf_edu`` costs a training script that never fails: origins off, and on.

Two real loops (bench/loops/): the capstone's fixed loop (fork DataLoader workers, a forward hook, an EMA
teacher), which its workers dominate, and a compute-bound MLP loop, where autograd's anomaly mode
(``--origins`` records each ``grad_fn``'s creation stack) costs the most. Each variant is a fresh
interpreter; a ratio divides the loop's own time (``loop_s=``, printed by the script) under the runner by
the plain script's, the variants taking turns in each repeat; medians over the repeats. One torch thread
(``OMP_NUM_THREADS=1``): the machine is shared, and thread contention would swamp the figures.
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
}
SIZES = {"capstone_like": ("4", "1"), "compute_bound": ("400", "40")}  # (full, quick) epochs or steps
LOOP_TIME = re.compile(r"^loop_s=([0-9.]+)$", re.MULTILINE)


def one_run(command: list[str], loop: str, size: str) -> tuple[float, float]:
    """(the loop's own seconds, the whole process' wall seconds) of one run."""
    environment = installed_environment() | {"OMP_NUM_THREADS": "1"}
    started = time.perf_counter()
    completed = subprocess.run([*command, str(LOOPS / f"{loop}.py"), size], capture_output=True, text=True,
                               check=True, env=environment, timeout=600)
    wall = time.perf_counter() - started
    match = LOOP_TIME.search(completed.stdout)
    if match is None:
        raise RuntimeError(f"{loop} printed no loop_s= line: {completed.stdout[-300:]!r}")
    return float(match.group(1)), wall


def measure_loop(loop: str, repeats: int, quick: bool, variants: dict[str, list[str]]) -> dict:
    size = SIZES[loop][1 if quick else 0]
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for repeat in range(repeats):
        names = list(variants)
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:  # each variant leads in turn
            samples[name].append(one_run(variants[name], loop, size))
    loop_s = {name: statistics.median(s[0] for s in runs) for name, runs in samples.items()}
    process_s = {name: statistics.median(s[1] for s in runs) for name, runs in samples.items()}
    row = {"loop": loop, "size": int(size), "repeats": repeats, "loop_s": loop_s, "process_s": process_s}
    for name in variants:
        if name != "plain":
            row[f"{name}_vs_plain"] = loop_s[name] / loop_s["plain"]
            row[f"{name}_process_vs_plain"] = process_s[name] / process_s["plain"]
    return row


def run(quick: bool = False, variants: dict[str, list[str]] | None = None) -> dict:
    chosen = variants or VARIANTS
    repeats = 1 if quick else 5
    rows = [measure_loop(loop, repeats, quick, chosen) for loop in SIZES]
    others = [name for name in chosen if name != "plain"]
    print(format_table(
        ["loop", "plain loop s", *[f"{name} / plain" for name in others],
         *[f"{name} / plain, whole process" for name in others]],
        [[r["loop"], r["loop_s"]["plain"], *[r[f"{n}_vs_plain"] for n in others],
          *[r[f"{n}_process_vs_plain"] for n in others]] for r in rows]))
    return {"rows": rows, "variants": others}


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
