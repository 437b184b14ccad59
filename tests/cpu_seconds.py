"""What each test and each test file costs in CPU seconds, and the budget each file must stay within.

CPU seconds, not wall-clock: the machines the suite runs on are shared, so a test's wall-clock time says
more about its neighbours than about it. A test's CPU seconds are those of the process that runs it (user +
system) plus those of every child process that ended during it (``RUSAGE_CHILDREN``: a subprocess, a
kernel, a JupyterLab server and its kernels, a pip), measured from the start of its run protocol to the
end of its teardown, so a module fixture's setup counts for the file's first test and its teardown for
the file's last. A child still running when a test ends counts when it ends; a process nobody waits for
(a daemon killed with its group before reaping its own children) is not counted.

What several files share and only the first of them builds (a cached venv layer, tests/fresh_venv.py) is
measured apart (``shared_cost``) and counted for the run, not for the file that happened to come first.

The process that runs a test measures it and hangs the figures on the test's teardown report
(``REPORT_ATTR``); the recorder reads them from every report that reaches it. Run one test at a time,
that is the same process; under pytest-xdist (``-n 2``) each worker measures its own tests (its own
process and children) and its reports carry the figures to the controller, whose recorder merges every
worker's into one table and one report. A file stays on one worker (``--dist loadfile``), so its module
fixtures are built once, as when run alone.

``tests/cpu_budgets.toml`` gives each test file its budget (``default`` for a file it does not name);
``tests/test_cpu_budgets.py::test_no_test_file_went_past_its_cpu_budget`` fails when a file that ran whole
went past its budget. Run one test at a time, it runs last and reads this run's recorder. Under xdist no
test runs last (each worker ends on its own), so the workers leave it out and it judges the merged report
in a step of its own right after the run (``--cpu-budgets-of FILE``; ``make test`` runs both).
``--cpu-table`` prints each file's CPU and wall seconds after the run (``make test`` asks for it) and
``--cpu-report FILE`` writes every test's and file's numbers as JSON (``tools/cpu_budgets.py`` reads
one to propose budgets).
"""
from __future__ import annotations

import json
import os
import resource
import time
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

BUDGETS = Path(__file__).resolve().parent / "cpu_budgets.toml"
PLUGIN_NAME = "cpu_seconds"
REPORT_ATTR = "graphleaf_cpu_seconds"  # a teardown report's figures: {"cpu", "wall", "shared": [[what, s], …]}
BUDGET_CHECK = "tests/test_cpu_budgets.py::test_no_test_file_went_past_its_cpu_budget"
LEFT_OUT = "cpu_seconds_left_out"  # a worker's output: the tests that must run last, left out


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have ended."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


SHARED: list[tuple[str, float]] = []  # (what was built, CPU seconds): the shared builds of this process


@contextmanager
def shared_cost(what: str) -> Iterator[None]:
    """Count the CPU seconds spent inside for the run (``SHARED``), not for the test that runs it."""
    start = cpu_seconds()
    try:
        yield
    finally:
        SHARED.append((what, cpu_seconds() - start))


def budgets(path: Path = BUDGETS) -> tuple[float, dict[str, float]]:
    """``(default, {test file: budget})`` in CPU seconds, from ``tests/cpu_budgets.toml``."""
    table = tomllib.loads(path.read_text())
    return float(table["default"]), {name: float(seconds) for name, seconds in table["files"].items()}


@dataclass
class FileCost:
    cpu: float = 0.0
    wall: float = 0.0
    tests: int = 0
    collected: int = 0  # the file's tests that the run selected: the file ran whole when all of them ran

    @property
    def whole(self) -> bool:
        return self.tests == self.collected


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def over_budget(files: dict[str, FileCost], path: Path = BUDGETS, leave_out: str = "") -> list[str]:
    """One line per file that ran whole and spent more than its budget (none named ``leave_out``)."""
    default, per_file = budgets(path)
    return [f"{name}: {cost.cpu:.1f} CPU s, budget {per_file.get(Path(name).name, default):g} "
            f"({cost.tests} tests; {path.name})"
            for name, cost in sorted(files.items())
            if cost.whole and Path(name).name != leave_out and cost.cpu > per_file.get(Path(name).name, default)]


def read_report(path: Path) -> dict[str, FileCost]:
    """The files of a ``--cpu-report`` JSON, as the run that wrote it counted them."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no CPU report; run the tests with --cpu-report {path} first")
    return {name: FileCost(**cost) for name, cost in json.loads(path.read_text())["files"].items()}


def is_worker(config: pytest.Config) -> bool:
    """This process is a pytest-xdist worker (its controller reads its reports)."""
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """This process hands the tests to pytest-xdist workers and runs none itself."""
    return config.pluginmanager.has_plugin("dsession")


class Recorder:
    """Registered by tests/conftest.py as the plugin ``cpu_seconds``, in every process of a run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tests: dict[str, tuple[float, float]] = {}  # nodeid -> (CPU seconds, wall seconds)
        self.where: dict[str, tuple[str, float]] = {}  # nodeid -> (xdist worker or "", time.time() at its end)
        self.shared: list[tuple[str, float]] = []  # the run's shared builds, from every process
        self.collected: dict[str, int] = defaultdict(int)  # test file -> tests selected
        self.left_out: list[str] = []  # under xdist: the tests the workers left out, to run apart
        self._started: tuple[float, float, int] | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """The budget check goes last, whatever the order of the files, so it sees every other file whole;
        an xdist worker leaves it out (there is no last test), for a step over the merged report."""
        last = [item for item in items if getattr(getattr(item, "function", None), "runs_last", False)]
        items[:] = [item for item in items if item not in last]
        if is_worker(config) and last:
            config.hook.pytest_deselected(items=last)
            config.workeroutput[LEFT_OUT] = [item.nodeid for item in last]
        else:
            items += last

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.count_collected([item.nodeid for item in session.items])  # what runs, after every deselection

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error: object | None) -> None:
        """A worker has ended: what it left out to run apart (each worker leaves out the same)."""
        self.left_out = sorted(set(self.left_out) | set(getattr(node, "workeroutput", {}).get(LEFT_OUT, [])))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        """The controller collects nothing itself: each worker's collection (the same on every worker)."""
        self.count_collected(ids)

    def count_collected(self, nodeids: list[str]) -> None:
        self.collected.clear()
        for nodeid in nodeids:
            self.collected[file_of(nodeid)] += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        self._started = (cpu_seconds(), time.monotonic(), len(SHARED))
        yield
        self._started = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        """After the teardown (the test's last phase), its figures go on its report."""
        outcome = yield
        if call.when != "teardown" or self._started is None:
            return
        cpu, wall, shared = self._started
        builds = SHARED[shared:]
        setattr(outcome.get_result(), REPORT_ATTR, {
            "cpu": cpu_seconds() - cpu - sum(seconds for _, seconds in builds),
            "wall": time.monotonic() - wall,
            "shared": [[what, seconds] for what, seconds in builds],
            "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),  # xdist names its workers gw0, gw1, …
            "ended_at": time.time(),  # for a timeline of the run: what ran beside what
        })

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Every test's figures, from this process's reports or, under xdist, from each worker's."""
        figures = getattr(report, REPORT_ATTR, None)
        if report.when == "teardown" and figures is not None:
            self.tests[report.nodeid] = (figures["cpu"], figures["wall"])
            self.where[report.nodeid] = (figures["worker"], figures["ended_at"])
            self.shared += [(what, seconds) for what, seconds in figures["shared"]]

    def files(self) -> dict[str, FileCost]:
        """Each test file that has run so far, with what its tests cost together."""
        costs: dict[str, FileCost] = {}
        for nodeid, (cpu, wall) in self.tests.items():
            name = file_of(nodeid)
            cost = costs.setdefault(name, FileCost(collected=self.collected[name]))
            cost.cpu, cost.wall, cost.tests = cost.cpu + cpu, cost.wall + wall, cost.tests + 1
        return costs

    def whole_files(self) -> dict[str, FileCost]:
        """The files every selected test of which has run: only for those is the sum the file's cost."""
        return {name: cost for name, cost in self.files().items() if cost.whole}

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if is_worker(self.config):
            return
        if self.config.getoption("cpu_table") and self.tests:
            self.write_table(terminalreporter)
        for nodeid in self.left_out:
            report = self.config.getoption("cpu_report") or "FILE"
            terminalreporter.write_line(
                f"tests/cpu_seconds.py: under xdist no test runs last; {nodeid} runs apart, over the merged "
                f"report (`make test` runs it): pytest {nodeid} --cpu-budgets-of {report}")

    def write_table(self, terminalreporter) -> None:
        files = sorted(self.files().items(), key=lambda pair: -pair[1].cpu)
        terminalreporter.write_sep("=", "CPU and wall seconds per test file (tests/cpu_seconds.py)")
        terminalreporter.write_line(f"{'CPU s':>8} {'wall s':>8} {'tests':>6}  file")
        for name, cost in files:
            terminalreporter.write_line(f"{cost.cpu:8.1f} {cost.wall:8.1f} {cost.tests:6d}  {name}")
        total_cpu, total_wall = sum(c.cpu for _, c in files), sum(c.wall for _, c in files)
        for what, seconds in self.shared:
            terminalreporter.write_line(f"{seconds:8.1f} {'':8} {'':6}  shared: {what}")
        total_cpu += sum(seconds for _, seconds in self.shared)
        terminalreporter.write_line(f"{total_cpu:8.1f} {total_wall:8.1f} {len(self.tests):6d}  all"
                                    + ("  (wall: the tests' own, summed over the workers)"
                                       if is_controller(self.config) else ""))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        report = self.config.getoption("cpu_report")
        if report and not is_worker(self.config):
            Path(report).parent.mkdir(parents=True, exist_ok=True)
            Path(report).write_text(json.dumps({
                "tests": {nodeid: {"cpu": cpu, "wall": wall, "worker": self.where[nodeid][0],
                                   "ended_at": self.where[nodeid][1]} for nodeid, (cpu, wall) in self.tests.items()},
                "files": {name: vars(cost) for name, cost in self.files().items()},
                "shared": [{"what": what, "cpu": seconds} for what, seconds in self.shared],
            }, indent=1) + "\n")


def runs_last(function):
    """Mark a test to run after every other selected test (the budget check)."""
    function.runs_last = True
    return function


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cpu_seconds", "CPU seconds per test file (tests/cpu_seconds.py)")
    group.addoption("--cpu-table", action="store_true", help="print each test file's CPU and wall seconds")
    group.addoption("--cpu-report", metavar="FILE", help="write every test's and file's CPU and wall seconds as JSON")
    group.addoption("--cpu-budgets-of", metavar="FILE",
                    help="the budget check judges this --cpu-report (a run under xdist) instead of this run")
