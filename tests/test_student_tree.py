"""`make student`'s student-only tree: what a class publishes holds no solution and no hidden test."""
import re
import subprocess
import sys

import pytest
from notebook_files import ROOT
from test_release import PINNED, TAG, file_url, install_into_fresh_venv, tag_release

sys.path.insert(0, str(ROOT / "tools"))
import release  # maintainer scripts, imported from tools/
import student_tree

CLASS_REPOSITORY = "https://github.com/a-school/autograd-2027"


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


@pytest.fixture(scope="module")
def class_tree(tmp_path_factory):
    """`make student REPO=…`: the tree a class publishes at its own address (the recipe's tree line, run
    as make runs it; its other line rewrites notebooks/exercises, which test_exercises.py covers)."""
    destination = tmp_path_factory.mktemp("class") / "student-tree"
    recipe = subprocess.run(["make", "--dry-run", "--always-make", "--no-print-directory", "student",
                             f"REPO={CLASS_REPOSITORY}", f"STUDENT_TREE={destination}"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    (line,) = [line for line in recipe if "tools/student_tree.py" in line]
    assert line.endswith(f"tools/student_tree.py {destination} --repository {CLASS_REPOSITORY}")
    done = subprocess.run(line, shell=True, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"pointing at {CLASS_REPOSITORY}" in done.stdout and f"git push origin main {TAG}" in done.stdout
    return destination


def test_make_student_repo_writes_the_class_address_into_badges_and_installs(class_tree):
    upstream = release.github_owner_and_name(release.repository())
    ours = release.github_owner_and_name(CLASS_REPOSITORY)
    installs = badges = 0
    for path in sorted(class_tree.rglob("*")):
        if path.is_file() and path.suffix in {".ipynb", ".md", ".toml", ".cff", ".yml"}:
            text = path.read_text(encoding="utf-8")
            assert upstream not in text and upstream.replace("/", "%2F") not in text, path
            installs += text.count(release.install_requirement(CLASS_REPOSITORY, TAG))
            badges += text.count(f"colab.research.google.com/github/{ours}/blob/{TAG}/")
    assert installs >= len(list((class_tree / "notebooks").glob("[0-9][0-9]_*.ipynb"))) and badges
    for path in sorted((class_tree / "notebooks").rglob("*.ipynb")):  # each badge opens its own notebook
        own = f"colab.research.google.com/github/{ours}/blob/{TAG}/{path.relative_to(class_tree).as_posix()})"
        opened = re.findall(r"colab\.research\.google\.com/github/[^)\s\"]+\)", path.read_text(encoding="utf-8"))
        assert set(opened) <= {own}, path
    assert release.repository(class_tree) == CLASS_REPOSITORY
    assert student_tree.leaked_answers(class_tree) == []


def test_a_class_address_that_is_not_on_github_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="not a GitHub repository address"):
        student_tree.write_student_tree(tmp_path / "tree", repository="https://gitlab.example.org/class/leaves")
    assert not (tmp_path / "tree").exists()


@pytest.mark.slow
def test_the_published_tree_installs_its_own_release_tag(class_tree, tmp_path):
    """The class pushes the tree with its tag; the install line its setup cells carry then installs it."""
    published = tmp_path / "autograd-2027"
    subprocess.run(["cp", "-a", f"{class_tree}/.", str(published)], check=True)
    commit = tag_release(published)
    line = PINNED.replace(release.repository(), CLASS_REPOSITORY)
    assert line in (class_tree / "notebooks" / "00_start_here.ipynb").read_text().replace('\\"', '"')
    installed = install_into_fresh_venv(tmp_path / "venv", ["install", "--no-deps",
                                                            line.replace(CLASS_REPOSITORY, file_url(published))])
    assert installed["version"] == release.version()
    assert installed["direct_url"]["vcs_info"]["commit_id"] == commit
