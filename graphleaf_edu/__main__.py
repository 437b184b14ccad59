"""``python -m graphleaf_edu [--keep-going] [--patch FILE] [--library PATH] [--origins] [--lang LANG] SCRIPT [ARGS]``:
run a script (or a folder's ``__main__.py``, as ``python DIR`` does); a graph-leaves error it raises (or
torch.multiprocessing's "Cowardly refusing ...") ends with notes naming the user's line, every culprit and
its fix. With ``--keep-going`` each such failure is recorded and the script goes on
(``graphleaf_edu.keep_going``); a summary at exit names every cause, the line that stored it and the change
to that line; ``--patch FILE`` writes those changes as one diff. A script that does not compile gets
Python's own error and status."""
from __future__ import annotations

import runpy
import sys
import traceback
from pathlib import Path

from graphleaf_edu import messages as M
from graphleaf_edu import places
from graphleaf_edu.i18n import set_language

OPTIONS = ("--origins", "--keep-going")
LANG, PATCH, LIBRARY = "--lang", "--patch", "--library"  # take a value: --lang zh-CN or --lang=zh-CN
_VALUED = (LANG, PATCH, LIBRARY)


def main(argv: list[str]) -> int:
    options, rest = _split(argv)
    lang = _lang(options)
    if lang:
        try:
            set_language(lang)
        except ValueError as no_catalog:
            print(f"python -m graphleaf_edu: {no_catalog}", file=sys.stderr)
            return 2
    patch = _value(options, PATCH)
    places.mark_library(_values(options, LIBRARY))
    options = [option for option in options if option not in _VALUED and not option.startswith(_VALUED_PREFIXES)]
    if "-h" in options or "--help" in options or (not rest and not options):
        print(_usage(), file=sys.stdout if options else sys.stderr)
        return 0 if options else 2
    unknown = [option for option in options if option not in OPTIONS]
    if unknown or not rest:
        problem = M.say(M.RUNNER_UNKNOWN_OPTION, option=unknown[0]) if unknown else M.say(M.RUNNER_NO_SCRIPT)
        print(f"{problem}\n\n{_usage()}", file=sys.stderr)
        return 2
    script = Path(rest[0])
    source = script / "__main__.py" if script.is_dir() else script
    if not source.is_file():
        print(f"{M.say(M.RUNNER_NO_SUCH_SCRIPT, script=script)}\n\n{_usage()}", file=sys.stderr)
        return 2
    try:
        compile(source.read_bytes(), str(source.absolute()), "exec")
    except SyntaxError as error:  # as `python SCRIPT` says it: no frame of this package, nothing run
        print("".join(traceback.format_exception_only(error)), end="", file=sys.stderr)
        return 1
    sys.argv = list(rest)
    sys.path[0] = str(script.resolve() if script.is_dir() else script.resolve().parent)  # as `python SCRIPT` has it
    if "--keep-going" in options:
        return _keep_going(script, patch)
    from graphleaf_edu.on_error import explaining

    again = " ".join(["python -m graphleaf_edu", "--origins", *options, *([f"{LANG}={lang}"] if lang else []), *rest])
    with explaining(origins="--origins" in options, origins_hint=M.say(M.ORIGINS_HINT_RUNNER, command=again)):
        runpy.run_path(str(script), run_name="__main__")
    return 0


def _keep_going(script: Path, patch: str | None) -> int:
    """Run with every failure recorded; the summary at exit; the exit status rule of ``--help``."""
    from graphleaf_edu import keep_going_report as report
    from graphleaf_edu import ranks
    from graphleaf_edu.keep_going import KeepGoing
    from graphleaf_edu.on_error import explaining
    from graphleaf_edu.patches import unified_diff

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
    own_status = status or (1 if run.failures else 0)
    failures, missing = list(run.failures.values()), list[int]()
    if ranks.rank() is not None:  # under torchrun: rank 0 prints every rank's causes, once
        merged = ranks.gathered(failures)
        if merged is None:
            return own_status
        failures, missing = merged
    edits = report.edits(failures)
    if patch and edits:
        Path(patch).write_text(unified_diff(edits), encoding="utf-8")
    print("\n" + report.summary(failures, stopped_by, run.fork_detached, patch if edits else None, missing),
          file=sys.stderr)
    if ranks.rank() is not None:
        ranks.summarised()
    return own_status


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
        if argv[index] in _VALUED and index + 1 < len(argv):
            options.append(f"{argv[index]}={argv[index + 1]}")
            index += 2
        else:
            options.append(argv[index])
            index += 1
    return options, argv[index:]


def _lang(options: list[str]) -> str | None:
    return _value(options, LANG)


def _value(options: list[str], name: str) -> str | None:
    """The value of the last ``NAME=VALUE`` among the options (``NAME`` without one: None)."""
    values = _values(options, name)
    return values[-1] if values else None


def _values(options: list[str], name: str) -> list[str]:
    return [option.partition("=")[2] for option in options if option.startswith(f"{name}=")]


_VALUED_PREFIXES = tuple(f"{name}=" for name in _VALUED)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
