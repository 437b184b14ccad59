"""The course as a student meets it: time budgets, short errors, answers hidden until run, links out."""
import re
import sys
from pathlib import Path

import pytest
from notebook_files import (
    NOTEBOOKS,
    ROOT,
    ZH,
    all_notebooks,
    chinese_notebooks,
    code_cells,
    deep_dives,
    lessons,
    read,
    tags,
)

sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # a maintainer script, imported from tools/

QUICK_FIX = NOTEBOOKS / "quick_fix.ipynb"
# The core by the formula: at most an hour (issue 34: each term explained where it first appears and the
# Predict questions asked before they are told cost words; the core worked through is to stay within 60).
CORE_MINUTES, CORE_LESSON_MINUTES, DEEP_DIVE_MINUTES, QUICK_FIX_MINUTES = 60, 15, 25, 10
CORE_GL_NAMES = 8
CORE_MEASURED_MINUTES = 60  # a reader's minutes for the whole core (course.toml's measured), issue 34
TRACEBACK_LINES, SUITE_TRACEBACK_LINES = 15, 300
LESSONS = [*lessons(), *deep_dives()]


def lesson_id(path):
    return path.relative_to(NOTEBOOKS).as_posix()


def with_twins(paths):
    """``paths`` and the Chinese twins (notebooks/zh-CN/) of those that have one: a twin stores the same
    errors, graphs and tasks, and links the same PyTorch documentation."""
    twins = [NOTEBOOKS / course_stats.ZH / lesson_id(path) for path in paths]
    return [*paths, *(twin for twin in twins if twin.is_file())]


def test_quick_fix_fits_in_ten_minutes():
    assert course_stats.stats(QUICK_FIX, NOTEBOOKS).minutes <= QUICK_FIX_MINUTES


def test_the_core_fits_in_an_hour_and_each_of_its_lessons_in_15_minutes():
    minutes = {path.name: round(course_stats.stats(path, NOTEBOOKS).minutes, 1) for path in lessons()}
    assert sum(minutes.values()) <= CORE_MINUTES, minutes
    assert max(minutes.values()) <= CORE_LESSON_MINUTES, minutes


@pytest.mark.parametrize("path", deep_dives(), ids=lesson_id)
def test_each_deep_dive_fits_in_25_minutes(path):
    assert course_stats.stats(path, NOTEBOOKS).minutes <= DEEP_DIVE_MINUTES


def test_the_core_uses_few_names_of_the_package():
    names = frozenset().union(*(course_stats.stats(path, NOTEBOOKS).gl_names for path in lessons()))
    assert len(names) <= CORE_GL_NAMES, sorted(names)


@pytest.mark.parametrize("path", with_twins(lessons()), ids=lesson_id)
def test_a_core_lesson_stores_one_full_traceback_at_most(path):
    """A repeated error is shown as one line naming the student's own line (graphleaf_edu.tracebacks)."""
    full = [cell.source for cell in code_cells(read(path)) for output in cell.get("outputs", [])
            if output.output_type == "error" and course_stats.traceback_lines(output) > 1]
    assert len(full) <= 1, full


@pytest.mark.parametrize("path", with_twins([*LESSONS, QUICK_FIX]), ids=lesson_id)
def test_stored_errors_are_short(path):
    for cell in code_cells(read(path)):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                lines = course_stats.traceback_lines(output)
                assert lines <= TRACEBACK_LINES, f"{lines} traceback lines:\n{cell.source}"
                shown = [course_stats.ANSI.sub("", entry) for entry in output.traceback]
                assert "graphleaf_edu/" not in "\n".join(shown) or "Cell In[" in shown[1], \
                    "a lesson's error starts in the student's cell"


def test_the_suite_stores_few_traceback_lines():
    assert sum(s.traceback_lines for s in course_stats.suite(NOTEBOOKS)) <= SUITE_TRACEBACK_LINES


def test_the_pin_memory_expectation_matches_the_wheels_own_message():
    """The GPU deep dive expects CUDA's pin_memory refusal; the same C++ check on a meta tensor shows its form."""
    import torch

    from graphleaf_edu import gpu

    with pytest.raises(RuntimeError) as refused:
        torch.empty(2, device="meta").pin_memory()
    assert f"RuntimeError: {refused.value}" == gpu.PIN_CUDA_ERROR.replace("'CUDAFloatType'", "'MetaFloatType'")


def test_the_fork_expectation_quotes_the_wheels_own_message(monkeypatch):
    """The GPU deep dive expects a fork worker to meet torch.cuda's bad-fork refusal: the wheel raises it, on any machine,
    where _lazy_init finds the process marked as forked from one that had initialised CUDA."""
    import torch

    from graphleaf_edu import gpu

    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)
    monkeypatch.setattr(torch.cuda, "_initialized", False)
    with pytest.raises(RuntimeError) as refused:
        torch.cuda._lazy_init()
    worker, cause = gpu.BAD_FORK_ERROR.split(" <- ")
    assert worker == "RuntimeError: Caught RuntimeError in DataLoader worker process 0."
    assert cause == f"RuntimeError: {refused.value}"


PYTORCH_DOCS = re.compile(r"\]\((https://docs\.pytorch\.org/[^)#\s]+)")


def test_lessons_link_the_pytorch_documentation():
    pages = set()
    for path in with_twins(LESSONS):
        found = set(PYTORCH_DOCS.findall(path.read_text()))
        assert found, f"{lesson_id(path)} links no PyTorch documentation page"
        pages |= found
    assert len(pages) >= 8, sorted(pages)


# The lessons that teach fixes: each gives an explorer a task (issue 12, item 3).
FIX_LESSONS = ("00_start_here.ipynb", "01_copied_tensors.ipynb", "02_model_cache.ipynb", "03_dataloader_workers.ipynb",
               "deep_dives/intermediate_tensor.ipynb", "deep_dives/model_output.ipynb",
               "deep_dives/dataloader_workers.ipynb", "deep_dives/model_cache_fixes.ipynb", "deep_dives/fix_toolbox.ipynb")


@pytest.mark.parametrize("name", FIX_LESSONS)
def test_each_lesson_that_teaches_fixes_gives_an_explorer_a_task(name):
    assert course_stats.stats(NOTEBOOKS / name, NOTEBOOKS).tasks >= 1


# The four scenarios of the source article, each reproduced in the core with its real error and drawn, each
# lesson fixing one with a widget task (one task a lesson, issue 34): (lesson, scenarios, the error each shows,
# what a stored output shows of it).
SCENARIOS = [
    ("01_copied_tensors.ipynb", 2, "Only Tensors created explicitly by the user (graph leaves)", None),
    ("02_model_cache.ipynb", 1, "Only Tensors created explicitly by the user (graph leaves)", None),
    ("03_dataloader_workers.ipynb", 1, "Cowardly refusing to serialize non-leaf tensor which requires_grad",
     "Caught RuntimeError in DataLoader worker process 0."),
]


SCENARIO_NOTEBOOKS = [(path, *scenario[1:]) for scenario in SCENARIOS
                      for path in with_twins([NOTEBOOKS / scenario[0]])]


@pytest.mark.parametrize(("path", "count", "error", "printed"), SCENARIO_NOTEBOOKS,
                         ids=[lesson_id(s[0]) for s in SCENARIO_NOTEBOOKS])
def test_the_core_reproduces_draws_and_fixes_each_scenario(path, count, error, printed):
    cells = code_cells(read(path))
    outputs = [o for c in cells for o in c.get("outputs", [])]
    errors = [o for o in outputs if o.output_type == "error" and error in o.evalue]
    graphs = [o for o in outputs if o.get("data", {}).get("text/plain", "").startswith("AutogradGraph(")]
    assert len(errors) >= count and len(graphs) >= count
    assert course_stats.stats(path, NOTEBOOKS).tasks >= 1
    if printed:
        assert any(printed in o.get("text", "") for o in outputs)


CAPSTONE = "04_capstone_training_loop.ipynb"
# The capstone and its Chinese twin: (the notebook, its solution heading, its check heading). The check (a
# function the student calls after a fix) comes before the folded solution, which calls it: True twice.
CAPSTONES = [(NOTEBOOKS / CAPSTONE, "### Solution", "## Check"),
             *[(twin, "### 答案", "## 检查") for twin in [NOTEBOOKS / ZH / CAPSTONE] if twin.is_file()]]


@pytest.mark.parametrize(("path", "solution_heading", "check_heading"), CAPSTONES, ids=lambda v: lesson_id(v) if isinstance(v, Path) else "")
def test_the_capstone_is_a_task_with_a_folded_solution_and_a_check(path, solution_heading, check_heading):
    cells = read(path).cells
    crash = next(i for i, c in enumerate(cells) if c.cell_type == "code" and "raises-exception" in tags(c))
    solution = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith(solution_heading))
    check = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith(check_heading))
    assert crash < check < solution, "the check sits before the folded solution: a student runs it without scrolling past it"
    assert cells[solution].metadata.get("jp-MarkdownHeadingCollapsed") is True, "the solution is folded"
    assert not any("gl.explain" in c.source for c in cells[crash:solution] if c.cell_type == "code"), \
        "the diagnosis is the student's, before the solution"
    printed = "".join(o.get("text", "") for c in cells[check:] if c.cell_type == "code" for o in c.get("outputs", []))
    assert printed.count("True") == 2 and "False" not in printed, printed
    if ZH in path.parts:
        assert re.search(r"[\u4e00-\u9fff]", printed), f"the Chinese check speaks English: {printed}"


def test_course_stats_prints_every_notebook_each_group_and_the_total(capsys):
    course_stats.main([str(NOTEBOOKS)])
    lines = capsys.readouterr().out.splitlines()
    rows = course_stats.suite(NOTEBOOKS)
    assert lines[-1].split()[:3] == ["total,", str(len(rows)), "notebooks"]
    assert lines[-1].split()[3] == f"{sum(r.minutes for r in rows):.1f}"  # the sum, as printed (abs=0.05 failed at x.x5)
    assert [line.split(",")[0] for line in lines[-5:-1]] == list(course_stats.GROUPS)
    assert len(lines) == 1 + len(rows) + len(course_stats.GROUPS) + 1


# The one course list (notebooks/course.toml): 00's map, the previous/next links, course_stats and the
# book's sidebar read it; these tests keep it in step with the notebooks.
COURSE = course_stats.course(NOTEBOOKS)
ZH_NOTEBOOKS = NOTEBOOKS / course_stats.ZH


def test_the_course_lists_every_notebook_once():
    listed = [entry.path for entry in COURSE]
    assert len(listed) == len(set(listed)), "a notebook is listed twice in course.toml"
    on_disk = [p.relative_to(NOTEBOOKS).as_posix() for p in all_notebooks()]
    assert sorted(listed) == sorted(on_disk), "course.toml and notebooks/ differ"
    chinese = [p.relative_to(ZH_NOTEBOOKS).as_posix() for p in chinese_notebooks()]
    assert set(chinese) <= set(listed), "a notebook in notebooks/zh-CN/ translates none of the course"


@pytest.mark.parametrize("entry", COURSE, ids=lambda e: e.path)
def test_the_course_minutes_are_the_estimate(entry):
    estimate = course_stats.stats(NOTEBOOKS / entry.path, NOTEBOOKS).minutes
    assert entry.minutes == pytest.approx(estimate, abs=0.051), \
        f"{entry.path}: course.toml says {entry.minutes}, the estimate is {estimate:.1f} (python tools/course_stats.py --update)"


def test_each_core_lesson_records_its_measured_minutes():
    """``measured``: what a reader who did not write a lesson took (0 until measured); only core lessons."""
    assert all((entry.measured is not None) == (entry.group == "core") for entry in COURSE), \
        "every core lesson, and only a core lesson, has measured = minutes (0: not measured yet)"
    measured = [entry.measured for entry in COURSE if entry.group == "core"]
    assert all(minutes >= 0 for minutes in measured)


@pytest.mark.xfail(strict=True, reason="measured on 2026-12-02: 65 minutes for the core against the target "
                   "of 60 (issue 34); the cuts are not done yet, and this fails loudly once it is met")
def test_the_core_as_measured_meets_its_target():
    measured = [entry.measured for entry in COURSE if entry.group == "core"]
    assert all(measured), "a core lesson is not measured yet"
    assert sum(measured) <= CORE_MEASURED_MINUTES, measured


@pytest.mark.parametrize("entry", COURSE, ids=lambda e: e.path)
def test_the_course_title_is_the_notebooks_first_heading(entry):
    assert read(NOTEBOOKS / entry.path).cells[0].source.splitlines()[0] == f"# {entry.title}"


def test_exercises_and_deep_dives_follow_a_lesson_listed_before_them():
    position = {entry.path: index for index, entry in enumerate(COURSE)}
    for index, entry in enumerate(COURSE):
        if entry.group in ("exercise", "deep dive"):
            assert entry.after in position, f"{entry.path}: after = {entry.after!r} is not in the course"
            assert position[entry.after] < index, f"{entry.path} is listed before {entry.after}"
            assert COURSE[position[entry.after]].group in ("core", "deep dive"), f"{entry.path} follows {entry.after}"
        else:
            assert entry.after is None, f"{entry.path}: only exercises and deep dives have 'after'"


def test_the_core_is_the_numbered_lessons_and_the_deep_dives_their_folder():
    assert [e.path for e in COURSE if e.group == "core"] == [p.name for p in lessons()]
    assert sorted(e.path for e in COURSE if e.group == "deep dive") == [lesson_id(p) for p in deep_dives()]
    assert [e.path for e in COURSE if e.group == "quick fix"] == ["quick_fix.ipynb"]


@pytest.mark.parametrize(("path", "expected"), course_stats.maps(NOTEBOOKS).items(),
                         ids=lambda v: lesson_id(v) if isinstance(v, Path) else "map")
def test_00s_map_is_the_course_list(path, expected):
    """00's map, and the Chinese 00's (in the Chinese titles, linking each Chinese twin that exists)."""
    source = next(c.source for c in read(path).cells if course_stats.MAP_START in c.source)
    shown = source.split(course_stats.MAP_START, 1)[1].split(course_stats.MAP_END, 1)[0].strip("\n")
    assert shown == expected, "run: python tools/course_stats.py --update"


def test_the_map_shows_a_readers_minutes_only_once_every_lesson_is_measured():
    measured, unmeasured = (course_stats.Entry("a.ipynb", "core", 9.6, "A", "a", measured=m) for m in (14.4, 0))
    assert course_stats.shown_measured([measured]) == "14"
    assert course_stats.shown_measured([measured, unmeasured]) == "–"
    assert "| [A](a.ipynb) | 10 | 14 |" in course_stats.course_map([measured])


CORE = [entry for entry in COURSE if entry.group == "core"]


@pytest.mark.parametrize("index", range(len(CORE)), ids=lambda i: CORE[i].path)
def test_each_core_lesson_links_the_previous_and_the_next_in_the_course(index):
    cells = read(NOTEBOOKS / CORE[index].path).cells
    if index + 1 < len(CORE):
        assert f"]({CORE[index + 1].path})" in cells[-1].source, "the last cell links the next lesson"
    if index > 0:
        assert f"]({CORE[index - 1].path})" in cells[-1].source, "the last cell links the previous lesson"


@pytest.mark.parametrize("entry", [e for e in COURSE if e.group == "deep dive"], ids=lambda e: e.path)
def test_each_deep_dive_leads_back_to_the_lesson_it_follows_and_that_lesson_links_it(entry):
    assert f"](../{entry.after})" in read(NOTEBOOKS / entry.path).cells[-1].source
    lesson = read(NOTEBOOKS / entry.after)
    linked = entry.path if entry.after.count("/") == 0 else entry.path.split("/", 1)[1]
    assert any(f"]({linked})" in c.source for c in lesson.cells if c.cell_type == "markdown"), \
        f"{entry.after} does not link {entry.path}"


EXERCISE_COPIES = [(e, folder) for e in COURSE if e.group == "exercise" for folder in ("notebooks", "instructor")]


@pytest.mark.parametrize(("entry", "folder"), EXERCISE_COPIES, ids=lambda v: v if isinstance(v, str) else v.path)
def test_each_exercise_names_the_lesson_it_follows_as_its_prerequisite(entry, folder):
    """The exercise-order notes: an exercise tests what the lessons before it teach, and says which."""
    header = read(ROOT / folder / entry.path).cells[0].source
    prerequisites = next(line for line in header.splitlines() if line.startswith("**Prerequisites**"))
    assert f"](../../notebooks/{entry.after})" in prerequisites, prerequisites


# The Chinese course (issue 29): the same list in Chinese words (title_zh, summary_zh). A notebook's
# Chinese twin is notebooks/zh-CN/<its path>; the twins land one by one, so each rule holds the twins
# that exist, and a Chinese notebook links the English notebook, marked （英文）, until its twin lands.
TWINS = course_stats.chinese_twins(NOTEBOOKS)
CHINESE = re.compile(r"[\u4e00-\u9fff]")
NOTEBOOK_LINK = re.compile(r"\[([^\]]*)\]\(([^)#\s]+\.ipynb)(?:#[^)\s]*)?\)")


def chinese_link(entry, folder=""):
    """How a Chinese notebook in ``zh-CN/folder`` links ``entry``: its twin, or the English notebook."""
    up = "../" * len(Path(folder).parts)
    return f"{up}{entry.path}" if entry.path in TWINS else f"{up}../{entry.path}"


@pytest.mark.parametrize("entry", COURSE, ids=lambda e: e.path)
def test_every_notebook_of_the_course_has_a_chinese_title_and_summary(entry):
    assert CHINESE.search(entry.title_zh or "") and CHINESE.search(entry.summary_zh or ""), \
        f"{entry.path}: course.toml needs title_zh and summary_zh (the Chinese 00's map shows them)"
    number = re.match(r"(\d\d) · |Exercise (\d+) · |(Deep dive) · ", entry.title)
    if number:
        prefix = {1: f"{number[1]} · ", 2: f"练习 {number[2]} · ", 3: "深入专题 · "}[number.lastindex]
        assert entry.title_zh.startswith(prefix), f"{entry.path}: title_zh starts with {prefix!r}"


def chinese_copies(entry):
    """The Chinese notebooks of ``entry``: its twin, and an exercise's solution copy."""
    solution = [ROOT / "instructor" / "exercises" / course_stats.ZH / Path(entry.path).name]
    return [ZH_NOTEBOOKS / entry.path, *(solution if entry.group == "exercise" else [])]


def copy_id(value):
    return value.path if hasattr(value, "path") else value.relative_to(ROOT).as_posix()


TRANSLATED = [(entry, path) for entry in COURSE if entry.path in TWINS for path in chinese_copies(entry)]


@pytest.mark.parametrize(("entry", "path"), TRANSLATED, ids=copy_id)
def test_a_chinese_twins_first_heading_is_its_chinese_title(entry, path):
    assert read(path).cells[0].source.splitlines()[0] == f"# {entry.title_zh}", \
        f"{path.relative_to(ROOT)}: its first heading is title_zh of notebooks/course.toml"


CHINESE_CORE = [index for index, entry in enumerate(CORE) if entry.path in TWINS]


@pytest.mark.parametrize("index", CHINESE_CORE, ids=lambda i: CORE[i].path)
def test_each_chinese_core_lesson_links_the_previous_and_the_next_in_the_course(index):
    last = read(ZH_NOTEBOOKS / CORE[index].path).cells[-1].source
    if index + 1 < len(CORE):
        assert f"]({chinese_link(CORE[index + 1])})" in last, "the last cell links the next lesson"
    if index > 0:
        assert f"]({chinese_link(CORE[index - 1])})" in last, "the last cell links the previous lesson"


@pytest.mark.parametrize("entry", [e for e in COURSE if e.group == "deep dive" and e.after in TWINS],
                         ids=lambda e: e.path)
def test_each_chinese_lesson_links_the_deep_dives_that_follow_it(entry):
    lesson = read(ZH_NOTEBOOKS / entry.after)
    folder = Path(entry.after).parent.as_posix().strip(".")
    assert any(f"]({chinese_link(entry, folder)})" in c.source for c in lesson.cells if c.cell_type == "markdown"), \
        f"zh-CN/{entry.after} does not link {chinese_link(entry, folder)}"


@pytest.mark.parametrize(("entry", "path"), [(e, p) for e, p in TRANSLATED if e.group == "exercise"], ids=copy_id)
def test_each_chinese_exercise_names_the_lesson_it_follows_as_its_prerequisite(entry, path):
    """The same link from the student and the solution copy: from the repository's root."""
    header = read(path).cells[0].source
    prerequisites = next(line for line in header.splitlines() if line.startswith("**预备知识**"))
    twin = f"{course_stats.ZH}/" if entry.after in TWINS else ""
    assert f"](../../../notebooks/{twin}{entry.after})" in prerequisites, prerequisites


@pytest.mark.parametrize("path", chinese_notebooks(), ids=lambda p: p.relative_to(NOTEBOOKS).as_posix())
def test_a_chinese_notebook_links_the_chinese_twins_and_marks_english_notebooks(path):
    for cell in read(path).cells:
        if cell.cell_type != "markdown":
            continue
        for link in NOTEBOOK_LINK.finditer(cell.source):
            text, target = link.groups()
            resolved = (path.parent / target).resolve()
            assert resolved.is_file(), f"{lesson_id(path)} links {target}, which does not exist"
            where = resolved.relative_to(ROOT)
            if course_stats.ZH in where.parts:
                continue
            if resolved.is_relative_to(NOTEBOOKS):
                twin = ZH_NOTEBOOKS / resolved.relative_to(NOTEBOOKS)
                assert not twin.is_file(), \
                    f"{lesson_id(path)} links the English {where}: link its Chinese twin {twin.relative_to(ROOT)} (without （英文）)"
            marked = "英文" in text or cell.source[link.end():].startswith("（英文")
            assert marked, f"{lesson_id(path)} links the English {where} without saying so: add （英文） after the link"


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


def test_the_chinese_course_is_the_quick_fix_every_core_lesson_and_every_exercise():
    """Issue 29: a Chinese student finds the quick fix, the core and the six exercises (student and
    solution copies) in Chinese; the deep dives stay English (the Chinese map marks them （英文）)."""
    expected = {entry.path for entry in COURSE if entry.group != "deep dive"}
    assert TWINS == expected, f"no Chinese twin yet: {sorted(expected - TWINS)}; a deep dive: {sorted(TWINS - expected)}"
    solutions = {path.name for path in (ROOT / "instructor" / "exercises" / course_stats.ZH).glob("*.ipynb")}
    assert solutions == {Path(entry.path).name for entry in COURSE if entry.group == "exercise"}
