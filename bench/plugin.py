"""What ``pytest --graphleaf`` costs a passing suite: the project's own unit tests, with and without it.

Each variant is a fresh ``python -m pytest`` of the same test files (the plugin is installed, so it is
loaded in both; only ``--graphleaf`` differs), the variants taking turns in each repeat. Two ratios,
medians over the repeats: the whole run's CPU seconds (the pytest process and its children: what a CI
job pays, torch's import included) and the test loop's own CPU seconds, every test's setup, call and
teardown (``bench/pytest_timer.py``: imports and collection come before it; with ``--graphleaf``,
``graphleaf_edu`` and torch are imported when pytest configures the plugin, otherwise while collecting). CPU time,
because the machine is shared and wall-clock times swing with other people's load; one torch thread
for the same reason. Each run's outcome counts are compared too: the plugin must not change them.
"""
from __future__ import annotations

import re
import resource
import statistics
import subprocess
import sys
from pathlib import Path

from bench.harness import format_table
from bench.imports import installed_environment

ROOT = Path(__file__).resolve().parent.parent
# Unit tests of the core, which copy, send and diagnose non-leaf tensors (graph errors raised and caught)
FILES = {"full": ["tests/test_diagnose.py", "tests/test_copying.py", "tests/test_errors.py"],
         "quick": ["tests/test_errors.py"]}
VARIANTS = {"plain": [], "graphleaf": ["--graphleaf"]}
TESTS = re.compile(r"^tests_cpu_s=([0-9.]+)$", re.MULTILINE)
OUTCOMES = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|warnings?)")


def one_run(files: list[str], extra: list[str]) -> dict:
    """The whole run's CPU seconds, the test loop's, and the outcome counts of one pytest run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "bench.pytest_timer", *extra, *files],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
        env=installed_environment() | {"OMP_NUM_THREADS": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tests = TESTS.search(completed.stdout)
    if completed.returncode not in (0, 1) or tests is None:
        raise RuntimeError(f"pytest {' '.join(extra)} failed to run: {completed.stdout[-500:]!r}")
    summary = completed.stdout.strip().splitlines()[-1]
    return {"cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "tests_cpu_s": float(tests.group(1)),
            "outcomes": {noun.rstrip("s"): int(count) for count, noun in OUTCOMES.findall(summary)}}


def run(quick: bool = False) -> dict:
    files = FILES["quick" if quick else "full"]
    repeats = 1 if quick else 3
    samples: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    for repeat in range(repeats):
        names = list(VARIANTS)
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:  # each variant leads in turn
            samples[name].append(one_run(files, VARIANTS[name]))
    medians = {measure: {name: statistics.median(s[measure] for s in runs) for name, runs in samples.items()}
               for measure in ("cpu_s", "tests_cpu_s")}
    outcomes = {name: runs[0]["outcomes"] for name, runs in samples.items()}
    same = all(run["outcomes"] == outcomes["plain"] for runs in samples.values() for run in runs)
    result = {
        "files": files, "repeats": repeats, "outcomes": outcomes,
        "tests": sum(count for noun, count in outcomes["plain"].items() if noun != "warning"),
        "same_outcomes": same, **medians,
        "graphleaf_vs_plain": medians["cpu_s"]["graphleaf"] / medians["cpu_s"]["plain"],
        "tests_graphleaf_vs_plain": medians["tests_cpu_s"]["graphleaf"] / medians["tests_cpu_s"]["plain"],
    }
    print(format_table(
        ["tests", "plain: CPU s", "--graphleaf: CPU s", "whole run, ratio", "test loop, ratio", "same outcomes"],
        [[", ".join(Path(f).stem for f in files), medians["cpu_s"]["plain"], medians["cpu_s"]["graphleaf"],
          result["graphleaf_vs_plain"], result["tests_graphleaf_vs_plain"], "yes" if same else "NO"]]))
    return result


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
