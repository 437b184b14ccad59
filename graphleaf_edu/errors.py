"""The errors this suite is about, as PyTorch words them, and how the package quotes an error.

The bottom layer: it imports only ``i18n``. Every module that matches one of PyTorch's messages,
or shows an error as ``"Type: first line"``, takes it from here. PyTorch's messages stay in
PyTorch's words in every language; ``gloss`` says what they mean in the user's language.

    >>> error_line(RuntimeError("first\\nsecond"))
    'RuntimeError: first'
"""
from __future__ import annotations

import re
import warnings

from graphleaf_edu.i18n import DEFAULT, N_, language, say

__all__ = [
    "COWARDLY",
    "COWARDLY_MESSAGE",
    "GRAPH_LEAVES",
    "GRAPH_LEAVES_GLOSS",
    "GRAPH_LEAVES_MESSAGE",
    "WORKER_ERROR",
    "cause_line",
    "error_line",
    "error_lines_in",
    "first_line",
    "gloss",
    "warning_line",
]

# What to match: the part of each message that has stayed the same across PyTorch releases.
GRAPH_LEAVES = "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol"
COWARDLY = "Cowardly refusing to serialize non-leaf tensor which requires_grad"
# A worker's error reaches the main process as "Caught X in DataLoader worker process N.", followed
# by the worker's traceback, whose last line names the real cause.
WORKER_ERROR = "in DataLoader worker process"

# The whole first line, as the verified torch (notebook.VERIFIED_TORCH) words it: what the lessons print.
GRAPH_LEAVES_MESSAGE = (
    f"{GRAPH_LEAVES} at the moment.  If you were attempting to deepcopy a module, this may be because "
    "of a torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
)
COWARDLY_MESSAGE = (
    f"{COWARDLY}, since autograd does not support crossing process boundaries.  If you just want to "
    "transfer the data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
)

# A piece of each PyTorch message the package quotes, and what it means, for ``gloss``. The English
# is for the translator: English users read PyTorch's own words and get no gloss.
# The one gloss of the graph-leaves message: a faithful translation of PyTorch's words, which every
# Chinese page that glosses the message quotes as the catalog words it (tests/test_chinese_words.py).
GRAPH_LEAVES_GLOSS = N_("Gloss of PyTorch's graph-leaves error, word for word: at the moment only tensors created "
                        "explicitly by the user (the graph's leaves) support the deepcopy protocol.")
_GLOSSES = (
    (GRAPH_LEAVES, GRAPH_LEAVES_GLOSS),
    (COWARDLY, N_("Gloss of torch.multiprocessing's refusal: a non-leaf tensor that requires grad is not sent to "
                  "another process, as autograd does not cross processes; to send the data, detach() it first.")),
    (WORKER_ERROR, N_("Gloss of a DataLoader worker's error: the error happened in a worker process; the worker's "
                      "own error, quoted after it, is the cause.")),
    ("functions with out=... arguments don't support automatic differentiation",
     N_("Gloss of stack()'s out= error: with gradients on, functions called with out= (here the stack() that "
        "makes a batch) don't support automatic differentiation, and one of the arguments (the samples) requires grad.")),
    ("DataLoader timed out", N_("Gloss of the DataLoader timeout: no batch came back from the workers in time (a "
                                "worker that failed sends nothing back).")),
    ("Serialization of parametrized modules is only supported through state_dict()",
     N_("Gloss of the parametrized-module error: a parametrized module can be saved only through its state_dict().")),
    ("Trying to backward through the graph a second time",
     N_("Gloss of the second-backward error: backward ran through this graph a second time, but the first run "
        "already freed what it had saved.")),
    ("cannot pin", N_("Gloss of pin_memory's error: only dense tensors on the CPU can be pinned.")),
)

# A traceback names an exception class outside builtins by its module too: "torch.AcceleratorError: ...".
_ERROR_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*\w+(?:Error|Exception): .+$", re.MULTILINE)


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


def gloss(text: str) -> str:
    """What each PyTorch message quoted in ``text`` means, in one line in the user's language; ``""``
    in English, and when ``text`` quotes none of them. Said after the message, which stays as it is."""
    if language() == DEFAULT:
        return ""
    return " ".join(say(meaning) for message, meaning in _GLOSSES if message in text)
