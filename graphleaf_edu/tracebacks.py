"""Short tracebacks for students: the error's type and message, the student's own lines, and the line
that raised it (unless this package raised it: its message speaks for it); the frames in between
(``copy``, ``torch``, this package) are counted, not shown.

An error already shown in full in this session (the same type and message) is shown again as one
line: the type, the message's first sentence and the student's own line that raised it (IPython's
``%xmode Minimal`` would drop that line), then the notes the error carries, if any. A cause chained
from inside this package is left out of the picture: the package's own message already says what it was.

``setup_notebook`` turns this on in IPython. It only changes how a traceback is *shown*: the exception
is the real one (``sys.last_value`` and nbval see it unchanged), and ``%xmode Context`` or
``%xmode Verbose`` shows every frame again (``%xmode Plain`` goes back to the short form).
"""
from __future__ import annotations

import copy
import functools
import linecache
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphleaf_edu.i18n import say, say_n

SHORT_MODE = "Plain"
PACKAGE = Path(__file__).resolve().parent
WORKER_TRACEBACK = "\nOriginal Traceback (most recent call last):\n"


def keep_frames(tb: types.TracebackType, is_students: Callable[[str], bool]) -> tuple[types.TracebackType, int]:
    """A traceback with the student's frames and the frame that raised (unless this package raised it
    below a student's frame); and how many frames it left out."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    raising = entries[-1]
    kept = [entry for entry in entries[:-1] if is_students(entry.tb_frame.f_code.co_filename)]
    if is_students(raising.tb_frame.f_code.co_filename) or not (kept and _in_package(raising)):
        kept.append(raising)  # this package's own raise is not shown: its message speaks for it
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt, len(entries) - len(kept)


def short_worker_message(error: BaseException) -> BaseException:
    """A DataLoader worker's error carries the worker's whole traceback in its message (with the
    worker's file paths): shown, it keeps its first line and the line that names the cause."""
    message = str(error)
    if WORKER_TRACEBACK not in message:
        return error
    lines = message.strip().splitlines()
    try:
        return type(error)(f"{lines[0]}\n  " + say("[the worker's traceback is in str(error)]") + f"\n  {lines[-1]}")
    except Exception:  # noqa: BLE001 (an exception type with another constructor is shown as it is)
        return error


def without_package_chain(error: BaseException) -> BaseException:
    """The error as shown: a cause or context raised wholly inside this package is left out, since this
    package's own messages repeat what it said. A copy is shown; the real exception keeps its chain."""
    chained = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    if chained is None or not _only_package_frames(chained.__traceback__):
        return error
    try:
        shown = copy.copy(error)  # a copy has no __cause__, __context__ or __traceback__
    except Exception:  # noqa: BLE001 (an exception that cannot be copied is shown as it is)
        return error
    shown.__suppress_context__ = True
    return shown


def _only_package_frames(tb: types.TracebackType | None) -> bool:
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    return bool(entries) and all(_in_package(entry) for entry in entries)


def _last(tb: types.TracebackType) -> types.TracebackType:
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def _in_package(entry: types.TracebackType) -> bool:
    return PACKAGE in Path(entry.tb_frame.f_code.co_filename).resolve().parents


def first_sentence(message: str) -> str:
    """The first sentence of a message's first line (PyTorch's messages go on with hints)."""
    line = message.strip().split("\n", 1)[0]
    sentence, dot, rest = line.partition(". ")
    return f"{sentence}." if dot and rest else line


def repeat_line(error: BaseException, where: str | None) -> str:
    """An error shown in full before, in one line: its type, first sentence, and the student's line."""
    shown = f"{type(error).__name__}: {first_sentence(str(error))} " + say("(shown in full above)")
    return f"{shown}  <- {where}" if where else shown


def students_line(tb: types.TracebackType | None, label: Callable[[str], str | None]) -> str | None:
    """``"Cell In[7], line 2: copy.deepcopy(y)"``: the deepest frame ``label`` names, with its source line."""
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        name = label(filename)
        if name is not None:
            found = f"{name}, line {tb.tb_lineno}: {linecache.getline(filename, tb.tb_lineno).strip()}"
        tb = tb.tb_next
    return found


def _hidden_note(count: int) -> str:
    return "  " + say_n("[... {n} library frame not shown: %xmode Context shows them]",
                        "[... {n} library frames not shown: %xmode Context shows them]", count) + "\n"


def use_short_tracebacks(shell: Any) -> None:
    """Show short tracebacks in this IPython shell (idempotent)."""
    formatter = shell.InteractiveTB
    formatter.set_mode(SHORT_MODE)
    if getattr(formatter.structured_traceback, "graphleaf_short", False):
        return
    full = formatter.structured_traceback

    # A kernel's front end (JupyterLab) shows the entries joined by newlines; a terminal joins them as they are.
    joined_by_newlines = getattr(shell, "kernel", None) is not None

    def cell_label(filename: str) -> str | None:
        named = shell.compile.format_code_name(filename)
        return None if named is None else " ".join(named)

    def is_students(filename: str) -> bool:
        return cell_label(filename) is not None

    shown_in_full: set[tuple[str, str]] = set()

    @functools.wraps(full)
    def structured_traceback(etype, evalue, etb=None, tb_offset=None, context=5):
        if formatter.mode != SHORT_MODE or not isinstance(etb, types.TracebackType):
            return full(etype, evalue, etb, tb_offset, context)
        # IPython's own first frame (run_code) sits before the cell's: skip it as IPython would.
        for _ in range(formatter.tb_offset if tb_offset is None else tb_offset):
            etb = etb.tb_next if etb.tb_next is not None else etb
        seen = (etype.__name__, str(short_worker_message(evalue)))
        if seen in shown_in_full:  # one line; notes added to this error (culprits, fixes) still follow it
            return [repeat_line(evalue, students_line(etb, cell_label)), *map(str, getattr(evalue, "__notes__", ()))]
        shown_in_full.add(seen)
        short, hidden = keep_frames(etb, is_students)
        shown = without_package_chain(short_worker_message(evalue))
        lines = full(etype, shown, short, 0, context)
        if hidden and len(lines) > 1:
            # before the raising library frame, or after the student's frame when that is the last shown
            last_is_students = is_students(_last(short).tb_frame.f_code.co_filename)
            lines.insert(len(lines) - (1 if last_is_students else 2), _hidden_note(hidden))
        if joined_by_newlines:
            lines = [line.rstrip("\n") for line in lines]  # no blank line between the entries
        return lines

    structured_traceback.graphleaf_short = True
    structured_traceback.forget_shown = shown_in_full.clear  # the next error of each kind shows in full again
    formatter.structured_traceback = structured_traceback
