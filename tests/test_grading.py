"""Grading with nbgrader, for real: instructor/nbgrader_config.py and a whole round (tools/grading_round.py).

The round: generate and release the assignment, submit the released copy filled with the right answers
and with wrong ones, autograde, read the scores from the gradebook. `make test` runs it for ex4 (spawn
workers, its own module file, the slowest check); `make grading` (GRADING_ROUND=all) for all six.
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

QUICK = ["ex4_spawn_safe_dataset"]
NAMES = grading_round.exercises() if os.environ.get("GRADING_ROUND") == "all" else QUICK


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
    return course, grading_round.grading_round(course, NAMES)


def manual_points(name):
    return sum(cell.metadata["nbgrader"].get("points", 0) for cell in read(grading_round.SOURCES / f"{name}.ipynb").cells
               if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("grade"))


@pytest.mark.parametrize("name", NAMES)
def test_right_answers_get_every_automatic_point_and_wrong_ones_none(graded, name):
    _, scores = graded
    right, wrong = scores["right", name], scores["wrong", name]
    assert right["max_score"] > 0
    assert right["score"] == right["max_score"] - manual_points(name)
    assert wrong["score"] == 0
    assert right["needs_manual_grade"] == wrong["needs_manual_grade"] == bool(manual_points(name))


@pytest.mark.parametrize("name", NAMES)
def test_each_check_tells_the_student_why_and_nothing_timed_out(graded, name):
    """Under autograde a failing check raises AssertionError with the feedback the student saw (✘ and
    the hint); a passing one prints ✔."""
    course, _ = graded
    for student in grading_round.STUDENTS:
        notebook = read(course / "autograded" / student / grading_round.ASSIGNMENT / f"{name}.ipynb")
        cells = [c for c in notebook.cells if c.cell_type == "code"]
        assert not [o for c in cells for o in c.outputs if o.get("ename") == "CellTimeoutError"], student
        for check in [c for c in cells if c.metadata.get("nbgrader", {}).get("grade")]:
            errors = [o for o in check.outputs if o.output_type == "error"]
            printed = "".join(o.get("text", "") for o in check.outputs)
            if student == "right":
                assert errors == [] and "✔" in printed, check.source
            else:
                assert [e.ename for e in errors] == ["AssertionError"] and "✘" in errors[0].evalue, check.source


def test_the_course_is_the_configs_in_the_gradebook(graded):
    from nbgrader.api import Gradebook

    course, _ = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="graphleaf-edu") as gradebook:
        assert gradebook.find_assignment(grading_round.ASSIGNMENT).course_id == "graphleaf-edu"
        assert sorted(student.id for student in gradebook.students) == sorted(grading_round.STUDENTS)


def test_the_release_is_the_student_copies_and_never_the_solutions_module(tmp_path):
    """All six released as committed in notebooks/exercises; ex4's rows_dataset.py, which running the
    solution copy leaves beside it, stays out of the release (the config's ignore list)."""
    course = tmp_path / "course"
    grading_round.make_course(course, grading_round.exercises())
    leftover = course / "source" / grading_round.ASSIGNMENT / "rows_dataset.py"
    leftover.write_text("class TensorRows:  # the solution, as the solution copy's %%writefile leaves it\n    pass\n")
    grading_round.nbgrader(course, "generate_assignment", grading_round.ASSIGNMENT)
    release = course / "release" / grading_round.ASSIGNMENT
    assert sorted(p.name for p in release.iterdir()) == [f"{name}.ipynb" for name in grading_round.exercises()]
    for name in grading_round.exercises():
        released, ours = read(release / f"{name}.ipynb"), read(ROOT / "notebooks" / "exercises" / f"{name}.ipynb")
        assert [(c.cell_type, c.source) for c in released.cells] == [(c.cell_type, c.source) for c in ours.cells]


def test_a_submission_is_the_released_copy_with_only_its_stubs_filled():
    released = read(ROOT / "notebooks" / "exercises" / "ex4_spawn_safe_dataset.ipynb")
    source = read(grading_round.SOURCES / "ex4_spawn_safe_dataset.ipynb")
    submission = grading_round.filled(released, grading_round.solutions(source))
    changed = [(old.source, new.source) for old, new in zip(released.cells, submission.cells, strict=True)
               if old.source != new.source]
    ((stub, answer),) = changed
    assert "raise NotImplementedError()" in stub and "        self.data = data.detach().clone()" in answer
    assert released == read(ROOT / "notebooks" / "exercises" / "ex4_spawn_safe_dataset.ipynb"), "left alone"
    assert nbformat.validate(submission) is None
