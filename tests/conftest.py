"""Fixtures and settings shared by several test modules."""
import os
import tempfile
import warnings
from pathlib import Path

import cpu_seconds
import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis writes nothing into the working tree: no example database, and the caches it keeps
# (e.g. constants/) go to the system's temporary folder instead of ./.hypothesis/.
settings.register_profile("graphleaf", database=None)
settings.load_profile("graphleaf")
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "graphleaf-hypothesis")
# The package speaks English unless a test asks otherwise, whatever the machine's shell sets; the
# notebook kernels nbval starts inherit this, so stored outputs compare the same on every machine.
os.environ.pop("GRAPHLEAF_EDU_LANG", None)


def pytest_addoption(parser):
    cpu_seconds.addoption(parser)


def pytest_configure(config):
    """Every run records each test's CPU seconds (tests/cpu_seconds.py); test_cpu_budgets.py reads them."""
    config.pluginmanager.register(cpu_seconds.Recorder(config), cpu_seconds.PLUGIN_NAME)


def pytest_collection_modifyitems(items):
    """The costliest files first (their CPU budgets), each file's tests in their own order: under xdist a
    worker takes the next file when it is free, so a long file started last would end the run alone
    (`make test` passes --no-loadscope-reorder, or xdist would start the files with the most tests first)."""
    default, per_file = cpu_seconds.budgets()
    items.sort(key=lambda item: -per_file.get(Path(cpu_seconds.file_of(item.nodeid)).name, default))


@pytest.fixture
def quiet_torch_deprecations():
    """The old weight_norm and backward(create_graph=True) warn on every use; some tests use both."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", message="Using backward\\(\\) with create_graph=True")
        yield


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per browser-test module (the module skips itself without Chromium)."""
    from chromium import CHROMIUM, CHROMIUM_FLAGS, playwright_or_skip

    with playwright_or_skip().sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()
