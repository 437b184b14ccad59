"""draw() on chains of 10 to 5,000 ops: DOT build time against torchviz's make_dot, render times.

Long straight chains are collapsed in the picture; the "full" columns render the same graph with
collapsing switched off, the cost a picture of every node would have.
"""
from __future__ import annotations

import graphviz
import torch
from torchviz import make_dot

from bench.harness import format_table, measure
from graphleaf_edu import graphs


def chain(ops: int) -> tuple[torch.Tensor, torch.Tensor]:
    leaf = torch.ones(4, requires_grad=True)
    out = leaf
    for _ in range(ops):
        out = out * 1.0001
    return leaf, out


def render_seconds(source: str, fmt: str, repeats: int, warmup: int) -> tuple[float, int]:
    picture = graphviz.Source(source)
    size = len(picture.pipe(format=fmt, quiet=True))
    return measure(lambda: picture.pipe(format=fmt, quiet=True), repeats=repeats,
                   warmup=warmup).median_s, size


def torchviz_build_seconds(out: torch.Tensor, leaf: torch.Tensor, repeats: int) -> float | None:
    try:
        return measure(lambda: make_dot(out, params={"x": leaf}).source, repeats=repeats,
                       warmup=0).median_s
    except RecursionError:
        return None


def measure_size(ops: int, repeats: int, warmup: int) -> dict:
    leaf, out = chain(ops)
    drawn = graphs.draw(out, names={"x": leaf})
    build = measure(lambda: graphs.draw(out, names={"x": leaf}).source, repeats=repeats,
                    warmup=warmup).median_s
    torchviz = torchviz_build_seconds(out, leaf, repeats)
    full = graphs.draw(out, names={"x": leaf}, collapse_chains=False)
    row = {"ops": ops, "nodes": drawn.counts.nodes,
           "drawn_nodes": len(drawn.outline().splitlines()),
           "build_s": build, "torchviz_build_s": torchviz,
           "build_vs_torchviz": build / torchviz if torchviz else None}
    for label, source in (("", drawn.source), ("full_", full.source)):
        for fmt in ("svg", "png"):
            seconds, size = render_seconds(source, fmt, repeats, warmup)
            row[f"{label}{fmt}_s"], row[f"{label}{fmt}_bytes"] = seconds, size
    row["svg_vs_full_svg"] = row["svg_s"] / row["full_svg_s"]
    return row


def run(quick: bool = False) -> dict:
    sizes = (10, 100) if quick else (10, 100, 1_000, 5_000)
    repeats, warmup = (1, 0) if quick else (3, 1)
    rows = [measure_size(ops, repeats, warmup) for ops in sizes]
    headers = ["ops", "nodes", "drawn", "build s", "torchviz s", "build/tv", "svg s", "png s",
               "svg KB", "full svg s", "full png s", "full svg KB", "svg/full"]
    print(format_table(headers, [[
        r["ops"], r["nodes"], r["drawn_nodes"], r["build_s"],
        "RecursionError" if r["torchviz_build_s"] is None else r["torchviz_build_s"],
        "-" if r["build_vs_torchviz"] is None else r["build_vs_torchviz"],
        r["svg_s"], r["png_s"], r["svg_bytes"] / 1000, r["full_svg_s"], r["full_png_s"],
        r["full_svg_bytes"] / 1000, r["svg_vs_full_svg"]] for r in rows]))
    return {"graphviz": ".".join(map(str, graphviz.version())), "repeats": repeats, "rows": rows}


if __name__ == "__main__":
    run()
