"""What ``import graphleaf_edu`` adds to ``import torch``, and what loading lazily saves.

Each repeat is a fresh interpreter under ``python -X importtime`` that imports torch first, then the
package, then touches the lazily loaded names (``draw``, ``scenario_explorer``). Because torch is
already loaded, the package's cumulative import time is exactly what it adds to a training job's
``import torch``; the lazy modules show up as their own top-level imports. Medians over the repeats:
the machine is shared and import times swing with its load.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys

from bench.harness import format_table

GOAL_MS = 50.0
SCRIPT = "import torch; import graphleaf_edu as gl; gl.draw; gl.scenario_explorer"
# importtime's lines: "import time: <self us> | <cumulative us> | <indent><module>"; indent 0 = top level.
TOP_LEVEL = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\S+)$", re.MULTILINE)
# What each top-level import stands for in the table; graphs and widgets are what the package defers.
MODULES = {"torch": "import torch", "graphleaf_edu": "import graphleaf_edu (after torch)",
           "graphleaf_edu.graphs": "first use of gl.draw (graphviz, torchviz)",
           "graphleaf_edu.widgets": "first use of gl.scenario_explorer (ipywidgets)"}


def installed_environment() -> dict[str, str]:
    """The environment with bytecode caching on: an installed package has its ``.pyc`` files (pip
    writes them, as it did torch's), so with PYTHONDONTWRITEBYTECODE set every run would compile
    the package's sources and time the compiler instead of the import."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def one_run() -> dict[str, float]:
    """Cumulative import milliseconds of each top-level import in MODULES, in one fresh interpreter."""
    completed = subprocess.run([sys.executable, "-X", "importtime", "-c", SCRIPT],
                               capture_output=True, text=True, check=True, env=installed_environment())
    found = {name: int(us) / 1e3 for us, name in TOP_LEVEL.findall(completed.stderr)}
    missing = set(MODULES) - found.keys()
    if missing:
        raise RuntimeError(f"no top-level importtime line for {sorted(missing)}: was one imported earlier?")
    return {name: found[name] for name in MODULES}


def run(quick: bool = False) -> dict:
    repeats = 3 if quick else 11
    one_run()  # writes the package's .pyc files where a source checkout has none yet
    runs = [one_run() for _ in range(repeats)]
    median_ms = {name: statistics.median(r[name] for r in runs) for name in MODULES}
    overhead = statistics.median(r["graphleaf_edu"] for r in runs)
    torch_ms = median_ms["torch"]
    print(format_table(["import", "median ms", "min ms", "max ms"],
                       [[MODULES[name], median_ms[name], min(r[name] for r in runs), max(r[name] for r in runs)]
                        for name in MODULES]))
    result = {
        "repeats": repeats, "median_ms": median_ms, "goal_ms": GOAL_MS,
        "overhead_ms": overhead,
        "with_package_vs_torch": (torch_ms + overhead) / torch_ms,
        "deferred_ms": median_ms["graphleaf_edu.graphs"] + median_ms["graphleaf_edu.widgets"],
    }
    print(f"\nimport torch + graphleaf_edu = {result['with_package_vs_torch']:.3f} x import torch alone "
          f"(+{overhead:.1f} ms); loading lazily defers {result['deferred_ms']:.0f} ms to first use")
    return result


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
