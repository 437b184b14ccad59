"""Debian's Chromium for the browser tests: where it is and how it starts (never a downloaded build)."""
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"]


def playwright_or_skip():
    """Playwright's sync API; skips the calling test module when Playwright or Chromium is missing."""
    playwright = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run installs it)", allow_module_level=True)
    return playwright
