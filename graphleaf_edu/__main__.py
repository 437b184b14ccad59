"""``python -m graphleaf_edu [--keep-going] [--origins] [--lang LANG] SCRIPT [ARGS]``: run a script; a graph-leaves error
it raises (or torch.multiprocessing's "Cowardly refusing ...") ends with notes naming the user's line,
every culprit and its fix. With ``--keep-going`` each such failure is recorded and the script goes on
(``graphleaf_edu.keep_going``); a summary at exit names every cause."""
from __future__ import annotations

import runpy
import sys
import traceback
from pathlib import Path

from graphleaf_edu import messages as M
from graphleaf_edu.i18n import set_language

OPTIONS = ("--origins", "--keep-going")
LANG = "--lang"  # takes a value: --lang zh-CN or --lang=zh-CN


def main(argv: list[str]) -> int:
    options, rest = _split(argv)
    lang = _lang(options)
    if lang:
        try:
            set_language(lang)
        except ValueError as no_catalog:
            print(f"python -m graphleaf_edu: {no_catalog}", file=sys.stderr)
            return 2
    options = [option for option in options if option != LANG and not option.startswith(f"{LANG}=")]
    if "-h" in options or "--help" in options or (not rest and not options):
        print(_usage(), file=sys.stdout if options else sys.stderr)
        return 0 if options else 2
    unknown = [option for option in options if option not in OPTIONS]
    if unknown or not rest:
        problem = M.say(M.RUNNER_UNKNOWN_OPTION, option=unknown[0]) if unknown else M.say(M.RUNNER_NO_SCRIPT)
        print(f"{problem}\n\n{_usage()}", file=sys.stderr)
        return 2
    script = Path(rest[0])
    if not script.is_file():
        print(f"{M.say(M.RUNNER_NO_SUCH_SCRIPT, script=script)}\n\n{_usage()}", file=sys.stderr)
        return 2
    sys.argv = list(rest)
    sys.path[0] = str(script.resolve().parent)  # as `python SCRIPT` would have it
    if "--keep-going" in options:
        return _keep_going(script)
    from graphleaf_edu.on_error import explaining

    again = " ".join(["python -m graphleaf_edu", "--origins", *options, *([f"{LANG}={lang}"] if lang else []), *rest])
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


def _usage() -> str:
    return f"{M.say(M.RUNNER_USAGE)}\n\n{M.say(M.KG_CANNOT_CONTINUE)}"


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The runner's own options (before SCRIPT; ``--lang zh-CN`` as ``--lang=zh-CN``), and SCRIPT with its arguments."""
    options: list[str] = []
    index = 0
    while index < len(argv) and argv[index].startswith("-"):
        if argv[index] == LANG and index + 1 < len(argv):
            options.append(f"{LANG}={argv[index + 1]}")
            index += 2
        else:
            options.append(argv[index])
            index += 1
    return options, argv[index:]


def _lang(options: list[str]) -> str | None:
    """The value of the last ``--lang=LANG`` among the options (``--lang`` without one: None)."""
    values = [option.partition("=")[2] for option in options if option.startswith(f"{LANG}=")]
    return values[-1] if values else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
