"""How long each exercise's check cells take when nbgrader runs them, alone and with a class at once.

    python -m bench.grading [--students 10]     writes bench/grading.json; docs/instructors.md quotes it

The right submissions of tools/grading_round.py (the released copies, filled with the solutions) run as
nbgrader's autograde runs them: a fresh kernel per notebook, from the notebook's own folder, with
``NBGRADER_EXECUTION=autograde``. First one student alone, then ``--students`` students at once (each a
process of its own, all started together: what a class pressing Validate together does to the hub's
cores). Each check cell's time is the kernel's, from its execute_input to its execute_reply
(nbclient's timing record). ``instructor/nbgrader_config.py`` sizes ``Execute.timeout`` from the
slowest check cell under load (tests/test_grading.py keeps them in step).
"""
from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tools"))
import grading_round  # a maintainer script, imported from tools/

RESULTS = BENCH / "grading.json"


def right_submissions(folder: Path) -> dict[str, nbformat.NotebookNode]:
    """The released copies filled with the solutions, as tools/grading_round.py submits them."""
    course = folder / "course"
    names = grading_round.exercises()
    grading_round.make_course(course, {grading_round.ASSIGNMENT: names})
    grading_round.nbgrader(course, "generate_assignment", grading_round.ASSIGNMENT)
    released = course / "release" / grading_round.ASSIGNMENT
    return {name: grading_round.filled(nbformat.read(released / f"{name}.ipynb", as_version=4),
                                       grading_round.solutions(nbformat.read(grading_round.SOURCES / f"{name}.ipynb",
                                                                             as_version=4)))
            for name in names}


def seconds(cell: nbformat.NotebookNode) -> float:
    timing = cell.metadata["execution"]
    start = datetime.datetime.fromisoformat(timing["iopub.execute_input"])
    end = datetime.datetime.fromisoformat(timing["shell.execute_reply"])
    return (end - start).total_seconds()


def one_student(submissions: dict[str, nbformat.NotebookNode]) -> dict[str, dict[str, float]]:
    """Run every submission as autograde does; return {exercise: {check cell grade_id: s, "notebook": s}}."""
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    measured = {}
    with tempfile.TemporaryDirectory(prefix="graphleaf-grading-") as scratch:
        for name, notebook in submissions.items():
            started = time.monotonic()
            NotebookClient(notebook, kernel_name="python3", timeout=None, allow_errors=True, record_timing=True,
                           resources={"metadata": {"path": scratch}}).execute()
            checks = {cell.metadata["nbgrader"]["grade_id"]: seconds(cell) for cell in notebook.cells
                      if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")}
            failed = [cell.metadata["nbgrader"]["grade_id"] for cell in notebook.cells if cell.cell_type == "code"
                      and cell.metadata.get("nbgrader", {}).get("grade") and any(o.output_type == "error"
                                                                                  for o in cell.outputs)]
            if failed:  # (other cells may raise on purpose: a lesson's error shown)
                raise RuntimeError(f"{name}: the right answers failed the checks {failed}")
            measured[name] = checks | {"notebook": time.monotonic() - started}
    return measured


def class_at_once(submissions, students: int) -> list[dict[str, dict[str, float]]]:
    with multiprocessing.get_context("spawn").Pool(students) as pool:
        return pool.map(one_student, [submissions] * students)


def summary(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, dict[str, float]]]:
    out = {}
    for name in runs[0]:
        out[name] = {}
        for key in runs[0][name]:
            values = sorted(run[name][key] for run in runs)
            out[name][key] = {"median": statistics.median(values), "max": values[-1]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=10, help="students at once (default 10)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="graphleaf-grading-course-") as folder:
        submissions = right_submissions(Path(folder))
    load = os.getloadavg()[0]
    started = time.monotonic()
    alone = summary([one_student({name: nbformat.from_dict(nb) for name, nb in submissions.items()})])
    together = summary(class_at_once(submissions, args.students))
    slowest = max((value["max"], name, key) for name, checks in together.items()
                  for key, value in checks.items() if key != "notebook")
    results = {
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_average_at_start": load},
        "students_at_once": args.students,
        "alone": alone,
        "at_once": together,
        "slowest_check_under_load_s": slowest[0],
        "slowest_check": f"{slowest[1]} {slowest[2]}",
        "wall_s": time.monotonic() - started,
    }
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"{'check cell':32} {'alone s':>8} {f'{args.students} at once: median s':>24} {'max s':>7}")
    for name, checks in together.items():
        for key, value in checks.items():
            print(f"{name[:4] + ' ' + key:32} {alone[name][key]['max']:8.1f} {value['median']:24.1f} {value['max']:7.1f}")
    print(f"slowest check under load: {slowest[1]} {slowest[2]}, {slowest[0]:.1f} s; wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
