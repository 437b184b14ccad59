"""Re-execute notebooks in place on the CPU kernel and store their outputs (`make notebooks`).

Outputs are what nbval later compares, so this run must be deterministic: the notebooks seed
everything in their setup cell, timing metadata is not recorded, and the stored kernelspec is
reset to the standard ``python3`` one so any Jupyter opens the files without a prompt.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

STANDARD_KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def notebook_paths(targets: list[str]) -> list[Path]:
    paths: list[Path] = []
    for target in map(Path, targets):
        found = [target] if target.suffix == ".ipynb" else sorted(target.rglob("*.ipynb"))
        paths += [p for p in found if ".ipynb_checkpoints" not in p.parts]
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
    notebook.metadata["kernelspec"] = dict(STANDARD_KERNELSPEC)
    notebook.metadata.get("language_info", {}).pop("version", None)
    nbformat.write(notebook, path)


def main(targets: list[str]) -> int:
    for path in notebook_paths(targets or ["notebooks"]):
        print(f"executing {path}", flush=True)
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
