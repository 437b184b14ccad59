"""The "Predict, then run" rule, in one place: what a prompt is, which cells answer it, how they fold.

A prompt is a Markdown cell that asks ``**Predict**:`` followed by a question (in a Chinese twin,
``**预测**：`` and a question, ending ``？`` or ``?``). Its *answer cells* are
the code cells after it, up to the next Markdown cell. An answer cell stores its outputs folded
(``metadata.jupyter.outputs_hidden`` and ``collapsed``, which JupyterLab honours on load), and
JupyterLab's folded placeholder shows the first non-empty line of the first output, so that line must
give nothing away: answer cells start by printing a neutral label.

``tools/execute_notebooks.py`` and ``tools/stamp_notebooks.py`` call ``fold_answers``; the tests
(``tests/test_predict_prompts.py``) check every notebook with the same functions.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

import nbformat

# How a prompt starts, in English and in the Chinese twins (notebooks/zh-CN/).
PROMPTS = ("**Predict**:", "**预测**：")
QUESTION_MARKS = ("?", "？")
# The convention's own name (00 · Start here explains it); every other "Predict" asks a question.
CONVENTION_NAMES = ("**Predict, then run.**", "**先预测，再运行。**")
_LINK_TEXT = re.compile(r"\[[^\]]*\]\([^)]*\)")
# "Predict" as a word; in Chinese, where 预测 is also an ordinary verb, the bold word or 预测 before a colon.
_MENTION = re.compile(r"(?:\*\*)?\bPredict\b|\*\*预测\*\*|预测[:：]")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TAG = re.compile(r"<[^>]+>")
# The order in which JupyterLab's folded placeholder picks a mime type (cells/src/widget.ts).
_PLACEHOLDER_MIME_ORDER = ("text/html", "image/svg+xml", "application/pdf", "text/markdown", "text/plain")


def _prose(markdown: str) -> str:
    """The markdown without headings, link texts and the convention's name: where prompts are asked."""
    lines = [line for line in markdown.split("\n") if not line.lstrip().startswith("#")]
    prose = _LINK_TEXT.sub("", "\n".join(lines))
    for name in CONVENTION_NAMES:
        prose = prose.replace(name, "")
    return prose


def prompts(markdown: str) -> list[str]:
    """Each paragraph of ``markdown`` that mentions Predict, from that mention to the paragraph's end."""
    found = []
    for paragraph in re.split(r"\n\s*\n", _prose(markdown)):
        found += [paragraph[mention.start():].strip() for mention in _MENTION.finditer(paragraph)]
    return found


def well_formed(prompt: str) -> bool:
    """``**Predict**:`` (``**预测**：``) followed by a question (a question mark before the paragraph ends)."""
    start = next((start for start in PROMPTS if prompt.startswith(start)), None)
    return start is not None and any(mark in prompt[len(start):] for mark in QUESTION_MARKS)


def is_prompt(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "markdown" and bool(prompts(cell.source))


def answer_cells(notebook: nbformat.NotebookNode) -> Iterator[tuple[int, nbformat.NotebookNode]]:
    """(index of the prompt cell, code cell) for each code cell between a prompt and the next Markdown cell."""
    asked = None
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            asked = index if is_prompt(cell) else None
        elif asked is not None and cell.cell_type == "code":
            yield asked, cell


def text_before_prompts(notebook: nbformat.NotebookNode) -> Iterator[tuple[int, str]]:
    """(index of each prompt cell, the Markdown a student reads before its answer runs): every Markdown cell
    since the previous code cell, the prompt's own cell included (headings too)."""
    since = 0
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            since = index + 1
        elif is_prompt(cell):
            yield index, "\n\n".join(c.source for c in notebook.cells[since:index + 1])


def headings(markdown: str) -> list[str]:
    return [line.strip() for line in markdown.split("\n") if line.lstrip().startswith("#")]


def folded(cell: nbformat.NotebookNode) -> bool:
    return cell.metadata.get("jupyter", {}).get("outputs_hidden") is True and cell.metadata.get("collapsed") is True


def fold(cell: nbformat.NotebookNode) -> None:
    cell.metadata.setdefault("jupyter", {})["outputs_hidden"] = True
    cell.metadata["collapsed"] = True


def fold_answers(notebook: nbformat.NotebookNode) -> int:
    """Fold every answer cell's outputs; return how many cells changed."""
    changed = 0
    for _, cell in answer_cells(notebook):
        if not folded(cell):
            fold(cell)
            changed += 1
    return changed


def placeholder_text(cell: nbformat.NotebookNode) -> str:
    """The text JupyterLab's folded placeholder takes its line from: the first output's preferred text."""
    outputs = cell.get("outputs", [])
    if not outputs:
        return ""
    first = outputs[0]
    if first.output_type == "stream":
        return first.text
    if first.output_type == "error":
        return _ANSI.sub("", "\n".join(first.traceback)) or f"{first.ename}: {first.evalue}"
    data = first.get("data", {})
    return next((data[mime] for mime in _PLACEHOLDER_MIME_ORDER if isinstance(data.get(mime), str)), "")


def placeholder_line(cell: nbformat.NotebookNode) -> str:
    """The one line a student sees of a folded output (its first non-empty line), tags stripped."""
    line = next((line for line in placeholder_text(cell).split("\n") if line), "")
    return _TAG.sub(" ", line).strip()


def starts_with_a_table(cell: nbformat.NotebookNode) -> bool:
    """Whether the placeholder would show a table's first line (its header): the table itself is the answer."""
    text = placeholder_text(cell)
    if re.search(r"<t(able|h|r)\b", next((line for line in text.split("\n") if line), "")):
        return True
    lines = [line for line in text.split("\n") if line.strip()][:2]
    columns = [len(re.split(r"\s{2,}", line.strip())) for line in lines]
    return len(columns) == 2 and min(columns) >= 3
