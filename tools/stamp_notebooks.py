"""Notebook-wide edits that are safe to rerun (after a rebase, or on a new notebook):

- ``metadata.language_info.version``: where missing, the Python release that runs this script (the one
  `make notebooks` executes the outputs with). JupyterLab compares it with its kernel's, and
  graphleaf_edu_jupyter keeps the stored one on save, so opening a notebook never rewrites it.
- the shared setup cell (the first code cell) installs the package and Graphviz where they are missing
  (Colab), so one notebook runs locally, on Binder and on Colab;
- every install of the suite, in whatever cell and shape it stands (found by ``release.INSTALL``), is
  the release tag, ``graphleaf-edu @ git+<repository>@v<version>``, never a branch;
- a header's "**Verified with**: torch X.Y" names the supported torch (``[tool.graphleaf-edu]``);
- every lesson's header (the quick fix's, the core's and the deep dives', and their Chinese twins' under
  ``zh-CN/``) ends with an "Open in Colab" badge that opens that notebook itself at the release tag (a Chinese twin's badge
  opens the Chinese notebook and says so in Chinese);
- every code cell that answers a **Predict** prompt stores its outputs folded (``predict_prompts``).

    .venv/bin/python tools/stamp_notebooks.py            # every notebook git tracks
    .venv/bin/python tools/stamp_notebooks.py PATH...    # only these

A notebook is rewritten only if an edit changed it, in nbformat's own layout. The version, the torch
and the repository come from pyproject.toml only (tools/release.py).
"""
from __future__ import annotations

import platform
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import release
import twin_sync
from predict_prompts import fold_answers

ROOT = release.ROOT
REPOSITORY = release.repository()
TAG = release.tag()
QUICK_FIX = "quick_fix.ipynb"  # the page a person who just hit the error opens first
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE_LABEL = {"en": "Open In Colab", twin_sync.ZH: "在 Colab 中打开"}
INSTALL_WHERE_MISSING = f"""try:
    import graphleaf_edu as gl
except ModuleNotFoundError:  # e.g. on Colab: install the package and Graphviz's dot (once, about a minute)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "torchviz==0.0.3",
                    "{release.install_requirement(REPOSITORY, TAG)}"], check=True)
    if shutil.which("dot") is None:
        subprocess.run(["apt-get", "install", "--yes", "--quiet", "graphviz"], check=True)
    import graphleaf_edu as gl
"""


def stamp_language_version(notebook: nbformat.NotebookNode, path: Path) -> None:
    notebook.metadata.setdefault("language_info", {}).setdefault("version", platform.python_version())


def install_where_missing(notebook: nbformat.NotebookNode, path: Path) -> None:
    setup = next(cell for cell in notebook.cells if cell.cell_type == "code")
    if "except ModuleNotFoundError" in setup.source or "\nimport graphleaf_edu as gl\n" not in setup.source:
        return
    source = setup.source.replace("import copy\n\n", "import copy\nimport shutil\nimport subprocess\nimport sys\n\n", 1)
    setup.source = source.replace("\nimport graphleaf_edu as gl\n", "\n" + INSTALL_WHERE_MISSING, 1)


def pin_suite_installs(notebook: nbformat.NotebookNode, path: Path) -> None:
    for cell in notebook.cells:
        cell.source = release.pin_installs(cell.source, REPOSITORY, TAG)


def verified_torch(notebook: nbformat.NotebookNode, path: Path) -> None:
    header = notebook.cells[0]
    if header.cell_type == "markdown":
        header.source = release.VERIFIED_WITH.sub(rf"\g<1>{release.major_minor(release.torch())}", header.source)


def english_place(path: Path) -> Path:
    """Where ``path`` lies in the English course: a Chinese twin's English twin, else ``path`` itself."""
    in_chinese = any(path.is_relative_to(folder / twin_sync.ZH) for folder in twin_sync.TWIN_FOLDERS)
    return twin_sync.twin_of(path) if in_chinese else path


def colab_badge(notebook: nbformat.NotebookNode, path: Path) -> None:
    lesson = english_place(path)
    on_top = lesson.parent == ROOT / "notebooks"
    core = re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", lesson.name) and on_top
    if not core and not (on_top and lesson.name == QUICK_FIX) and lesson.parent != ROOT / "notebooks" / "deep_dives":
        return
    header = notebook.cells[0]
    url = release.colab_url(release.github_owner_and_name(REPOSITORY), TAG, path.relative_to(ROOT).as_posix())
    label = BADGE_LABEL[twin_sync.ZH if lesson != path else "en"]
    badge = f"[![{label}]({COLAB_BADGE})]({url})"
    kept = [line for line in header.source.rstrip("\n").split("\n") if COLAB_BADGE not in line]
    while kept and not kept[-1].strip():
        kept.pop()
    header.source = "\n".join([*kept, "", badge])


def fold_predict_answers(notebook: nbformat.NotebookNode, path: Path) -> None:
    fold_answers(notebook)


EDITS = (stamp_language_version, install_where_missing, pin_suite_installs, verified_torch, colab_badge,
         fold_predict_answers)


def tracked_notebooks() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in listed.stdout.split()]


def stamp(path: Path) -> bool:
    """Apply every edit to the notebook at ``path``; return whether its file changed."""
    before = path.read_text(encoding="utf-8")
    notebook = nbformat.reads(before, as_version=4)
    for edit in EDITS:
        edit(notebook, path)
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
