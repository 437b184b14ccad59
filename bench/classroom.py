"""`make classroom-bench STUDENTS=30`: a class on a real JupyterHub, measured against one student alone.

    python -m bench.classroom --students 30            writes bench/classroom.json, the docs table
    python -m bench.classroom --students 2 --quick     one lesson; writes bench/classroom-quick.json

Every student is a real Unix account with a real single-user server. Each one logs in through the
hub's login form, gets a token from the hub's API, starts a server, pulls the course with the
nbgitpuller link, then opens the core lessons one after another and runs each as "Run All" does
(every code cell queued at once over the kernel protocol), closing each notebook before the next
and leaving the last one open, as a student reading along would. All students start at the same
moment. The same run is made first by one student alone (an account of its own), the baseline.

Core lessons are the quick path and the numbered lessons (the core course; the deep dives are left
out), except the two that start real worker processes (``WORKER_LESSONS``): 30 kernels
sharing 2 cores make their deliberate worker timeouts misfire. Those run in a phase of their own,
at fewer students, against the same lessons run by the student alone.

Measured per student: seconds to a running server (from the start request to the hub's "ready"),
to pull, to open and to Run All each lesson; memory as PSS (a page shared by n processes counts
1/n to each, so torch's libraries are not counted 30 times) of the student's processes: the server
alone (after the pull), the peak (sampled every few seconds, and the settled reading), and reading
along (server + the open notebook's kernel, settled at the end); CPU seconds of the
student's processes, kernels and their children included. Reported as medians and p95 over
students, and as ratios to the baseline. A failure is a student whose login, server, pull or any
lesson did not finish, a cell that failed, or a server lost by the end.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import pwd
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import psutil

from bench.harness import format_table, percentile
from classroom import accounts, course, hub
from classroom.client import Student, code_cells
from classroom.settings import CLASSROOMS, COURSE_NAME, ROOT, Classroom

RESULTS = ROOT / "bench" / "classroom.json"
DOC = ROOT / "docs" / "classroom.md"
START, END = "<!-- classroom-bench:start -->", "<!-- classroom-bench:end -->"
# Lessons that start real worker processes (DataLoader workers, spawned interpreters): their
# deliberate worker timeouts misfire when 30 kernels share 2 cores, so they run in a phase of their
# own, at fewer students.
WORKER_LESSONS = {
    "03_dataloader_workers.ipynb": "DataLoader workers under spawn and fork",
    "04_capstone_training_loop.ipynb": "a training loop with two DataLoader workers",
}
NOT_CORE = dict(WORKER_LESSONS)
SAMPLE_EVERY_S = 4.0
# A phase that runs longer has a stuck student: counted as that student's failure, never a hang.
PHASE_TIMEOUT_S = 1800
MB = 2**20


def lessons() -> list[str]:
    """The student's paths of the core lessons, in reading order: the quick path first, then every
    numbered lesson except those that need what a CPU class lacks or cannot share (``NOT_CORE``)."""
    notebooks = ROOT / "notebooks"
    found = [p.name for p in sorted(notebooks.glob("quick*.ipynb"))]
    found += sorted(p.name for p in notebooks.glob("[0-9][0-9]_*.ipynb") if p.name not in NOT_CORE)
    return [f"{COURSE_NAME}/notebooks/{name}" for name in found]


def worker_lessons() -> list[str]:
    return [f"{COURSE_NAME}/notebooks/{name}" for name in sorted(WORKER_LESSONS)]


def summary(values: list[float | None]) -> dict:
    values = [value for value in values if value is not None]
    return {"median": statistics.median(values), "p95": percentile(values, 0.95), "max": max(values),
            "n": len(values)} if values else {"median": None, "p95": None, "max": None, "n": 0}


class MemorySampler:
    """Samples, every few seconds in a thread of its own, the PSS of every process of each account."""

    def __init__(self, uids: dict[int, str]):
        self.uids = uids
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.lowest_available_mb = float("inf")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), pss_by_account(self.uids)))
            self.lowest_available_mb = min(self.lowest_available_mb, psutil.virtual_memory().available / MB)
            self._stop.wait(SAMPLE_EVERY_S)

    def peaks(self, since: float, until: float) -> dict[str, float]:
        peak: dict[str, float] = {}
        for moment, reading in self.samples:
            if since <= moment <= until:
                for name, mb in reading.items():
                    peak[name] = max(peak.get(name, 0.0), mb)
        return peak


def pss_by_account(uids: dict[int, str]) -> dict[str, float]:
    """MB of PSS per account name, summed over the account's processes."""
    totals = dict.fromkeys(uids.values(), 0.0)
    for process in psutil.process_iter(["uids"]):
        try:
            name = uids.get(process.info["uids"].real)
            if name is not None:
                totals[name] += process.memory_full_info().pss / MB
        except (psutil.Error, AttributeError):
            continue
    return totals


def cpu_seconds(uid: int) -> float:
    """CPU seconds of an account's processes, their finished children included (the server reaps
    the kernels it shut down; a kernel reaps its ``dot`` and worker children)."""
    total = 0.0
    for process in accounts.processes(uid):
        try:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            continue
    return total


def kernel_cpu_seconds(uid: int, kernel_id: str) -> float | None:
    for process in accounts.processes(uid):
        try:
            if any(kernel_id in part for part in process.cmdline()):
                times = process.cpu_times()
                return times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            continue
    return None


@dataclass
class StudentRun:
    name: str
    server_s: float | None = None
    pull_s: float | None = None
    server_pss_mb: float | None = None
    step: str = "log in"
    lessons: dict[str, dict] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    open_kernel: object = None

    @property
    def run_all_s(self) -> float | None:
        if self.errors or not self.lessons:
            return None
        return sum(lesson["open_s"] + lesson["run_s"] for lesson in self.lessons.values())


async def student_session(student: Student, link: str | None, paths: list[str], keep_last_open: bool,
                          timeout_s: float) -> StudentRun:
    """One student's class: log in and start the server (unless running), pull, Run All each lesson;
    a step still going after ``timeout_s`` counts as the student's failure."""
    run = StudentRun(student.name)
    try:
        await asyncio.wait_for(_student_steps(student, run, link, paths, keep_last_open), timeout_s)
    except Exception as error:  # noqa: BLE001 -- every student's failure is counted, none stops the class
        if isinstance(error, TimeoutError):
            error = TimeoutError(f"not done within the phase's {timeout_s:.0f} s")
        run.errors.append(f"{run.step}: {type(error).__name__}: {error} (at {time.strftime('%H:%M:%S')})")
    return run


async def _student_steps(student: Student, run: StudentRun, link: str | None, paths: list[str],
                         keep_last_open: bool) -> None:
    uid = pwd.getpwnam(student.name).pw_uid
    await student.log_in()
    if link is not None:
        run.step = "start server"
        started = time.perf_counter()
        await student.start_server()
        run.server_s = time.perf_counter() - started
        run.step = "pull"
        started = time.perf_counter()
        await student.pull(link)
        run.pull_s = time.perf_counter() - started
        run.server_pss_mb = pss_by_account({uid: student.name})[student.name]
    for number, path in enumerate(paths, start=1):
        run.step = path
        notebook = await student.notebook(path)
        kernel = await student.open(path)
        result = await kernel.run_all(code_cells(notebook))
        run.lessons[path.rsplit("/", 1)[-1]] = {
            "open_s": kernel.ready_s, "run_s": result.run_s, "cells": len(result.cells),
            "kernel_cpu_s": kernel_cpu_seconds(uid, kernel.id),
            "failed_cells": [f"cell {c.index}: {c.status} {c.error}".strip() for c in result.failures]}
        run.errors += [f"{path}: cell {c.index} {c.status} {c.error}".strip() for c in result.failures]
        if keep_last_open and number == len(paths):
            run.open_kernel = kernel
        else:
            await kernel.shut_down()


async def class_session(classroom: Classroom, names: list[str], password: str, paths: list[str], *,
                        pull: bool, sampler: MemorySampler, timeout_s: float = PHASE_TIMEOUT_S) -> dict:
    """All ``names`` at once through ``paths``; the phase's figures and failures."""
    link = course.pull_link(classroom.url, classroom.course_repository) if pull else None
    uids = {name: pwd.getpwnam(name).pw_uid for name in names}
    cpu_before = {name: cpu_seconds(uid) for name, uid in uids.items()}
    students = [Student(classroom.url, name, password) for name in names]
    since = time.monotonic()
    started = time.perf_counter()
    load_cpu_before = time.process_time()
    try:
        runs = await asyncio.gather(*(student_session(s, link, paths, keep_last_open=True, timeout_s=timeout_s)
                                       for s in students))
        wall_s = time.perf_counter() - started
        load_generator_cpu_s = time.process_time() - load_cpu_before
        until = time.monotonic()
        await asyncio.sleep(1.0)  # let the last kernels settle before reading them
        reading_along = pss_by_account({uid: name for name, uid in uids.items()})
        cpu = {name: cpu_seconds(uid) - cpu_before[name] for name, uid in uids.items()}
        lost = [s.name for s in students if not await s.server_is_running()]
        await asyncio.gather(*(run.open_kernel.shut_down() for run in runs if run.open_kernel is not None))
    finally:
        for student in students:
            await student.close()
    peaks = sampler.peaks(since, until)
    failures = [f"{run.name}: {error}" for run in runs for error in run.errors]
    failures += [f"{name}: server lost" for name in lost]
    lesson_names = [path.rsplit("/", 1)[-1] for path in paths]
    ok = [run for run in runs if not run.errors]
    return {
        "students": len(names), "wall_s": wall_s, "failures": failures,
        "load_generator_cpu_s": load_generator_cpu_s,
        "server_s": summary([r.server_s for r in runs if r.server_s is not None]),
        "pull_s": summary([r.pull_s for r in runs if r.pull_s is not None]),
        "run_all_s": summary([r.run_all_s for r in ok]),
        "lessons": {lesson: {
            "total_s": summary([r.lessons[lesson]["open_s"] + r.lessons[lesson]["run_s"] for r in ok]),
            "open_s": summary([r.lessons[lesson]["open_s"] for r in ok]),
            "run_s": summary([r.lessons[lesson]["run_s"] for r in ok]),
            "kernel_cpu_s": summary([r.lessons[lesson]["kernel_cpu_s"] for r in ok]),
        } for lesson in lesson_names},
        "server_pss_mb": summary([r.server_pss_mb for r in runs]),
        "peak_pss_mb": summary([max(peaks.get(name, 0.0), reading_along[name]) for name in names]),
        "reading_along_pss_mb": summary([reading_along[name] for name in names]),
        "cpu_s": summary([cpu[name] for name in names]),
    }


def hub_overhead(classroom: Classroom) -> dict:
    """The hub's and the proxy's own PSS and CPU seconds (the services they run included)."""
    figures = {}
    for label, pid_file in (("hub", "jupyterhub.pid"), ("proxy", "proxy.pid")):
        try:
            process = psutil.Process(int((classroom.hub_folder / pid_file).read_text()))
            family = [process, *(p for p in process.children(recursive=True) if p.uids().real == 0)]
            figures[label] = {"pss_mb": sum(p.memory_full_info().pss for p in family) / MB,
                              "cpu_s": sum(sum(p.cpu_times()[:4]) for p in family)}
        except (FileNotFoundError, ValueError, psutil.Error):
            figures[label] = None
    return figures


async def measure(classroom: Classroom, students: int, worker_students: int, core: list[str]) -> dict:
    """Start the hub, run the baseline then the class then the worker lessons' phase, stop the hub."""
    started = time.perf_counter()
    names = hub.start(classroom, students + 1)
    hub_start_s = time.perf_counter() - started
    class_names, alone = names[:-1], names[-1:]
    password = hub.password(classroom)
    uids = {pwd.getpwnam(name).pw_uid: name for name in names}
    phases = {}
    try:
        with MemorySampler(uids) as sampler:
            phases["alone"] = await class_session(classroom, alone, password, core, pull=True, sampler=sampler)
            if worker_students:
                phases["alone_workers"] = await class_session(classroom, alone, password, worker_lessons(),
                                                              pull=False, sampler=sampler)
            phases["class"] = await class_session(classroom, class_names, password, core, pull=True, sampler=sampler)
            if worker_students:
                phases["class_workers"] = await class_session(
                    classroom, class_names[:worker_students], password, worker_lessons(), pull=False,
                    sampler=sampler)
            lowest_available_mb = sampler.lowest_available_mb
        overhead = hub_overhead(classroom)
    finally:
        started = time.perf_counter()
        hub.stop(classroom)
        hub_stop_s = time.perf_counter() - started
    return {"phases": phases, "hub": overhead, "lowest_available_mb": lowest_available_mb,
            "hub_start_s": hub_start_s, "hub_stop_s": hub_stop_s}


def ratios(phases: dict) -> dict:
    """Class figures over the student-alone figures (median over median, p95 over p95)."""
    def ratio(class_part: dict, alone_part: dict) -> dict:
        return {key: (class_part[key] / alone_part[key] if class_part[key] and alone_part[key] else None)
                for key in ("median", "p95")}
    found = {}
    for class_phase, alone_phase in (("class", "alone"), ("class_workers", "alone_workers")):
        if class_phase not in phases:
            continue
        c, a = phases[class_phase], phases[alone_phase]
        found[class_phase] = {key: ratio(c[key], a[key]) for key in ("run_all_s", "peak_pss_mb",
                                                                    "reading_along_pss_mb", "cpu_s")}
        if c["server_s"]["n"] and a["server_s"]["n"]:
            found[class_phase]["server_s"] = ratio(c["server_s"], a["server_s"])
        found[class_phase]["lessons"] = {lesson: ratio(c["lessons"][lesson]["total_s"], a["lessons"][lesson]["total_s"])
                                         for lesson in c["lessons"]}
    return found


def machine() -> dict:
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return {"cores": os.cpu_count(), "ram_gb": round(int(meminfo["MemTotal"].split()[0]) / 2**20, 1),
            "os": platform.platform(), "load_average_at_start": os.getloadavg()[0],
            "available_gb_at_start": round(psutil.virtual_memory().available / 2**30, 1),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}


def run(classroom: Classroom, students: int, worker_students: int, quick: bool) -> dict:
    core = lessons()[:1] if quick else lessons()
    started = time.perf_counter()
    at_start = machine()
    measured = asyncio.run(measure(classroom, students, worker_students, core))
    return {"machine": at_start, "students": students, "worker_students": worker_students,
            "core_lessons": [p.rsplit("/", 1)[-1] for p in core], **measured,
            "vs_alone": ratios(measured["phases"]), "total_s": time.perf_counter() - started,
            "failures": [f for phase in measured["phases"].values() for f in phase["failures"]]}


def _s(part: dict, key: str = "median") -> str:
    value = part.get(key)
    return "-" if value is None else f"{value:.1f}"


def tables(result: dict) -> str:
    """The figures as plain-text tables: per phase, then per lesson."""
    phases = result["phases"]
    rows = []
    for label, key in (("alone", "alone"), (f"{result['students']} at once", "class"),
                       ("worker lessons alone", "alone_workers"),
                       (f"worker lessons, {result['worker_students']} at once", "class_workers")):
        if key not in phases:
            continue
        p = phases[key]
        rows.append([label, p["students"], f"{_s(p['server_s'])} / {_s(p['server_s'], 'p95')}",
                     f"{_s(p['run_all_s'])} / {_s(p['run_all_s'], 'p95')}",
                     f"{_s(p['server_pss_mb'])} / {_s(p['server_pss_mb'], 'p95')}",
                     f"{_s(p['peak_pss_mb'])} / {_s(p['peak_pss_mb'], 'p95')}",
                     f"{_s(p['reading_along_pss_mb'])} / {_s(p['reading_along_pss_mb'], 'p95')}",
                     f"{_s(p['cpu_s'])} / {_s(p['cpu_s'], 'p95')}", f"{p['wall_s']:.0f}", len(p["failures"])])
    overview = format_table(["phase", "students", "server ready s", "Run All s (lessons)", "server PSS MB", "peak PSS MB",
                             "reading-along PSS MB", "CPU s", "wall s", "failures"], rows)
    lesson_rows = []
    for alone_key, class_key in (("alone", "class"), ("alone_workers", "class_workers")):
        if class_key not in phases:
            continue
        for lesson, alone in phases[alone_key]["lessons"].items():
            together = phases[class_key]["lessons"][lesson]
            factor = result["vs_alone"][class_key]["lessons"][lesson]
            lesson_rows.append([f"{lesson} ({phases[class_key]['students']} at once)", _s(alone["total_s"]),
                                f"{_s(together['total_s'])} / {_s(together['total_s'], 'p95')}",
                                f"{factor['median']:.1f} x / {factor['p95']:.1f} x" if factor["median"] else "-",
                                _s(alone["kernel_cpu_s"]), _s(together["kernel_cpu_s"])])
    per_lesson = format_table(["lesson (open + Run All)", "alone s", "class median / p95 s", "vs alone",
                               "kernel CPU s alone", "kernel CPU s in class"], lesson_rows)
    return f"{overview}\n\n(median / p95 over students)\n\n{per_lesson}"


def doc_block(results: dict) -> str:
    blocks = []
    for students in sorted(results["runs"], key=int):
        result = results["runs"][students]
        m = result["machine"]
        blocks.append("\n".join([
            (f"**{students} students** — {m['date'][:16].replace('T', ' ')} UTC, {result['total_s']:.0f} s in all; "
            f"{m['cores']} cores, {m['ram_gb']} GB RAM ({m['available_gb_at_start']} GB available, load average "
            f"{m['load_average_at_start']:.1f} at start; lowest available during the run "
            f"{result['lowest_available_mb'] / 1024:.1f} GB); hub start {result['hub_start_s']:.0f} s "
            f"(accounts, course, hub), stop {result['hub_stop_s']:.0f} s; failures: {len(result['failures'])}."),
            "", *("    " + line if line else "" for line in tables(result).splitlines())]))
    return "\n\n".join(blocks)


def with_block(text: str, block: str) -> str:
    if text.count(START) != 1 or text.count(END) != 1:
        raise ValueError(f"{DOC.name} needs one {START} line and one {END} line where the table goes")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{block}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.classroom", description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--worker-students", type=int, default=None,
                        help="students running the worker lessons at once (default: a sixth, 2 to 5)")
    parser.add_argument("--quick", action="store_true", help="the first lesson only; leaves the published figures")
    args = parser.parse_args(argv)
    hub.require_root()
    worker_students = args.worker_students
    if worker_students is None:
        worker_students = 0 if args.quick else min(5, max(2, args.students // 6))
    result = run(CLASSROOMS["bench"], args.students, min(worker_students, args.students), args.quick)
    print(tables(result))
    print(f"\n{len(result['failures'])} failures in {result['total_s']:.0f} s")
    for failure in result["failures"]:
        print("  " + failure)
    if args.quick:
        (ROOT / "bench" / "classroom-quick.json").write_text(json.dumps(result, indent=1) + "\n")
        return 1 if result["failures"] else 0
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": {}}
    results["runs"][str(args.students)] = result
    RESULTS.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    DOC.write_text(with_block(DOC.read_text(), doc_block(results)))
    print(f"wrote {RESULTS.relative_to(ROOT)} and the table in {DOC.relative_to(ROOT)}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
