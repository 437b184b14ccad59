"""No test file grows past its CPU-seconds budget (tests/cpu_budgets.toml, measured by tests/cpu_seconds.py).

The check judges only the files that ran whole. Run one test at a time, it runs after every other test
and reads what the run measured; under pytest-xdist the workers leave it out and it runs right after the
run, over the merged report (``--cpu-budgets-of FILE``: ``make test``'s second step). Two more tests run
the check in a small project of their own (``pytester``), with a file that spends more CPU in a child
process than its budget allows, and see it fail, one test at a time and over two workers' merged report
(and a file whose CPU went into a build several files share, which does not count against it).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cpu_seconds import BUDGET_CHECK, PLUGIN_NAME, over_budget, read_report, runs_last

pytest_plugins = ["pytester"]

THIS_FILE = Path(__file__).name
ROOT = Path(__file__).resolve().parent.parent


@runs_last
def test_no_test_file_went_past_its_cpu_budget(request):
    """A file past its budget: make its expensive steps happen once (a module or session fixture), or split
    it; raise the budget (tools/cpu_budgets.py) only when the file has earned the time."""
    report = request.config.getoption("cpu_budgets_of")
    if report:
        files = read_report(Path(report))
    else:
        files = request.config.pluginmanager.get_plugin(PLUGIN_NAME).files()
    if not any(cost.whole and Path(name).name != THIS_FILE for name, cost in files.items()):
        pytest.skip("no other test file ran whole in this run")
    assert over_budget(files, leave_out=THIS_FILE) == []


def spending_project(pytester) -> None:
    """A project with this suite's plugin and budget check, a file that spends 1.5 CPU s in a child where its
    budget is 0.5, and one that spends as much inside ``shared_cost`` (a layer other files share)."""
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


NOT_THESE = ("-k", "not fails_for_a_file and not ci_prints")
PLAIN = ("-p", "no:cacheprovider", "-p", "no:nbval")  # nbval: slow to load (nbformat), in every process


def test_the_budget_check_fails_for_a_file_that_spends_too_much(pytester):
    spending_project(pytester)
    result = pytester.runpytest_subprocess(*PLAIN, "--cpu-table", *NOT_THESE)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_no_test_file_went_past_its_cpu_budget*",
                                 "*test_spends.py: 1.* CPU s, budget 0.5 *",
                                 "*CPU and wall seconds per test file*",
                                 "*shared: a layer"])
    result.stdout.no_fnmatch_line("*test_shares.py: * CPU s, budget*")
    result.stdout.no_fnmatch_line("*test_cpu_budgets.py: * CPU s, budget*")  # it never judges itself


def test_the_budget_check_fails_for_a_file_that_spends_too_much_over_two_workers(pytester):
    """Under xdist each worker measures its own tests; the controller's table and report hold every
    worker's figures, and the check, left out by the workers, fails the file over the merged report."""
    spending_project(pytester)
    report = pytester.path / "cpu-seconds.json"
    result = pytester.runpytest_subprocess(*PLAIN, "-n", "2", "--dist", "loadfile",
                                           "--cpu-table", "--cpu-report", str(report), *NOT_THESE)
    result.assert_outcomes(passed=3)  # the check is not among them: no test runs last under xdist
    check_id = "test_cpu_budgets.py::test_no_test_file_went_past_its_cpu_budget"
    result.stdout.fnmatch_lines(["*CPU and wall seconds per test file*", "*shared: a layer",
                                 f"*under xdist no test runs last; {check_id} runs apart*--cpu-budgets-of {report}"])
    files = read_report(report)
    assert {name: (cost.tests, cost.collected) for name, cost in files.items()} == {
        "test_spends.py": (2, 2), "test_shares.py": (1, 1)}
    assert files["test_spends.py"].cpu > 1.4 and files["test_shares.py"].cpu < 1.0, files
    check = pytester.runpytest_subprocess(*PLAIN, "--cpu-budgets-of", str(report),
                                          check_id)
    check.assert_outcomes(failed=1)
    check.stdout.fnmatch_lines(["*test_spends.py: 1.* CPU s, budget 0.5 *"])
    check.stdout.no_fnmatch_line("*test_shares.py: * CPU s, budget*")


def dry_run(target: str, *variables: str) -> str:
    return subprocess.run(["make", "--dry-run", "--always-make", "--no-print-directory", target, *variables],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_ci_prints_where_the_time_went_and_make_check_runs_test_files_make_test_runs(tmp_path):
    """`.ci/run` runs `make test`, whose unit-test run prints the slowest tests and each file's CPU seconds."""
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    recipe = dry_run("test").splitlines()
    (unit_run,) = [line for line in recipe if "-m pytest tests --ignore=tests/test_classroom.py" in line]
    assert "--durations=25" in unit_run and "--cpu-table" in unit_run and "--cpu-report" in unit_run
    # two test files at a time, each whole on one worker (its module fixtures made once), in conftest.py's
    # order (the costliest first), not xdist's (the most tests first); one at a time asked
    assert " -n 2 --dist loadfile --no-loadscope-reorder " in unit_run
    (serial,) = [line for line in dry_run("test", "TEST_WORKERS=0").splitlines() if "--ignore=tests/test_classroom.py" in line]
    assert " -n " not in serial and "--cpu-report" in serial
    # right after it, the budget check over the report it wrote (under xdist no test runs last)
    report = unit_run.split("--cpu-report ", 1)[1].split()[0]
    assert recipe[recipe.index(unit_run) + 1].endswith(f"-m pytest -p no:cacheprovider -q {BUDGET_CHECK} --cpu-budgets-of {report}")
    # nbval over the lessons and the instructor copies, notebooks side by side but each one's cells in order
    (nbval_run,) = [line for line in recipe if "--nbval-kernel-name graphleaf-cpu" in line]
    assert nbval_run.split(";")[0].split()[-2:] == ["notebooks", "instructor"]
    assert " -n 2 --dist loadfile " in nbval_run
    assert " --nbval-kernel-startup-timeout 240 " in nbval_run, "kernels start slowly beside the hub tests"
    # the hub tests (mostly waits) run beside it, under their outer timeout, and either failing fails make test
    (hub_run,) = [line for line in recipe if "tests/test_classroom.py --durations" in line]
    assert hub_run.startswith("timeout --signal=INT --kill-after=60 600 ") and " & " in hub_run
    assert recipe.index(hub_run) + 1 == recipe.index(nbval_run)
    the_hub_and_nbval_run_side_by_side_and_either_fails_make_test(tmp_path)


FAKE_PYTHON = """#!{python}
# make test's python for the hub and nbval step: the hub tests and nbval each wait (10 s at most) to see the
# other started, and exit with the status the environment asks; the hub tests also say how SIGINT would end them
import os, signal, sys, time
me, other = ("hub", "nbval") if "tests/test_classroom.py" in sys.argv else ("nbval", "hub")
open(me + "-started", "w").close()
deadline = time.monotonic() + 10
while not os.path.exists(other + "-started") and time.monotonic() < deadline:
    time.sleep(0.02)
print(me, "saw", other, "running:", os.path.exists(other + "-started"))
if me == "hub":
    print("SIGINT raises KeyboardInterrupt:", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
sys.exit(int(os.environ[me.upper() + "_EXIT"]))
"""


def the_hub_and_nbval_run_side_by_side_and_either_fails_make_test(tmp_path: Path) -> None:
    """make test's hub and nbval step, run by sh with a stand-in python: both run at once; the hub tests'
    output is printed after; the step fails when either fails; the hub tests get SIGINT's default action
    back (sh starts a command in the background with SIGINT ignored), so their timeout can stop the hub."""
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON.format(python=sys.executable))
    fake.chmod(0o755)
    recipe = dry_run("test", f"PY={fake}").split("\n")
    first = next(i for i, line in enumerate(recipe) if "tests/test_classroom.py --durations" in line)
    last = next(i for i in range(first, len(recipe)) if not recipe[i].endswith("\\"))
    step = "\n".join(recipe[first:last + 1])
    for hub_exit, nbval_exit in [(0, 0), (1, 0), (0, 1), (5, 2)]:
        work = tmp_path / f"hub{hub_exit}-nbval{nbval_exit}"
        work.mkdir()
        (work / "test-artifacts").mkdir()
        ran = subprocess.run(["sh", "-c", step], check=False, cwd=work, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "HUB_EXIT": str(hub_exit), "NBVAL_EXIT": str(nbval_exit)})
        assert (ran.returncode == 0) == (hub_exit == nbval_exit == 0), ran
        assert "nbval saw hub running: True" in ran.stdout, ran
        hub_said = ran.stdout.split("run beside nbval", 1)[1]  # printed after nbval, from the hub tests' log
        assert "hub saw nbval running: True" in hub_said and "SIGINT raises KeyboardInterrupt: True" in hub_said, ran
    check = dry_run("check")
    assert "-m ruff check" in check and "tests/test_typing.py" in check
    checked = re.findall(r"tests/(test_\w+\.py)", check)
    assert checked and all((ROOT / "tests" / name).is_file() for name in checked)
    assert "test_classroom.py" not in checked  # make test runs every other file in tests/
