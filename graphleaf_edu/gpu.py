"""The lessons only a CUDA GPU can teach (notebook 10), made so that one stored output fits both kernels.

A lesson is a function ``observe(device) -> list`` that says what happened at each of its steps,
as deterministic text, and its steps as records: what each does, and what it is expected to
return on a GPU (each written once, in ``GPU_LESSONS``). ``gpu_lesson(name)`` runs
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
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DataLoader

from graphleaf_edu.copying import safe_deepcopy
from graphleaf_edu.dataloading import (
    DetachedTensorRows,
    TensorRows,
)
from graphleaf_edu.errors import (
    COWARDLY_MESSAGE,
    GRAPH_LEAVES_MESSAGE,
    error_line,
    warning_line,
)
from graphleaf_edu.gpu_probes import (
    deepcopy_outcome,
    device_and_dtype,
    device_dtype_and_memory,
    in_a_spawned_process,
    load_batches,
    outcome_of,
    report_and_add_ten,
    tensor_facts,
)
from graphleaf_edu.i18n import N_, say

__all__ = [
    "GPU_LESSONS",
    "CachingLinear",
    "GpuFactChanged",
    "GpuLesson",
    "GpuStep",
    "copy_through_the_cpu",
    "dataloader_workers_on_the_gpu",
    "deepcopy_on_the_gpu",
    "gpu_lesson",
    "moving_the_original",
    "pinned_batches",
    "report_and_add_ten",
    "safe_deepcopy_on_the_gpu",
    "sharing_with_a_process",
    "tensor_facts",
]

NEEDS_GPU = N_("needs a CUDA GPU: skipped here (run `make test-gpu` on a GPU machine). "
                "Expected on a GPU, unverified until a GPU run records it:")
AS_EXPECTED = N_("ran on a CUDA GPU: every check as expected. Observed on a GPU:")
DEEPCOPY_ERROR = f"RuntimeError: {GRAPH_LEAVES_MESSAGE}"
COWARDLY_ERROR = f"RuntimeError: {COWARDLY_MESSAGE}"
# A fork worker over CUDA rows: the first of its CUDA calls to fail decides the message, and PyTorch's
# source allows two. Indexing a row (THPVariable_getitem) sets a device guard, whose CUDA runtime calls
# raise c10::AcceleratorError ("CUDA error: " + the runtime's words) where the runtime refuses a forked
# process; if they go through, the default collate function makes the batch's storage on the rows'
# device, whose constructor calls torch.cuda._lazy_init, and that refuses a process forked after its
# parent initialised CUDA. Which one a GPU meets, only a GPU run can show (docs/gpu-run.md).
BAD_FORK_ERROR = (
    "RuntimeError: Caught RuntimeError in DataLoader worker process 0. <- RuntimeError: Cannot re-initialize "
    "CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method"
)
FORKED_CUDA_CALL_ERROR = (
    "AcceleratorError: Caught AcceleratorError in DataLoader worker process 0. <- torch.AcceleratorError: "
    "CUDA error: initialization error"
)
# The C++ check names the tensor's legacy type, Backend + Scalar + "Type": a meta tensor says 'MetaFloatType'.
PIN_CUDA_ERROR = "RuntimeError: cannot pin 'CUDAFloatType' only dense CPU tensors can be pinned"


class GpuFactChanged(AssertionError):
    """A GPU lesson observed something other than what the notebook teaches.

    ``gpu_lesson`` raises it on a CUDA machine where PyTorch no longer does what the lesson says,
    listing each step's expected and observed outcome: the lesson must change, not the check.

    Example:
        >>> issubclass(gl.GpuFactChanged, AssertionError)
        True
    """


@dataclass(frozen=True)
class GpuStep:
    """One step of a GPU lesson: what it does, and its outcome expected on a GPU.

    ``also``: the other outcomes PyTorch's source allows, where it cannot tell which one a GPU meets
    (each is listed, and any of them counts as expected, until a GPU run settles it).
    """

    label: str
    expected: str
    also: tuple[str, ...] = ()

    @property
    def allowed(self) -> tuple[str, ...]:
        """Every outcome that counts as expected: ``expected``, then ``also``."""
        return (self.expected, *self.also)


@dataclass(frozen=True)
class GpuLesson:
    """One GPU lesson: its steps, each with the outcome expected on a GPU, and the code that observes them.

    ``observe(device)`` returns one outcome per step, in the order of ``steps``; ``run(device)``
    maps each step's label to what it observed, ``differences(observed)`` lists the steps whose
    outcome is not the expected one.

    Attributes:
        title: what the lesson shows.
        observe: runs the steps on a device.
        steps: ``GpuStep`` records (``label``, ``expected``).

    Example:
        >>> lesson = gl.GPU_LESSONS["deepcopy"]
        >>> lesson.title
        'deepcopy of CUDA tensors'
        >>> lesson.steps[1].label, lesson.steps[1].expected[:40]
        ('copy.deepcopy(y), y = x * 2', 'RuntimeError: Only Tensors created expli')
    """

    title: str
    observe: Callable[[str], list[str]]
    steps: tuple[GpuStep, ...]

    @property
    def expected(self) -> dict[str, str]:
        """``{label: expected outcome}`` on a GPU (the first, where a step allows more than one)."""
        return {step.label: step.expected for step in self.steps}

    @property
    def allowed(self) -> dict[str, tuple[str, ...]]:
        """``{label: every outcome that counts as expected}`` on a GPU."""
        return {step.label: step.allowed for step in self.steps}

    def run(self, device: str = "cuda") -> dict[str, str]:
        """``{label: outcome}``, plus a step listing the warnings raised, if any (none are expected)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcomes = list(self.observe(device))
        labels = [step.label for step in self.steps]
        labels += [f"(step {number} has no label)" for number in range(len(labels) + 1, len(outcomes) + 1)]
        observed = dict(zip(labels, outcomes))
        if caught:
            lines = sorted({warning_line(w) for w in caught})
            observed["warnings raised"] = "; ".join(lines)
        return observed

    def differences(self, observed: dict[str, str]) -> list[str]:
        """One readable entry per step whose outcome is not an expected one."""
        allowed = self.allowed
        steps = list(dict.fromkeys([*allowed, *observed]))
        return [
            f"{step}\n    expected: {' | or: '.join(allowed.get(step, ('(no such step)',)))}\n"
            f"    observed: {observed.get(step, '(no such step)')}"
            for step in steps if step not in observed or observed[step] not in allowed.get(step, ())
        ]


def gpu_lesson(name: str) -> None:
    """Run lesson ``name`` on the GPU and print what happened, or, without CUDA, what should happen.

    Args:
        name: a key of ``GPU_LESSONS``.

    Returns:
        None; prints a first line saying which of the two it did, then one step and its outcome per line pair.

    Raises:
        ValueError: no lesson is called ``name``.
        GpuFactChanged: on a GPU, a step's outcome is not the one the lesson expects.

    Example:
        >>> import contextlib, io
        >>> printed = io.StringIO()
        >>> with contextlib.redirect_stdout(printed):
        ...     gl.gpu_lesson("deepcopy")
        >>> printed.getvalue().splitlines()[1:3]
        ["  copy.deepcopy(x), x = torch.arange(3.0, device='cuda', requires_grad=True)", '      -> a copy on cuda, float32, leaf, requires_grad=True']
    """
    lesson = _lesson(name)
    if not torch.cuda.is_available():
        print(say(NEEDS_GPU))
        print(_listing(lesson.allowed))
        return
    observed = lesson.run("cuda")
    wrong = lesson.differences(observed)
    print(say(AS_EXPECTED) if not wrong else say("ran on a CUDA GPU: {count} step(s) differ. Observed on a GPU:",
                                                 count=len(wrong)))
    print(_listing(observed))
    if wrong:
        raise GpuFactChanged(
            f"PyTorch on this GPU does not do what lesson {name!r} teaches:\n" + "\n".join(wrong)
            + "\nCheck the new behaviour, then update the lesson and its expectation in graphleaf_edu/gpu.py."
        )


def copy_through_the_cpu(model: nn.Module) -> nn.Module:
    """The "move to the CPU, copy, move back" helper, as it circulates (the GPU deep dive, section 3, runs it)."""
    device = next(model.parameters()).device
    model.cpu()
    duplicate = copy.deepcopy(model)
    model.to(device)
    return duplicate.to(device)


class CachingLinear(nn.Linear):
    """A linear layer that keeps its last output, a non-leaf tensor, as a plain attribute."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.last_output = super().forward(x)
        return self.last_output


def caching_linear_after_a_forward(device: str, dtype: torch.dtype = torch.float32) -> CachingLinear:
    """A ``CachingLinear(4, 3)`` on ``device`` whose ``last_output`` is a non-leaf tensor."""
    model = CachingLinear(4, 3).to(device, dtype)
    model(torch.ones(2, 4, device=device, dtype=dtype))
    return model


# --- the lessons ----------------------------------------------------------------------------------

def deepcopy_on_the_gpu(device: str = "cuda") -> list[str]:
    x = torch.arange(3.0, device=device, requires_grad=True)
    y = x * 2
    return [
        deepcopy_outcome(x),
        deepcopy_outcome(y),
        tensor_facts(y.cpu()),
        deepcopy_outcome(y.cpu()),
        deepcopy_outcome(y.detach()),
    ]


def safe_deepcopy_on_the_gpu(device: str = "cuda") -> list[str]:
    model = caching_linear_after_a_forward(device, torch.float16)
    weight_before = model.weight.data
    duplicate = safe_deepcopy(model, warn=False)
    return [
        deepcopy_outcome(model),
        tensor_facts(duplicate.weight),
        tensor_facts(duplicate.last_output),
        tensor_facts(model.last_output),
        device_dtype_and_memory(model.weight, weight_before),
    ]


def weight_of_a_copy(model: nn.Module) -> str:
    """Where ``copy_through_the_cpu(model)``'s weight is, or the line of the error the copy raised."""
    try:
        return device_and_dtype(copy_through_the_cpu(model).weight)
    except RuntimeError as error:
        return error_line(error)


def moving_the_original(device: str = "cuda") -> list[str]:
    plain = nn.Linear(4, 3).to(device)
    weight_before = plain.weight.data  # kept alive for the memory check below
    plain_copy = weight_of_a_copy(plain)
    cached = caching_linear_after_a_forward(device)
    cached_copy = weight_of_a_copy(cached)
    protected = caching_linear_after_a_forward(device)
    protected_before = protected.weight.data
    safe_deepcopy(protected, warn=False)
    return [
        plain_copy,
        device_dtype_and_memory(plain.weight, weight_before),
        cached_copy,
        device_and_dtype(cached.weight),
        tensor_facts(cached.last_output),
        device_dtype_and_memory(protected.weight, protected_before),
    ]


def dataloader_workers_on_the_gpu(device: str = "cuda") -> list[str]:
    x = torch.arange(32.0, device=device).reshape(8, 4).requires_grad_()
    features = x * 2
    return [
        load_batches(TensorRows(features.detach()), "fork"),
        load_batches(TensorRows(features.detach()), "spawn"),
        load_batches(TensorRows(features), "spawn"),
        load_batches(DetachedTensorRows(features), "spawn"),
    ]


def pinned_batches(device: str = "cuda") -> list[str]:
    rows = DetachedTensorRows(torch.arange(32.0).reshape(8, 4))  # on the CPU, where loaders keep data
    batch = next(iter(DataLoader(rows, batch_size=4, pin_memory=True)))
    return [
        load_batches(rows, pin_memory=True),
        load_batches(rows, "spawn", pin_memory=True),
        outcome_of(lambda: batch.to(device, non_blocking=True)),
        load_batches(TensorRows(rows.data.to(device)), pin_memory=True),
    ]


def sharing_with_a_process(device: str = "cuda") -> list[str]:
    x = torch.arange(4.0, device=device).requires_grad_()
    y = x * 2
    received = in_a_spawned_process(x)
    return [
        received,
        f"values {x.tolist()}",
        in_a_spawned_process(y),
        in_a_spawned_process(y.detach()),
    ]


GPU_LESSONS: dict[str, GpuLesson] = {
    "deepcopy": GpuLesson("deepcopy of CUDA tensors", deepcopy_on_the_gpu, (
        GpuStep("copy.deepcopy(x), x = torch.arange(3.0, device='cuda', requires_grad=True)",
                "a copy on cuda, float32, leaf, requires_grad=True"),
        GpuStep("copy.deepcopy(y), y = x * 2", DEEPCOPY_ERROR),
        GpuStep("y.cpu()", "on cpu, float32, non-leaf (ToCopyBackward0), requires_grad=True"),
        GpuStep("copy.deepcopy(y.cpu())", DEEPCOPY_ERROR),
        GpuStep("copy.deepcopy(y.detach())", "a copy on cuda, float32, leaf, requires_grad=False"),
    )),
    "safe_deepcopy": GpuLesson("safe_deepcopy keeps device and dtype", safe_deepcopy_on_the_gpu, (
        GpuStep("copy.deepcopy(model), a float16 CachingLinear on the GPU after a forward",
                DEEPCOPY_ERROR),
        GpuStep("safe_deepcopy(model): the copy's weight",
                "on cuda, float16, leaf, requires_grad=True"),
        GpuStep("safe_deepcopy(model): the copy's last_output",
                "on cuda, float16, leaf, requires_grad=False"),
        GpuStep("the original's last_output afterwards",
                "on cuda, float16, non-leaf (AddmmBackward0), requires_grad=True"),
        GpuStep("the original's weight afterwards",
                "on cuda, float16, same memory as before: True"),
    )),
    "copy_through_the_cpu": GpuLesson("copying through the CPU moves the original", moving_the_original, (
        GpuStep("copy_through_the_cpu(model): the copy's weight", "on cuda, float32"),
        GpuStep("copy_through_the_cpu(model): the original's weight afterwards",
                "on cuda, float32, same memory as before: False"),
        GpuStep("copy_through_the_cpu(a CachingLinear after a forward)", DEEPCOPY_ERROR),
        GpuStep("that model's weight after the failed copy", "on cpu, float32"),
        GpuStep("that model's last_output after the failed copy",
                "on cuda, float32, non-leaf (AddmmBackward0), requires_grad=True"),
        GpuStep("safe_deepcopy(a CachingLinear after a forward): the original's weight afterwards",
                "on cuda, float32, same memory as before: True"),
    )),
    "dataloader": GpuLesson("CUDA tensors in DataLoader workers", dataloader_workers_on_the_gpu, (
        GpuStep("fork worker, TensorRows(features.detach())", BAD_FORK_ERROR, also=(FORKED_CUDA_CALL_ERROR,)),
        GpuStep("spawn worker, TensorRows(features.detach())",
                "2 batches, each of shape [4, 4] on cuda, float32, leaf, requires_grad=False"),
        GpuStep("spawn worker, TensorRows(features), features = x * 2", COWARDLY_ERROR),
        GpuStep("spawn worker, DetachedTensorRows(features)",
                "2 batches, each of shape [4, 4] on cuda, float32, leaf, requires_grad=False"),
    )),
    "pin_memory": GpuLesson("pin_memory", pinned_batches, (
        GpuStep("pin_memory=True, rows on the CPU, no workers",
                "2 batches, each of shape [4, 4] on cpu, float32, leaf, requires_grad=False, pinned"),
        GpuStep("pin_memory=True, rows on the CPU, one spawn worker",
                "2 batches, each of shape [4, 4] on cpu, float32, leaf, requires_grad=False, pinned"),
        GpuStep("a pinned batch, then batch.to('cuda', non_blocking=True)",
                "on cuda, float32, leaf, requires_grad=False"),
        GpuStep("pin_memory=True, rows already on the GPU", PIN_CUDA_ERROR),
    )),
    "multiprocessing": GpuLesson("sharing CUDA tensors with torch.multiprocessing", sharing_with_a_process, (
        GpuStep("spawn a process with x = torch.arange(4.0, device='cuda').requires_grad_()",
                "the process received: on cuda, float32, leaf, requires_grad=True, values [0.0, 1.0, 2.0, 3.0]"),
        GpuStep("x here, after that process added 10 to it in place",
                "values [10.0, 11.0, 12.0, 13.0]"),
        GpuStep("spawn a process with y = x * 2", COWARDLY_ERROR),
        GpuStep("spawn a process with y.detach()",
                "the process received: on cuda, float32, leaf, requires_grad=False, values [0.0, 2.0, 4.0, 6.0]"),
    )),
}
"""The GPU lessons of notebook 10, by name: each a ``GpuLesson`` that ``gpu_lesson(name)`` runs.

Example:
    >>> list(gl.GPU_LESSONS)
    ['deepcopy', 'safe_deepcopy', 'copy_through_the_cpu', 'dataloader', 'pin_memory', 'multiprocessing']
"""


# --- helpers --------------------------------------------------------------------------------------

def _lesson(name: str) -> GpuLesson:
    if name not in GPU_LESSONS:
        raise ValueError(say("no GPU lesson {name!r}; choose one of {lessons}", name=name, lessons=sorted(GPU_LESSONS)))
    return GPU_LESSONS[name]


def _listing(outcomes: Mapping[str, str | tuple[str, ...]]) -> str:
    """Each step, then its outcome; where a step allows more than one, each on a line of its own ("or")."""
    lines = []
    for step, outcome in outcomes.items():
        first, *others = (outcome,) if isinstance(outcome, str) else outcome
        lines += [f"  {step}", f"      -> {first}", *(f"      or {other}" for other in others)]
    return "\n".join(lines)


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

