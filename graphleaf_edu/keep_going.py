"""``python -m graphleaf_edu --keep-going SCRIPT``: every cause in one run.

Each deepcopy or torch.multiprocessing send that would fail with the graph-leaves or "Cowardly
refusing" error is recorded (path, cause, fix, the user's line that copied or sent it, the line that
created the tensor: a keep-going run records origins), then done with the culprit detached, so the
script goes on. Hooked where every copy and send passes: ``torch.Tensor.__deepcopy__`` (wrapping
``copy.deepcopy`` would miss modules that bound ``from copy import deepcopy``, as
``torch.optim.swa_utils`` does) and ``ForkingPickler``'s reducer of each tensor class (queues, spawned
processes' arguments, spawn/forkserver DataLoader datasets). A ``fork`` DataLoader's dataset is
checked when its iterator starts, before any worker reads it, and its culprits are detached in it for
the run (as if it were fixed), so its workers' collate goes on. A failure inside a ``try`` of the
script that catches it is raised as without ``--keep-going`` and listed as handled by the script.
Each cause also gets the user's line that stored it and the change to it (``graphleaf_edu.storing``);
``graphleaf_edu.keep_going_report`` says each cause once, repeats grouped (``root.losses[0..19]``).
"""
from __future__ import annotations

import contextlib
import copy
import dis
import functools
import multiprocessing
import sys
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.multiprocessing.reductions import reduce_tensor as _reduce_tensor

from graphleaf_edu import messages as M
from graphleaf_edu import on_error, places, storing
from graphleaf_edu.diagnose import scan
from graphleaf_edu.findings import Finding
from graphleaf_edu.i18n import N_
from graphleaf_edu.keep_going_report import Failure

_CATCHING = {"RuntimeError", "Exception", "BaseException"}
reduce_tensor: Callable[[torch.Tensor], Any] = _reduce_tensor  # torch's reducer of tensors for ForkingPickler


@dataclass
class KeepGoing:
    """The failures one run met, and the hooks that record them while active."""

    failures: dict[tuple[Any, ...], Failure] = field(default_factory=dict)
    _scans: dict[tuple[int, str], tuple[Any, list[Finding]]] = field(default_factory=dict)
    _checked_datasets: set[int] = field(default_factory=set)
    _lock: threading.RLock = field(default_factory=threading.RLock)  # a Queue's feeder thread records too
    _recording: threading.local = field(default_factory=threading.local)  # the walk's own probe copies
    fork_detached: bool = False  # a fork loader's dataset had its culprits detached for this run

    # --- recording ---------------------------------------------------------------------------------
    def record(self, operation: str, tensor: torch.Tensor, candidates: list[tuple[Any, str]], site: Site,
               sending: bool, handled: bool) -> None:
        with self._lock:
            self._recording.active = True
            try:
                self._record(operation, tensor, candidates, site, sending, handled)
            finally:
                self._recording.active = False

    def recording(self) -> bool:
        """In this thread, the hooks are being run by the recording itself (the walk probes a copy)."""
        return bool(getattr(self._recording, "active", False))

    def _record(self, operation: str, tensor: torch.Tensor, candidates: list[tuple[Any, str]], site: Site,
                sending: bool, handled: bool) -> None:
        root, how, finding = self._finding_of(tensor, candidates, sending)
        self._add(Failure(operation, site.place, type(root).__name__, M.say(how),
                          on_error.fitted_finding(finding, sending, root), self._created(tensor),
                          _store(root, finding, site.frame), site.library, handled))

    def _add(self, failure: Failure) -> None:
        key = (failure.operation, failure.place, failure.finding.where, failure.finding.kind, failure.handled)
        if key in self.failures:
            self.failures[key].times += 1
        else:
            self.failures[key] = failure

    @staticmethod
    def _created(tensor: torch.Tensor) -> str | None:
        in_library = N_("created at {places}, inside the library call made there")  # what stored it is named apart
        return places.creation_note(tensor.grad_fn, in_library=in_library) or M.say(M.CREATED_NOT_RECORDED)

    def _finding_of(self, tensor: torch.Tensor, candidates: list[tuple[Any, str]],
                    sending: bool) -> tuple[Any, str, Finding]:
        """The first candidate root (outermost first) whose walk reaches ``tensor``, and its finding."""
        for root, how in candidates:
            for fresh in (False, True):  # a cached walk, then a new one (the root may have grown)
                for finding in self._findings(root, sending, fresh):
                    if finding.tensor is tensor:
                        return root, how, finding
        findings = self._findings(tensor, sending, fresh=True)  # the tensor itself: a root tensor
        return tensor, M.HOW_THE_FAILING_LINE, findings[0]

    def _findings(self, root: Any, sending: bool, fresh: bool) -> list[Finding]:
        key = (id(root), "multiprocessing" if sending else "deepcopy")
        cached = self._scans.get(key)
        if cached is None or cached[0] is not root or fresh:
            self._scans.clear()  # one root at a time: a copy's failures share one walk
            self._scans[key] = (root, list(scan(root, key[1]).findings))
        return self._scans[key][1]

    def check_dataset(self, loader: Any) -> None:
        """A ``fork`` loader's dataset, read by the workers as it is: named before a worker reads it,
        then its culprits detached in it for this run (as if it were fixed)."""
        dataset = loader.dataset
        if id(dataset) in self._checked_datasets:
            return
        self._checked_datasets.add(id(dataset))
        frame = places.callers_frame(skip=2)
        site = Site(frame, None if frame is None else places.frame_place(frame))
        for finding in scan(dataset).findings:
            self._add(Failure(M.CHECKED_AT, site.place, type(dataset).__name__, M.say(M.HOW_FORK_DATASET), finding,
                              self._created(finding.tensor), _store(dataset, finding, frame)))
            self.fork_detached |= storing.detach_in_place(dataset, finding.path)

    # --- the hooks ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def hooks(self) -> Iterator[KeepGoing]:
        """Record and go on while active: the deepcopy, send and DataLoader hooks, origins on."""
        from multiprocessing.reduction import ForkingPickler

        from torch.utils.data import DataLoader

        deepcopy = torch.Tensor.__deepcopy__
        get_iterator = DataLoader._get_iterator
        sent_classes: list[type] = [torch.Tensor, torch.nn.Parameter, *torch._tensor_classes]
        reducers = {cls: ForkingPickler._extra_reducers.get(cls) for cls in sent_classes}  # type: ignore[attr-defined]
        torch.Tensor.__deepcopy__ = self._deepcopy_hook(deepcopy)  # type: ignore[method-assign]
        DataLoader._get_iterator = self._iterator_hook(get_iterator)  # type: ignore[method-assign]
        sender = self._send_hook()
        for cls in sent_classes:
            ForkingPickler.register(cls, sender)
        try:
            with on_error.queue_notes(), on_error.origins_recorded(True):
                yield self
        finally:
            torch.Tensor.__deepcopy__ = deepcopy  # type: ignore[method-assign]
            DataLoader._get_iterator = get_iterator  # type: ignore[method-assign]
            for cls, reducer in reducers.items():
                if reducer is None:
                    ForkingPickler._extra_reducers.pop(cls, None)  # type: ignore[attr-defined]
                else:
                    ForkingPickler.register(cls, reducer)

    def _deepcopy_hook(self, deepcopy: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(deepcopy)
        def __deepcopy__(tensor: torch.Tensor, memo: dict[int, Any]) -> Any:
            if tensor.is_leaf or self.recording():
                return deepcopy(tensor, memo)
            frames = _live_frames()
            handled = _script_catches(frames)
            copies = [index for index, frame in enumerate(frames)
                      if frame.f_code is copy.deepcopy.__code__ and "x" in frame.f_locals]
            candidates = [(frames[index].f_locals["x"], _how_copied(frames, index)) for index in copies]
            site = _site(frames, _copier_library(frames, copies[0]) if copies else None)
            self.record(M.COPIED_AT, tensor, candidates, site, sending=False, handled=handled)
            if handled:
                return deepcopy(tensor, memo)  # raises the graph-leaves error for the script to catch
            detached = tensor.detach()
            copied = deepcopy(detached, memo)
            memo[id(tensor)] = copied
            memo.setdefault(id(memo), []).append(detached)  # copy's keep-alive list: no later detach() gets its id
            return copied

        return __deepcopy__

    def _send_hook(self) -> Callable[[torch.Tensor], Any]:
        @functools.wraps(reduce_tensor)
        def reduce_detached(tensor: torch.Tensor) -> Any:
            if not (tensor.requires_grad and not tensor.is_leaf) or self.recording():
                return reduce_tensor(tensor)
            frames = _live_frames()
            handled = _script_catches(frames)
            sent = on_error.copied_object_in(frames, sending=True)
            candidates = [] if sent is None else [(sent.obj, sent.how)]
            site = _site(frames, None)
            if site.frame is None and sent is not None:
                put = on_error.put_frame(sent.obj)  # a Queue's feeder thread: the line that put it
                site = Site(put, None if put is None else places.frame_place(put))
            self.record(M.SENT_AT, tensor, candidates, site, sending=True, handled=handled)
            return reduce_tensor(tensor if handled else tensor.detach())

        return reduce_detached

    def _iterator_hook(self, get_iterator: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(get_iterator)
        def _get_iterator(loader: Any) -> Any:
            if loader.num_workers > 0 and _start_method(loader) == "fork":
                self.check_dataset(loader)
            return get_iterator(loader)

        return _get_iterator


def _start_method(loader: Any) -> str:
    context = loader.multiprocessing_context
    return str(context.get_start_method() if context is not None else multiprocessing.get_start_method())


def _live_frames() -> list[types.FrameType]:
    """The running stack outside this module, outermost first."""
    frames = []
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename != __file__:
            frames.append(frame)
        frame = frame.f_back
    return frames[::-1]


@dataclass(frozen=True)
class Site:
    """The user's line where a copy or send was made, and the library module that made it, if one did."""

    frame: places.Frame | None
    place: str | None
    library: str | None = None


def _site(frames: list[types.FrameType], library: str | None) -> Site:
    found = places.innermost_users(places.Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name) for f in frames)
    return Site(found, None if found is None else places.frame_place(found), library)


def _copier_library(frames: list[types.FrameType], outermost_copy: int) -> str | None:
    """The module that called the outermost ``copy.deepcopy``, where it is not the user's code."""
    caller = frames[outermost_copy - 1] if outermost_copy > 0 else None
    if caller is None or places.is_users(caller.f_code.co_filename):
        return None
    return str(caller.f_globals.get("__name__", "?"))


def _store(root: Any, finding: Finding, site: places.Frame | None) -> storing.Store | None:
    """The line that stored the culprit: searched in the holder's code, then where it was created or copied."""
    created = [frame for frame in places.creation_frames(finding.tensor.grad_fn) if places.is_users(frame.filename)]
    return storing.storing_line(root, finding.path, [*created[::-1], *([site] if site else [])], site)


def _how_copied(frames: list[types.FrameType], index: int) -> str:
    caller = frames[index - 1] if index > 0 else None
    return M.say(M.HOW_DEEPCOPY, called_in=on_error.where_of(caller) if caller else M.HOW_THE_FAILING_LINE)


def _script_catches(frames: list[types.FrameType]) -> bool:
    """A frame of the user's code is inside a ``try`` whose ``except`` takes a RuntimeError."""
    return any(places.is_users(frame.f_code.co_filename) and _catches_runtime_error(frame.f_code, frame.f_lasti)
               for frame in frames)


def _catches_runtime_error(code: types.CodeType, offset: int) -> bool:
    """Read from the code's exception table and its handler's bytecode: ``except RuntimeError``,
    ``Exception``, ``BaseException`` (alone or in a tuple) or a bare ``except:``."""
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:
        return False
    for entry in parse(code):
        if entry.start <= offset < entry.end:
            return _handler_catches(_instructions(code), entry.target)
    return False


@functools.lru_cache(maxsize=256)
def _instructions(code: types.CodeType) -> tuple[dis.Instruction, ...]:
    return tuple(dis.get_instructions(code))


def _handler_catches(instructions: tuple[dis.Instruction, ...], target: int) -> bool:
    names: list[str] = []
    following = [i for i in instructions if i.offset >= target]
    for previous, instruction in zip([None, *following], following):
        if instruction.opname in ("WITH_EXCEPT_START", "RERAISE"):
            return False  # a with block's exit, or the end of the handlers
        if previous is not None and previous.opname == "PUSH_EXC_INFO" and instruction.opname == "POP_TOP":
            return True  # a bare except:
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR"):
            names.append(str(instruction.argval))
        elif instruction.opname == "CHECK_EXC_MATCH":
            if _CATCHING & set(names):
                return True
            names.clear()
    return False
