"""The changes ``--keep-going`` shows, as one unified diff that ``git apply`` and ``patch -p1`` accept.

The diff is made from the files as they are on disk; the files themselves are never written.
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Iterable

from graphleaf_edu.storing import Edit

_NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(edits: Iterable[Edit]) -> str:
    """One diff for every file the edits change, paths relative to the working directory (``a/``, ``b/``)."""
    by_file: dict[str, list[Edit]] = {}
    for edit in edits:
        by_file.setdefault(edit.filename, []).append(edit)
    parts = []
    for filename, changes in sorted(by_file.items()):
        with open(filename, encoding="utf-8", newline="") as file:
            before = file.read().splitlines(keepends=True)
        after = list(before)
        for edit in changes:
            old = before[edit.lineno - 1]
            ending = old[len(old.rstrip("\r\n")):]
            after[edit.lineno - 1] = edit.after + ending
        path = os.path.relpath(filename).replace(os.sep, "/")
        for line in difflib.unified_diff(before, after, f"a/{path}", f"b/{path}"):
            parts.append(line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}")
    return "".join(parts)
