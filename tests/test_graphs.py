"""graphleaf_edu.graphs: what the picture shows, that it is the same everywhere, its fallbacks."""
from __future__ import annotations

import base64
import copy
import itertools
import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_cases import verdict_cases

from graphleaf_edu.diagnose import describe
from graphleaf_edu.graphs import (
    AutogradGraph,
    GraphCounts,
    GraphFreedError,
    GraphvizNotFoundError,
    draw,
    grad_fn_walk,
    leaves_behind,
)

SHAPE_KIND = {"box": "leaf", "ellipse": "backward", "hexagon": "non_leaf", "note": "saved"}
_NODE = re.compile(r"^\t+(\w+) \[(.*)\]$")
_EDGE = re.compile(r"^\t+(\w+) -> (\w+)(?: \[(.*)\])?$")
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^ ]+)')


def parse(source: str):
    """DOT text -> (graph nodes, legend nodes, graph edges); attrs unquoted, labels as one line."""
    nodes, legend, edges = {}, {}, []
    for line in source.splitlines():
        if match := _EDGE.match(line):
            tail, head, attrs = match.groups()
            if not tail.startswith("legend"):
                edges.append((tail, head, _attrs(attrs or "")))
        elif (match := _NODE.match(line)) and match[1] not in ("graph", "node", "edge"):
            node_id, attrs = match.groups()
            (legend if node_id.startswith("legend") else nodes)[node_id] = _attrs(attrs)
    return nodes, legend, edges


def _attrs(text: str) -> dict[str, str]:
    found = {key: value.strip('"') for key, value in _ATTR.findall(text)}
    found["label"] = found.get("label", "").replace("\\n", " | ")
    found["kind"] = SHAPE_KIND.get(found.get("shape", ""), "other")
    return found


def labels_of(graph: AutogradGraph, kind: str) -> list[str]:
    nodes, _, _ = parse(graph.source)
    return sorted(attrs["label"] for attrs in nodes.values() if attrs["kind"] == kind)


def node_with(graph: AutogradGraph, label_start: str) -> tuple[str, dict]:
    nodes, _, _ = parse(graph.source)
    found = [(i, a) for i, a in nodes.items() if a["label"].startswith(label_start)]
    assert len(found) == 1, f"expected one node labelled {label_start!r}, got {found}"
    return found[0]


def edges_between(graph: AutogradGraph) -> set[tuple[str, str]]:
    nodes, _, edges = parse(graph.source)
    return {(nodes[t]["label"], nodes[h]["label"]) for t, h, _ in edges}


@pytest.fixture
def x():
    return torch.ones(3, requires_grad=True)


# --- what the picture shows -------------------------------------------------------------------


def test_a_leaf_alone_is_one_leaf_node(x):
    graph = draw(x, names={"x": x})
    assert graph.counts == GraphCounts(leaves=1, backward=0, non_leaves=0)
    assert repr(graph) == "AutogradGraph(1 node: 1 leaf, 0 backward)"
    assert labels_of(graph, "leaf") == ["x | (3) float32"]


def test_x_times_2_is_non_leaf_because_of_mul(x):
    y = x * 2
    graph = draw(y, names={"x": x, "y": y})
    assert graph.counts == GraphCounts(leaves=1, backward=2, non_leaves=1)
    assert repr(graph) == "AutogradGraph(4 nodes: 1 leaf, 2 backward, 1 non-leaf)"
    assert edges_between(graph) == {
        ("x | (3) float32", "AccumulateGrad"),
        ("AccumulateGrad", "MulBackward0"),
        ("MulBackward0", "y | (3) float32"),
    }
    assert labels_of(graph, "non_leaf") == ["y | (3) float32"]


def test_two_leaves_multiplied_and_a_named_tensor_outside_the_graph():
    a, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    product = a * b
    graph = draw(product, names={"a": a, "b": b})
    assert repr(graph) == "AutogradGraph(6 nodes: 2 leaves, 3 backward, 1 non-leaf)"
    assert labels_of(graph, "backward") == ["AccumulateGrad", "AccumulateGrad", "MulBackward0"]
    with_unused = draw(product, names={"a": a, "b": b, "unused": torch.zeros(1)})
    assert labels_of(with_unused, "leaf") == [
        "a | (2) float32", "b | (2) float32", "unused | (1) float32"]


def test_linear_layer_with_named_parameters():
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 2)
    out = layer(torch.randn(3, 4))
    graph = draw(out, names=[layer, {"out": out}])
    assert labels_of(graph, "leaf") == ["bias | (2) float32", "weight | (2, 4) float32"]
    assert labels_of(graph, "backward") == sorted(
        ["AddmmBackward0", "TBackward0", "AccumulateGrad", "AccumulateGrad"])
    assert labels_of(graph, "non_leaf") == ["out | (3, 2) float32"]
    assert ("weight | (2, 4) float32", "AccumulateGrad") in edges_between(graph)
    assert draw(out, names=dict(layer.named_parameters())).source == draw(out, names=layer).source


def test_a_tensor_given_two_names_shows_both():
    layer = torch.nn.Linear(2, 1)
    graph = draw(layer(torch.ones(1, 2)), names=[layer, {"w": layer.weight}])
    assert "weight, w | (1, 2) float32" in labels_of(graph, "leaf")


def test_a_detached_copy_is_an_isolated_leaf(x):
    y = x * 2
    y_copy = y.detach()
    graph = draw((y, y_copy), names={"y": y, "y_copy": y_copy})
    copy_id, copy_attrs = node_with(graph, "y_copy")
    assert copy_attrs["kind"] == "leaf"
    _, _, edges = parse(graph.source)
    assert all(copy_id not in (tail, head) for tail, head, _ in edges)
    assert graph.counts == GraphCounts(leaves=2, backward=2, non_leaves=1)


def test_multiple_roots_share_one_graph(x):
    doubled, shifted = x * 2, x + 1
    graph = draw((doubled, shifted))
    assert graph.counts == GraphCounts(leaves=1, backward=3, non_leaves=2)
    assert labels_of(graph, "non_leaf") == ["output[0] | (3) float32", "output[1] | (3) float32"]
    assert labels_of(graph, "backward") == ["AccumulateGrad", "AddBackward0", "MulBackward0"]


def test_accumulate_grad_is_counted_as_a_backward_node_not_a_grad_fn(x):
    # AccumulateGrad is no tensor's grad_fn (lesson 00): the words the user reads must not call it one.
    graph = draw((x * 2).sum(), names={"x": x})
    assert repr(graph) == "AutogradGraph(5 nodes: 1 leaf, 3 backward, 1 non-leaf)"
    assert "grad_fn" not in repr(graph)
    kinds = {line.split()[2]: line.split()[1] for line in graph.outline().splitlines() if len(line.split()) > 2}
    assert kinds["AccumulateGrad"] == kinds["MulBackward0"] == kinds["SumBackward0"] == "backward"
    assert "grad_fn" not in graph.outline()
    _, legend, _ = parse(graph.source)
    assert next(a["label"] for a in legend.values() if a["kind"] == "backward").startswith("backward node")


def test_a_named_intermediate_hangs_off_its_grad_fn(x):
    y = x * 2
    z = y.exp().sum()
    graph = draw(z, names={"x": x, "y": y})
    assert ("MulBackward0", "y | (3) float32") in edges_between(graph)
    assert ("MulBackward0", "ExpBackward0") in edges_between(graph)
    assert ("SumBackward0", "output | () float32") in edges_between(graph)
    assert graph.counts == GraphCounts(leaves=1, backward=4, non_leaves=2)


def test_outline_lists_every_drawn_node_with_its_inputs(x):
    graph = draw(x * 2, names={"x": x})
    lines = graph.outline().splitlines()
    nodes, _, _ = parse(graph.source)
    assert len(lines) == len(nodes)
    assert any(re.fullmatch(r"n\d+  backward   MulBackward0  <- n\d+", line) for line in lines)
    assert any("leaf       x  (3) float32" in line for line in lines)


# --- highlight and legend ---------------------------------------------------------------------


def test_highlight_marks_non_leaf_red_and_leaves_ok(x):
    y = x * 2
    y_copy = y.detach()
    graph = draw(y, names={"x": x, "y": y, "y_copy": y_copy}, highlight=[y, y_copy, x])
    _, y_attrs = node_with(graph, "y |")
    assert y_attrs["label"].endswith("cannot deepcopy")
    assert (y_attrs["color"], y_attrs["peripheries"]) == ("#D55E00", "2")
    for name in ("x |", "y_copy |"):
        _, attrs = node_with(graph, name)
        assert attrs["label"].endswith("copy OK") and attrs["color"] == "#009E73"
    _, legend, _ = parse(graph.source)
    legend_labels = {attrs["label"] for attrs in legend.values()}
    assert {"highlighted: | cannot deepcopy", "highlighted: | copy OK"} <= legend_labels


def test_highlight_accepts_one_tensor_and_draws_it_if_absent(x):
    other = torch.zeros(2, requires_grad=True) * 3
    graph = draw(x, highlight=other)
    assert labels_of(graph, "non_leaf") == ["tensor | (2) float32 | cannot deepcopy"]


def _copy_fails(tensor: torch.Tensor) -> bool:
    try:
        copy.deepcopy(tensor)
    except RuntimeError:
        return True
    return False


@pytest.mark.parametrize("name", list(verdict_cases()))
def test_highlight_verdict_is_describe_s_and_real_deepcopy_s(name):
    tensor = verdict_cases()[name]
    graph = draw(tensor, names={name: tensor}, highlight=tensor)
    _, attrs = node_with(graph, f"{name} |")
    info = describe(tensor)
    assert ("copy OK" in attrs["label"]) == info.deepcopy_ok == (not _copy_fails(tensor))
    assert ("cannot deepcopy" in attrs["label"]) == (not info.deepcopy_ok)
    if not info.deepcopy_ok and tensor.is_leaf:  # a leaf's picture cannot show why: the mark says it
        assert attrs["label"].endswith(f"cannot deepcopy | {info.deepcopy_blocker}")


def test_the_two_cases_a_local_verdict_got_wrong():
    cases = verdict_cases()
    parameter = cases["parameter_with_nonleaf_grad"]
    assert not parameter.grad.is_leaf  # yet Parameter.__deepcopy__ drops .grad: deepcopy works
    assert "copy OK" in draw(parameter, names={"p": parameter}, highlight=parameter).source
    leaf = cases["leaf_with_nonleaf_attribute"]
    assert leaf.is_leaf and leaf.grad is None  # yet deepcopy copies leaf.extra, a non-leaf
    source = draw(leaf, names={"t": leaf}, highlight=leaf).source
    assert "cannot deepcopy\\n.extra is non-leaf (grad_fn=MulBackward0)" in source


def test_legend_shows_the_kinds_with_the_graph_s_own_styles(x):
    graph = draw(x * 2, names={"x": x})
    nodes, legend, _ = parse(graph.source)
    assert "subgraph cluster_legend" in graph.source
    assert [a["kind"] for a in legend.values()] == ["leaf", "backward", "non_leaf"]
    for attrs in nodes.values():
        twin = next(a for a in legend.values() if a["kind"] == attrs["kind"])
        assert attrs["fillcolor"] == twin["fillcolor"]
    assert not any("highlighted" in a["label"] or a["kind"] == "saved" for a in legend.values())


def test_backward_nodes_of_the_legend_are_not_counted(x):
    graph = draw(x * 2)
    nodes, legend, _ = parse(graph.source)
    assert len(nodes) == graph.counts.nodes and len(legend) == 3


# --- colour-blind safety ----------------------------------------------------------------------

# Machado, Oliveira & Fernandes (2009), severity 1.0, applied to linear RGB.
CVD = {
    "normal vision": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
# CIEDE2000: ~2.3 is a just-noticeable difference for patches side by side. Nodes are small and
# apart, and must be *named* differently, so we ask for more than four JNDs.
MIN_DELTA_E = 10.0


def _linear_rgb(hex_colour: str) -> np.ndarray:
    srgb = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def _lab(linear: np.ndarray) -> tuple[float, float, float]:
    to_xyz = np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                       [0.0193339, 0.1191920, 0.9503041]])
    xyz = to_xyz @ np.clip(linear, 0, 1) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def delta_e_2000(lab1, lab2) -> float:
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7)))
    a1, a2 = a1 * (1 + g), a2 * (1 + g)
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1, h2 = math.degrees(math.atan2(b1, a1)) % 360, math.degrees(math.atan2(b2, a2)) % 360
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    d_big_h = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    def cos(degrees: float) -> float:
        return math.cos(math.radians(degrees))

    t = (1 - 0.17 * cos(h_mean - 30) + 0.24 * cos(2 * h_mean) + 0.32 * cos(3 * h_mean + 6)
         - 0.20 * cos(4 * h_mean - 63))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    r_t = (-2 * math.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7))
           * math.sin(math.radians(60 * math.exp(-(((h_mean - 275) / 25) ** 2)))))
    dl, dc, dhh = (l2 - l1) / s_l, (c2 - c1) / s_c, d_big_h / s_h
    return math.sqrt(dl ** 2 + dc ** 2 + dhh ** 2 + r_t * dc * dhh)


def test_delta_e_2000_matches_published_reference_pairs():
    # Sharma, Wu & Dalal (2005), test data pairs 1, 7 and 17.
    pairs = [((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
             ((50, 0, 0), (50, -1, 2), 2.3669),
             ((50, 2.5, 0), (73, 25, -18), 27.1492)]
    for first, second, expected in pairs:
        assert delta_e_2000(first, second) == pytest.approx(expected, abs=1e-4)


def _palette_graph() -> AutogradGraph:
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    return draw(y.exp(), names={"x": x, "y": y}, highlight=[y, y.detach()], show_saved=True)


def test_kinds_stay_distinguishable_under_colour_blindness():
    _, legend, _ = parse(_palette_graph().source)
    fills = {a["kind"]: a["fillcolor"] for a in legend.values() if "highlighted" not in a["label"]}
    assert sorted(fills) == ["backward", "leaf", "non_leaf", "saved"]
    assert len({a["shape"] for a in legend.values() if "highlighted" not in a["label"]}) == 4
    borders = [a["color"] for a in legend.values() if "highlighted" in a["label"]]
    for vision, matrix in CVD.items():
        for colours in (list(fills.values()), borders):
            for first, second in itertools.combinations(colours, 2):
                distance = delta_e_2000(_lab(matrix @ _linear_rgb(first)),
                                        _lab(matrix @ _linear_rgb(second)))
                assert distance >= MIN_DELTA_E, (vision, first, second, distance)


def test_black_labels_stay_readable_on_every_fill():
    _, legend, _ = parse(_palette_graph().source)
    for attrs in legend.values():
        luminance = float(np.array([0.2126, 0.7152, 0.0722]) @ _linear_rgb(attrs["fillcolor"]))
        assert (luminance + 0.05) / 0.05 >= 4.5, attrs  # WCAG AA contrast against black text


# --- saved tensors and attributes -------------------------------------------------------------


def test_show_saved_draws_saved_tensors_with_dashed_edges(x):
    y = x.exp()
    graph = draw(y, names={"x": x}, show_saved=True)
    assert graph.counts.saved == 1
    saved_id, saved = node_with(graph, "result |")
    assert saved["kind"] == "saved"
    nodes, _, edges = parse(graph.source)
    [(tail, attrs)] = [(t, a) for t, h, a in edges if h == saved_id]
    assert nodes[tail]["label"] == "ExpBackward0"
    assert (attrs["dir"], attrs["style"]) == ("none", "dashed")


def test_a_saved_leaf_is_the_leaf_node_itself(x):
    graph = draw(x * x, names={"x": x}, show_saved=True)
    assert graph.counts == GraphCounts(leaves=1, backward=2, non_leaves=1, saved=0)
    leaf_id, _ = node_with(graph, "x |")
    _, _, edges = parse(graph.source)
    assert sum(1 for _, head, attrs in edges if head == leaf_id and attrs.get("dir") == "none") == 2


def test_show_saved_after_backward_says_what_to_do(x):
    y = (x * x).sum()
    y.backward()
    with pytest.raises(GraphFreedError, match=r"before backward\(\).*retain_graph=True") as caught:
        draw(y, show_saved=True)
    assert isinstance(caught.value, RuntimeError)
    assert draw(y).counts.backward == 3  # the structure survives backward()


def test_show_saved_after_backward_with_retain_graph_works(x):
    y = x.exp().sum()
    y.backward(retain_graph=True)
    assert draw(y, show_saved=True).counts.saved == 1


class _Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor):
        ctx.save_for_backward(tensor)
        return tensor ** 3

    @staticmethod
    def backward(ctx, grad):
        (tensor,) = ctx.saved_tensors
        return 3 * tensor ** 2 * grad


def test_custom_function_saved_tensors(x):
    graph = draw(_Cube.apply(x + 1), show_saved=True)  # AddBackward0 saves nothing
    assert graph.counts.saved == 1
    assert labels_of(graph, "saved") == ["saved_tensors[0] | (3) float32"]
    assert "_CubeBackward" in labels_of(graph, "backward")


def test_show_attrs_lists_saved_arguments_before_and_after_backward(x):
    totals = x.expand(2, 3).sum(dim=1, keepdim=True)
    _, attrs = node_with(draw(totals, show_attrs=True), "SumBackward1")
    assert re.search(r"dim +: \(1,\)\\l", attrs["label"])
    assert re.search(r"keepdim +: True\\l", attrs["label"])
    y = x.exp().sum()
    _, before = node_with(draw(y, show_attrs=True), "ExpBackward0")
    y.backward()
    _, after = node_with(draw(y, show_attrs=True), "ExpBackward0")
    assert "result: [saved tensor]\\l" in before["label"]
    assert "result: [freed by backward()]\\l" in after["label"]
    assert labels_of(draw(y), "backward") == ["AccumulateGrad", "ExpBackward0", "SumBackward0"]


# --- large graphs -----------------------------------------------------------------------------


def _chain(length: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.ones(2, requires_grad=True)
    out = x
    for _ in range(length):
        out = out * 1.0001
    return x, out


def test_a_5000_op_chain_draws_collapsed_without_recursion():
    x, out = _chain(5000)
    graph = draw(out, names={"x": x})
    assert graph.counts == GraphCounts(leaves=1, backward=5001, non_leaves=1, collapsed=4991)
    assert repr(graph).endswith("; 4991 backward nodes collapsed in the picture)")
    assert "4991 more backward nodes in a straight line" in graph.source
    nodes, _, edges = parse(graph.source)
    assert len(nodes) == 13  # x, the note, 5 backward nodes each side (AccumulateGrad is one), output
    assert len(edges) == len(nodes) - 1
    assert graph.svg().count('class="node"') == len(nodes) + 3  # plus three legend nodes


@pytest.mark.parametrize(("length", "collapsed"), [(29, 0), (30, 21)])  # + AccumulateGrad
def test_chains_collapse_only_past_thirty_nodes(length, collapsed):
    _, out = _chain(length)
    graph = draw(out)
    assert graph.counts.collapsed == collapsed
    assert len(labels_of(graph, "backward")) == length + 1 - collapsed


# --- rendering, display, determinism ----------------------------------------------------------


def test_mime_bundle_offers_svg_png_and_a_stable_summary(x):
    graph = draw(x * 2, names={"x": x})
    bundle = graph._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml", "image/png", "text/plain"}
    assert "<svg" in bundle["image/svg+xml"] and "MulBackward0" in bundle["image/svg+xml"]
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert bundle["text/plain"] == "AutogradGraph(4 nodes: 1 leaf, 2 backward, 1 non-leaf)"
    assert graph.png() is graph.png()  # rendered once


def test_labels_carry_no_address_or_device(x):
    source = draw((x * 2).sum(), names={"x": x}, highlight=x, show_saved=True).source
    assert not re.search(r"0x[0-9a-f]{4,}|cpu|cuda|device|\d{9,}", source)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cpu_and_gpu_give_the_same_picture():
    def picture(device: str) -> tuple[str, str]:
        torch.manual_seed(0)
        layer = torch.nn.Linear(4, 2).to(device)
        out = torch.relu(layer(torch.randn(3, 4, device=device)))
        graph = draw(out, names=[layer, {"out": out}], highlight=out)
        return repr(graph), graph.source

    assert picture("cpu") == picture("cuda")


def test_save_writes_svg_and_png(tmp_path, x):
    graph = draw(x * 2)
    assert graph.save(tmp_path / "g.svg").read_text() == graph.svg()
    assert graph.save(str(tmp_path / "g.PNG")).read_bytes() == graph.png()
    with pytest.raises(ValueError, match=r"\.svg or \.png"):
        graph.save(tmp_path / "g.pdf")


def test_the_same_code_draws_the_same_picture_in_process(x):
    first, second = draw(x * 2, names={"x": x}), draw(x * 2, names={"x": x})
    assert first.source == second.source and first.svg() == second.svg()


DRAW_SCRIPT = textwrap.dedent("""
    import hashlib, json, torch
    from graphleaf_edu.graphs import draw
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 2)
    hidden = layer(torch.randn(3, 4))
    out = torch.relu(hidden).sum()
    graph = draw(out, names=[layer, {"hidden": hidden}], highlight=[hidden, hidden.detach()],
                 show_saved=True, show_attrs=True)
    print(json.dumps({"source": graph.source, "text": repr(graph),
                      "svg": hashlib.sha256(graph.svg().encode()).hexdigest(),
                      "png": hashlib.sha256(graph.png()).hexdigest()}))
""")


def _run(script: str, **env: str) -> dict:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120, check=True)
    return json.loads(done.stdout)


def test_two_processes_give_byte_identical_dot_svg_and_png():
    first = _run(DRAW_SCRIPT, PYTHONHASHSEED="1")
    second = _run(DRAW_SCRIPT, PYTHONHASHSEED="2")
    assert first == second
    assert "hidden" in first["source"] and "cannot deepcopy" in first["source"]


MISSING_DOT_SCRIPT = textwrap.dedent("""
    import json, shutil, torch
    from graphleaf_edu.graphs import GraphvizNotFoundError, draw
    assert shutil.which("dot") is None
    x = torch.ones(3, requires_grad=True)
    graph = draw(x * 2, names={"x": x})
    bundle = graph._repr_mimebundle_()
    try:
        graph.save("never.png")
        saved = "no error"
    except GraphvizNotFoundError as err:
        saved = str(err)
    print(json.dumps({"bundle": bundle, "saved": saved, "repr": repr(graph)}))
""")


def _path_without_dot() -> str:
    return os.pathsep.join(folder for folder in os.environ["PATH"].split(os.pathsep)
                           if folder and not Path(folder, "dot").exists())


def test_missing_dot_falls_back_to_text_and_save_explains(tmp_path):
    done = subprocess.run([sys.executable, "-c", MISSING_DOT_SCRIPT], capture_output=True,
                          text=True, env={**os.environ, "PATH": _path_without_dot()},
                          cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result["bundle"]) == ["text/plain"]
    text = result["bundle"]["text/plain"]
    assert text.startswith(result["repr"])
    for expected in ("apt-get install graphviz", "brew install graphviz",
                     "conda install -c conda-forge graphviz", "MulBackward0  <- n",
                     "x  (3) float32", "digraph {"):
        assert expected in text
    assert "brew install graphviz" in result["saved"]
    assert not (tmp_path / "never.png").exists()


def test_missing_dot_in_process_raises_only_when_asked_for_a_picture(monkeypatch, x):
    monkeypatch.setenv("PATH", _path_without_dot())
    graph = draw(x * 2)
    with pytest.raises(GraphvizNotFoundError, match="apt-get install graphviz"):
        graph.svg()
    assert "digraph {" in graph._repr_mimebundle_()["text/plain"]


# --- inputs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda x: draw("y"), TypeError, "root must be a tensor"),
    (lambda x: draw(()), ValueError, "at least one tensor"),
    (lambda x: draw(x, names={"x": 3}), TypeError, "names must map str to tensor"),
    (lambda x: draw(x, names=[x]), TypeError, r"names must be a \{name: tensor\} dict"),
    (lambda x: draw(x, highlight="x"), TypeError, "highlight must be a tensor"),
])
def test_bad_input_gets_a_clear_error(x, call, error, message):
    with pytest.raises(error, match=message):
        call(x)


def test_names_with_quotes_backslashes_and_brackets_are_drawn_literally(x):
    name = 'x "in" C:\\dir<b>'
    graph = draw(x * 2, names={name: x})
    assert f"leaf       {name}  (3) float32" in graph.outline()
    assert "x &quot;in&quot; C:\\dir&lt;b&gt;</text>" in graph.svg()


def test_draw_changes_nothing_it_is_given(x):
    y = x * 2
    y.sum().backward(retain_graph=True)
    names = {"x": x, "y": y}
    roots = [y, x]
    grad_before, fn_before = x.grad.clone(), y.grad_fn
    draw(roots, names=names, highlight=roots, show_saved=True, show_attrs=True)
    assert names == {"x": x, "y": y} and roots == [y, x] and roots[0] is y
    assert torch.equal(x.grad, grad_before) and y.grad_fn is fn_before
    assert x.requires_grad and x.is_leaf and not y.is_leaf


# --- property: counts equal an independent walk -----------------------------------------------

OPS = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: (a - b).exp(),
       lambda a, b: torch.stack([a, b]).sum(0), lambda a, b: a.detach() * b]


def _reachable(roots: list[torch.Tensor]) -> tuple[set[int], set[int]]:
    fns, leaves, todo = set(), set(), [r.grad_fn for r in roots if r.grad_fn is not None]
    while todo:
        fn = todo.pop()
        if id(fn) in fns:
            continue
        fns.add(id(fn))
        if hasattr(fn, "variable"):
            leaves.add(id(fn.variable))
        todo.extend(u for u, _ in fn.next_functions if u is not None)
    return fns, leaves


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.lists(st.tuples(st.integers(0, 4), st.integers(0, 99),
                                             st.integers(0, 99)), min_size=1, max_size=12))
def test_counts_match_an_independent_walk(leaf_count, program):
    values = [torch.ones(2, requires_grad=True) for _ in range(leaf_count)]
    for op, i, j in program:
        values.append(OPS[op](values[i % len(values)], values[j % len(values)]))
    roots = values[-2:]
    graph = draw(tuple(roots))
    fns, leaves = _reachable(roots)
    root_leaves = {id(r) for r in roots if r.grad_fn is None}
    assert graph.counts.backward == len(fns)
    assert graph.counts.leaves == len(leaves | root_leaves)
    assert graph.counts.non_leaves == len({id(r) for r in roots if r.grad_fn is not None})
    nodes, _, edges = parse(graph.source)
    assert len(nodes) == graph.counts.nodes
    assert all(t in nodes and h in nodes for t, h, _ in edges)


def test_highlight_legend_entries_show_the_border_on_a_neutral_node():
    """A highlighted tensor may be a leaf (box) or a non-leaf (hexagon): the legend must not
    suggest one of those shapes, only the border."""
    _, legend, _ = parse(_palette_graph().source)
    marks = [a for a in legend.values() if "highlighted" in a["label"]]
    tensor_shapes = {a["shape"] + a.get("style", "") for a in legend.values() if "highlighted" not in a["label"]}
    assert len(marks) == 2
    for attrs in marks:
        assert attrs["fillcolor"] == "#FFFFFF" and "rounded" in attrs["style"]
        assert attrs["shape"] + attrs["style"] not in tensor_shapes


# --- the one grad_fn walk ---------------------------------------------------------------------


def test_leaves_behind_are_the_leaves_autograd_accumulates_into_once_each(x):
    w = torch.ones(3, requires_grad=True)
    constant = torch.ones(3)  # no grad: not a leaf of the graph
    y = (x * w + x * constant).sum()
    assert [id(t) for t in leaves_behind([y])] == [id(x), id(w)]
    assert leaves_behind([x]) == [] and leaves_behind([x.detach() * 2]) == []


def test_grad_fn_walk_visits_each_node_once_with_its_inputs(x):
    y = x * 2
    z = (y + y).sum()
    walked = list(grad_fn_walk([z.grad_fn]))
    names = [type(fn).__name__ for fn, _ in walked]
    assert names == ["SumBackward0", "AddBackward0", "MulBackward0", "AccumulateGrad"]
    assert [type(u).__name__ for u in walked[1][1]] == ["MulBackward0", "MulBackward0"]


def test_grad_fn_walk_skips_and_records_what_was_walked(x):
    y = x * 2
    seen: dict = {}
    first = [fn for fn, _ in grad_fn_walk([y.grad_fn], walked=seen)]
    assert len(first) == 2 and set(seen) == {id(fn) for fn in first}
    z = y * 3
    assert [fn for fn, _ in grad_fn_walk([z.grad_fn], walked=seen)] == [z.grad_fn]  # y's part was walked


def test_grad_fn_walk_follows_a_long_chain_without_recursion():
    t = torch.ones(1, requires_grad=True)
    y = t
    for _ in range(5000):
        y = y * 1.0
    assert len(leaves_behind([y])) == 1


def test_hypothesis_writes_nothing_into_the_working_tree():
    from hypothesis.configuration import storage_directory

    assert settings.default.database is None
    home = storage_directory(intent_to_write=False).home_directory.resolve()
    assert Path(__file__).resolve().parent.parent not in [home, *home.parents]


def test_collapsing_can_be_switched_off():
    y = torch.ones(1, requires_grad=True)
    for _ in range(40):
        y = y * 1.0
    assert draw(y).counts.collapsed > 0
    full = draw(y, collapse_chains=False)
    assert full.counts.collapsed == 0 and "collapsed" not in full.source
