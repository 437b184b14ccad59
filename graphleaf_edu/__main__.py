"""``python -m graphleaf_edu SCRIPT [ARGS]``: run a script; a graph-leaves error it raises (or
torch.multiprocessing's "Cowardly refusing ...") ends with notes naming every culprit and its fix."""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

USAGE = (
    "usage: python -m graphleaf_edu SCRIPT [ARGS...]\n"
    "Runs SCRIPT as __main__; if it raises the graph-leaves deepcopy error, the traceback ends with\n"
    "notes naming the object being copied, every non-leaf tensor's path, its cause and its fix."
)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    script = Path(argv[0])
    if not script.is_file():
        print(f"python -m graphleaf_edu: no such script: {script}\n\n{USAGE}", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path[0] = str(script.resolve().parent)  # as `python SCRIPT` would have it
    from graphleaf_edu.on_error import explain_errors

    with explain_errors():
        runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
