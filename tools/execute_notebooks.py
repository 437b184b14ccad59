"""Re-execute notebooks in place on the CPU kernel and store their outputs (`make notebooks`).

Outputs are what nbval later compares, so this run must be deterministic: the notebooks seed
everything in their setup cell, timing metadata is not recorded, and the stored kernelspec is
reset to the standard ``python3`` one so any Jupyter opens the files without a prompt. The cells
that answer a **Predict** prompt are stored folded (``predict_prompts.fold_answers``).
"""
from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from predict_prompts import fold_answers

STANDARD_KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
REPO_ROOT = Path(__file__).resolve().parent.parent


def machine_prefixes() -> list[str]:
    """Folders that tracebacks name on this machine only, longest first (IPython writes ~ for $HOME)."""
    folders = {sysconfig.get_path(key) for key in ("purelib", "platlib", "stdlib")} | {str(REPO_ROOT)}
    home = os.path.expanduser("~")
    folders |= {"~" + f[len(home):] for f in folders if f.startswith(home + os.sep)}
    return sorted((f + os.sep for f in folders), key=len, reverse=True)


def strip_machine_paths(notebook: nbformat.NotebookNode) -> None:
    """Make stored tracebacks name files relative to their package, e.g. ``torch/_tensor.py``."""
    prefixes = machine_prefixes()
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [_without(prefixes, line) for line in output["traceback"]]


def _without(prefixes: list[str], line: str) -> str:
    for prefix in prefixes:
        line = line.replace(prefix, "")
    return line


STUDENT_COPIES = REPO_ROOT / "notebooks" / "exercises"  # stored without outputs: `make student` writes them


def notebook_paths(targets: list[str]) -> list[Path]:
    paths: list[Path] = []
    for target in map(Path, targets):
        found = [target] if target.suffix == ".ipynb" else sorted(target.rglob("*.ipynb"))
        paths += [p for p in found if ".ipynb_checkpoints" not in p.parts
                  and p.resolve().parent != STUDENT_COPIES]
    return paths


def execute(path: Path, kernel_name: str = "graphleaf-cpu") -> None:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=kernel_name,
        timeout=600,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    strip_machine_paths(notebook)
    fold_answers(notebook)
    notebook.metadata["kernelspec"] = dict(STANDARD_KERNELSPEC)
    nbformat.write(notebook, path)


def main(targets: list[str]) -> int:
    # Stored outputs are English unless the notebook itself asks (setup_notebook(lang=...)), whatever
    # the maintainer's shell says; the kernels inherit this environment.
    os.environ.pop("GRAPHLEAF_EDU_LANG", None)
    for path in notebook_paths(targets or ["notebooks", "instructor"]):
        print(f"executing {path}", flush=True)
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
