"""The pytest plugin (graphleaf_edu_pytest, a ``pytest11`` entry point): off by default; ``--graphleaf``
adds the diagnosis to a graph error's report as notes and changes nothing else; ``copyable`` is
``check_copyable``. Each run is a real pytest run of a temporary project (``pytester``)."""
from __future__ import annotations

import re
from importlib import metadata

import pytest

# Loaded before pytester's in-process runs, which drop the modules they import: torch's C extension cannot
# be imported twice (torch for the tests' own imports, graphleaf_edu for what --graphleaf imports).
import torch  # noqa: F401

import graphleaf_edu  # noqa: F401

pytest_plugins = ["pytester"]

FAILING = """
    import copy
    import torch
    from multiprocessing.reduction import ForkingPickler

    class Cached(torch.nn.Linear):
        def forward(self, x):
            self.cache = super().forward(x)
            return self.cache

    def test_ema_copy():
        model = Cached(3, 2)
        model(torch.ones(1, 3))
        copy.deepcopy(model)

    def test_queue_send():
        logits = torch.ones(2, requires_grad=True) * 2
        ForkingPickler.dumps({"logits": logits})
"""

PASSING = """
    import copy
    import pytest
    import torch

    def test_copies():
        assert copy.deepcopy(torch.nn.Linear(2, 2)).out_features == 2

    def test_expects_the_error():
        with pytest.raises(RuntimeError, match="graph leaves"):
            copy.deepcopy(torch.ones(2, requires_grad=True) * 2)

    @pytest.mark.parametrize("n", [1, 2])
    def test_prints(n, capsys):
        print("step", n)
        assert capsys.readouterr().out == f"step {n}\\n"

    @pytest.mark.skip(reason="not today")
    def test_skipped():
        pass

    @pytest.mark.xfail(reason="known", strict=True)
    def test_known_failure():
        assert False

    def test_fails_for_its_own_reason():
        assert 1 + 1 == 3
"""


def notes(output: str) -> list[str]:
    """The notes pytest shows under a traceback (its lines start with "E ")."""
    return [line.removeprefix("E").strip() for line in output.splitlines() if re.match(r"E\s+graphleaf_edu: ", line)]


def test_the_plugin_is_installed_as_a_pytest11_entry_point():
    found = [e for e in metadata.entry_points(group="pytest11") if e.name == "graphleaf"]
    assert [e.value for e in found] == ["graphleaf_edu_pytest"]


def test_off_by_default_a_graph_error_is_reported_as_pytest_reports_it(pytester):
    pytester.makepyfile(FAILING)
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    assert notes(result.stdout.str()) == []


def test_with_graphleaf_each_graph_error_ends_with_the_diagnosis(pytester):
    pytester.makepyfile(FAILING)
    result = pytester.runpytest("--graphleaf")
    result.assert_outcomes(failed=2)
    shown = notes(result.stdout.str())
    assert "graphleaf_edu: copied at test_with_graphleaf_each_graph_error_ends_with_the_diagnosis.py:13  " \
           "copy.deepcopy(model)" in shown
    assert any(line.startswith("graphleaf_edu: root.cache: cached activation in a module attribute "
                               "(grad_fn=AddmmBackward0) | fix: store `output.detach()`") for line in shown)
    assert any(line.startswith("graphleaf_edu: sent at ") and "ForkingPickler.dumps" in line for line in shown)
    assert any(line.startswith("graphleaf_edu: root['logits']: ") for line in shown)


def test_a_fixtures_graph_error_gets_the_notes_too(pytester):
    pytester.makepyfile("""
        import copy
        import pytest
        import torch

        @pytest.fixture
        def teacher():
            student = {"w": torch.ones(2, requires_grad=True) * 2}
            return copy.deepcopy(student)

        def test_distil(teacher):
            pass
    """)
    result = pytester.runpytest("--graphleaf")
    result.assert_outcomes(errors=1)
    assert any(line.startswith("graphleaf_edu: root['w']: ") for line in notes(result.stdout.str()))


def comparable(output: str) -> list[str]:
    """A run's output without its timing ("in 0.12s") and the temporary directory's name."""
    return [re.sub(r" in [0-9.]+s", " in Ns", line) for line in output.splitlines()]


def test_a_suite_without_graph_errors_reports_the_same_with_and_without_it(pytester):
    pytester.makepyfile(PASSING)
    plain = pytester.runpytest("-rA")
    explained = pytester.runpytest("-rA", "--graphleaf")
    assert plain.parseoutcomes() == explained.parseoutcomes() == {
        "passed": 4, "failed": 1, "skipped": 1, "xfailed": 1}
    assert comparable(explained.stdout.str()) == comparable(plain.stdout.str())


def test_the_copyable_fixture_is_check_copyable(pytester):
    pytester.makepyfile("""
        import torch

        class Cached(torch.nn.Linear):
            def forward(self, x):
                self.cache = super().forward(x)
                return self.cache

        def test_clean(copyable):
            assert copyable(torch.nn.Linear(3, 2), torch.ones(4, 3)).sent == "module"

        def test_cached(copyable):
            copyable(Cached(3, 2), torch.ones(4, 3))
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*NotCopyableError: check_copyable on this Cached, after one forward and backward*",
                                 "*1. root.cache  (AddmmBackward0, shape (4, 2), cpu)*"])


@pytest.mark.parametrize("explained", [False, True], ids=["plain", "graphleaf"])
def test_nothing_heavy_is_imported_before_the_first_test(pytester, explained):
    """Loading the plugin imports neither torch nor the package; ``--graphleaf`` imports the package at
    the first test's setup, after every conftest and test module was imported."""
    pytester.makepyfile("""
        import sys

        AT_COLLECTION = {"torch", "graphleaf_edu"} & set(sys.modules)

        def test_nothing_heavy_loaded_before():
            assert AT_COLLECTION == set()
            assert ("graphleaf_edu" in sys.modules) == EXPLAINED
    """.replace("EXPLAINED", str(explained)))
    options = ["--graphleaf"] if explained else []
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:nbval", *options)  # nbval: slow to load
    result.assert_outcomes(passed=1)


def test_the_option_is_in_pytests_help(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--graphleaf*run every test under graphleaf_edu.explain_errors*"])
