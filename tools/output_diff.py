"""What re-executing changed in the notebooks' stored outputs, for a person to review.

    python tools/output_diff.py [REV]      # against REV (default HEAD): every notebook git tracks

For each notebook whose stored outputs differ from REV's, each code cell whose outputs changed: its
first line of source, then a unified diff of its outputs as text (streams, ``text/plain``, an error's
type and message; a picture by its kind, marked when its content changed). Moving to another torch
(docs/moving-torch.md) re-executes every notebook: this is the diff to read before `make test`.
"""
from __future__ import annotations

import difflib
import hashlib
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
TEXT_KINDS = ("text/plain", "text/markdown")


def output_lines(output: nbformat.NotebookNode) -> list[str]:
    if output.output_type == "stream":
        return [f"[{output.name}] {line}" for line in output.text.splitlines()]
    if output.output_type == "error":
        return [f"[error] {output.ename}: {output.evalue}"]
    lines = []
    for kind, value in sorted(output.get("data", {}).items()):
        text = value if isinstance(value, str) else "".join(value)
        if kind in TEXT_KINDS:
            lines += text.splitlines()
        else:
            lines.append(f"[{kind}, {hashlib.sha256(text.encode()).hexdigest()[:12]}]")
    return lines


def cell_outputs(notebook: nbformat.NotebookNode) -> list[tuple[str, list[str]]]:
    """``(first source line, output lines)`` of each code cell."""
    return [(cell.source.split("\n", 1)[0], [line for o in cell.outputs for line in output_lines(o)])
            for cell in notebook.cells if cell.cell_type == "code"]


def notebook_diff(before: nbformat.NotebookNode, after: nbformat.NotebookNode) -> list[str]:
    old, new = cell_outputs(before), cell_outputs(after)
    if [source for source, _ in old] != [source for source, _ in new]:
        return ["(its code cells changed too: compare the sources first, e.g. with nbdime)"]
    report = []
    for index, ((source, was), (_, now)) in enumerate(zip(old, new, strict=True)):
        if was != now:
            report.append(f"  code cell {index + 1}: {source}")
            report += [f"    {line}" for line in difflib.unified_diff(was, now, lineterm="", n=1)][2:]
    return report


def changed_outputs(rev: str = "HEAD", root: Path = ROOT) -> dict[str, list[str]]:
    listed = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=root, capture_output=True, text=True, check=True)
    changes = {}
    for name in listed.stdout.split():
        shown = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=root, capture_output=True, text=True, check=False)
        if shown.returncode != 0 or not (root / name).exists():
            continue  # new or deleted since rev: nothing to compare
        report = notebook_diff(nbformat.reads(shown.stdout, as_version=4), nbformat.read(root / name, as_version=4))
        if report:
            changes[name] = report
    return changes


def main(argv: list[str]) -> int:
    rev = argv[0] if argv else "HEAD"
    changes = changed_outputs(rev)
    for name, report in changes.items():
        print(name)
        print("\n".join(report))
    print(f"{len(changes)} notebooks' stored outputs differ from {rev}" if changes else
          f"no stored output differs from {rev}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
