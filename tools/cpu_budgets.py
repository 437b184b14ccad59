"""Write tests/cpu_budgets.toml from a measured run: each test file's budget is what it spent, with headroom.

    .venv/bin/python -m pytest tests --cpu-report test-artifacts/cpu-seconds.json   # (make test writes it)
    .venv/bin/python tools/cpu_budgets.py test-artifacts/cpu-seconds.json

A budget is ``HEADROOM`` times the file's CPU seconds plus ``SLACK``, rounded up to ``STEP``: room for a
slower or busier machine (CPU seconds grow too when two cores are shared) and for a test or two, not for a
file that doubles. Run it after a file has earned its time (say why in the commit), never to silence the
check. tests/test_cpu_budgets.py reads the file.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGETS = ROOT / "tests" / "cpu_budgets.toml"
HEADROOM, SLACK, STEP = 1.5, 10.0, 5.0
DEFAULT = 60  # a file the table does not name yet (a new one)

HEADER = """\
# CPU seconds (the test process and its children, tests/cpu_seconds.py) each test file may spend in one
# run; tests/test_cpu_budgets.py fails a run in which a file that ran whole spent more. Written by
# tools/cpu_budgets.py: {headroom} x what the file spent + {slack:g} s, rounded up, from a measured run:
# {measured}
default = {default}

[files]
"""


def budget(cpu_seconds: float) -> int:
    return int(math.ceil((HEADROOM * cpu_seconds + SLACK) / STEP) * STEP)


def table(report: dict, measured: str) -> str:
    lines = [HEADER.format(measured=measured, headroom=HEADROOM, slack=SLACK, default=DEFAULT)]
    for name, cost in sorted(report["files"].items()):
        lines.append(f'"{Path(name).name}" = {budget(cost["cpu"])}  # measured {cost["cpu"]:.0f}\n')
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("report", type=Path, help="a --cpu-report JSON of a whole `pytest tests` run")
    parser.add_argument("--measured", default="", help="where and when the run was measured, for the header")
    args = parser.parse_args()
    report = json.loads(args.report.read_text())
    BUDGETS.write_text(table(report, args.measured or args.report.name))
    print(f"{BUDGETS.relative_to(ROOT)}: {len(report['files'])} files")


if __name__ == "__main__":
    main()
