"""Diagnosis at the moment of the error: notes on the graph-leaves error naming every culprit.

When ``copy.deepcopy`` raises the graph-leaves error (directly, or inside a library that copies:
``torch.optim.swa_utils.AveragedModel``, an EMA helper, a DataLoader worker), or
torch.multiprocessing refuses a non-leaf tensor, ``add_notes(error)`` finds the object that was
being copied or sent, walks it by the failing operation's own rules (deepcopy's protocol, or what
``ForkingPickler`` sends) and adds notes (``BaseException.add_note``): the user's own line where it
was copied or sent (``train.py:72  queue.put(logits)``; ``Cell In[n], line k`` in a notebook), then
each culprit's path, cause and fix, and where it was created when origins are on (autograd's
anomaly mode records each ``grad_fn``'s stack). An error that wraps or chains the graph error
(``raise ... from error``) gets the notes itself, as it is the one the user sees.

The object comes from the traceback's frames: for a DataLoader (whose worker fails in another
process, or whose dataset is refused while being sent to a spawned worker) the loader's dataset;
else the outermost ``copy.deepcopy`` frame's ``x`` in which the walk finds a culprit (an object with
its own ``__deepcopy__`` can hide it: the copy inside is walked then); else the object handed to
torch.multiprocessing's pickler (a queue's item, a spawned ``Process``). A ``multiprocessing.Queue``
pickles in a feeder thread, which prints the error and goes on: its notes name the line of ``put``.
Three ways to switch it on: ``%load_ext graphleaf_edu`` in IPython/Jupyter,
``with graphleaf_edu.explain_errors(): ...``, and ``python -m graphleaf_edu SCRIPT [ARGS]``.
"""
from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import multiprocessing.queues
import re
import sys
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from graphleaf_edu import messages as M
from graphleaf_edu import places
from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.errors import COWARDLY, GRAPH_LEAVES, error_line, first_line, gloss
from graphleaf_edu.findings import Finding, Findings, error_kind

NOTE_PREFIX = M.NOTE_PREFIX
_LISTED = 20
# Causes whose fix, for a tensor that is sent, is to detach it at the call that sends it.
_DETACH_AT_SEND = {"root-tensor", "container", "object-attribute", "logged-output"}


@dataclass(frozen=True)
class CopiedObject:
    """The object an error happened on, how it was found, and what the walk found in it."""

    obj: Any
    how: str  # e.g. "copy.deepcopy(x) called in torch.optim.swa_utils, AveragedModel.__init__"
    findings: Findings | None = None


def is_graph_error(error: BaseException) -> bool:
    """The graph-leaves error, or torch.multiprocessing's refusal of a non-leaf tensor (also as
    re-raised from a DataLoader worker)."""
    text = str(error)
    return GRAPH_LEAVES in text or COWARDLY in text


def graph_error_in(error: BaseException) -> BaseException | None:
    """``error`` itself, or the graph error it wraps (``__cause__``, ``__context__``), nearest first."""
    for candidate in chain_of(error):
        if is_graph_error(candidate):
            return candidate
    return None


def chain_of(error: BaseException) -> list[BaseException]:
    """``error`` and the exceptions it wraps, outermost first (each once)."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in found):
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def add_notes(error: BaseException) -> bool:
    """Add the diagnosis to ``error`` as notes (once); False when neither it nor an exception it
    wraps is a graph error."""
    graph_error = graph_error_in(error)
    if graph_error is None or _has_notes(error):
        return False
    try:
        notes = diagnosis_notes(graph_error, place=_users_place(error, graph_error))
    except Exception as failure:  # noqa: BLE001 - the user's own error must still be shown as it is
        notes = [NOTE_PREFIX + M.say("the diagnosis itself failed ({error}); call graphleaf_edu.explain(obj) on the "
                                     "object being copied", error=error_line(failure))]
    for note in notes:
        error.add_note(note)
    return True


def _has_notes(error: BaseException) -> bool:
    return any(note.startswith(NOTE_PREFIX) for note in getattr(error, "__notes__", ()))


def diagnosis_notes(error: BaseException, place: str | None = None, copied: CopiedObject | None = None,
                    also: tuple[str, ...] = ()) -> list[str]:
    """The notes for one graph error: where (``place``: the user's line), what was being copied or
    sent, each culprit's path, cause, fix and creation line, ``also`` (said), and last the hint."""
    sending = error_kind(error) == "multiprocessing"
    copied = copied or find_copied_object(error.__traceback__, sending)
    meaning = gloss(first_line(str(error)))  # what PyTorch's own words mean, in the user's language
    notes = [meaning] if meaning else []
    notes.append(M.say(M.SENT_AT if sending else M.COPIED_AT, place=place) if place else M.say(M.PLACE_UNKNOWN))
    if copied is None:
        return _prefixed([*notes, M.say(M.NOT_FOUND_SENT if sending else M.NOT_FOUND_COPIED), *also, *_origins_hint_note()])
    findings = copied.findings if copied.findings is not None else _walk(copied.obj, sending)
    root = M.SENDING_ROOT if sending else M.COPYING_ROOT
    notes.append(M.say(root, type_name=type(copied.obj).__name__, how=M.say(copied.how)))
    if sending:
        notes.append(M.say(M.SEND_RULES))
    if not findings:
        notes.append(M.say(M.NOTHING_REACHABLE_SEND if sending else M.NOTHING_REACHABLE_COPY))
    detach_at_send = sending and not _is_dataset(copied.obj)
    fitted = [_fitted(finding, detach_at_send) for finding in findings]
    groups = grouped(fitted)
    for group in groups[:_LISTED]:
        notes.append(group.line())
        created = _creation(group.first)
        if created:
            notes.append("  " + created)
    notes += [M.say("cannot look inside: {object}", object=o.line()) for o in findings.opaque]
    if len(groups) > _LISTED:
        notes.append(M.say(M.MORE_FINDINGS, count=len(groups) - _LISTED))
    if findings and not sending:
        notes.append(M.say(M.SAFE_COPY_HINT))
    if any("detach()" in finding.fix for finding in fitted):
        notes.append(M.say(M.CLONE_RULE))
    return _prefixed([*notes, *also, *_origins_hint_note()])


def _origins_hint_note() -> list[str]:
    """How to name each tensor's creating line: a hint, so after the diagnosis."""
    hint = M.ORIGINS_HINT_CODE if _origins_hint[-1] is None else _origins_hint[-1]
    return [] if torch.is_anomaly_enabled() or not hint else [M.say(hint)]


def _prefixed(notes: list[str]) -> list[str]:
    return [NOTE_PREFIX + note for note in notes]


def _walk(obj: Any, sending: bool) -> Findings:
    return find_nonleaf(obj, "multiprocessing" if sending else "deepcopy")


def _is_dataset(obj: Any) -> bool:
    from torch.utils.data import Dataset

    return isinstance(obj, Dataset)


def fitted_finding(finding: Finding, sending: bool, root: Any) -> Finding:
    """The finding with the fix that fits where it failed (a tensor sent but not a dataset's: detach it
    at the send)."""
    return _fitted(finding, sending and not _is_dataset(root))


def _fitted(finding: Finding, detach_at_send: bool) -> Finding:
    """The finding with the fix that fits the place: a tensor sent is detached at the send."""
    if detach_at_send and finding.kind in _DETACH_AT_SEND:
        return dataclasses.replace(finding, fix=M.say(M.SEND_FIX))
    return finding


@dataclass(frozen=True)
class FindingGroup:
    """Findings that differ only in one index (``root.losses[0..19]``): one cause, said once."""

    first: Finding
    where: str  # the first's expression, its index replaced by the range
    count: int

    def line(self) -> str:
        if self.count == 1:
            return self.first.line()
        return M.say(M.GROUPED_FINDING, where=self.where, count=self.count, cause=self.first.cause,
                     grad_fn=self.first.grad_fn, fix=self.first.fix)


_LAST_INDEX = re.compile(r"\[(\d+)\](?!.*\[\d+\])")


def grouped(findings: list[Finding]) -> list[FindingGroup]:
    """Consecutive findings whose paths differ only in their last integer index, and whose cause
    and fix are the same, as one group each (in order)."""
    groups: list[tuple[Finding, str, list[int]]] = []
    for finding in findings:
        match = _LAST_INDEX.search(finding.where)
        pattern = finding.where[:match.start()] + "[#]" + finding.where[match.end():] if match else None
        last = groups[-1] if groups else None
        if (match and last is not None and last[1] == pattern and last[0].kind == finding.kind
                and last[0].fix == finding.fix and last[0].grad_fn == finding.grad_fn):
            last[2].append(int(match.group(1)))
        else:
            groups.append((finding, pattern or finding.where, [int(match.group(1))] if match else []))
    return [FindingGroup(first, _ranged(pattern, indices) if len(indices) > 1 else first.where, max(1, len(indices)))
            for first, pattern, indices in groups]


def _ranged(pattern: str, indices: list[int]) -> str:
    contiguous = indices == list(range(indices[0], indices[0] + len(indices)))
    shown = f"{indices[0]}..{indices[-1]}" if contiguous else ", ".join(map(str, indices))
    return pattern.replace("[#]", f"[{shown}]")


def _creation(finding: Finding) -> str | None:
    if not torch.is_anomaly_enabled():
        return None
    return places.creation_note(finding.tensor.grad_fn) or M.say(M.CREATED_NOT_RECORDED)


def _users_place(error: BaseException, graph_error: BaseException) -> str | None:
    """The innermost user frame of the graph error's traceback; when a library caught and wrapped it
    (its traceback then starts inside the library), that of the exceptions wrapping it."""
    chain = chain_of(error)
    for candidate in reversed(chain[: chain.index(graph_error) + 1]):
        frame = places.innermost_users(places.traceback_frames(candidate.__traceback__))
        if frame is not None:
            return places.frame_place(frame)
    return None


def find_copied_object(traceback: types.TracebackType | None, sending: bool = False) -> CopiedObject | None:
    """The DataLoader's dataset, else the outermost ``copy.deepcopy``'s ``x`` that holds a culprit,
    else the object torch.multiprocessing was pickling: read from the frames of ``traceback``."""
    return copied_object_in(list(_frames(traceback)), sending)


def copied_object_in(frames: list[types.FrameType], sending: bool = False) -> CopiedObject | None:
    """``find_copied_object`` on frames (outermost first): a traceback's, or a live stack's."""
    for frame in frames:
        dataset = _loader_dataset(frame.f_locals.get("self"))
        if dataset is not None:
            return CopiedObject(dataset, M.say(M.HOW_DATASET, called_in=where_of(frame)))
    copied = None if sending else _copied_by_deepcopy(frames)
    return copied or _pickled(frames) or (_copied_by_deepcopy(frames) if sending else None)


def _copied_by_deepcopy(frames: list[types.FrameType]) -> CopiedObject | None:
    """The outermost ``copy.deepcopy(x)`` whose ``x`` the walk finds a culprit in; when an object's own
    ``__deepcopy__`` hides the culprit from the outer walks, the innermost copy of it that fails."""
    first: CopiedObject | None = None
    walked: set[int] = set()
    for caller, frame in zip([None, *frames], frames):
        if frame.f_code is not copy.deepcopy.__code__ or "x" not in frame.f_locals:
            continue
        x = frame.f_locals["x"]
        if id(x) in walked:
            continue
        walked.add(id(x))
        called_in = where_of(caller) if caller is not None else M.HOW_THE_FAILING_LINE
        how = M.say(M.HOW_DEEPCOPY if first is None else M.HOW_INNER_DEEPCOPY, called_in=called_in)
        found = CopiedObject(x, how, _walk(x, sending=False))
        if found.findings:
            return found
        first = first or found
    return first


def _pickled(frames: list[types.FrameType]) -> CopiedObject | None:
    from multiprocessing.process import BaseProcess

    for frame in frames:
        if frame.f_code.co_name in ("dumps", "dump") and frame.f_globals.get("__name__") == "multiprocessing.reduction":
            obj = frame.f_locals.get("obj")
            return CopiedObject(obj, M.HOW_PROCESS if isinstance(obj, BaseProcess) else M.HOW_PICKLED)
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


def where_of(frame: types.FrameType) -> str:
    """Module and function, never a file path (notes end up in stored notebook outputs)."""
    module = frame.f_globals.get("__name__", "?")
    return f"{module}, {frame.f_code.co_qualname}"


# --- multiprocessing.Queue: pickled later, in a feeder thread ------------------------------------

# id of each object put, and the user's frame that put it (formatted only if its send fails)
_PUT_PLACES: collections.deque[tuple[int, places.Frame | None]] = collections.deque(maxlen=4096)
_ORIGINAL_PUT = multiprocessing.queues.Queue.put
_ORIGINAL_FEEDER_ERROR = multiprocessing.queues.Queue.__dict__["_on_queue_feeder_error"]
# how to turn origins on, where the notes are made: the last entry (None: M.ORIGINS_HINT_CODE, "": no hint)
_origins_hint: list[str | None] = [None]
_installed = [0]


def _recording_put(queue: Any, obj: Any, block: bool = True, timeout: float | None = None) -> None:
    _PUT_PLACES.append((id(obj), places.callers_frame()))
    _ORIGINAL_PUT(queue, obj, block, timeout)


def put_frame(obj: Any) -> places.Frame | None:
    """The user's frame that put ``obj`` (alive now, so the newest entry with its id is its own)."""
    return next((frame for identity, frame in reversed(_PUT_PLACES) if identity == id(obj)), None)


def _feeder_error_with_notes(error: Exception, obj: Any) -> None:
    if is_graph_error(error) and not _has_notes(error):
        copied = CopiedObject(obj, M.HOW_QUEUE)
        put = put_frame(obj)
        place = None if put is None else places.frame_place(put)
        for note in diagnosis_notes(error, place=place, copied=copied, also=(M.say(M.FEEDER_THREAD),)):
            error.add_note(note)
    traceback.print_exception(error, file=sys.stderr)


@contextlib.contextmanager
def queue_notes() -> Iterator[None]:
    """While active, a ``multiprocessing.Queue`` records the line of each ``put``, and a graph error in
    its feeder thread is printed with the notes (nested uses install the hooks once)."""
    install()
    try:
        yield
    finally:
        uninstall()


def install() -> None:
    _installed[0] += 1
    if _installed[0] == 1:
        multiprocessing.queues.Queue.put = _recording_put  # type: ignore[method-assign, assignment]
        multiprocessing.queues.Queue._on_queue_feeder_error = staticmethod(_feeder_error_with_notes)  # type: ignore[attr-defined]


def uninstall() -> None:
    _installed[0] -= 1
    if _installed[0] == 0:
        multiprocessing.queues.Queue.put = _ORIGINAL_PUT  # type: ignore[method-assign]
        multiprocessing.queues.Queue._on_queue_feeder_error = _ORIGINAL_FEEDER_ERROR  # type: ignore[attr-defined]


@contextlib.contextmanager
def origins_recorded(on: bool) -> Iterator[None]:
    """Autograd's anomaly mode (without its NaN checks) while active, when ``on``: each new
    ``grad_fn`` then records the stack that created it."""
    if not on:
        yield
        return
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        yield


@contextlib.contextmanager
def explaining(origins: bool, origins_hint: str) -> Iterator[None]:
    """``explain_errors``, with the words that say how origins are turned on where it runs."""
    _origins_hint.append(origins_hint)
    try:
        with queue_notes(), origins_recorded(origins):
            try:
                yield
            except BaseException as error:
                add_notes(error)
                raise
    finally:
        _origins_hint.pop()


@contextlib.contextmanager
def explain_errors(origins: bool = False) -> Iterator[None]:
    """``with explain_errors(): ...``: a graph error raised inside gets the diagnosis as notes.

    The exception itself propagates unchanged (same object, same traceback), notes added: the
    line of your code where the object was copied or sent, the object, each non-leaf tensor's
    path, cause and fix. An exception that wraps the graph error (``raise ... from error``) gets
    them. A ``multiprocessing.Queue``'s feeder thread prints its error with the notes, naming the
    line of ``put``. Python 3.11+ prints notes under the traceback. ``python -m graphleaf_edu
    SCRIPT`` runs a script inside it, and ``%load_ext graphleaf_edu`` does the same for every
    IPython cell.

    Args:
        origins: record where each tensor is created (autograd's anomaly mode, without its NaN
            checks), so that the notes name the user's line that created each culprit. It slows a
            compute-bound loop down severalfold (``make bench``), so it is off unless asked.

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
        graphleaf_edu: copied at <doctest ...>:3  copy.deepcopy(model)
        graphleaf_edu: copying root = a Linear (copy.deepcopy(x) called in ...)
        graphleaf_edu: root.cache: cached activation in a module attribute (grad_fn=AddmmBackward0) | fix: ...
        graphleaf_edu: graphleaf_edu.safe_deepcopy(root) copies root with these tensors detached
        graphleaf_edu: `t.detach()` shares t's memory ...
        graphleaf_edu: to name the line that created each tensor, turn origins on ...
    """
    with explaining(origins, M.ORIGINS_HINT_CODE):
        yield


# --- IPython -------------------------------------------------------------------------------------

def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext graphleaf_edu``: graph errors raised by a cell (or wrapped by the error it raises)
    end with the diagnosis notes; a Queue's feeder thread names the line of ``put``."""
    def show_with_notes(shell: Any, etype: type[BaseException], value: BaseException, tb: Any,
                        tb_offset: int | None = None) -> None:
        add_notes(value)
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)

    if not getattr(ipython, "_graphleaf_queue_notes", False):
        install()
        ipython._graphleaf_queue_notes = True
    ipython.set_custom_exc((Exception,), show_with_notes)


def unload_ipython_extension(ipython: Any) -> None:
    ipython.set_custom_exc((), None)
    if getattr(ipython, "_graphleaf_queue_notes", False):
        uninstall()
        ipython._graphleaf_queue_notes = False
