"""What each test and each test file costs in CPU seconds, and the budget each file must stay within.

CPU seconds, not wall-clock: the machines the suite runs on are shared, so a test's wall-clock time says
more about its neighbours than about it. A test's CPU seconds are those of the test process (user +
system) plus those of every child process that ended during it (``RUSAGE_CHILDREN``: a subprocess, a
kernel, a JupyterLab server and its kernels, a pip), measured around its whole run protocol, so a module
fixture's setup counts for the file's first test and its teardown for the file's last. A child still
running when a test ends counts when it ends; a process nobody waits for (a daemon killed with its
group before reaping its own children) is not counted.

What several files share and only the first of them builds (a cached venv layer, tests/fresh_venv.py) is
measured apart (``shared_cost``) and counted for the run, not for the file that happened to come first.

``tests/cpu_budgets.toml`` gives each test file its budget (``default`` for a file it does not name);
``tests/test_cpu_budgets.py`` runs last and fails when a file that ran whole went past its budget.
``--cpu-table`` prints each file's CPU and wall seconds after the run (``make test`` asks for it) and
``--cpu-report FILE`` writes every test's and file's numbers as JSON (``tools/cpu_budgets.py`` reads
one to propose budgets).
"""
from __future__ import annotations

import json
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


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have ended."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


SHARED: list[tuple[str, float]] = []  # (what was built, CPU seconds) for this run's shared builds


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


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class Recorder:
    """Registered by tests/conftest.py as the plugin ``cpu_seconds``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tests: dict[str, tuple[float, float]] = {}  # nodeid -> (CPU seconds, wall seconds)
        self.collected: dict[str, int] = defaultdict(int)  # test file -> tests selected

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """The budget check goes last, whatever the order of the files, so it sees every other file whole."""
        last = [item for item in items if getattr(getattr(item, "function", None), "runs_last", False)]
        items[:] = [item for item in items if item not in last] + last

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:  # what runs, after every deselection
            self.collected[file_of(item.nodeid)] += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        cpu, wall, shared = cpu_seconds(), time.monotonic(), len(SHARED)
        yield
        spent_on_shared = sum(seconds for _, seconds in SHARED[shared:])
        self.tests[item.nodeid] = (cpu_seconds() - cpu - spent_on_shared, time.monotonic() - wall)

    def files(self) -> dict[str, FileCost]:
        """Each test file that has run so far, with what its tests cost together."""
        costs: dict[str, FileCost] = defaultdict(FileCost)
        for nodeid, (cpu, wall) in self.tests.items():
            cost = costs[file_of(nodeid)]
            cost.cpu, cost.wall, cost.tests = cost.cpu + cpu, cost.wall + wall, cost.tests + 1
        return dict(costs)

    def whole_files(self) -> dict[str, FileCost]:
        """The files every selected test of which has run: only for those is the sum the file's cost."""
        return {name: cost for name, cost in self.files().items() if cost.tests == self.collected[name]}

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.config.getoption("cpu_table") or not self.tests:
            return
        files = sorted(self.files().items(), key=lambda pair: -pair[1].cpu)
        terminalreporter.write_sep("=", "CPU and wall seconds per test file (tests/cpu_seconds.py)")
        terminalreporter.write_line(f"{'CPU s':>8} {'wall s':>8} {'tests':>6}  file")
        for name, cost in files:
            terminalreporter.write_line(f"{cost.cpu:8.1f} {cost.wall:8.1f} {cost.tests:6d}  {name}")
        total_cpu, total_wall = sum(c.cpu for _, c in files), sum(c.wall for _, c in files)
        for what, seconds in SHARED:
            terminalreporter.write_line(f"{seconds:8.1f} {'':8} {'':6}  shared: {what}")
        total_cpu += sum(seconds for _, seconds in SHARED)
        terminalreporter.write_line(f"{total_cpu:8.1f} {total_wall:8.1f} {len(self.tests):6d}  all")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        report = self.config.getoption("cpu_report")
        if report:
            Path(report).parent.mkdir(parents=True, exist_ok=True)
            Path(report).write_text(json.dumps({
                "tests": {nodeid: {"cpu": cpu, "wall": wall} for nodeid, (cpu, wall) in self.tests.items()},
                "files": {name: vars(cost) for name, cost in self.files().items()},
                "shared": [{"what": what, "cpu": seconds} for what, seconds in SHARED],
            }, indent=1) + "\n")


def runs_last(function):
    """Mark a test to run after every other selected test (the budget check)."""
    function.runs_last = True
    return function


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cpu_seconds", "CPU seconds per test file (tests/cpu_seconds.py)")
    group.addoption("--cpu-table", action="store_true", help="print each test file's CPU and wall seconds")
    group.addoption("--cpu-report", metavar="FILE", help="write every test's CPU and wall seconds as JSON")
