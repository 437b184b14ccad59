"""Student copies of the solution notebooks, made by nbgrader's own preprocessors.

    python -m graphleaf_edu.exercises student SOURCE_FOLDER DESTINATION_FOLDER
"""
from __future__ import annotations

import argparse
import copy
from pathlib import Path


def student_copy(notebook):
    """What students get from a solution notebook: nbgrader's ClearSolutions, ClearHiddenTests and
    ClearOutput applied to a copy (the argument is not modified). A written answer is replaced by
    nbgrader's own stub, ``YOUR ANSWER HERE``, in either language: the release that ``nbgrader
    generate_assignment`` makes for a class writes that stub (one setting for the whole course), and
    the student copies must equal that release (tests/test_grading.py)."""
    try:
        from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "Making student copies needs nbgrader: install the project's test extra "
            "(pip install -e '.[test]') or `pip install nbgrader`.") from error
    result, resources = copy.deepcopy(notebook), {}
    for preprocessor in (ClearSolutions(), ClearHiddenTests(), ClearOutput()):
        result, resources = preprocessor.preprocess(result, resources)
    return result


def write_student_copies(source: str | Path, destination: str | Path) -> list[Path]:
    """Write the student copy of every notebook in ``source`` to ``destination``; return their paths.

    Notebooks in ``destination`` without a source are removed, so the folder mirrors ``source``.
    """
    import nbformat

    source, destination = Path(source), Path(destination)
    notebooks = sorted(source.glob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"no notebooks in {source}: give the folder of the solution notebooks.")
    if destination.resolve() == source.resolve():
        raise ValueError("the student copies need a folder of their own: they would overwrite the solutions.")
    destination.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        target = destination / path.name
        nbformat.write(student_copy(nbformat.read(path, as_version=4)), target)
        written.append(target)
    for stale in set(destination.glob("*.ipynb")) - set(written):
        stale.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graphleaf_edu.exercises", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    student = commands.add_parser("student", help="write the student copies of the solution notebooks")
    student.add_argument("source", help="folder of the solution notebooks, e.g. instructor/exercises")
    student.add_argument("destination", help="folder for the student copies, e.g. notebooks/exercises")
    args = parser.parse_args(argv)
    written = write_student_copies(args.source, args.destination)
    print(f"wrote {len(written)} student copies to {args.destination}")
    return 0
