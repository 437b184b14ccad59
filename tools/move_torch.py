"""Move the suite to another torch release: the part of docs/moving-torch.md a program can do.

    python tools/move_torch.py X.Y.Z       # e.g. the next release PyTorch publishes

Writes the new release where the project writes it: pyproject.toml (``[tool.graphleaf-edu] torch``, the
one source, and the core dependency's lower bound ``torch>=X.Y``) and graphleaf_edu/notebook.py
(``VERIFIED_TORCH``, which an installed package needs without pyproject.toml, and the outputs of its
doctests). Then lists every other line that still names the old release, for a person to read: a
lesson's sentence about what that release does is a claim to check again, a record (CHANGELOG, a
benchmark) stays as it was. `make torch-move TORCH=X.Y.Z` runs this, then the locks, the notebooks'
stamps and outputs and the output diff (docs/moving-torch.md).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import release

# Written by machines from the source (make lock, api_docs, make notebooks): never a place to review.
GENERATED = ("requirements/", "binder/requirements.txt", "docs/api.md", "bench/")


def rewrite(path: Path, replacements: list[tuple[str, str]]) -> bool:
    """Apply ``(pattern, replacement)`` regex pairs to the file; each must match; return whether it changed."""
    before = path.read_text()
    after = before
    for pattern, replacement in replacements:
        after, count = re.subn(pattern, replacement, after, flags=re.MULTILINE)
        if count == 0:
            raise SystemExit(f"{path}: nothing matches {pattern!r}; has its layout changed? Edit it by hand.")
    if after != before:
        path.write_text(after)
    return after != before


def move(root: Path, new: str) -> tuple[str, list[Path]]:
    """Write torch ``new`` into ``root``'s sources; return the old release and the files changed."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", new):
        raise SystemExit(f"{new!r} is not a torch release (X.Y.Z, e.g. the version `pip index versions torch` lists)")
    old = release.torch(root)
    old_minor, new_minor = release.major_minor(old), release.major_minor(new)
    edits = {
        root / "pyproject.toml": [
            (r'^(torch = ")[^"]+(")', rf"\g<1>{new}\g<2>"),
            (r'^(\s+"torch>=)[\d.]+(",)', rf"\g<1>{new_minor}\g<2>"),
        ],
        root / "graphleaf_edu" / "notebook.py": [
            (r'^(VERIFIED_TORCH = ")[\d.]+(")', rf"\g<1>{new_minor}\g<2>"),
            (rf"^(\s+)'{re.escape(old_minor)}'$", rf"\g<1>'{new_minor}'"),
            (rf"^(\s+torch ){re.escape(old_minor)}( \| graphleaf_edu ready)", rf"\g<1>{new_minor}\g<2>"),
        ],
    }
    if old_minor == new_minor:  # a patch release: the doctests' outputs stay
        edits[root / "graphleaf_edu" / "notebook.py"] = edits[root / "graphleaf_edu" / "notebook.py"][:1]
    changed = [path for path, replacements in edits.items() if rewrite(path, replacements)]
    return old, changed


def mentions(root: Path, old: str) -> list[str]:
    """Every tracked line outside the generated files that still names ``old``: ``path:line: text``, and
    for a notebook ``path cell N: text`` of its cells' sources (its outputs are re-executed, its header's
    "Verified with" is stamped)."""
    minor = re.compile(rf"(^|[^0-9.]){re.escape(release.major_minor(old))}([^0-9]|$)")
    listed = subprocess.run(["git", "grep", "-l", "-I", "-E", minor.pattern], cwd=root, capture_output=True,
                            text=True, check=False).stdout.split()
    found = []
    for name in (name for name in listed if not name.startswith(GENERATED)):
        if name.endswith(".ipynb"):
            cells = nbformat.read(root / name, as_version=4).cells
            found += [f"{name} cell {number}: {line.strip()}" for number, cell in enumerate(cells, 1)
                      for line in cell.source.splitlines() if minor.search(line) and not release.VERIFIED_WITH.search(line)]
        else:
            found += [f"{name}:{number}: {line.strip()}" for number, line in
                      enumerate((root / name).read_text(encoding="utf-8").splitlines(), 1) if minor.search(line)]
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    old, changed = move(release.ROOT, argv[0])
    print(f"torch {old} -> {argv[0]}: wrote {', '.join(str(p.relative_to(release.ROOT)) for p in changed) or 'nothing'}")
    left = mentions(release.ROOT, old)
    print(f"{len(left)} lines still name torch {release.major_minor(old)}; read each (a lesson's claim to check, "
          "a record to keep, a header the stamp rewrites):")
    for line in left:
        print(f"    {line[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
