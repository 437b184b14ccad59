"""``python -m graphleaf_edu [--keep-going] [--origins] SCRIPT [ARGS]``: run a script; a graph-leaves error
it raises (or torch.multiprocessing's "Cowardly refusing ...") ends with notes naming the user's line,
every culprit and its fix. With ``--keep-going`` each such failure is recorded and the script goes on
(``graphleaf_edu.keep_going``); a summary at exit names every cause."""
from __future__ import annotations

import runpy
import sys
import traceback
from pathlib import Path

from graphleaf_edu import messages as M

OPTIONS = ("--origins", "--keep-going")


def main(argv: list[str]) -> int:
    options, rest = _split(argv)
    if "-h" in options or "--help" in options or (not rest and not options):
        print(M.RUNNER_USAGE, file=sys.stdout if options else sys.stderr)
        return 0 if options else 2
    unknown = [option for option in options if option not in OPTIONS]
    if unknown or not rest:
        problem = M.say(M.RUNNER_UNKNOWN_OPTION, option=unknown[0]) if unknown else M.RUNNER_NO_SCRIPT
        print(f"{problem}\n\n{M.RUNNER_USAGE}", file=sys.stderr)
        return 2
    script = Path(rest[0])
    if not script.is_file():
        print(f"{M.say(M.RUNNER_NO_SUCH_SCRIPT, script=script)}\n\n{M.RUNNER_USAGE}", file=sys.stderr)
        return 2
    sys.argv = list(rest)
    sys.path[0] = str(script.resolve().parent)  # as `python SCRIPT` would have it
    if "--keep-going" in options:
        return _keep_going(script)
    from graphleaf_edu.on_error import explaining

    again = " ".join(["python -m graphleaf_edu", "--origins", *options, *rest])
    with explaining(origins="--origins" in options, origins_hint=M.say(M.ORIGINS_HINT_RUNNER, command=again)):
        runpy.run_path(str(script), run_name="__main__")
    return 0


def _keep_going(script: Path) -> int:
    """Run with every failure recorded; the summary at exit; the exit status rule of ``--help``."""
    from graphleaf_edu.keep_going import KeepGoing
    from graphleaf_edu.on_error import explaining

    run = KeepGoing()
    status, stopped_by = 0, None
    with run.hooks():
        try:
            with explaining(origins=True, origins_hint=""):
                runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exit:
            status = _exit_status(exit)
        except BaseException as error:  # noqa: BLE001 - shown as Python would, then the summary
            traceback.print_exception(error, file=sys.stderr)
            status, stopped_by = 1, error
        _finish_multiprocessing()
    sys.stdout.flush()
    print("\n" + run.summary(stopped_by), file=sys.stderr)
    return status or (1 if run.failures else 0)


def _finish_multiprocessing() -> None:
    """What Python's exit does for multiprocessing, done before the summary while the hooks still
    record: queues flush their feeder threads (an item put just before the end is pickled now) and
    child processes are joined."""
    import multiprocessing.util

    exit_function = getattr(multiprocessing.util, "_exit_function", None)
    if exit_function is not None:
        exit_function()


def _exit_status(exit: SystemExit) -> int:
    if exit.code is None or isinstance(exit.code, int):
        return exit.code or 0
    print(exit.code, file=sys.stderr)  # as Python prints sys.exit("message")
    return 1


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The runner's own options (before SCRIPT), and SCRIPT with its arguments."""
    for index, argument in enumerate(argv):
        if not argument.startswith("-"):
            return argv[:index], argv[index:]
    return list(argv), []


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
