"""`make classroom` / `make classroom-stop`: a JupyterHub class on this machine.

    python -m classroom setup                    the students' environment and the proxy (root only)
    python -m classroom start [--students 30]    accounts, course, hub on http://127.0.0.1:18600
    python -m classroom stop                     no process, account or home left behind
"""
from __future__ import annotations

import argparse
import os
import sys

from classroom import course, environment, hub
from classroom.settings import CLASSROOMS


def setup() -> int:
    """What `make test` needs for the classroom tests; nothing without root, as those tests skip then."""
    if os.geteuid() != 0:
        print("classroom: not root, so no accounts can be made; its set-up and tests are skipped")
        return 0
    environment.ensure()
    hub.ensure_proxy()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("setup", "start", "stop"))
    parser.add_argument("--students", type=int, default=30, help="accounts to make (default 30)")
    parser.add_argument("--classroom", choices=sorted(CLASSROOMS), default="class",
                        help="which of the side-by-side classrooms (default: class)")
    args = parser.parse_args(argv)
    classroom = CLASSROOMS[args.classroom]
    try:
        if args.action == "setup":
            return setup()
        if args.action == "stop":
            removed = hub.stop(classroom)
            print(f"stopped the {classroom.name} classroom; removed {len(removed)} accounts and their homes")
            return 0
        names = hub.start(classroom, args.students)
    except (PermissionError, RuntimeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"""
JupyterHub is up on {classroom.url} with {len(names)} students: {names[0]} ... {names[-1]}
Shared password: {hub.password(classroom)}
Hand out this link; it logs a student in, pulls the course into ~/graphleaf-edu and opens the first lesson:

    {course.pull_link(classroom.url, classroom.course_repository)}

Stop it (servers, accounts and homes removed): make classroom-stop""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
