"""graphleaf-edu's pytest plugin: ``pytest --graphleaf`` explains graph-leaves errors in every test.

Installed with the package (a ``pytest11`` entry point in pyproject.toml), so pytest loads it in
every run; it does nothing unless asked:

    pytest --graphleaf     every test's setup, call and teardown run under graphleaf_edu.explain_errors:
                           a graph-leaves or torch.multiprocessing "Cowardly refusing" error gets the
                           diagnosis as exception notes, which pytest shows under the traceback
    copyable               a fixture: graphleaf_edu.check_copyable, for a test that asks for it
                           (``def test_model_copies(copyable): copyable(Model(), torch.randn(2, 8))``)

(A package of its own, beside graphleaf_edu, so that loading the plugin never imports torch: pytest
imports it in every run, and graphleaf_edu is imported only by a run that asks for it.)
"""
from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import AbstractContextManager
from typing import Any

import pytest

OPTION = "--graphleaf"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("graphleaf", "graphleaf-edu").addoption(
        OPTION, action="store_true", default=False,
        help="run every test under graphleaf_edu.explain_errors: a graph-leaves (deepcopy) or "
             "torch.multiprocessing 'Cowardly refusing' error gets notes naming each culprit's path, cause and fix")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption(OPTION):
        config.pluginmanager.register(Explaining(), "graphleaf-explaining")


class Explaining:
    """The hooks ``--graphleaf`` adds: each phase of a test inside ``explain_errors``. The package (and
    torch) is imported at the first test's setup, after collection: a conftest or test module that sets
    what must be set before torch is imported (threads, visible devices) still comes first."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        with _explain_errors()():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with _explain_errors()():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
        with _explain_errors()():
            return (yield)


def _explain_errors() -> Callable[[], AbstractContextManager[None]]:
    from graphleaf_edu import explain_errors

    return explain_errors


@pytest.fixture
def copyable() -> Callable[..., Any]:
    """``graphleaf_edu.check_copyable``: ``copyable(module, *example_inputs, backward=True, **example_kwargs)``
    runs one training step on the module, then checks that it can be deep-copied, sent through
    torch.multiprocessing and round-tripped through its state_dict (``NotCopyableError`` names each
    culprit's path, cause and fix), and puts the module back as it was."""
    from graphleaf_edu import check_copyable

    return check_copyable
