"""safe_deepcopy against copy.deepcopy and the state_dict routes, on ~1M, ~25M and ~100M parameters.

Every ratio's baseline is ``copy.deepcopy`` of the *clean* model (no cache), so "cached" rows say
what the walk and the detaching add to the copy a user would have made without the cache.
``walk`` is ``find_nonleaf``'s walk alone on the cached model: the part of ``safe_deepcopy`` that
does not scale with bytes, which is what bounds the ratio where a copy takes only a millisecond.

Times are medians of CPU seconds (``time.process_time``, one torch thread) measured in this run:
the machine is shared, and wall-clock medians swung by 10x with other people's load. Freed memory
goes back to the OS before each sample, so every copy pays for fresh pages, as a first copy does.
Every ratio divides by a baseline measured alongside it, the variants taking turns.
Peak extra memory: each variant runs once in a fresh interpreter that builds the model, resets the
kernel's resident-set high-water mark (``/proc/self/clear_refs`` <- 5), runs the variant while
keeping its result, and reports ``VmHWM - VmRSS before``. Tensor storage lives outside Python's
allocator, so tracemalloc would miss it; RSS sees it.
"""
from __future__ import annotations

import copy
import ctypes
import functools
import gc
import io
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

from bench.harness import format_table
from graphleaf_edu.copying import safe_deepcopy
from graphleaf_edu.diagnose import find_nonleaf

DEPTH = 4
WIDTHS = {"1M": 500, "25M": 2_500, "100M": 5_000}  # DEPTH square Linear layers: ~width**2 * DEPTH
REPEATS = {"1M": 12, "25M": 6, "100M": 6}  # multiples of len(VARIANTS): each variant leads as often
CALLS = {"1M": 10, "25M": 1, "100M": 1}  # calls per sample: one 1M copy takes ~1 ms, too short alone
ROOT = Path(__file__).resolve().parent.parent
_LIBC = ctypes.CDLL("libc.so.6") if sys.platform.startswith("linux") else None  # for malloc_trim


class Stack(nn.Module):
    """Square Linear layers; the constructor takes arguments, as most real models' do."""

    def __init__(self, width: int, depth: int):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
        self.last = None

    def forward(self, x):
        self.last = self.layers(x)  # caches an activation: a non-leaf after a forward with grad
        return self.last


def build(width: int, cached: bool = False) -> Stack:
    torch.manual_seed(0)
    model = Stack(width, DEPTH)
    if cached:
        model(torch.randn(8, width))
    return model


def via_bytesio(model: Stack) -> Stack:
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    fresh = Stack(model.layers[0].in_features, DEPTH)
    fresh.load_state_dict(torch.load(buffer))
    return fresh


def via_load_state_dict(model: Stack) -> Stack:
    fresh = Stack(model.layers[0].in_features, DEPTH)
    fresh.load_state_dict(model.state_dict())
    return fresh


def quiet_safe_deepcopy(model: Stack) -> Stack:
    return safe_deepcopy(model, warn=False)


VARIANTS = {
    "deepcopy": (False, copy.deepcopy),
    "safe_deepcopy": (False, quiet_safe_deepcopy),
    "state_dict_bytesio": (False, via_bytesio),
    "load_state_dict": (False, via_load_state_dict),
    "safe_deepcopy_cached": (True, quiet_safe_deepcopy),
    "walk_cached": (True, find_nonleaf),
}
MEMORY_VARIANTS = ("deepcopy", "safe_deepcopy", "state_dict_bytesio", "load_state_dict", "safe_deepcopy_cached")


def cpu_seconds(fn, calls: int = 1) -> float:
    """CPU seconds per call, over ``calls`` calls in a row."""
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls


def release_freed_memory() -> None:
    """Hand freed memory back to the OS, so that every sample starts alike (fresh pages are
    costly; without this, whoever ran after a big free got them cheap or paid for them)."""
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def time_size(label: str, repeats: int) -> dict:
    """Median CPU seconds per variant; the variants take turns, each leading a turn as often."""
    width = WIDTHS[label]
    models = {cached: build(width, cached) for cached in (False, True)}
    row = {"model": label, "params": sum(p.numel() for p in models[False].parameters())}
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for turn in range(repeats + 1):
        for name in names[turn % len(names):] + names[: turn % len(names)]:  # each goes first in turn
            cached, fn = VARIANTS[name]
            seconds = cpu_seconds(functools.partial(fn, models[cached]), CALLS[label])
            if turn:  # the first turn is the warm-up
                samples[name].append(seconds)
            release_freed_memory()
    for name, seconds in samples.items():
        row[f"{name}_s"] = statistics.median(seconds)
    base = row["deepcopy_s"]
    row["safe_vs_deepcopy"] = row["safe_deepcopy_s"] / base
    row["safe_vs_bytesio"] = row["safe_deepcopy_s"] / row["state_dict_bytesio_s"]
    row["safe_vs_load_state_dict"] = row["safe_deepcopy_s"] / row["load_state_dict_s"]
    row["safe_cached_vs_deepcopy"] = row["safe_deepcopy_cached_s"] / base
    row["walk_cached_vs_deepcopy"] = row["walk_cached_s"] / base
    return row


def peak_extra_mb(label: str, variants: tuple[str, ...]) -> dict[str, float]:
    """Each variant once, in its own fresh interpreter (run side by side): resident-set growth
    at the peak, in MB."""
    processes = {
        variant: subprocess.Popen(
            [sys.executable, "-m", "bench.copying", "--peak", label, variant],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )
        for variant in variants
    }
    peaks = {}
    for variant, process in processes.items():
        out, _ = process.communicate(timeout=300)
        if process.returncode:
            raise RuntimeError(f"memory probe {label}/{variant} failed with exit code {process.returncode}")
        peaks[variant] = json.loads(out.strip().splitlines()[-1])["peak_extra_mb"]
    return peaks


def _probe(label: str, variant: str) -> None:
    cached, fn = VARIANTS[variant]
    fn(build(8, cached))  # import whatever the variant imports lazily, outside the measurement
    model = build(WIDTHS[label], cached)
    gc.collect()
    before = _status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    result = fn(model)
    peak = _status_kb("VmHWM")
    del result
    print(json.dumps({"peak_extra_mb": (peak - before) / 1024}))


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def run(quick: bool = False) -> dict:
    labels = ("1M",) if quick else tuple(WIDTHS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # CPU time then equals the time one core spends
    try:
        rows = [time_size(label, 6 if quick else REPEATS[label]) for label in labels]
    finally:
        torch.set_num_threads(threads)
    print(format_table(
        ["model", "params", "deepcopy cpu s", "safe/deepcopy", "cached: safe/deepcopy", "cached: walk/deepcopy",
         "safe/bytesio", "safe/load_state_dict"],
        [[r["model"], f"{r['params']:,}", r["deepcopy_s"], r["safe_vs_deepcopy"], r["safe_cached_vs_deepcopy"],
          r["walk_cached_vs_deepcopy"], r["safe_vs_bytesio"], r["safe_vs_load_state_dict"]] for r in rows],
    ))
    memory_variants = ("deepcopy", "safe_deepcopy") if quick else MEMORY_VARIANTS
    memory = []
    for label in labels:
        peaks = peak_extra_mb(label, memory_variants)
        params_mb = next(r["params"] for r in rows if r["model"] == label) * 4 / 2**20
        memory.append({"model": label, "params_mb": params_mb, **{f"{v}_mb": mb for v, mb in peaks.items()},
                       "safe_vs_deepcopy": peaks["safe_deepcopy"] / peaks["deepcopy"]})
    print()
    print(format_table(
        ["model", "params MB", *[f"{v} MB" for v in memory_variants], "safe/deepcopy"],
        [[m["model"], m["params_mb"], *[m[f"{v}_mb"] for v in memory_variants], m["safe_vs_deepcopy"]]
         for m in memory],
    ))
    return {"depth": DEPTH, "torch": torch.__version__, "clock": "process_time, 1 torch thread",
            "memory_method": "fresh process per variant; VmHWM - VmRSS after clear_refs=5",
            "timing": rows, "peak_memory": memory}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peak"]:
        _probe(*sys.argv[2:4])
    else:
        run(quick="--quick" in sys.argv)
