"""No test file grows past its CPU-seconds budget (tests/cpu_budgets.toml, measured by tests/cpu_seconds.py).

The check runs after every other test of the run and reads what the run measured; it judges only the
files that ran whole. A second test runs the check in a small project of its own (``pytester``), with a
file that spends more CPU in a child process than its budget allows, and sees it fail (and a file whose
CPU went into a build several files share, which does not count against it).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from cpu_seconds import PLUGIN_NAME, budgets, runs_last

pytest_plugins = ["pytester"]

THIS_FILE = Path(__file__).name
ROOT = Path(__file__).resolve().parent.parent


def over_budget(request: pytest.FixtureRequest) -> list[str]:
    recorder = request.config.pluginmanager.get_plugin(PLUGIN_NAME)
    default, per_file = budgets()
    judged = {name: cost for name, cost in recorder.whole_files().items() if Path(name).name != THIS_FILE}
    if not judged:
        pytest.skip("no other test file ran whole in this run")
    return [f"{name}: {cost.cpu:.1f} CPU s, budget {per_file.get(Path(name).name, default):g} "
            f"({cost.tests} tests; tests/cpu_budgets.toml)"
            for name, cost in sorted(judged.items())
            if cost.cpu > per_file.get(Path(name).name, default)]


@runs_last
def test_no_test_file_went_past_its_cpu_budget(request):
    """A file past its budget: make its expensive steps happen once (a module or session fixture), or split
    it; raise the budget (tools/cpu_budgets.py) only when the file has earned the time."""
    assert over_budget(request) == []


def test_the_budget_check_fails_for_a_file_that_spends_too_much(pytester):
    tests = Path(__file__).resolve().parent
    pytester.makeconftest((tests / "conftest.py").read_text())
    for helper in ("cpu_seconds.py", THIS_FILE):
        pytester.makepyfile(**{Path(helper).stem: (tests / helper).read_text()})
    (pytester.path / "cpu_budgets.toml").write_text(
        'default = 60\n[files]\n"test_spends.py" = 0.5\n"test_shares.py" = 0.5\n')
    spin = ('subprocess.run([sys.executable, "-c", "import time; end = time.process_time() + 1.5\\n"\n'
            '                "while time.process_time() < end: pass"], check=True)')
    pytester.makepyfile(test_spends=f"import subprocess, sys\n\ndef test_a_child_spins():\n    {spin}\n\n"
                                    "def test_cheap():\n    pass\n")
    # what a shared build spends (a cached venv layer) is the run's, not the file's that builds it first
    pytester.makepyfile(test_shares=f"import subprocess, sys\nfrom cpu_seconds import shared_cost\n\n"
                                    f"def test_builds_what_others_share():\n    with shared_cost('a layer'):\n"
                                    f"        {spin}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cpu-table", "-k", "not fails_for_a_file and not ci_prints")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_no_test_file_went_past_its_cpu_budget*",
                                 "*test_spends.py: 1.* CPU s, budget 0.5 *",
                                 "*CPU and wall seconds per test file*",
                                 "*shared: a layer"])
    result.stdout.no_fnmatch_line("*test_shares.py: * CPU s, budget*")
    result.stdout.no_fnmatch_line("*test_cpu_budgets.py: * CPU s, budget*")  # it never judges itself


def dry_run(target: str) -> str:
    return subprocess.run(["make", "--dry-run", "--always-make", "--no-print-directory", target], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def test_ci_prints_where_the_time_went_and_make_check_runs_test_files_make_test_runs():
    """`.ci/run` runs `make test`, whose unit-test run prints the slowest tests and each file's CPU seconds."""
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    (unit_run,) = [line for line in dry_run("test").splitlines() if "-m pytest tests --ignore=tests/test_classroom.py" in line]
    assert "--durations=25" in unit_run and "--cpu-table" in unit_run and "--cpu-report" in unit_run
    # nbval over the lessons and the instructor copies, notebooks side by side but each one's cells in order
    nbval_runs = [line for line in dry_run("test").splitlines() if "--nbval-kernel-name graphleaf-cpu" in line]
    assert [line.split()[-1] for line in nbval_runs] == ["notebooks", "instructor"]
    assert all("--dist loadfile" in line for line in nbval_runs if " -n " in line)
    check = dry_run("check")
    assert "-m ruff check" in check and "tests/test_typing.py" in check
    checked = re.findall(r"tests/(test_\w+\.py)", check)
    assert checked and all((ROOT / "tests" / name).is_file() for name in checked)
    assert "test_classroom.py" not in checked  # make test runs every other file in tests/
