"""Write the student-only tree: the repository as a class publishes it, without the instructor's side.

    python tools/student_tree.py build/student-tree

The tree holds every file git tracks (plus new files not yet ignored) except the folders listed in
``INSTRUCTOR_ONLY``: the solution notebooks and their hidden tests (``instructor/``), and the
maintainer's tests, benchmarks and CI, which reuse the solutions. Students get the lessons, the
student copies in ``notebooks/exercises/``, the package (whose checks give the feedback) and what
Binder and ``make lab`` need to install it. Publish the folder as a repository of its own and point
nbgitpuller or Binder at it. The destination is rebuilt from scratch on every run.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
INSTRUCTOR_ONLY = ("instructor", "tests", "bench", ".ci", ".github")
TREE_MARKER = ".graphleaf-student-tree"
# nbgrader's markers: a student copy that still holds one leaks a solution or a hidden test.
ANSWER_MARKERS = ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS")


def repository_files(root: Path = REPO_ROOT) -> list[Path]:
    """Tracked files and untracked ones git does not ignore, relative to ``root``."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            cwd=root, capture_output=True, text=True, check=True).stdout
    return sorted(Path(name) for name in listed.split("\0") if name and (root / name).is_file())


def student_files(root: Path = REPO_ROOT) -> list[Path]:
    return [path for path in repository_files(root) if path.parts[0] not in INSTRUCTOR_ONLY]


def leaked_answers(tree: Path) -> list[str]:
    """Notebooks in ``tree`` that still carry a solution or hidden-test region."""
    return [str(path.relative_to(tree)) for path in sorted(tree.rglob("*.ipynb"))
            if any(marker in path.read_text(encoding="utf-8") for marker in ANSWER_MARKERS)]


def write_student_tree(destination: str | Path, root: Path = REPO_ROOT) -> list[Path]:
    """Copy the student files of ``root`` into ``destination`` (emptied first); return what was written."""
    destination = Path(destination).resolve()
    if destination == root.resolve() or root.resolve().is_relative_to(destination):
        raise ValueError(f"{destination} would contain the repository itself: give a folder of its own.")
    if destination.exists():
        if not (destination / TREE_MARKER).exists() and any(destination.iterdir()):
            raise FileExistsError(f"{destination} is not empty and was not written by this tool: "
                                  "remove it or give another folder.")
        shutil.rmtree(destination)
    written = []
    for relative in student_files(root):
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, target)
        written.append(target)
    (destination / TREE_MARKER).write_text("written by tools/student_tree.py; rebuilt on every `make student`\n")
    leaks = leaked_answers(destination)
    if leaks:
        raise RuntimeError(f"solutions or hidden tests in the student tree: {leaks}; run `make student` "
                           "so notebooks/exercises holds the student copies.")
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    written = write_student_tree(argv[0])
    print(f"wrote the student-only tree ({len(written)} files) to {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
