"""Notebook-wide edits that are safe to rerun (after a rebase, or on a new notebook):

- ``metadata.language_info.version``: where missing, the Python release that runs this script (the one
  `make notebooks` executes the outputs with). JupyterLab compares it with its kernel's, and
  graphleaf_edu.save_hook keeps the stored one on save, so opening a notebook never rewrites it.

    .venv/bin/python tools/stamp_notebooks.py            # every notebook git tracks
    .venv/bin/python tools/stamp_notebooks.py PATH...    # only these

A notebook is rewritten only if an edit changed it, in nbformat's own layout.
"""
from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def stamp_language_version(notebook: nbformat.NotebookNode) -> None:
    notebook.metadata.setdefault("language_info", {}).setdefault("version", platform.python_version())


EDITS = (stamp_language_version,)


def tracked_notebooks() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in listed.stdout.split()]


def stamp(path: Path) -> bool:
    """Apply every edit to the notebook at ``path``; return whether its file changed."""
    before = path.read_text(encoding="utf-8")
    notebook = nbformat.reads(before, as_version=4)
    for edit in EDITS:
        edit(notebook)
    after = nbformat.writes(notebook) + "\n"
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def main(paths: list[str]) -> int:
    for path in [Path(p).resolve() for p in paths] or tracked_notebooks():
        if stamp(path):
            print(f"stamped {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
