"""The public API passes ``mypy --strict`` (configured in pyproject.toml), and the typed usage it checks runs."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_mypy_strict_passes():
    completed = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_typed_usage_runs():
    completed = subprocess.run([sys.executable, "tests/typed_usage.py"], cwd=ROOT, capture_output=True, text=True,
                               check=False, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[-1] == __import__("graphleaf_edu").__version__
