"""Where the suite's notebooks are, and how to read them (shared by the notebook tests)."""
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


ZH = "zh-CN"  # the Chinese twins' folder: tests/test_twin_sync.py holds them to their English notebooks

# Markdown turns a line break inside a paragraph into a space, and between two Chinese characters a
# browser shows it (JupyterLab, the book, GitHub): "每一次 运算". Beside a Latin word or code the space is the
# usual spacing, so only a break between two Chinese characters (or full-width punctuation) is refused.
CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
BREAK_BETWEEN_CHINESE = re.compile(rf"[{CJK}]\n[{CJK}]")


def all_notebooks() -> list[Path]:
    """Every English notebook under notebooks/ (the Chinese twins under notebooks/zh-CN/ are not listed)."""
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts and p.relative_to(NOTEBOOKS).parts[0] != ZH)


def chinese_notebooks() -> list[Path]:
    """The Chinese twins under notebooks/zh-CN/."""
    return sorted(p for p in (NOTEBOOKS / ZH).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


# The heading a task's folded solution sits under, in English and in the Chinese twins ("### Solution", "### 答案").
SOLUTION_HEADINGS = ("Solution", "答案")


def is_solution_heading(cell: nbformat.NotebookNode) -> bool:
    first = cell.source.split("\n", 1)[0]
    return cell.cell_type == "markdown" and first.startswith("#") and first.endswith(SOLUTION_HEADINGS)


def chinese_twin(path: Path) -> Path:
    """Where the Chinese twin of an English notebook under notebooks/ lies (``notebooks/zh-CN/<same path>``)."""
    return NOTEBOOKS / ZH / path.relative_to(NOTEBOOKS)


def chinese_twins(paths: list[Path]) -> list[Path]:
    """The Chinese twins of these English notebooks that exist so far, in the same order."""
    return [twin for twin in map(chinese_twin, paths) if twin.is_file()]


def lessons() -> list[Path]:
    """The core: the numbered lessons directly under notebooks/, in reading order."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def deep_dives() -> list[Path]:
    """The optional lessons, linked from the core where their topic comes up."""
    return sorted((NOTEBOOKS / "deep_dives").glob("*.ipynb"))


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def code_cells(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in notebook.cells if c.cell_type == "code"]


def tags(cell: nbformat.NotebookNode) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))
