"""find_nonleaf on a ~1,000-submodule model and on 100,000-element lists, against bare walks.

Baselines measured in the same run: ``list(model.named_modules())``; for lists, bare iteration and
a loop that only reads ``is_leaf``; and ``copy.deepcopy`` of the same object, for scale. Times are
medians of CPU seconds (``time.process_time``): the machine is shared, wall clocks swing.
"""
from __future__ import annotations

import copy
import statistics

import torch
from torch import nn

from bench.copying import cpu_seconds
from bench.harness import format_table
from graphleaf_edu.diagnose import find_nonleaf

ITEMS = 100_000


def many_modules(blocks: int, cached: bool) -> nn.Module:
    """``blocks`` x (Linear, ReLU, LayerNorm) in nested Sequentials: 4 * blocks + 1 modules;
    ``cached``: a forward hook keeps the output of 4 of the ReLUs."""
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.LayerNorm(8)) for _ in range(blocks)])
    if cached:
        for block in list(model)[:: blocks // 3]:
            block[1].register_forward_hook(lambda module, args, out: setattr(module, "seen", out))
        model(torch.randn(2, 8))
    return model


def tensor_list(nonleaf_every: int | None, length: int) -> list:
    x = torch.randn(1, requires_grad=True)
    items = [torch.zeros(1) for _ in range(length)]
    if nonleaf_every:
        for i in range(0, length, nonleaf_every):
            items[i] = x * 2
    return items


def _bare_iteration(items: list) -> None:
    for _ in items:
        pass


def _is_leaf_loop(items: list) -> int:
    return sum(1 for t in items if not t.is_leaf)


def cpu_median_s(fn, repeats: int) -> float:
    fn()  # warm-up
    return statistics.median(cpu_seconds(fn) for _ in range(repeats))


def _row(name: str, subject, size: int, baseline_name: str, baseline, repeats: int) -> dict:
    found = len(find_nonleaf(subject))
    ours = cpu_median_s(lambda: find_nonleaf(subject), repeats)
    base = cpu_median_s(lambda: baseline(subject), repeats)
    return {"case": name, "size": size, "found": found, "find_nonleaf_ms": ours * 1e3,
            "baseline": baseline_name, "baseline_ms": base * 1e3, "ratio": ours / base}


def _with_deepcopy(row: dict, subject, repeats: int) -> dict:
    seconds = cpu_median_s(lambda: copy.deepcopy(subject), repeats)
    return {**row, "deepcopy_ms": seconds * 1e3, "vs_deepcopy": row["find_nonleaf_ms"] / (seconds * 1e3)}


def run(quick: bool = False) -> dict:
    """Rows with a deepcopy column have no non-leaf tensor, so that deepcopy runs to the end."""
    blocks = 25 if quick else 250
    repeats = 3 if quick else 7
    n_items = ITEMS // 10 if quick else ITEMS
    rows = []
    for cached in (False, True):
        model = many_modules(blocks, cached)
        size = sum(1 for _ in model.modules())
        row = _row("modules" + (" with cached outputs" if cached else ""), model, size,
                   "list(named_modules())", lambda m: list(m.named_modules()), repeats)
        rows.append(row if cached else _with_deepcopy(row, model, repeats))
    for every, label in ((None, "tensors"), (n_items // 10, "tensors, 10 non-leaf")):
        items = tensor_list(every, n_items)
        for baseline_name, baseline in (("bare iteration", _bare_iteration), ("is_leaf loop", _is_leaf_loop)):
            rows.append(_row(f"list of {label}", items, n_items, baseline_name, baseline, repeats))
        if not every:
            rows[-1] = _with_deepcopy(rows[-1], items, 1)
    numbers = [float(i) for i in range(n_items)]
    rows.append(_with_deepcopy(
        _row("list of floats", numbers, n_items, "bare iteration", _bare_iteration, repeats), numbers, repeats
    ))
    print(format_table(
        ["case", "size", "found", "find_nonleaf ms", "baseline", "baseline ms", "ratio", "deepcopy ms",
         "find/deepcopy"],
        [[r["case"], f"{r['size']:,}", r["found"], r["find_nonleaf_ms"], r["baseline"], r["baseline_ms"],
          r["ratio"], r.get("deepcopy_ms", "-"), r.get("vs_deepcopy", "-")] for r in rows],
    ))
    return {"repeats": repeats, "rows": rows}


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
