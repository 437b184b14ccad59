"""The course as a student meets it: time budgets, short errors, answers hidden until run, links out."""
import re
import sys

import pytest
from notebook_files import NOTEBOOKS, ROOT, code_cells, lessons, read, tags

sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # a maintainer script, imported from tools/

QUICK_FIX = NOTEBOOKS / "quick_fix.ipynb"
LESSON_MINUTES, QUICK_FIX_MINUTES = 25, 10
TRACEBACK_LINES, SUITE_TRACEBACK_LINES = 15, 300
# An answer's first line is all a collapsed output shows; these words would give the answer away.
GIVES_AWAY = re.compile(r"\b(True|False|raises?|raised|works?|worked|fails?|failed|\w+Error|Traceback)\b|is_leaf=|grad_fn=")


def first_line(cell) -> str:
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            return output.text.split("\n", 1)[0]
        if output.output_type == "error":
            return "Traceback (most recent call last):"
        if "text/plain" in output.get("data", {}) and not {"image/png", "image/svg+xml"} & set(output.data):
            return output.data["text/plain"].split("\n", 1)[0]
    return ""


def hidden(cell) -> bool:
    return cell.metadata.get("jupyter", {}).get("outputs_hidden", False) and cell.metadata.get("collapsed", False)


def answer_cells(notebook):
    """The code cells between a markdown cell that asks to **Predict** and the next markdown cell."""
    asking = False
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            asking = "**Predict**" in cell.source
        elif asking and "nbval-ignore-output" not in tags(cell):
            yield cell


def test_quick_fix_fits_in_ten_minutes():
    assert course_stats.stats(QUICK_FIX, NOTEBOOKS).minutes <= QUICK_FIX_MINUTES


@pytest.mark.parametrize("path", [*lessons(), QUICK_FIX], ids=lambda p: p.name)
def test_predict_answers_stay_hidden_until_the_cell_runs(path):
    for cell in answer_cells(read(path)):
        line = first_line(cell)
        if GIVES_AWAY.search(line) or {"image/png", "image/svg+xml"} & {m for o in cell.outputs for m in o.get("data", {})}:
            assert hidden(cell), f"the answer shows before the cell runs:\n{cell.source}"
    for cell in code_cells(read(path)):
        if hidden(cell):
            assert not GIVES_AWAY.search(first_line(cell)), f"the hidden output's first line shows: {first_line(cell)!r}"


@pytest.mark.parametrize("path", [*lessons(), QUICK_FIX], ids=lambda p: p.name)
def test_stored_errors_are_short(path):
    for cell in code_cells(read(path)):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                lines = course_stats.traceback_lines(output)
                assert lines <= TRACEBACK_LINES, f"{lines} traceback lines:\n{cell.source}"
                assert "graphleaf_edu/" not in "\n".join(output.traceback) or "Cell In[" in output.traceback[1], \
                    "a lesson's error starts in the student's cell"


def test_the_suite_stores_few_traceback_lines():
    assert sum(s.traceback_lines for s in course_stats.suite(NOTEBOOKS)) <= SUITE_TRACEBACK_LINES


def test_the_pin_memory_expectation_matches_the_wheels_own_message():
    """Notebook 10 expects CUDA's pin_memory refusal; the same C++ check on a meta tensor shows its form."""
    import torch

    from graphleaf_edu import gpu

    with pytest.raises(RuntimeError) as refused:
        torch.empty(2, device="meta").pin_memory()
    assert f"RuntimeError: {refused.value}" == gpu.PIN_CUDA_ERROR.replace("'CUDAFloatType'", "'MetaFloatType'")


@pytest.mark.parametrize("path", lessons(), ids=lambda p: p.name)
def test_each_lesson_fits_in_25_minutes(path):
    assert course_stats.stats(path, NOTEBOOKS).minutes <= LESSON_MINUTES


PYTORCH_DOCS = re.compile(r"\]\((https://docs\.pytorch\.org/[^)#\s]+)")


def test_lessons_link_the_pytorch_documentation():
    pages = set()
    for path in lessons():
        found = set(PYTORCH_DOCS.findall(path.read_text()))
        assert found, f"{path.name} links no PyTorch documentation page"
        pages |= found
    assert len(pages) >= 8, sorted(pages)


FIX_LESSONS = ("03_", "04_", "05_", "06_", "07_")  # the lessons that teach fixes (issue 12, item 3)


def test_each_lesson_that_teaches_fixes_gives_an_explorer_a_task():
    rows = {r.name: r for r in course_stats.suite(NOTEBOOKS)}
    taught = [name for name in rows if name.startswith(FIX_LESSONS)]
    assert len(taught) == len(FIX_LESSONS)
    assert [name for name in taught if rows[name].tasks == 0] == []


def test_course_stats_prints_every_notebook_each_group_and_the_total(capsys):
    course_stats.main([str(NOTEBOOKS)])
    lines = capsys.readouterr().out.splitlines()
    rows = course_stats.suite(NOTEBOOKS)
    assert lines[-1].split()[:3] == ["total,", str(len(rows)), "notebooks"]
    assert float(lines[-1].split()[3]) == pytest.approx(sum(r.minutes for r in rows), abs=0.05)
    assert [line.split(",")[0] for line in lines[-4:-1]] == ["lessons", "quick path", "exercises"]
    assert len(lines) == 1 + len(rows) + 4
