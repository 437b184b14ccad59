"""The errors this suite is about, as PyTorch words them, and how the package quotes an error.

The bottom layer: it imports nothing from the package. Every module that matches one of
PyTorch's messages, or shows an error as ``"Type: first line"``, takes it from here.

    >>> error_line(RuntimeError("first\\nsecond"))
    'RuntimeError: first'
"""
from __future__ import annotations

import re
import warnings

__all__ = [
    "COWARDLY",
    "COWARDLY_MESSAGE",
    "GRAPH_LEAVES",
    "GRAPH_LEAVES_MESSAGE",
    "WORKER_ERROR",
    "cause_line",
    "error_line",
    "error_lines_in",
    "first_line",
    "warning_line",
]

# What to match: the part of each message that has stayed the same across PyTorch releases.
GRAPH_LEAVES = "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol"
COWARDLY = "Cowardly refusing to serialize non-leaf tensor which requires_grad"
# A worker's error reaches the main process as "Caught X in DataLoader worker process N.", followed
# by the worker's traceback, whose last line names the real cause.
WORKER_ERROR = "in DataLoader worker process"

# The whole first line, as torch 2.13 words it (what the lessons expect to print).
GRAPH_LEAVES_MESSAGE = (
    f"{GRAPH_LEAVES} at the moment.  If you were attempting to deepcopy a module, this may be because "
    "of a torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
)
COWARDLY_MESSAGE = (
    f"{COWARDLY}, since autograd does not support crossing process boundaries.  If you just want to "
    "transfer the data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
)

_ERROR_LINE = re.compile(r"^\w+(?:Error|Exception): .+$", re.MULTILINE)


def first_line(text: str) -> str:
    """The first line of ``text`` without surrounding blank space ("" for blank text)."""
    text = text.strip()
    return text.splitlines()[0] if text else ""


def error_line(error: BaseException) -> str:
    """``"Type: first line of the message"``: short, and free of tracebacks."""
    return f"{type(error).__name__}: {first_line(str(error))}"


def warning_line(warning: warnings.WarningMessage) -> str:
    """A recorded warning (``warnings.catch_warnings(record=True)``) as ``"Category: first line"``."""
    return f"{warning.category.__name__}: {first_line(str(warning.message))}"


def error_lines_in(text: str) -> list[str]:
    """Every ``"SomethingError: message"`` line in ``text`` (a traceback, a worker's stderr), in order."""
    return [match.group(0) for match in _ERROR_LINE.finditer(text)]


def cause_line(error: BaseException) -> str:
    """The line naming the root cause: for a DataLoader worker's error the worker's own error line,
    otherwise ``error_line(error)``."""
    message = str(error)
    lines = error_lines_in(message) if WORKER_ERROR in message else []
    return lines[-1] if lines else error_line(error)
