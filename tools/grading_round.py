"""One real nbgrader round over the exercises, as an instructor runs it, in a course folder of its own.

    python tools/grading_round.py COURSE [ASSIGNMENT/EXERCISE...]   # default: all six in both languages

One course, two assignments: ``exercises`` (the English solution copies, instructor/exercises/) and
``exercises-zh-CN`` (the Chinese ones, instructor/exercises/zh-CN/: the same notebooks, cells, grade ids
and points, whose checks answer in Chinese). A class hands out the one its students read, or both.

1. the course: ``instructor/nbgrader_config.py`` and each assignment's solution copies as its source
   (``source/<assignment>/``), the other files of their folder included, as nbgrader takes them;
2. ``nbgrader generate_assignment`` and ``nbgrader release_assignment`` (into the course's own exchange);
3. two submissions made from the released copy as a student makes one, by filling its stubs: ``right``
   with the solutions, ``wrong`` with ``WRONG_ANSWERS``, a mistake the exercise's hints are written for;
4. ``nbgrader autograde``; the scores are read back from the gradebook.

tests/test_grading.py runs two exercises in `make test` and all twelve in `make grading`.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "instructor" / "exercises"
CONFIG = ROOT / "instructor" / "nbgrader_config.py"
ASSIGNMENT, ASSIGNMENT_ZH = "exercises", "exercises-zh-CN"
# Each assignment's source folder: the solution copies it is generated from.
ASSIGNMENTS = {ASSIGNMENT: SOURCES, ASSIGNMENT_ZH: SOURCES / "zh-CN"}
STUDENTS = ("right", "wrong")
SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?", re.MULTILINE | re.DOTALL)
STUB = re.compile(r"^([ \t]*)# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)", re.MULTILINE)
ANSWER_STUB = "YOUR ANSWER HERE"
# The mistake each solution cell's wrong submission makes (its grade_id: the code in place of the stub,
# written at the stub's indentation).
WRONG_ANSWERS = {
    "ex1-predictions": 'return {"c": (True, True, None), "d": (True, False, None), "e": (True, True, None),\n'
                       '        "f": (False, True, "CloneBackward0"), "g": (True, False, None),\n'
                       '        "h": (True, True, None), "k": (False, True, "SumBackward0"),\n'
                       '        "m": (True, False, None), "n": (True, True, None)}',
    "ex2-predictions": 'return {"same_object": True, "is_leaf": False, "requires_grad": True,\n'
                       '        "shares_memory": True, "grad_reaches_x": True}',
    "ex2-two-losses": "y = x * 3\nreturn (y**2).sum(), (y.detach() ** 2).sum()",
    "ex2-explanation": "The copy raises an error, so nothing is printed.",
    "ex3-by-hand": "return \".log['confidence']\"",
    "ex3-finder": "return [finding.path for finding in gl.find_nonleaf(model)][:1]",
    "ex4-dataset": "self.data = data",
    "ex5-model": "h = torch.relu(self.hidden(x))\nself.last_hidden = h\nreturn self.out(h)",
    "ex6-ema": "for name, p in model.named_parameters():\n"
               "    self.shadow[name] = self.decay * self.shadow[name] + (1 - self.decay) * p",
}


def exercises(assignment: str = ASSIGNMENT) -> list[str]:
    return sorted(path.stem for path in ASSIGNMENTS[assignment].glob("ex*.ipynb"))


def every_exercise() -> dict[str, list[str]]:
    """Each assignment with all its exercises."""
    return {assignment: exercises(assignment) for assignment in ASSIGNMENTS}


def nbgrader(course: Path, *arguments: str) -> str:
    """Run nbgrader in the course folder with this environment's bin/ first on PATH (where it finds alembic)."""
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "nbgrader", *arguments], cwd=course, env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"nbgrader {' '.join(arguments)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done.stdout + done.stderr


def make_course(course: Path, chosen: dict[str, list[str]]) -> None:
    """The course folder with each chosen assignment's source (``chosen``: assignment -> exercises)."""
    course.mkdir(parents=True)
    shutil.copy2(CONFIG, course / "nbgrader_config.py")
    for assignment, names in chosen.items():
        source = course / "source" / assignment
        source.mkdir(parents=True)
        for path in sorted(ASSIGNMENTS[assignment].iterdir()):  # every file nbgrader would take; other
            # exercises' notebooks (and the folders of other assignments) left out
            if path.is_file() and (path.suffix != ".ipynb" or path.stem in names) and not path.name.startswith("."):
                shutil.copy2(path, source / path.name)
    (course / "nbgrader_config.py").write_text(
        (course / "nbgrader_config.py").read_text()
        + f'\nc.Exchange.root = {str(course / "exchange")!r}  # the round\'s own exchange\n')


def solutions(notebook: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id -> the solution of each solution cell (its regions' code, or the whole markdown answer)."""
    found = {}
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            regions = [textwrap.dedent(match.group(2)).rstrip("\n") for match in SOLUTION.finditer(cell.source)]
            found[meta["grade_id"]] = "\n".join(regions) if regions else cell.source
    return found


def filled(released: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released copy with each solution cell's stub replaced by ``answers[grade_id]``."""
    submission = nbformat.from_dict(released)
    for cell in submission.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        answer = answers[grade_id]
        if cell.cell_type == "markdown":
            assert ANSWER_STUB in cell.source, grade_id
            cell.source = cell.source.replace(ANSWER_STUB, answer)
        else:
            stub = STUB.search(cell.source)
            assert stub, grade_id
            code = "\n".join(stub.group(1) + line if line else line for line in answer.split("\n"))
            cell.source = cell.source[:stub.start()] + code + cell.source[stub.end():]
    return submission


def submit(course: Path, assignment: str, student: str, names: list[str], answers_for) -> None:
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True)
    for name in names:
        released = nbformat.read(course / "release" / assignment / f"{name}.ipynb", as_version=4)
        source = nbformat.read(ASSIGNMENTS[assignment] / f"{name}.ipynb", as_version=4)
        nbformat.write(filled(released, answers_for(source)), folder / f"{name}.ipynb")


Scores = dict[tuple[str, str, str], dict[str, float | bool]]


def scores(course: Path, chosen: dict[str, list[str]]) -> Scores:
    """(assignment, student, exercise) -> score, maximum and whether a person still has to grade part of it."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {(assignment, student, name): {
            "score": (graded := gradebook.find_submission_notebook(name, assignment, student)).score,
            "max_score": graded.max_score,
            "needs_manual_grade": graded.needs_manual_grade,
        } for assignment, names in chosen.items() for student in STUDENTS for name in names}


def grading_round(course: Path, chosen: dict[str, list[str]] | None = None) -> Scores:
    """The whole round for ``chosen`` (assignment -> exercises; default: all of both)."""
    chosen = chosen or every_exercise()
    make_course(course, chosen)
    for student in STUDENTS:
        nbgrader(course, "db", "student", "add", student)
    for assignment, names in chosen.items():
        nbgrader(course, "generate_assignment", assignment)
        nbgrader(course, "release_assignment", assignment)
        submit(course, assignment, "right", names, solutions)
        submit(course, assignment, "wrong", names, lambda source: WRONG_ANSWERS)
        nbgrader(course, "autograde", assignment)
    return scores(course, chosen)


def chosen_from(arguments: list[str]) -> dict[str, list[str]]:
    """``ASSIGNMENT/EXERCISE`` arguments (a bare exercise is the English one) as assignment -> exercises."""
    chosen: dict[str, list[str]] = {}
    for argument in arguments:
        assignment, _, name = argument.rpartition("/")
        assignment = assignment or ASSIGNMENT
        if assignment not in ASSIGNMENTS or name not in exercises(assignment):
            raise SystemExit(f"no exercise {argument}: give ASSIGNMENT/EXERCISE, e.g. "
                             f"{ASSIGNMENT_ZH}/{exercises(ASSIGNMENT_ZH)[0]}")
        chosen.setdefault(assignment, []).append(name)
    return chosen


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    course, chosen = Path(argv[0]), chosen_from(argv[1:]) or every_exercise()
    if course.exists():
        raise SystemExit(f"{course} exists: give a new folder for the course")
    for (assignment, student, name), score in grading_round(course, chosen).items():
        manual = " (+ a part graded by hand)" if score["needs_manual_grade"] else ""
        print(f"{assignment:16} {student:6} {name:30} {score['score']:g} / {score['max_score']:g}{manual}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
