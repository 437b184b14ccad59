"""What a student meets, per notebook: reading time, code cells, stored traceback lines, widgets.

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


@dataclass(frozen=True)
class NotebookStats:
    name: str
    words: int
    code_cells: int
    errors: int
    traceback_lines: int
    longest_traceback: int
    widgets: int

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
    return NotebookStats(str(path.relative_to(root)), words, len(code), len(errors), sum(errors),
                         max(errors, default=0), widgets)


def suite(folder: Path) -> list[NotebookStats]:
    paths = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return [stats(p, folder) for p in paths]


def main(argv: list[str]) -> int:
    folder = Path(argv[0] if argv else "notebooks")
    rows = suite(folder)
    print(f"{'notebook':<46} {'minutes':>7} {'code':>5} {'errors':>6} {'tb lines':>8} {'longest':>7} {'widgets':>7}")
    for r in rows:
        print(f"{r.name:<46} {r.minutes:>7.1f} {r.code_cells:>5} {r.errors:>6} {r.traceback_lines:>8} "
              f"{r.longest_traceback:>7} {r.widgets:>7}")
    print(f"{'total':<46} {sum(r.minutes for r in rows):>7.1f} {sum(r.code_cells for r in rows):>5} "
          f"{sum(r.errors for r in rows):>6} {sum(r.traceback_lines for r in rows):>8} "
          f"{max((r.longest_traceback for r in rows), default=0):>7} {sum(r.widgets for r in rows):>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
