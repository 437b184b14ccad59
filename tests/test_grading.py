"""Grading with nbgrader, for real: instructor/nbgrader_config.py and a whole round (tools/grading_round.py).

The round: generate and release each assignment (the English exercises, and the Chinese ones as
`exercises-zh-CN` of the same course), submit the released copies filled with the right answers and with
wrong ones, autograde, read the scores from the gradebook. `make test` runs it for the English ex4 (spawn
workers, its own module file, the slowest check) and the Chinese ex1 (the quickest: the Chinese feedback
under autograde); `make grading` (GRADING_ROUND=all) for all six in both languages.
"""
import json
import os
import sys

import nbformat
import pytest
from notebook_files import ROOT, read
from traitlets.config import PyFileConfigLoader

sys.path.insert(0, str(ROOT / "tools"))
import grading_round  # a maintainer script, imported from tools/

pytestmark = pytest.mark.slow

EN, ZH = grading_round.ASSIGNMENT, grading_round.ASSIGNMENT_ZH
QUICK = {EN: ["ex4_spawn_safe_dataset"], ZH: ["ex1_leaf_flags"]}
CHOSEN = grading_round.every_exercise() if os.environ.get("GRADING_ROUND") == "all" else QUICK
GRADED = [(assignment, name) for assignment, names in CHOSEN.items() for name in names]
# What a check says under autograde, in the assignment's language: its exercise's title starts
# "Exercise N" or "练习 N", then the status (the package's catalog: graphleaf_edu/locale/zh_CN).
SAYS = {EN: {"right": "— correct", "wrong": "— try again", "title": "Exercise "},
        ZH: {"right": "— 正确", "wrong": "— 再试一次", "title": "练习 "}}


def config():
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "instructor")).load_config()


def test_the_config_names_the_course_and_a_timeout_sized_from_the_checks_under_load():
    loaded = config()
    assert loaded.CourseDirectory.course_id == "graphleaf-edu"
    measured = json.loads((ROOT / "bench" / "grading.json").read_text())
    assert measured["students_at_once"] >= 5
    slowest = measured["slowest_check_under_load_s"]
    assert loaded.Execute.timeout >= 2 * slowest, "re-size Execute.timeout from bench/grading.json"
    assert f"{slowest:.0f} s" in (ROOT / "instructor" / "nbgrader_config.py").read_text()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = tmp_path_factory.mktemp("grading") / "course"
    return course, grading_round.grading_round(course, CHOSEN)


def manual_points(assignment, name):
    source = read(grading_round.ASSIGNMENTS[assignment] / f"{name}.ipynb")
    return sum(cell.metadata["nbgrader"].get("points", 0) for cell in source.cells
               if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("grade"))


GRADED_IDS = [f"{assignment}/{name}" for assignment, name in GRADED]


@pytest.mark.parametrize(("assignment", "name"), GRADED, ids=GRADED_IDS)
def test_right_answers_get_every_automatic_point_and_wrong_ones_none(graded, assignment, name):
    _, scores = graded
    right, wrong = scores[assignment, "right", name], scores[assignment, "wrong", name]
    assert right["max_score"] > 0
    assert right["score"] == right["max_score"] - manual_points(assignment, name)
    assert wrong["score"] == 0
    assert right["needs_manual_grade"] == wrong["needs_manual_grade"] == bool(manual_points(assignment, name))


def test_the_chinese_exercises_are_worth_what_the_english_ones_are():
    """The same grade ids and points, so either assignment's score means the same (the grading round
    grades whichever exercises it was given; this holds all six)."""
    def points(source):
        return [(c.metadata["nbgrader"]["grade_id"], c.metadata["nbgrader"].get("points"))
                for c in read(source).cells if c.metadata.get("nbgrader", {}).get("grade")]

    assert grading_round.exercises(ZH) == grading_round.exercises(EN)
    for name in grading_round.exercises(EN):
        assert points(grading_round.ASSIGNMENTS[ZH] / f"{name}.ipynb") == points(grading_round.SOURCES / f"{name}.ipynb")


@pytest.mark.parametrize(("assignment", "name"), GRADED, ids=GRADED_IDS)
def test_each_check_tells_the_student_why_in_their_language_and_nothing_timed_out(graded, assignment, name):
    """Under autograde a failing check raises AssertionError with the feedback the student saw (✘ and
    the hint); a passing one prints ✔; a Chinese exercise says both in Chinese."""
    course, _ = graded
    says = SAYS[assignment]
    for student in grading_round.STUDENTS:
        notebook = read(course / "autograded" / student / assignment / f"{name}.ipynb")
        cells = [c for c in notebook.cells if c.cell_type == "code"]
        assert not [o for c in cells for o in c.outputs if o.get("ename") == "CellTimeoutError"], student
        for check in [c for c in cells if c.metadata.get("nbgrader", {}).get("grade")]:
            errors = [o for o in check.outputs if o.output_type == "error"]
            printed = "".join(o.get("text", "") for o in check.outputs)
            if student == "right":
                assert errors == [] and f"✔ {says['title']}" in printed and says["right"] in printed, check.source
            else:
                assert [e.ename for e in errors] == ["AssertionError"], check.source
                said = errors[0].evalue
                assert f"✘ {says['title']}" in said and says["wrong"] in said, said


def test_the_course_is_the_configs_in_the_gradebook(graded):
    from nbgrader.api import Gradebook

    course, _ = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="graphleaf-edu") as gradebook:
        for assignment in CHOSEN:
            assert gradebook.find_assignment(assignment).course_id == "graphleaf-edu"
        assert sorted(student.id for student in gradebook.students) == sorted(grading_round.STUDENTS)


STUDENT_COPIES = {EN: ROOT / "notebooks" / "exercises", ZH: ROOT / "notebooks" / "zh-CN" / "exercises"}


@pytest.mark.parametrize("assignment", [EN, ZH])
def test_the_release_is_the_student_copies_and_never_the_solutions_module(tmp_path, assignment):
    """All six released as committed in notebooks/exercises (notebooks/zh-CN/exercises for the Chinese
    assignment); ex4's rows_dataset.py, which running the solution copy leaves beside it, stays out of the
    release (the config's ignore list)."""
    course, names = tmp_path / "course", grading_round.exercises(assignment)
    grading_round.make_course(course, {assignment: names})
    leftover = course / "source" / assignment / "rows_dataset.py"
    leftover.write_text("class TensorRows:  # the solution, as the solution copy's %%writefile leaves it\n    pass\n")
    grading_round.nbgrader(course, "generate_assignment", assignment)
    release = course / "release" / assignment
    assert sorted(p.name for p in release.iterdir()) == [f"{name}.ipynb" for name in names]
    for name in names:
        released, ours = read(release / f"{name}.ipynb"), read(STUDENT_COPIES[assignment] / f"{name}.ipynb")
        assert [(c.cell_type, c.source) for c in released.cells] == [(c.cell_type, c.source) for c in ours.cells]


def test_a_submission_is_the_released_copy_with_only_its_stubs_filled():
    released = read(ROOT / "notebooks" / "exercises" / "ex4_spawn_safe_dataset.ipynb")
    source = read(grading_round.SOURCES / "ex4_spawn_safe_dataset.ipynb")
    submission = grading_round.filled(released, grading_round.solutions(source))
    changed = [(old.source, new.source) for old, new in zip(released.cells, submission.cells, strict=True)
               if old.source != new.source]
    ((stub, answer),) = changed
    assert "raise NotImplementedError()" in stub and "        self.data = data.detach()" in answer
    assert released == read(ROOT / "notebooks" / "exercises" / "ex4_spawn_safe_dataset.ipynb"), "left alone"
    assert nbformat.validate(submission) is None
