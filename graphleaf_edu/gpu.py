"""The lessons only a CUDA GPU can teach (notebook 10), made so that one stored output fits both kernels.

A lesson is a function ``observe(device) -> dict`` that maps each thing it does to what happened,
as deterministic text, plus the text it is expected to return on a GPU. ``gpu_lesson(name)`` runs
it where CUDA is available, prints what it observed, and raises ``GpuFactChanged`` where that
differs from the expectation. Without CUDA it runs nothing: it prints that it needs a GPU, then
the expected lines. Only that first line differs between the two kernels, and the GPU run's
sanitize file (``tests/nbval_sanitize_gpu.cfg``) maps both first lines to one text, so nbval on
the GPU kernel compares what the GPU did with what the notebook says.

The expectations come from PyTorch's source and from the same code's behaviour on the CPU;
``make test-gpu`` is what checks them on a GPU. Spawned processes import the functions they run,
which is why the lessons live in this module and not in the notebook.
"""
from __future__ import annotations

import copy
import queue
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from graphleaf_edu.copying import safe_deepcopy
from graphleaf_edu.dataloading import (
    DetachedTensorRows,
    TensorRows,
    drain,
    worker_options,
)
from graphleaf_edu.errors import (
    COWARDLY_MESSAGE,
    GRAPH_LEAVES_MESSAGE,
    error_line,
    warning_line,
)

__all__ = ["GPU_LESSONS", "GpuFactChanged", "GpuLesson", "copy_through_the_cpu", "gpu_lesson", "tensor_facts"]

NEEDS_GPU = "needs a CUDA GPU: skipped here (run `make test-gpu` on a GPU machine). Expected on a GPU:"
AS_EXPECTED = "ran on a CUDA GPU: every check as expected. Observed on a GPU:"
DEEPCOPY_ERROR = f"RuntimeError: {GRAPH_LEAVES_MESSAGE}"
COWARDLY_ERROR = f"RuntimeError: {COWARDLY_MESSAGE}"
BAD_FORK_ERROR = (
    "RuntimeError: Caught RuntimeError in DataLoader worker process 0. <- RuntimeError: Cannot re-initialize "
    "CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method"
)
PIN_CUDA_ERROR = "RuntimeError: cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned"
WAIT_S = 120.0  # for a spawned process: it imports torch and this package before it does anything


class GpuFactChanged(AssertionError):
    """A GPU lesson observed something other than what the notebook teaches."""


@dataclass(frozen=True)
class GpuLesson:
    """``observe(device)`` maps each step to its outcome; ``expected`` is that mapping on a GPU."""

    title: str
    observe: Callable[[str], dict[str, str]]
    expected: dict[str, str]

    def run(self, device: str = "cuda") -> dict[str, str]:
        """``observe(device)``, plus a step listing the warnings raised, if any (none are expected)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            observed = self.observe(device)
        if caught:
            lines = sorted({warning_line(w) for w in caught})
            observed["warnings raised"] = "; ".join(lines)
        return observed

    def differences(self, observed: dict[str, str]) -> list[str]:
        """One readable entry per step whose outcome is not the expected one."""
        steps = list(dict.fromkeys([*self.expected, *observed]))
        return [
            f"{step}\n    expected: {self.expected.get(step, '(no such step)')}\n"
            f"    observed: {observed.get(step, '(no such step)')}"
            for step in steps if self.expected.get(step) != observed.get(step)
        ]


def gpu_lesson(name: str) -> None:
    """Run lesson ``name`` on the GPU and print what happened, or, without CUDA, what should happen."""
    lesson = _lesson(name)
    if not torch.cuda.is_available():
        print(NEEDS_GPU)
        print(_listing(lesson.expected))
        return
    observed = lesson.run("cuda")
    wrong = lesson.differences(observed)
    print(AS_EXPECTED if not wrong else f"ran on a CUDA GPU: {len(wrong)} step(s) differ. Observed on a GPU:")
    print(_listing(observed))
    if wrong:
        raise GpuFactChanged(
            f"PyTorch on this GPU does not do what lesson {name!r} teaches:\n" + "\n".join(wrong)
            + "\nCheck the new behaviour, then update the lesson and its expectation in graphleaf_edu/gpu.py."
        )


def copy_through_the_cpu(model: nn.Module) -> nn.Module:
    """The "move to the CPU, copy, move back" helper. Do not use it: it moves the original."""
    device = next(model.parameters()).device
    model.cpu()  # nn.Module.cpu() moves the module itself, in place
    duplicate = copy.deepcopy(model)
    model.to(device)  # never reached when deepcopy raises
    return duplicate.to(device)


class CachingLinear(nn.Linear):
    """A linear layer that keeps its last output, a non-leaf tensor, as a plain attribute."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.last_output = super().forward(x)
        return self.last_output


# --- what the lessons use and print -------------------------------------------------------------

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


def caching_linear_after_a_forward(device: str, dtype: torch.dtype = torch.float32) -> CachingLinear:
    """A ``CachingLinear(4, 3)`` on ``device`` whose ``last_output`` is a non-leaf tensor."""
    model = CachingLinear(4, 3).to(device, dtype)
    model(torch.ones(2, 4, device=device, dtype=dtype))
    return model


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


# --- the lessons ----------------------------------------------------------------------------------

def deepcopy_on_the_gpu(device: str = "cuda") -> dict[str, str]:
    x = torch.arange(3.0, device=device, requires_grad=True)
    y = x * 2
    return {
        "copy.deepcopy(x), x = torch.arange(3.0, device='cuda', requires_grad=True)": deepcopy_outcome(x),
        "copy.deepcopy(y), y = x * 2": deepcopy_outcome(y),
        "y.cpu()": tensor_facts(y.cpu()),
        "copy.deepcopy(y.cpu())": deepcopy_outcome(y.cpu()),
        "copy.deepcopy(y.detach())": deepcopy_outcome(y.detach()),
    }


def safe_deepcopy_on_the_gpu(device: str = "cuda") -> dict[str, str]:
    model = caching_linear_after_a_forward(device, torch.float16)
    weight_before = model.weight.data
    duplicate = safe_deepcopy(model, warn=False)
    return {
        "copy.deepcopy(model), a float16 CachingLinear on the GPU after a forward": deepcopy_outcome(model),
        "safe_deepcopy(model): the copy's weight": tensor_facts(duplicate.weight),
        "safe_deepcopy(model): the copy's last_output": tensor_facts(duplicate.last_output),
        "the original's last_output afterwards": tensor_facts(model.last_output),
        "the original's weight afterwards": device_dtype_and_memory(model.weight, weight_before),
    }


def moving_the_original(device: str = "cuda") -> dict[str, str]:
    plain = nn.Linear(4, 3).to(device)
    weight_before = plain.weight.data  # holds the old memory, so new memory gets a new address
    duplicate = copy_through_the_cpu(plain)
    cached = caching_linear_after_a_forward(device)
    failed = outcome_of(lambda: copy_through_the_cpu(cached))
    protected = caching_linear_after_a_forward(device)
    protected_before = protected.weight.data
    safe_deepcopy(protected, warn=False)
    return {
        "copy_through_the_cpu(model): the copy's weight": device_and_dtype(duplicate.weight),
        "copy_through_the_cpu(model): the original's weight afterwards": device_dtype_and_memory(plain.weight, weight_before),
        "copy_through_the_cpu(a CachingLinear after a forward)": failed,
        "that model's weight after the failed copy": device_and_dtype(cached.weight),
        "that model's last_output after the failed copy": tensor_facts(cached.last_output),
        "safe_deepcopy(a CachingLinear after a forward): the original's weight afterwards":
            device_dtype_and_memory(protected.weight, protected_before),
    }


def dataloader_workers_on_the_gpu(device: str = "cuda") -> dict[str, str]:
    x = torch.arange(32.0, device=device).reshape(8, 4).requires_grad_()
    features = x * 2
    return {
        "fork worker, TensorRows(features.detach())": load_batches(TensorRows(features.detach()), "fork"),
        "spawn worker, TensorRows(features.detach())": load_batches(TensorRows(features.detach()), "spawn"),
        "spawn worker, TensorRows(features), features = x * 2": load_batches(TensorRows(features), "spawn"),
        "spawn worker, DetachedTensorRows(features)": load_batches(DetachedTensorRows(features), "spawn"),
    }


def pinned_batches(device: str = "cuda") -> dict[str, str]:
    rows = DetachedTensorRows(torch.arange(32.0).reshape(8, 4))  # on the CPU, where loaders keep data
    batch = next(iter(DataLoader(rows, batch_size=4, pin_memory=True)))
    return {
        "pin_memory=True, rows on the CPU, no workers": load_batches(rows, pin_memory=True),
        "pin_memory=True, rows on the CPU, one spawn worker": load_batches(rows, "spawn", pin_memory=True),
        "a pinned batch, then batch.to('cuda', non_blocking=True)": outcome_of(lambda: batch.to(device, non_blocking=True)),
        "pin_memory=True, rows already on the GPU": load_batches(TensorRows(rows.data.to(device)), pin_memory=True),
    }


def sharing_with_a_process(device: str = "cuda") -> dict[str, str]:
    x = torch.arange(4.0, device=device).requires_grad_()
    y = x * 2
    received = in_a_spawned_process(x)
    return {
        "spawn a process with x = torch.arange(4.0, device='cuda').requires_grad_()": received,
        "x here, after that process added 10 to it in place": f"values {x.tolist()}",
        "spawn a process with y = x * 2": in_a_spawned_process(y),
        "spawn a process with y.detach()": in_a_spawned_process(y.detach()),
    }


GPU_LESSONS: dict[str, GpuLesson] = {
    "deepcopy": GpuLesson("deepcopy of CUDA tensors", deepcopy_on_the_gpu, {
        "copy.deepcopy(x), x = torch.arange(3.0, device='cuda', requires_grad=True)":
            "a copy on cuda, float32, leaf, requires_grad=True",
        "copy.deepcopy(y), y = x * 2": DEEPCOPY_ERROR,
        "y.cpu()": "on cpu, float32, non-leaf (ToCopyBackward0), requires_grad=True",
        "copy.deepcopy(y.cpu())": DEEPCOPY_ERROR,
        "copy.deepcopy(y.detach())": "a copy on cuda, float32, leaf, requires_grad=False",
    }),
    "safe_deepcopy": GpuLesson("safe_deepcopy keeps device and dtype", safe_deepcopy_on_the_gpu, {
        "copy.deepcopy(model), a float16 CachingLinear on the GPU after a forward": DEEPCOPY_ERROR,
        "safe_deepcopy(model): the copy's weight": "on cuda, float16, leaf, requires_grad=True",
        "safe_deepcopy(model): the copy's last_output": "on cuda, float16, leaf, requires_grad=False",
        "the original's last_output afterwards": "on cuda, float16, non-leaf (AddmmBackward0), requires_grad=True",
        "the original's weight afterwards": "on cuda, float16, same memory as before: True",
    }),
    "copy_through_the_cpu": GpuLesson("copying through the CPU moves the original", moving_the_original, {
        "copy_through_the_cpu(model): the copy's weight": "on cuda, float32",
        "copy_through_the_cpu(model): the original's weight afterwards": "on cuda, float32, same memory as before: False",
        "copy_through_the_cpu(a CachingLinear after a forward)": DEEPCOPY_ERROR,
        "that model's weight after the failed copy": "on cpu, float32",
        "that model's last_output after the failed copy": "on cuda, float32, non-leaf (AddmmBackward0), requires_grad=True",
        "safe_deepcopy(a CachingLinear after a forward): the original's weight afterwards":
            "on cuda, float32, same memory as before: True",
    }),
    "dataloader": GpuLesson("CUDA tensors in DataLoader workers", dataloader_workers_on_the_gpu, {
        "fork worker, TensorRows(features.detach())": BAD_FORK_ERROR,
        "spawn worker, TensorRows(features.detach())":
            "2 batches, each of shape [4, 4] on cuda, float32, leaf, requires_grad=False",
        "spawn worker, TensorRows(features), features = x * 2": COWARDLY_ERROR,
        "spawn worker, DetachedTensorRows(features)":
            "2 batches, each of shape [4, 4] on cuda, float32, leaf, requires_grad=False",
    }),
    "pin_memory": GpuLesson("pin_memory", pinned_batches, {
        "pin_memory=True, rows on the CPU, no workers":
            "2 batches, each of shape [4, 4] on cpu, float32, leaf, requires_grad=False, pinned",
        "pin_memory=True, rows on the CPU, one spawn worker":
            "2 batches, each of shape [4, 4] on cpu, float32, leaf, requires_grad=False, pinned",
        "a pinned batch, then batch.to('cuda', non_blocking=True)": "on cuda, float32, leaf, requires_grad=False",
        "pin_memory=True, rows already on the GPU": PIN_CUDA_ERROR,
    }),
    "multiprocessing": GpuLesson("sharing CUDA tensors with torch.multiprocessing", sharing_with_a_process, {
        "spawn a process with x = torch.arange(4.0, device='cuda').requires_grad_()":
            "the process received: on cuda, float32, leaf, requires_grad=True, values [0.0, 1.0, 2.0, 3.0]",
        "x here, after that process added 10 to it in place": "values [10.0, 11.0, 12.0, 13.0]",
        "spawn a process with y = x * 2": COWARDLY_ERROR,
        "spawn a process with y.detach()":
            "the process received: on cuda, float32, leaf, requires_grad=False, values [0.0, 2.0, 4.0, 6.0]",
    }),
}


# --- helpers --------------------------------------------------------------------------------------

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


def _lesson(name: str) -> GpuLesson:
    if name not in GPU_LESSONS:
        raise ValueError(f"no GPU lesson {name!r}; choose one of {sorted(GPU_LESSONS)}")
    return GPU_LESSONS[name]


def _listing(outcomes: dict[str, str]) -> str:
    return "\n".join(f"  {step}\n      -> {outcome}" for step, outcome in outcomes.items())


def _batch_facts(batch: torch.Tensor, pin_memory: bool) -> str:
    facts = f"of shape {list(batch.shape)} {tensor_facts(batch)}"
    if pin_memory:
        facts += ", pinned" if batch.is_pinned() else ", not pinned"
    return facts


def main() -> int:
    """Run every lesson and print what it observed (``tools/test_gpu.sh`` keeps it in its log).

    Returns 0 when all are as expected, 1 when one is not, 2 without CUDA (nothing run).
    """
    if not torch.cuda.is_available():
        print("No CUDA device is visible: the GPU lessons need one (nothing was run).")
        return 2
    failed = 0
    for name, lesson in GPU_LESSONS.items():
        observed = lesson.run("cuda")
        wrong = lesson.differences(observed)
        failed += bool(wrong)
        print(f"== {name}: {lesson.title}: {'as expected' if not wrong else 'DIFFERS'}")
        print(_listing(observed))
        for entry in wrong:
            print("  DIFFERS: " + entry)
    print(f"{len(GPU_LESSONS) - failed} of {len(GPU_LESSONS)} GPU lessons as expected")
    return 1 if failed else 0

