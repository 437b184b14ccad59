"""`make student`'s student-only tree: what a class publishes holds no solution and no hidden test."""
import subprocess
import sys

import pytest
from notebook_files import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import student_tree  # a maintainer script, imported from tools/


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    destination = tmp_path_factory.mktemp("published") / "student-tree"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "student_tree.py"), str(destination)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return destination


def test_the_tree_has_the_students_side_only(tree):
    top = {path.name for path in tree.iterdir()}
    assert not top & set(student_tree.INSTRUCTOR_ONLY)
    assert {"notebooks", "graphleaf_edu", "pyproject.toml", "README.md"} <= top
    lessons = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(p.name for p in (tree / "notebooks").glob("*.ipynb")) == lessons
    for exercise in sorted((ROOT / "notebooks" / "exercises").glob("*.ipynb")):
        assert (tree / "notebooks" / "exercises" / exercise.name).read_bytes() == exercise.read_bytes()


def test_no_notebook_in_the_tree_holds_a_solution_or_hidden_test(tree):
    assert student_tree.leaked_answers(tree) == []
    assert student_tree.leaked_answers(ROOT / "instructor"), "the markers this test looks for exist in the sources"


def test_a_solution_copy_in_the_students_path_is_refused(tmp_path):
    repo = tmp_path / "repo"
    (repo / "notebooks" / "exercises").mkdir(parents=True)
    source = next((ROOT / "instructor" / "exercises").glob("*.ipynb"))
    (repo / "notebooks" / "exercises" / source.name).write_bytes(source.read_bytes())
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    with pytest.raises(RuntimeError, match="solutions or hidden tests in the student tree"):
        student_tree.write_student_tree(tmp_path / "out", root=repo)


def test_rebuilding_replaces_its_own_tree_but_never_a_foreign_folder(tree, tmp_path):
    stale = tree / "notebooks" / "stale.ipynb"
    stale.write_text("{}")
    student_tree.write_student_tree(tree)
    assert not stale.exists()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="not written by this tool"):
        student_tree.write_student_tree(foreign)
    with pytest.raises(ValueError, match="would contain the repository"):
        student_tree.write_student_tree(ROOT.parent)
