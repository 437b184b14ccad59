"""Where in the user's own code something happened, as ``file:line  text``.

A user's frame is one outside torch, the standard library, installed packages (``site-packages``,
``dist-packages``) and this package. In IPython a cell is named as IPython's tracebacks name it,
``Cell In[n], line k``, never by the kernel's temporary file (notes end up in stored notebook
outputs). The bottom layer: it imports nothing from the package but its messages.

    >>> place(__file__, 1).split(":")[0].endswith("places.py")
    True
"""
from __future__ import annotations

import functools
import linecache
import os
import re
import site
import sys
import sysconfig
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from graphleaf_edu import messages as M

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_INSTALLED = {"site-packages", "dist-packages"}
# One frame of a formatted stack, as traceback.format_list (and autograd's anomaly mode) write it.
_FORMATTED_FRAME = re.compile(r'\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<name>.+)')


@dataclass(frozen=True)
class Frame:
    """One frame: its file, line number and function name."""

    filename: str
    lineno: int
    name: str


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= set(site.getsitepackages()) | {site.getusersitepackages(), _PACKAGE}
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if torch_file:
        roots.add(os.path.dirname(os.path.abspath(torch_file)))
    return tuple(sorted(os.path.abspath(root) + os.sep for root in roots if root))


_marked_library: list[str] = []  # files and folders the user marked as library code (--library PATH)


def mark_library(paths: Iterable[str]) -> None:
    """Treat these files (and everything under these folders) as library code, not the user's."""
    _marked_library[:] = [os.path.abspath(path) for path in paths]
    _is_users_file.cache_clear()


def is_users(filename: str) -> bool:
    """True for a file of the user's own code (a script, a module of theirs, an IPython cell)."""
    return _cell_name(filename, 1) is not None or _is_users_file(filename)


@functools.lru_cache(maxsize=4096)
def _is_users_file(filename: str) -> bool:
    if filename.startswith("<"):
        return not filename.startswith("<frozen ")  # <stdin>, <string>: typed or run by the user
    path = os.path.abspath(filename)
    if _INSTALLED & set(path.split(os.sep)):
        return False
    if any(path == marked or path.startswith(marked + os.sep) for marked in _marked_library):
        return False
    return not path.startswith(_library_roots())


def place(filename: str, lineno: int) -> str:
    """``train.py:72  queue.put(logits)``; ``Cell In[3], line 2  queue.put(logits)`` in IPython."""
    text = linecache.getline(filename, lineno).strip()
    where = _cell_name(filename, lineno) or f"{shown_path(filename)}:{lineno}"
    return f"{where}  {text}" if text else where


def frame_place(frame: Frame) -> str:
    return place(frame.filename, frame.lineno)


def function_place(frame: Frame) -> str:
    """``train.py:21 in forward  attn = scores.softmax(-1)``: where, in which function."""
    text = linecache.getline(frame.filename, frame.lineno).strip()
    where = _cell_name(frame.filename, frame.lineno) or f"{shown_path(frame.filename)}:{frame.lineno}"
    name = "" if frame.name == "<module>" else M.say(" in {function}", function=frame.name)
    return f"{where}{name}  {text}" if text else f"{where}{name}"


def shown_path(filename: str) -> str:
    """Relative to the working directory when the file is under it, else as it is."""
    path = os.path.abspath(filename)
    here = os.getcwd() + os.sep
    return path[len(here):] if path.startswith(here) else filename


def _cell_name(filename: str, lineno: int) -> str | None:
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    named = shell.compile.format_code_name(filename) if shell is not None else None
    if not named:
        return None
    return M.say(M.CELL_PLACE, cell=named[1], line=lineno)


def traceback_frames(tb: types.TracebackType | None) -> Iterator[Frame]:
    """The frames of a traceback, outermost first."""
    while tb is not None:
        yield Frame(tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next


def stack_frames(frame: types.FrameType | None) -> Iterator[Frame]:
    """The frames of a live stack, innermost first (``sys._getframe()`` and its callers)."""
    while frame is not None:
        yield Frame(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back


def innermost_users(frames: Iterable[Frame]) -> Frame | None:
    """The last of the user's frames in ``frames`` (outermost first), or None."""
    found = None
    for frame in frames:
        if is_users(frame.filename):
            found = frame
    return found


def callers_frame(skip: int = 1) -> Frame | None:
    """The innermost user frame of the running stack, above the ``skip`` frames of the caller."""
    frame: Any = sys._getframe(skip + 1)
    for candidate in stack_frames(frame):
        if is_users(candidate.filename):
            return candidate
    return None


def callers_place(skip: int = 1) -> str | None:
    """``callers_frame`` as ``file:line  text``."""
    found = callers_frame(skip + 1)
    return None if found is None else frame_place(found)


def formatted_stack_frames(formatted: Iterable[str]) -> list[Frame]:
    """Frames from a formatted stack (autograd's ``grad_fn.metadata["traceback_"]``), outermost first."""
    frames = []
    for entry in formatted:
        match = _FORMATTED_FRAME.match(entry)
        if match:
            frames.append(Frame(match["file"], int(match["line"]), match["name"].strip()))
    return frames


def creation_frames(grad_fn: Any) -> list[Frame]:
    """The stack autograd recorded where ``grad_fn`` was made (anomaly mode), outermost first; [] when none."""
    metadata = getattr(grad_fn, "metadata", None)
    stack = metadata.get("traceback_") if isinstance(metadata, dict) else None
    return formatted_stack_frames(stack) if stack else []


def creation_note(grad_fn: Any, in_library: str | None = None) -> str | None:
    """Where autograd recorded ``grad_fn``'s creation (anomaly mode), in the user's frames; None
    when nothing was recorded. ``in_library``: the words for a tensor made inside a library call
    (``M.CREATED_IN_LIBRARY`` when not given)."""
    frames = creation_frames(grad_fn)
    if not frames:
        return None
    users = [frame for frame in frames if is_users(frame.filename)]
    if not users:
        return None
    places = function_place(users[-1])
    if len(users) > 1 and users[-2].name != "<module>":  # a script's `main()` line says nothing more
        places = M.say(M.CALLED_FROM, place=places, outer=function_place(users[-2]))
    made_in_library = not is_users(frames[-1].filename)
    library_words = M.CREATED_IN_LIBRARY if in_library is None else in_library
    return M.say(library_words if made_in_library else M.CREATED_AT, places=places)
