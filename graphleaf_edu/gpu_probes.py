"""What the GPU lessons observe with: a tensor's facts, an action's outcome, a loader's batches, a process.

Every outcome is deterministic text (no addresses, no timings), so the lesson's expectation can
be compared with it. Spawned processes import ``report_and_add_ten`` from here by name.
"""
from __future__ import annotations

import copy
import queue
import tempfile
import time
from collections.abc import Callable

import torch
from torch.utils.data import DataLoader, Dataset

from graphleaf_edu.dataloading import drain, worker_options
from graphleaf_edu.errors import error_line

WAIT_S = 120.0  # for a spawned process: it imports torch and this package before it does anything


def tensor_facts(t: torch.Tensor) -> str:
    """``'on cuda, float16, non-leaf (AddmmBackward0), requires_grad=True'``."""
    kind = "leaf" if t.grad_fn is None else f"non-leaf ({type(t.grad_fn).__name__})"
    return f"{device_and_dtype(t)}, {kind}, requires_grad={t.requires_grad}"


def device_and_dtype(t: torch.Tensor) -> str:
    """``'on cuda, float16'``."""
    return f"on {t.device.type}, {str(t.dtype).removeprefix('torch.')}"


def device_dtype_and_memory(t: torch.Tensor, before: torch.Tensor) -> str:
    """Also whether ``t`` still uses the memory that ``before`` (kept alive by the caller) uses."""
    return f"{device_and_dtype(t)}, same memory as before: {t.data_ptr() == before.data_ptr()}"


def deepcopy_outcome(obj: object) -> str:
    """``'a copy on cuda, ...'`` with the copy's facts, or the line of the error ``copy.deepcopy`` raised."""
    return outcome_of(lambda: copy.deepcopy(obj), prefix="a copy ")


def outcome_of(make: Callable[[], object], prefix: str = "") -> str:
    """What ``make()`` returned (a tensor's facts, or its type) or the line of the error it raised."""
    try:
        made = make()
    except RuntimeError as error:
        return error_line(error)
    return prefix + (tensor_facts(made) if isinstance(made, torch.Tensor) else type(made).__name__)


def load_batches(dataset: Dataset, start_method: str | None = None, *, pin_memory: bool = False) -> str:
    """Every batch of 4 from ``dataset`` (one worker, or none), summarised; or the error's line(s).

    Batches are summarised and dropped before the worker stops: a worker that sent CUDA tensors
    must outlive their use.
    """
    with tempfile.TemporaryDirectory(prefix="graphleaf-gpu-") as folder:
        workers = worker_options(start_method, 1, WAIT_S, folder) if start_method else {}
        loader = DataLoader(dataset, batch_size=4, pin_memory=pin_memory, **workers)
        summaries, error = drain(loader, lambda batch: _batch_facts(batch, pin_memory))
    if error:
        _, first, cause = error
        return first if cause == first else f"{first} <- {cause}"
    kinds = sorted(set(summaries))
    return f"{len(summaries)} batches, each {kinds[0]}" if len(kinds) == 1 else f"{len(summaries)} batches: {kinds}"


def in_a_spawned_process(tensor: torch.Tensor) -> str:
    """Start a spawned process with ``tensor`` as its argument; what it received, or the error."""
    context = torch.multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=report_and_add_ten, args=(tensor, results), daemon=True)
    try:
        process.start()  # spawn pickles the arguments here, in this process
    except RuntimeError as error:
        return error_line(error)
    try:
        return _answer(process, results)
    finally:
        process.join(timeout=WAIT_S)
        if process.is_alive():
            process.kill()


def report_and_add_ten(tensor: torch.Tensor, results) -> None:
    """Runs in the spawned process: say what arrived, then change it in place."""
    try:
        report = f"the process received: {tensor_facts(tensor)}, values {tensor.tolist()}"
        with torch.no_grad():
            tensor.add_(10)
        if tensor.is_cuda:
            torch.cuda.synchronize()
    except RuntimeError as error:  # the parent reports what went wrong here
        report = f"failed in the process: {error_line(error)}"
    results.put(report)


def _answer(process, results) -> str:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            return results.get(timeout=0.5)
        except queue.Empty:
            if not process.is_alive() and results.empty():
                return f"the process ended without an answer (exit code {process.exitcode})"
    return f"no answer from the process within {WAIT_S:.0f} s"


def _batch_facts(batch: torch.Tensor, pin_memory: bool) -> str:
    facts = f"of shape {list(batch.shape)} {tensor_facts(batch)}"
    if pin_memory:
        facts += ", pinned" if batch.is_pinned() else ", not pinned"
    return facts
