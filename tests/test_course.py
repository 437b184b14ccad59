"""The course as a student meets it: time budgets, short errors, answers hidden until run, links out."""
import re
import sys

import pytest
from notebook_files import (
    NOTEBOOKS,
    ROOT,
    all_notebooks,
    code_cells,
    lessons,
    read,
)

sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # a maintainer script, imported from tools/

QUICK_FIX = NOTEBOOKS / "quick_fix.ipynb"
LESSON_MINUTES, QUICK_FIX_MINUTES = 25, 10
TRACEBACK_LINES, SUITE_TRACEBACK_LINES = 15, 300


def test_quick_fix_fits_in_ten_minutes():
    assert course_stats.stats(QUICK_FIX, NOTEBOOKS).minutes <= QUICK_FIX_MINUTES


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
    assert [line.split(",")[0] for line in lines[-5:-1]] == list(course_stats.GROUPS)
    assert len(lines) == 1 + len(rows) + len(course_stats.GROUPS) + 1


# The one course list (notebooks/course.toml): 00's map, the previous/next links, course_stats and the
# book's sidebar read it; these tests keep it in step with the notebooks.
COURSE = course_stats.course(NOTEBOOKS)


def test_the_course_lists_every_notebook_once():
    listed = [entry.path for entry in COURSE]
    assert len(listed) == len(set(listed)), "a notebook is listed twice in course.toml"
    on_disk = [p.relative_to(NOTEBOOKS).as_posix() for p in all_notebooks()]
    assert sorted(listed) == sorted(on_disk), "course.toml and notebooks/ differ"


@pytest.mark.parametrize("entry", COURSE, ids=lambda e: e.path)
def test_the_course_minutes_are_the_estimate(entry):
    estimate = course_stats.stats(NOTEBOOKS / entry.path, NOTEBOOKS).minutes
    assert entry.minutes == pytest.approx(estimate, abs=0.051), \
        f"{entry.path}: course.toml says {entry.minutes}, the estimate is {estimate:.1f} (python tools/course_stats.py --update)"


@pytest.mark.parametrize("entry", COURSE, ids=lambda e: e.path)
def test_the_course_title_is_the_notebooks_first_heading(entry):
    assert read(NOTEBOOKS / entry.path).cells[0].source.splitlines()[0] == f"# {entry.title}"


def test_exercises_and_deep_dives_follow_a_core_lesson_listed_before_them():
    position = {entry.path: index for index, entry in enumerate(COURSE)}
    for entry in COURSE:
        if entry.group in ("exercise", "deep dive"):
            assert entry.after in position, f"{entry.path}: after = {entry.after!r} is not in the course"
            assert COURSE[position[entry.after]].group == "core", f"{entry.path} follows {entry.after}"
        else:
            assert entry.after is None, f"{entry.path}: only exercises and deep dives have 'after'"


def test_a_malformed_course_entry_says_what_to_change(tmp_path):
    (tmp_path / "course.toml").write_text('[[notebook]]\npath = "a.ipynb"\ngroup = "core"\nminutes = 1\n'
                                          'title = "A"\nsumary = "typo"\n')
    with pytest.raises(ValueError, match=r"missing keys \['summary'\], unknown keys \['sumary'\]"):
        course_stats.course(tmp_path)
    (tmp_path / "course.toml").write_text('[[notebook]]\npath = "a.ipynb"\ngroup = "lessons"\nminutes = 1\n'
                                          'title = "A"\nsummary = "s"\n')
    with pytest.raises(ValueError, match="group 'lessons' is none of"):
        course_stats.course(tmp_path)


def test_course_stats_update_rewrites_the_minutes_only(tmp_path):
    import shutil

    shutil.copy(NOTEBOOKS / "quick_fix.ipynb", tmp_path / "quick_fix.ipynb")
    entry = ('# a comment\n[[notebook]]\npath = "quick_fix.ipynb"\ngroup = "quick fix"\nminutes = {}\n'
             'title = "Quick fix"\nsummary = "s"\n')
    (tmp_path / "course.toml").write_text(entry.format("99.0"))
    assert course_stats.update_minutes(tmp_path) == 1
    estimate = round(course_stats.stats(tmp_path / "quick_fix.ipynb", tmp_path).minutes, 1)
    assert (tmp_path / "course.toml").read_text() == entry.format(estimate)
    assert course_stats.update_minutes(tmp_path) == 0
