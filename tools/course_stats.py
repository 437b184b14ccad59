"""What a student meets, per notebook: reading time, code cells, stored traceback lines, widgets and their tasks.

    python tools/course_stats.py [notebooks]

Reading time is the course's estimate: 120 words of Markdown a minute, plus 30 seconds per code cell.
Traceback lines are counted as JupyterLab shows a stored error (its entries joined by newlines).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

WORDS_PER_MINUTE = 120
MINUTES_PER_CODE_CELL = 0.5
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
EXPLORER_WITH_TASK = re.compile(r"\b(?:scenario_explorer|leaf_playground|dataloader_lab|fix_comparison)\([^)]*\btask=")
GROUPS = (("lessons", re.compile(r"\d\d_")), ("quick path", re.compile(r"quick_fix")), ("exercises", re.compile(r"exercises/")))


@dataclass(frozen=True)
class NotebookStats:
    name: str
    words: int
    code_cells: int
    errors: int
    traceback_lines: int
    longest_traceback: int
    widgets: int
    tasks: int

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_cells * MINUTES_PER_CODE_CELL


def traceback_lines(output) -> int:
    return len(ANSI.sub("", "\n".join(output["traceback"])).splitlines())


def stats(path: Path, root: Path) -> NotebookStats:
    notebook = nbformat.read(path, as_version=4)
    words = sum(len(c.source.split()) for c in notebook.cells if c.cell_type == "markdown")
    code = [c for c in notebook.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.get("outputs", [])]
    errors = [traceback_lines(o) for o in outputs if o.output_type == "error"]
    widgets = sum(WIDGET_MIME in o.get("data", {}) for o in outputs)
    tasks = sum(bool(EXPLORER_WITH_TASK.search(c.source)) for c in code)
    return NotebookStats(str(path.relative_to(root)), words, len(code), len(errors), sum(errors),
                         max(errors, default=0), widgets, tasks)


def suite(folder: Path) -> list[NotebookStats]:
    paths = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return [stats(p, folder) for p in paths]


def row(name: str, rows: list[NotebookStats]) -> str:
    return (f"{name:<46} {sum(r.minutes for r in rows):>7.1f} {sum(r.code_cells for r in rows):>5} "
            f"{sum(r.errors for r in rows):>6} {sum(r.traceback_lines for r in rows):>8} "
            f"{max((r.longest_traceback for r in rows), default=0):>7} {sum(r.widgets for r in rows):>7} "
            f"{sum(r.tasks for r in rows):>5}")


def main(argv: list[str]) -> int:
    folder = Path(argv[0] if argv else "notebooks")
    rows = suite(folder)
    print(f"{'notebook':<46} {'minutes':>7} {'code':>5} {'errors':>6} {'tb lines':>8} {'longest':>7} {'widgets':>7} "
          f"{'tasks':>5}")
    for r in rows:
        print(row(r.name, [r]))
    for name, pattern in GROUPS:
        group = [r for r in rows if pattern.match(r.name)]
        print(row(f"{name}, {len(group)} notebooks", group))
    print(row(f"total, {len(rows)} notebooks", rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
