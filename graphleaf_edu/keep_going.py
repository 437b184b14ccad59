"""``python -m graphleaf_edu --keep-going SCRIPT``: every cause in one run.

Each deepcopy or torch.multiprocessing send that would fail with the graph-leaves or "Cowardly
refusing" error is recorded (path, cause, fix, the user's line that copied or sent it, the line that
created the tensor: a keep-going run records origins), then done with the culprit detached, so the
script goes on. Hooked where every copy and send passes: ``torch.Tensor.__deepcopy__`` (wrapping
``copy.deepcopy`` would miss modules that bound ``from copy import deepcopy``, as
``torch.optim.swa_utils`` does) and ``ForkingPickler``'s reducer of each tensor class (queues, spawned
processes' arguments, spawn/forkserver DataLoader datasets). A ``fork`` DataLoader's dataset is
checked when its iterator starts, before any worker reads it. A failure inside a ``try`` of the
script that catches it is raised as without ``--keep-going`` and listed as handled by the script.
``summary()`` says each cause once, repeats grouped (``root.losses[0..19]``).
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
from graphleaf_edu import on_error, places
from graphleaf_edu.diagnose import scan
from graphleaf_edu.errors import COWARDLY, GRAPH_LEAVES, WORKER_ERROR, error_line
from graphleaf_edu.findings import Finding

_CATCHING = {"RuntimeError", "Exception", "BaseException"}
reduce_tensor: Callable[[torch.Tensor], Any] = _reduce_tensor  # torch's reducer of tensors for ForkingPickler
_STACK_OUT = "stack(): functions with out=... arguments don't support automatic differentiation"


@dataclass
class Failure:
    """One cause, as the summary says it: what, where it was copied or sent, and its fix."""

    operation: str  # M.COPIED_AT, M.SENT_AT or M.CHECKED_AT
    place: str | None
    root: str  # "a Attention (copy.deepcopy(x) called in ...)"
    finding: Finding
    created: str | None
    handled: bool = False
    times: int = 1


@dataclass
class KeepGoing:
    """The failures one run met, and the hooks that record them while active."""

    failures: dict[tuple[Any, ...], Failure] = field(default_factory=dict)
    _scans: dict[tuple[int, str], tuple[Any, list[Finding]]] = field(default_factory=dict)
    _checked_datasets: set[int] = field(default_factory=set)
    _lock: threading.RLock = field(default_factory=threading.RLock)  # a Queue's feeder thread records too
    _recording: threading.local = field(default_factory=threading.local)  # the walk's own probe copies

    # --- recording ---------------------------------------------------------------------------------
    def record(self, operation: str, tensor: torch.Tensor, candidates: list[tuple[Any, str]], place: str | None,
               sending: bool, handled: bool) -> None:
        with self._lock:
            self._recording.active = True
            try:
                self._record(operation, tensor, candidates, place, sending, handled)
            finally:
                self._recording.active = False

    def recording(self) -> bool:
        """In this thread, the hooks are being run by the recording itself (the walk probes a copy)."""
        return bool(getattr(self._recording, "active", False))

    def _record(self, operation: str, tensor: torch.Tensor, candidates: list[tuple[Any, str]], place: str | None,
                sending: bool, handled: bool) -> None:
        root, how, finding = self._finding_of(tensor, candidates, sending)
        self._add(Failure(operation, place, M.say(M.KG_ROOT, type_name=type(root).__name__, how=M.say(how)),
                          on_error.fitted_finding(finding, sending, root), self._created(tensor), handled))

    def _add(self, failure: Failure) -> None:
        key = (failure.operation, failure.place, failure.finding.where, failure.finding.kind, failure.handled)
        if key in self.failures:
            self.failures[key].times += 1
        else:
            self.failures[key] = failure

    @staticmethod
    def _created(tensor: torch.Tensor) -> str | None:
        return places.creation_note(tensor.grad_fn) or M.say(M.CREATED_NOT_RECORDED)

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
        """A ``fork`` loader's dataset, read by the workers as it is: named before a worker fails."""
        dataset = loader.dataset
        if id(dataset) in self._checked_datasets:
            return
        self._checked_datasets.add(id(dataset))
        place = places.callers_place(skip=2)
        for finding in scan(dataset).findings:
            self._add(Failure(M.CHECKED_AT, place, M.say(M.KG_ROOT, type_name=type(dataset).__name__,
                                                          how=M.say(M.HOW_FORK_DATASET)),
                              finding, self._created(finding.tensor)))

    # --- the summary -------------------------------------------------------------------------------
    def summary(self, stopped_by: BaseException | None = None) -> str:
        if not self.failures:
            lines = [M.say(M.KG_NONE)]
        else:
            lines = [M.say(M.KG_HEADER, count=len(self._grouped()))]
            for number, (failure, group) in enumerate(self._grouped(), 1):
                lines += self._entry(number, failure, group)
            lines += ["", M.say(M.CLONE_RULE)]
        if stopped_by is not None:
            lines += ["", M.say(M.KG_STOPPED, error=error_line(stopped_by)), *self._limits_met(stopped_by)]
        elif any(failure.operation == M.CHECKED_AT for failure in self.failures.values()):
            lines += ["", M.say(M.KG_LIMIT_FORK_WORKERS)]
        return "\n".join(M.KG_PREFIX + line if line else "" for line in lines)

    def _grouped(self) -> list[tuple[Failure, on_error.FindingGroup]]:
        """Failures at the same line, of the same kind, grouped by their index (``root.losses[0..19]``)."""
        by_place: dict[tuple[Any, ...], list[Failure]] = {}
        for failure in self.failures.values():
            key = (failure.operation, failure.place, failure.root, failure.handled)
            by_place.setdefault(key, []).append(failure)
        result = []
        for same_place in by_place.values():
            first_of = {id(f.finding): f for f in same_place}
            for group in on_error.grouped([f.finding for f in same_place]):
                result.append((first_of[id(group.first)], group))
        return result

    @staticmethod
    def _entry(number: int, failure: Failure, group: on_error.FindingGroup) -> list[str]:
        finding = group.first
        times = M.say(M.KG_TIMES, times=failure.times) if failure.times > 1 else ""
        place = M.say(failure.operation, place=(failure.place or M.say(M.KG_NO_USER_LINE)) + times)
        tensors = M.say(" ({count} tensors)", count=group.count) if group.count > 1 else ""
        lines = [f"{number}. {group.where}{tensors}", f"   {place}", M.say("   root: {root}", root=failure.root),
                 M.say("   cause: {cause} (grad_fn={grad_fn})", cause=finding.cause, grad_fn=finding.grad_fn)]
        if failure.created:
            lines.append(f"   {failure.created}")
        lines.append(M.say("   fix: {fix}", fix=finding.fix))
        if failure.handled:
            lines.append("   " + M.say(M.KG_HANDLED))
        return lines

    @staticmethod
    def _limits_met(error: BaseException) -> list[str]:
        text = "\n".join(str(e) for e in on_error.chain_of(error))
        if WORKER_ERROR in text and _STACK_OUT in text:
            return [M.say(M.KG_LIMIT_WORKER_STACK)]
        if GRAPH_LEAVES in text or COWARDLY in text:
            return [M.say(M.KG_LIMIT_UNREACHED)]
        return []

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
            candidates = [(frame.f_locals["x"], _how_copied(frames, index)) for index, frame in enumerate(frames)
                          if frame.f_code is copy.deepcopy.__code__ and "x" in frame.f_locals]
            self.record(M.COPIED_AT, tensor, candidates, _users_place(frames), sending=False, handled=handled)
            if handled:
                return deepcopy(tensor, memo)  # raises the graph-leaves error for the script to catch
            copied = deepcopy(tensor.detach(), memo)
            memo[id(tensor)] = copied
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
            place = _users_place(frames) or (on_error.put_place(sent.obj) if sent is not None else None)
            self.record(M.SENT_AT, tensor, candidates, place, sending=True, handled=handled)
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


def _users_place(frames: list[types.FrameType]) -> str | None:
    found = places.innermost_users(places.Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name) for f in frames)
    return None if found is None else places.frame_place(found)


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
