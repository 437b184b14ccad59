"""The real scripts of tests/note_scripts, run by ``python -m graphleaf_edu``, and the lines they name."""
from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "note_scripts"


def run_script(name: str, *args: str, options: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``python -m graphleaf_edu [OPTIONS] NAME [ARGS]`` in tests/note_scripts, as a user would run it."""
    return subprocess.run([sys.executable, "-m", "graphleaf_edu", *options, name, *args], cwd=SCRIPTS,
                          capture_output=True, text=True, timeout=300, check=False)


# Scripts run two at a time: the test process only waits on them, and CI's machine has two cores.
AT_ONCE = 2


def run_scripts(runs: dict[str, tuple[str, ...]], options: tuple[str, ...] = ()) -> dict[str, subprocess.CompletedProcess[str]]:
    """``run_script(*arguments, options=options)`` for each ``{key: (name, *args)}``, ``AT_ONCE`` at a time."""
    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        done = {key: pool.submit(run_script, *arguments, options=options) for key, arguments in runs.items()}
        return {key: future.result() for key, future in done.items()}


def line_of(script: str, statement: str) -> str:
    """``script:N  statement`` for the one line of the script whose text is ``statement``."""
    lines = (SCRIPTS / script).read_text().splitlines()
    numbers = [n for n, line in enumerate(lines, 1) if line.strip() == statement]
    assert len(numbers) == 1, (script, statement, numbers)
    return f"{script}:{numbers[0]}  {statement}"
