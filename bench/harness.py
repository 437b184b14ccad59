"""Timing and memory helpers shared by every benchmark: medians of repeats after a warm-up."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Timing:
    median_s: float
    min_s: float
    max_s: float
    repeats: int

    def ratio_to(self, baseline: Timing) -> float:
        return self.median_s / baseline.median_s

    def as_dict(self) -> dict:
        return asdict(self)


def measure(fn: Callable[[], object], *, repeats: int = 5, warmup: int = 1) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then ``repeats`` times timed."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return Timing(statistics.median(samples), min(samples), max(samples), repeats)


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile, e.g. ``fraction=0.95`` for p95."""
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def format_table(headers: list[str], rows: list[list[object]]) -> str:
    """A plain-text table with aligned columns (for the terminal and the benchmarks page)."""
    cells = [headers] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
