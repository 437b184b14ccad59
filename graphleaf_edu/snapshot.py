"""What ``check_copyable`` puts back: everything ``copy.deepcopy`` reaches from the module and its inputs, as it was.

``Snapshot(root)`` takes it (one walk by deepcopy's protocol), ``restore()`` puts it back, touching only
what changed; ``random_state_kept`` keeps torch's random number generators; ``same_bytes`` compares two
tensors byte for byte (the state_dict round trip compares its entries with it too).
"""
from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator
from typing import Any

import torch

from graphleaf_edu import deepcopy_walk as dw
from graphleaf_edu.stored_values import instance_dict, slot_children

__all__ = ["Snapshot", "dense", "random_state_kept", "same_bytes"]

_CONTAINERS = (list, dict, set, deque)


class Snapshot:
    """What ``check_copyable`` puts back: everything ``copy.deepcopy`` reaches from ``root``.

    Taken by one walk of ``root`` by deepcopy's protocol (``graphleaf_edu.deepcopy_walk``). For each
    object reached: its ``__dict__`` (the same names bound to the same objects: attributes a forward
    pass added are removed, re-assigned ones put back; a module's ``training`` flag, its
    ``_parameters``, ``_buffers``, ``_modules`` and hook dicts among them), its slots, and the items
    of each list, dict, set and deque it is or holds (the same objects, in the same order). For each
    dense tensor: its bytes, ``requires_grad`` (of a leaf) and ``.grad`` (the same object, or None,
    with its bytes). Bytes are compared first and written back (under ``torch.no_grad()``) only where
    they changed, so a tensor's version counter moves only then.

    Not covered: what deepcopy does not reach either (a closure's captured dict, a global, an object
    behind its own ``__deepcopy__``), hooks registered on tensors, and what a C extension object keeps.
    """

    def __init__(self, root: Any):
        walked = dw.walk(root)
        self._dicts: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self._slots: list[tuple[Any, list[tuple[str, Any]]]] = []
        self._containers: dict[int, tuple[Any, Any]] = {}
        self._tensors: list[tuple[torch.Tensor, torch.Tensor | None, bool, Any, torch.Tensor | None]] = []
        self._keep_alive = walked.keep_alive
        for obj, *_ in walked.nodes:
            self._take(obj)
        self.cuda_devices = sorted({t.device.index or 0 for t, *_ in self._tensors if t.is_cuda})

    def _take(self, obj: Any) -> None:
        if isinstance(obj, torch.Tensor):
            self._take_tensor(obj)
        self._take_container(obj)
        state = instance_dict(obj)
        if state:
            self._dicts.append((state, dict(state)))
            for value in state.values():
                self._take_container(value)
        slots = [(name, value) for _, name, value in slot_children(obj)]
        if slots:
            self._slots.append((obj, slots))

    def _take_container(self, obj: Any) -> None:
        """The items of a list, dict, set or deque, and of the (maybe empty) containers it holds
        directly: the walk skips empty ones, which a forward pass may fill."""
        if not isinstance(obj, _CONTAINERS) or id(obj) in self._containers:
            return
        self._containers[id(obj)] = (obj, _items(obj))
        for value in obj.values() if isinstance(obj, dict) else obj:
            if isinstance(value, _CONTAINERS) and id(value) not in self._containers:
                self._containers[id(value)] = (value, _items(value))

    def _take_tensor(self, t: torch.Tensor) -> None:
        data = t.detach().clone() if dense(t) else None
        grad = t.grad if t.is_leaf else None  # a non-leaf's .grad warns when read
        saved_grad = grad.detach().clone() if grad is not None and dense(grad) else None
        self._tensors.append((t, data, t.requires_grad, grad, saved_grad))

    def restore(self) -> None:
        """Put back every attribute, item, tensor byte, flag and gradient taken."""
        for state, saved in self._dicts:
            if state.keys() != saved.keys() or any(state[name] is not value for name, value in saved.items()):
                state.clear()
                state.update(saved)
        for obj, slots in self._slots:
            for name, value in slots:
                object.__setattr__(obj, name, value)
        for container, items in self._containers.values():
            _put_back(container, items)
        with torch.no_grad():
            for t, data, requires_grad, grad, saved_grad in self._tensors:
                if data is not None and not same_bytes(t, data):
                    _write(t, data)
                if t.is_leaf:
                    if t.requires_grad != requires_grad:
                        t.requires_grad_(requires_grad)
                    if t.grad is not grad:
                        t.grad = grad
                if grad is not None and saved_grad is not None and not same_bytes(grad, saved_grad):
                    _write(grad, saved_grad)


def _items(container: Any) -> list[Any]:
    """A list (or deque) or set's items, a dict's keys and values, in order."""
    return [part for pair in container.items() for part in pair] if isinstance(container, dict) else list(container)


def _put_back(container: Any, items: list[Any]) -> None:
    """Make ``container`` hold ``items`` again (the same objects, in order), touching it only if it changed."""
    current = _items(container)
    if len(current) == len(items) and all(a is b for a, b in zip(current, items)):
        return
    if isinstance(container, list):
        container[:] = items
        return
    container.clear()
    if isinstance(container, dict):
        container.update(zip(items[::2], items[1::2]))
    elif isinstance(container, set):
        container.update(items)
    else:
        container.extend(items)


def _write(t: torch.Tensor, data: torch.Tensor) -> None:
    if (t.shape, t.dtype, t.device) == (data.shape, data.dtype, data.device):
        t.copy_(data)
    else:  # the forward pass replaced its .data
        t.data = data


@contextlib.contextmanager
def random_state_kept(cuda_devices: list[int]) -> Iterator[None]:
    """torch's random number generators as they were, after (a dropout draws from them)."""
    with torch.random.fork_rng(devices=cuda_devices):
        yield


def dense(value: Any) -> bool:
    """A tensor whose bytes can be read and written: strided, not nested or quantized, not on ``meta``."""
    return (isinstance(value, torch.Tensor) and value.layout == torch.strided and not value.is_nested
            and not value.is_quantized and value.device.type != "meta")


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape, device and bytes (NaNs compare equal to the same NaNs)."""
    if (a.dtype, a.shape, a.device) != (b.dtype, b.shape, b.device):
        return False
    if not (dense(a) and dense(b)):
        return bool(torch.equal(a, b))
    return bool(torch.equal(_raw(a), _raw(b)))


def _raw(t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1).contiguous().view(torch.uint8)
