"""What the suite costs a machine: the venv on disk, and a student's kernel in memory.

Disk: every file under the venv once (hard links counted once), as allocated blocks.
Memory: the peak resident set of a kernel that has run a notebook, read inside that kernel by
``resource.getrusage`` (``ru_maxrss``) in a cell appended after the last one; DataLoader workers
and other children are reported as the largest finished child: a forked child's peak includes
the pages it shares with the kernel, so kernel + child is an upper bound. The baseline is the floor kernel
of ``bench.notebooks`` (start + imports).

A student who leaves every notebook's kernel running holds all of them at once. Their private
memory adds up (``RssAnon`` after the last cell) while the file-backed pages of torch's libraries
are shared (``RssFile``, counted once): "every kernel left open" = sum of anon + largest file.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from bench import notebooks
from bench.harness import format_table

VENV = Path(sys.prefix)
STUDENT_BUDGET_MB = 2048
TOP_PACKAGES = 5


def disk_mb(folder: Path) -> float:
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            stat = os.lstat(os.path.join(root, name))
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total / 2**20


def largest_packages(venv: Path, count: int) -> list[dict]:
    site_packages = next(venv.glob("lib/python*/site-packages"), None)
    if site_packages is None:
        return []
    sizes = [{"package": p.name, "mb": disk_mb(p)} for p in site_packages.iterdir() if p.is_dir()]
    return sorted(sizes, key=lambda s: s["mb"], reverse=True)[:count]


def kernel_peaks(quick: bool) -> dict:
    """Each notebook once, each in its own kernel, plus the floor kernel."""
    paths = notebooks.suite_paths()[:1] if quick else notebooks.suite_paths()
    floor = _memory(vars(notebooks.execute(notebooks.floor_notebook())))
    rows = []
    for path in paths:
        run_or_error = notebooks.execute_path(path)
        name = str(path.relative_to(notebooks.NOTEBOOKS))
        if isinstance(run_or_error, str):
            rows.append({"notebook": name, "error": run_or_error})
        else:
            rows.append({"notebook": name, **_memory(vars(run_or_error))})
    return {"floor": floor, "rows": rows}


def _memory(readings: dict) -> dict:
    return {key: readings[key] for key in ("peak_rss_mb", "peak_child_rss_mb", "anon_rss_mb", "file_rss_mb")}


def peaks_from_suite(suite: dict) -> dict:
    """The same probe's readings, taken from a ``bench.notebooks.run`` result (no second run)."""
    rows = [{"notebook": r["notebook"], "error": r["error"]} if "error" in r else
            {"notebook": r["notebook"], **_memory(r)} for r in suite["notebooks"]]
    return {"floor": _memory(suite["floor"]), "rows": rows}


def open_together_mb(kernels: list[dict]) -> float:
    """Private memory adds up; torch's file-backed pages are shared, so counted once."""
    return sum(k["anon_rss_mb"] for k in kernels) + max((k["file_rss_mb"] for k in kernels), default=0.0)


def run(quick: bool = False, suite: dict | None = None) -> dict:
    """``suite``: a ``bench.notebooks.run`` result whose probe readings to reuse."""
    memory = peaks_from_suite(suite) if suite else kernel_peaks(quick)
    floor = memory["floor"]
    measured = [r for r in memory["rows"] if "error" not in r]
    for row in measured:
        row["vs_floor"] = row["peak_rss_mb"] / floor["peak_rss_mb"]
    result = {
        "venv": VENV.name, "venv_mb": disk_mb(VENV), "largest_packages": largest_packages(VENV, TOP_PACKAGES),
        **memory,
        "heaviest_kernel_mb": max((r["peak_rss_mb"] for r in measured), default=None),
        "heaviest_with_child_mb": max((r["peak_rss_mb"] + r["peak_child_rss_mb"] for r in measured), default=None),
        "all_kernels_open_mb": open_together_mb(measured),
        "as_many_floors_open_mb": open_together_mb([floor] * len(measured)),
        "student_budget_mb": STUDENT_BUDGET_MB,
        "method": "ru_maxrss read in the kernel after its last cell; children: largest finished child; "
                  "left open: RssAnon and RssFile after the last cell",
    }
    print_tables(result)
    return result


def print_tables(result: dict) -> None:
    print(format_table(["venv", "MB"], [[result["venv"], result["venv_mb"]]] +
                       [[f"  {p['package']}", p["mb"]] for p in result["largest_packages"]]))
    print()
    floor = result["floor"]
    table = [["floor kernel (start + imports)", floor["peak_rss_mb"], floor["peak_child_rss_mb"], 1.0,
              floor["anon_rss_mb"], floor["file_rss_mb"]]]
    for r in result["rows"]:
        table.append([r["notebook"], "failed", "-", "-", "-", r["error"][:60]] if "error" in r else
                     [r["notebook"], r["peak_rss_mb"], r["peak_child_rss_mb"], r["vs_floor"],
                      r["anon_rss_mb"], r["file_rss_mb"]])
    n = sum("error" not in r for r in result["rows"])
    table.append([f"all {n} kernels left open", "-", "-", "-", result["all_kernels_open_mb"], "(anon sum + file max)"])
    table.append([f"{n} floor kernels left open", "-", "-", "-", result["as_many_floors_open_mb"], "(the same sum)"])
    print(format_table(["kernel", "peak RSS MB", "largest child MB", "peak x floor", "anon MB at end",
                        "file MB at end"], table))


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
