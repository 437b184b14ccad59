"""The course repository the students pull from, and the nbgitpuller link that pulls it.

The repository is a bare git repository on this machine, owned by root and readable by all; each
publication commits the student-only tree (no solutions, no hidden tests) as it is now, so a
re-pull brings the students what changed and nbgitpuller's merge rules keep their own edits.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from classroom.settings import COURSE_NAME, ROOT

FIRST_LESSON = "notebooks/00_start_here.ipynb"
AUTHOR = ["-c", "user.name=graphleaf-edu classroom", "-c", "user.email=classroom@localhost"]


def write_student_tree(destination: Path) -> None:
    """What students receive: `make student`'s student-only tree (lessons, student copies of the
    exercises, the package; no solutions, no hidden tests)."""
    subprocess.run([sys.executable, str(ROOT / "tools" / "student_tree.py"), str(destination)],
                   check=True, cwd=ROOT, capture_output=True, text=True)


def _git(repository: Path, *arguments: str, work_tree: Path | None = None) -> str:
    command = ["git", f"--git-dir={repository}", *AUTHOR]
    if work_tree:
        command.append(f"--work-tree={work_tree}")
    return subprocess.run([*command, *arguments], check=True, capture_output=True, text=True).stdout.strip()


def publish(repository: Path, message: str = "the student tree") -> str:
    """Commit the current student tree to ``repository`` (made if missing); returns the commit id."""
    if not (repository / "HEAD").exists():
        repository.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(repository)], check=True)
    with tempfile.TemporaryDirectory(prefix="student-tree-") as scratch:
        tree = Path(scratch) / COURSE_NAME
        write_student_tree(tree)
        _git(repository, "add", "--all", ".", work_tree=tree)
        unchanged = subprocess.run(["git", f"--git-dir={repository}", f"--work-tree={tree}", "diff", "--cached",
                                    "--quiet"], check=False).returncode == 0
        has_commit = subprocess.run(["git", f"--git-dir={repository}", "rev-parse", "--verify", "--quiet", "main"],
                                    capture_output=True, check=False).returncode == 0
        if not (unchanged and has_commit):
            _git(repository, "commit", "--quiet", "-m", message, work_tree=tree)
    readable_by_all(repository.parent)
    return _git(repository, "rev-parse", "main")


def readable_by_all(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        mode = os.lstat(path).st_mode
        os.chmod(path, mode | (0o555 if path.is_dir() else 0o444))


def pull_link(hub_url: str, repository: Path, open_path: str = FIRST_LESSON) -> str:
    """The nbgitpuller link a teacher hands out: log in, clone or update ~/graphleaf-edu, open a lesson."""
    query = urlencode({
        "repo": f"file://{repository}",
        "branch": "main",
        "targetpath": COURSE_NAME,
        "urlpath": f"lab/tree/{COURSE_NAME}/{open_path}",
    })
    return f"{hub_url}/hub/user-redirect/git-pull?{query}"
