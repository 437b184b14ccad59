"""``check_copyable``: a library's test that its module survives what users do with it after a step.

One forward pass in training mode (and, by default, a backward pass of the outputs' sum) on the
module as given, then the three things users do with a trained module: ``copy.deepcopy`` (EMA, SWA,
teacher copies), sending it through torch.multiprocessing's pickler (a queue, a spawned process'
arguments) and a ``state_dict`` round trip into a fresh copy (a checkpoint). A failure raises
``NotCopyableError`` (an ``AssertionError``, so a test fails on it) whose message is ``explain``'s
report of each failing check; success returns a ``CopyableCheck``.

Afterwards everything is as it was before the call (``graphleaf_edu.snapshot.Snapshot`` says what that covers).
"""
from __future__ import annotations

import copy
import io
import pickle
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.nn.utils import parametrize

from graphleaf_edu import deepcopy_walk as dw
from graphleaf_edu import messages as M
from graphleaf_edu.copying import safe_deepcopy
from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.errors import error_line
from graphleaf_edu.i18n import say
from graphleaf_edu.snapshot import Snapshot, dense, random_state_kept, same_bytes

__all__ = ["CopyableCheck", "NotCopyableError", "check_copyable", "sent_and_received"]

class NotCopyableError(AssertionError):
    """``check_copyable`` found that the module cannot be copied, sent or round-tripped after a step.

    An ``AssertionError``, so that a test fails on it (pytest shows its message in full). The message
    is ``explain``'s report for each failing check: every tensor's path from ``root`` (the module
    given), its cause and its fix.

    Attributes:
        failed: the checks that failed, of ``"deepcopy"``, ``"send"``, ``"state_dict"``.
        paths: the path of each tensor the reports name (``".cache"``), each once.

    Example:
        >>> class Cached(torch.nn.Linear):
        ...     def forward(self, x):
        ...         self.last = super().forward(x)
        ...         return self.last
        >>> try:
        ...     gl.check_copyable(Cached(3, 2), torch.ones(4, 3))
        ... except gl.NotCopyableError as error:
        ...     print(error.failed, error.paths, isinstance(error, AssertionError))
        ('deepcopy', 'send') ('.last',) True
    """

    def __init__(self, message: str, failed: tuple[str, ...] = (), paths: tuple[str, ...] = ()):
        super().__init__(message)
        self.failed = tuple(failed)
        self.paths = tuple(paths)


@dataclass(frozen=True)
class CopyableCheck:
    """What ``check_copyable`` checked and found working; ``str()`` says it in words.

    Attributes:
        type_name: the module's class name.
        backward: a backward pass ran after the forward pass (False when asked not to, or when no
            output requires grad).
        sent: what was sent through torch.multiprocessing's pickler: ``"module"``, or
            ``"state_dict"`` for a parametrized module (PyTorch pickles those by state_dict only).
        state_dict_entries: the number of entries the ``state_dict`` round trip compared.

    Example:
        >>> checked = gl.check_copyable(torch.nn.Linear(3, 2), torch.ones(4, 3))
        >>> checked.backward, checked.sent, checked.state_dict_entries
        (True, 'module', 2)
        >>> print(checked)
        check_copyable on this Linear, after one forward and backward pass in training mode (...):
        passed: copy.deepcopy(module)
        passed: sending the module through torch.multiprocessing's pickler (...)
        passed: state_dict round trip: torch.save, torch.load(weights_only=True), load_state_dict into a fresh copy, every entry equal
    """

    type_name: str
    backward: bool
    sent: str
    state_dict_entries: int

    def __str__(self) -> str:
        step = M.STEP_BACKWARD if self.backward else M.STEP_FORWARD
        send = M.CHECK_SEND if self.sent == "module" else M.CHECK_SEND_STATE
        return "\n".join([say(M.CHECK_HEADER, type_name=self.type_name, step=say(step)),
                          *(say(M.CHECK_PASSED, check=say(check)) for check in (M.CHECK_DEEPCOPY, send, M.CHECK_STATE_DICT))])


def check_copyable(module: nn.Module, *example_inputs: Any, backward: bool = True, **example_kwargs: Any) -> CopyableCheck:
    """One training step's forward (and backward) on ``module``, then the copies users make of it.

    ``module(*example_inputs, **example_kwargs)`` runs once in training mode with gradients on; with
    ``backward=True`` the sum of every floating-point output tensor that requires grad (found in
    tuples, lists, dicts and other objects the output holds) is backpropagated, as training does.
    Then, on the module as that step left it (a cache set in ``forward`` or a hook is what must be
    found): ``copy.deepcopy(module)``; sending it through torch.multiprocessing's ``ForkingPickler``
    and loading it back, in this process (its reducers, so non-leaf tensors are refused as a queue
    refuses them; storages are pickled as bytes rather than moved into shared memory, which would
    change the module's memory); and ``torch.save`` of ``module.state_dict()``, ``torch.load`` with
    ``weights_only=True`` and a strict ``load_state_dict`` into a fresh copy whose entries were first
    overwritten, every entry then compared byte for byte.

    Afterwards the module and the example inputs are as they were before the call (see
    ``Snapshot``): every object ``copy.deepcopy`` reaches from them has the same attributes, the same
    items, and each tensor the same bytes, ``requires_grad`` and ``.grad``; each module's
    ``training`` flag is put back, and so is torch's random number generator state.

    Args:
        module: the module to check, as users get it (built, on its device).
        example_inputs: the positional inputs of one forward pass (tensors, a dict, ...).
        backward: also run a backward pass of the outputs' sum (as a training step does).
        example_kwargs: the keyword inputs of the forward pass.

    Returns:
        A ``CopyableCheck`` saying what was checked, when every check passes.

    Raises:
        NotCopyableError: a check fails; its message is the report of each failing check (the
            path of every tensor, its cause and its fix).
        TypeError: ``module`` is not an ``nn.Module``, or ``backward`` is not a bool.
        ValueError: the module holds uninitialized (lazy) parameters: build it with one forward pass first.
        Exception: whatever the module's forward or backward raises on the example, unchanged
            (the module is put back first).

    Example:
        >>> class Cached(torch.nn.Linear):
        ...     def forward(self, x):
        ...         self.last = super().forward(x)
        ...         return self.last
        >>> gl.check_copyable(torch.nn.Linear(3, 2), torch.ones(4, 3)).sent
        'module'
        >>> gl.check_copyable(Cached(3, 2), torch.ones(4, 3))
        Traceback (most recent call last):
        ...
        graphleaf_edu.copyable.NotCopyableError: check_copyable on this Cached, after one forward and backward pass ...
    """
    if not isinstance(module, nn.Module):
        raise TypeError(say(M.NOT_A_MODULE, type_name=type(module).__name__))
    if not isinstance(backward, bool):
        raise TypeError(say(M.BAD_BACKWARD, backward=backward))
    lazy = [name for name, value in [*module.named_parameters(), *module.named_buffers()] if is_lazy(value)]
    if lazy:
        raise ValueError(say(M.LAZY_MODULE, name=lazy[0]))
    snapshot = Snapshot((module, example_inputs, example_kwargs))
    try:
        with random_state_kept(snapshot.cuda_devices), torch.enable_grad():
            ran_backward = _step(module, example_inputs, example_kwargs, backward)
            outcome = _checks(module, ran_backward)
    finally:
        snapshot.restore()
    if isinstance(outcome, NotCopyableError):
        raise outcome
    return outcome


def _step(module: nn.Module, inputs: tuple[Any, ...], kwargs: dict[str, Any], backward: bool) -> bool:
    """The forward pass in training mode, then the backward of the outputs' sum; whether it ran."""
    module.train()
    output = module(*inputs, **kwargs)
    if not backward:
        return False
    walked = dw.walk(output)
    tensors = [node[0] for node in walked.nodes if isinstance(node[0], torch.Tensor)
               and node[0].requires_grad and node[0].is_floating_point()]
    if not tensors:
        return False
    torch.autograd.backward([t.sum() for t in tensors])  # the gradient of their sum, on any devices
    return True


@dataclass(frozen=True)
class _Failure:
    check: str  # the kind, for NotCopyableError.failed
    lines: list[str]
    paths: list[str]


def _checks(module: nn.Module, ran_backward: bool) -> CopyableCheck | NotCopyableError:
    """Run the three checks on the module as the step left it: the record, or the error to raise."""
    parametrized = any(parametrize.is_parametrized(m) for m in module.modules())
    send_check = M.CHECK_SEND_STATE if parametrized else M.CHECK_SEND
    entries = [0]
    results = [
        (M.CHECK_DEEPCOPY, _deepcopy_failure(module)),
        (send_check, _send_failure(module.state_dict() if parametrized else module)),
        (M.CHECK_STATE_DICT, _state_dict_failure(module, entries)),
    ]
    type_name = type(module).__name__
    failures = [failure for _, failure in results if failure is not None]
    if not failures:
        return CopyableCheck(type_name, ran_backward, "state_dict" if parametrized else "module", entries[0])
    step = M.STEP_BACKWARD if ran_backward else M.STEP_FORWARD
    lines = [say(M.CHECK_HEADER, type_name=type_name, step=say(step))]
    for check, failure in results:
        lines += ["", *failure.lines] if failure else ["", say(M.CHECK_PASSED, check=say(check))]
    paths = list(dict.fromkeys(path for failure in failures for path in failure.paths))
    return NotCopyableError("\n".join(lines), tuple(f.check for f in failures), tuple(paths))


def _deepcopy_failure(module: nn.Module) -> _Failure | None:
    try:
        copy.deepcopy(module)
    except Exception as error:  # noqa: BLE001 - whatever deepcopy raises fails the check
        return _reported("deepcopy", M.CHECK_DEEPCOPY, error, module, "deepcopy")
    return None


def _send_failure(sent: Any) -> _Failure | None:
    try:
        sent_and_received(sent)
    except Exception as error:  # noqa: BLE001 - whatever the pickler raises fails the check
        check = M.CHECK_SEND if isinstance(sent, nn.Module) else M.CHECK_SEND_STATE
        return _reported("send", check, error, sent, "multiprocessing")
    return None


def _reported(kind: str, check: str, error: Exception, obj: Any, walk: str) -> _Failure:
    """The failing check's line, then ``explain``'s report of what the walk finds in ``obj``."""
    findings = find_nonleaf(obj, walk)
    lines = [say(M.CHECK_FAILED, check=say(check), error=error_line(error))]
    lines.append(findings.report(walk) if findings or findings.opaque else say(M.NO_TENSOR_CAUSE))
    return _Failure(kind, lines, [finding.path for finding in findings])


class _SendingPickler(ForkingPickler):
    """``ForkingPickler`` with torch.multiprocessing's reducers, as a queue uses it, except for
    storages: those are pickled as bytes, where torch's reducer would move them (and so the sent
    module's own tensors) into shared memory. Tensors still go through torch's ``reduce_tensor``,
    which refuses a non-leaf tensor that requires grad."""

    def __init__(self, file: io.BytesIO, protocol: int | None = None):
        super().__init__(file, protocol)
        self.dispatch_table = {cls: reducer for cls, reducer in self.dispatch_table.items()
                               if not issubclass(cls, (torch.UntypedStorage, torch.storage.TypedStorage))}


def sent_and_received(obj: Any) -> Any:
    """``obj`` pickled as torch.multiprocessing sends it (``ForkingPickler``'s reducers, in this
    process, without moving storages into shared memory), then unpickled: what the receiver gets."""
    buffer = io.BytesIO()
    _SendingPickler(buffer, pickle.HIGHEST_PROTOCOL).dump(obj)
    return pickle.loads(buffer.getvalue())


def _state_dict_failure(module: nn.Module, entries: list[int]) -> _Failure | None:
    """torch.save of the state_dict, torch.load(weights_only=True), a strict load into a fresh copy
    whose entries were overwritten first, then every entry compared."""
    state = module.state_dict()
    try:
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=True)
        try:
            fresh = safe_deepcopy(module, warn=False)
        except Exception as error:  # noqa: BLE001 - the deepcopy check names the cause
            return _state_dict_failed(say(M.NO_FRESH_COPY, error=error_line(error)))
        _overwrite(fresh.state_dict(keep_vars=True))
        fresh.load_state_dict(loaded)
    except Exception as error:  # noqa: BLE001 - whatever saving or loading raises fails the check
        return _state_dict_failed(f"{type(error).__name__}: {error}")  # all of it: a load lists every key
    copied = fresh.state_dict()
    compared = [key for key, value in state.items() if isinstance(value, torch.Tensor)]
    entries[0] = len(compared)
    differ = [key for key in compared if not same_bytes(copied[key], state[key])]
    return _state_dict_failed(say(M.ENTRIES_DIFFER, keys=", ".join(differ))) if differ else None


def _state_dict_failed(error: str) -> _Failure:
    return _Failure("state_dict", [say(M.CHECK_FAILED, check=say(M.CHECK_STATE_DICT), error=error)], [])


def _overwrite(state: dict[str, Any]) -> None:
    """Change every dense tensor of a fresh copy's state, so that an entry a load skips shows."""
    with torch.no_grad():
        for value in state.values():
            if not dense(value):
                continue
            if value.dtype == torch.bool:
                value.logical_not_()
            elif value.is_floating_point() or value.is_complex():
                value.fill_(float("nan"))
            else:
                value.add_(1)
