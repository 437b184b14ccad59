"""Write the student-only tree: the repository as a class publishes it, without the instructor's side.

    python tools/student_tree.py build/student-tree [--repository https://github.com/OWNER/NAME]

The tree holds every file git tracks (plus new files not yet ignored) except the folders listed in
``INSTRUCTOR_ONLY``: the solution notebooks and their hidden tests (``instructor/``), and the
maintainer's tests, benchmarks and CI, which reuse the solutions. Students get the lessons, the
student copies in ``notebooks/exercises/``, the package (whose checks give the feedback) and what
Binder and ``make lab`` need to install it. Publish the folder as a repository of its own and point
nbgitpuller or Binder at it. The destination is rebuilt from scratch on every run.

``--repository`` (``make student REPO=...``) is the address the class publishes the tree at: every
badge (Colab, Binder), nbgitpuller link and install line in the tree then names it instead of the
suite's own repository, so the published tree points at itself. Its setup cells install the release tag
(``v<version>``, tools/release.py), which the class pushes with the tree.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import release

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


def point_at(files: list[Path], repository: str, root: Path) -> None:
    """Make every link to ``root``'s repository in these text files name ``repository`` instead."""
    upstream = release.repository(root)
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a picture or another binary file holds no link
            continue
        retargeted = release.retarget(text, repository, upstream)
        if retargeted != text:
            path.write_text(retargeted, encoding="utf-8")


def write_student_tree(destination: str | Path, root: Path = REPO_ROOT, repository: str | None = None) -> list[Path]:
    """Copy the student files of ``root`` into ``destination`` (emptied first); return what was written.
    With ``repository``, the tree's links and install lines name that address (the class's own)."""
    if repository is not None:
        release.github_owner_and_name(repository)  # a clear error before anything is written
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
    if repository is not None:
        point_at(written, repository, root)
    (destination / TREE_MARKER).write_text("written by tools/student_tree.py; rebuilt on every `make student`\n")
    leaks = leaked_answers(destination)
    if leaks:
        raise RuntimeError(f"solutions or hidden tests in the student tree: {leaks}; run `make student` "
                           "so notebooks/exercises holds the student copies.")
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("destination", help="the folder to write (rebuilt from scratch)")
    parser.add_argument("--repository", help="the class's own repository address, https://github.com/OWNER/NAME")
    args = parser.parse_args(argv)
    try:
        written = write_student_tree(args.destination, repository=args.repository)
    except ValueError as error:
        parser.error(str(error))
    address = args.repository or release.repository()
    print(f"wrote the student-only tree ({len(written)} files) to {args.destination}, pointing at {address}")
    print(f"publish it with its release tag, which its setup cells install:\n"
          f"    cd {args.destination} && git init -b main && git add -A && git commit -m 'graphleaf-edu {release.tag()}'\n"
          f"    git tag -a {release.tag()} -m 'graphleaf-edu {release.tag()}' && git remote add origin {address}\n"
          f"    git push origin main {release.tag()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
