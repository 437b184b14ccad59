"""Diagnosis at the moment of the error: notes on the graph-leaves error naming every culprit.

When ``copy.deepcopy`` raises the graph-leaves error (directly, or inside a library that copies:
``torch.optim.swa_utils.AveragedModel``, an EMA helper, a DataLoader worker), or
torch.multiprocessing refuses a non-leaf tensor, ``add_notes(error)`` finds the object that was
being copied or sent, walks it with ``find_nonleaf`` and adds one note per culprit
(``BaseException.add_note``), so the traceback itself ends with the path, cause and fix.

The object comes from the traceback's frames: the outermost ``copy.deepcopy`` frame's ``x``; for
a DataLoader (whose worker fails in another process, or whose dataset is refused while being
sent to a spawned worker) the loader's dataset, from the iterator's frame; otherwise the object
handed to torch.multiprocessing's pickler. Three ways to switch it on, none of which costs
anything until an error happens: ``%load_ext graphleaf_edu`` in IPython/Jupyter,
``with graphleaf_edu.explain_errors(): ...``, and ``python -m graphleaf_edu SCRIPT [ARGS]``.
"""
from __future__ import annotations

import contextlib
import copy
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.errors import COWARDLY, GRAPH_LEAVES
from graphleaf_edu.findings import error_kind

NOTE_PREFIX = "graphleaf_edu: "
_LISTED = 20


@dataclass(frozen=True)
class CopiedObject:
    """The object an error happened on, and how it was found."""

    obj: Any
    how: str  # e.g. "copy.deepcopy(x) called in torch.optim.swa_utils, AveragedModel.__init__"


def is_graph_error(error: BaseException) -> bool:
    """The graph-leaves error, or torch.multiprocessing's refusal of a non-leaf tensor (also as
    re-raised from a DataLoader worker)."""
    text = str(error)
    return GRAPH_LEAVES in text or COWARDLY in text


def add_notes(error: BaseException) -> bool:
    """Add the diagnosis to ``error`` as notes (once); False when it is not a graph error."""
    if not is_graph_error(error) or any(note.startswith(NOTE_PREFIX) for note in getattr(error, "__notes__", ())):
        return False
    for note in diagnosis_notes(error):
        error.add_note(note)
    return True


def diagnosis_notes(error: BaseException) -> list[str]:
    kind = error_kind(error)
    copied = find_copied_object(error.__traceback__)
    verb = "sending" if kind == "multiprocessing" else "copying"
    if copied is None:
        return [NOTE_PREFIX + "could not find the object being " + verb + " in the traceback; "
                "call graphleaf_edu.explain(obj) on it to name its non-leaf tensors"]
    findings = find_nonleaf(copied.obj)
    notes = [f"{NOTE_PREFIX}{verb} root = a {type(copied.obj).__name__} ({copied.how})"]
    if not findings:
        notes.append(NOTE_PREFIX + "no non-leaf tensor is reachable from root by deepcopy's protocol")
    notes += [NOTE_PREFIX + line for line in findings.lines()[:_LISTED]]
    if len(findings.lines()) > _LISTED:
        notes.append(f"{NOTE_PREFIX}... and {len(findings.lines()) - _LISTED} more: graphleaf_edu.explain(root)")
    if findings:
        notes.append(NOTE_PREFIX + "graphleaf_edu.safe_deepcopy(root) copies root with these tensors detached")
    return notes


def find_copied_object(traceback: types.TracebackType | None) -> CopiedObject | None:
    """The DataLoader's dataset, else the outermost ``copy.deepcopy``'s ``x``, else the object
    torch.multiprocessing was pickling: read from the frames of ``traceback``."""
    frames = list(_frames(traceback))
    for frame in frames:
        dataset = _loader_dataset(frame.f_locals.get("self"))
        if dataset is not None:
            return CopiedObject(dataset, f"the DataLoader's dataset, found in {_where(frame)}")
    for caller, frame in zip([None, *frames], frames):
        if frame.f_code is copy.deepcopy.__code__ and "x" in frame.f_locals:
            called_in = _where(caller) if caller is not None else "the failing line"
            return CopiedObject(frame.f_locals["x"], f"copy.deepcopy(x) called in {called_in}")
    for frame in frames:
        if frame.f_code.co_name == "dumps" and frame.f_globals.get("__name__") == "multiprocessing.reduction":
            return CopiedObject(frame.f_locals.get("obj"), "the object torch.multiprocessing was pickling")
    return None


def _frames(traceback: types.TracebackType | None) -> Iterator[types.FrameType]:
    while traceback is not None:
        yield traceback.tb_frame
        traceback = traceback.tb_next


def _loader_dataset(obj: Any) -> Any:
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    if isinstance(obj, _BaseDataLoaderIter):
        return getattr(obj, "_dataset", None)
    if isinstance(obj, DataLoader):
        return obj.dataset
    return None


def _where(frame: types.FrameType) -> str:
    """Module and function, never a file path (notes end up in stored notebook outputs)."""
    module = frame.f_globals.get("__name__", "?")
    return f"{module}, {frame.f_code.co_qualname}"


@contextlib.contextmanager
def explain_errors() -> Iterator[None]:
    """``with explain_errors(): ...``: a graph error raised inside gets the diagnosis as notes.

    The exception itself propagates unchanged (same object, same traceback), notes added: the
    object being copied, each non-leaf tensor's path, cause and fix. Python 3.11+ prints notes
    under the traceback. ``python -m graphleaf_edu SCRIPT`` runs a script inside it, and
    ``%load_ext graphleaf_edu`` does the same for every IPython cell.

    Returns:
        A context manager.

    Raises:
        Whatever the block raises, unchanged but for the notes on a graph-leaves (or
        torch.multiprocessing "Cowardly refusing") error.

    Example:
        >>> import copy
        >>> model = torch.nn.Linear(2, 2)
        >>> model.cache = model(torch.ones(1, 2))
        >>> try:
        ...     with gl.explain_errors():
        ...         copy.deepcopy(model)
        ... except RuntimeError as error:
        ...     for note in error.__notes__:
        ...         print(note)
        graphleaf_edu: copying root = a Linear (copy.deepcopy(x) called in ...)
        graphleaf_edu: root.cache: cached activation in a module attribute (grad_fn=AddmmBackward0) | fix: ...
        graphleaf_edu: graphleaf_edu.safe_deepcopy(root) copies root with these tensors detached
    """
    try:
        yield
    except BaseException as error:
        add_notes(error)
        raise


# --- IPython -------------------------------------------------------------------------------------

def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext graphleaf_edu``: graph errors raised by a cell end with the diagnosis notes."""
    def show_with_notes(shell: Any, etype: type[BaseException], value: BaseException, tb: Any,
                        tb_offset: int | None = None) -> None:
        add_notes(value)
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)

    ipython.set_custom_exc((RuntimeError,), show_with_notes)


def unload_ipython_extension(ipython: Any) -> None:
    ipython.set_custom_exc((), None)
