"""A pytest plugin for bench/plugin.py: prints the CPU seconds of the test loop (every test's setup, call
and teardown; collection and imports left out, as they happen before it)."""
from __future__ import annotations

import time
from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    started = time.process_time()
    try:
        return (yield)
    finally:
        print(f"\ntests_cpu_s={time.process_time() - started:.3f}")
