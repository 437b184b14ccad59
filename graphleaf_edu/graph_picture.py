"""What a drawn autograd graph is: its nodes as DOT, their styles and legend, SVG/PNG, and a text outline.

``graphs.draw`` builds the nodes and edges; this module turns them into the picture, in torchviz's
conventions (``resize_graph``), and renders it once per format on demand.
"""
from __future__ import annotations

import base64
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import graphviz
from torchviz.dot import resize_graph

from graphleaf_edu.i18n import N_, say

__all__ = ["AutogradGraph", "GraphCounts", "GraphvizNotFoundError"]


# Okabe-Ito colours (plus a neutral grey), checked under simulated colour blindness in the tests.
_KIND_STYLE = {
    "leaf": {"shape": "box", "fillcolor": "#56B4E9"},  # sky blue
    # grey, as torchviz's backward nodes: autograd's Node objects, every grad_fn and each AccumulateGrad
    "backward": {"shape": "ellipse", "fillcolor": "#D9D9D9"},
    "non_leaf": {"shape": "hexagon", "fillcolor": "#E69F00"},  # orange
    "saved": {"shape": "note", "fillcolor": "#F0E442"},  # yellow
    "collapsed": {"shape": "box", "style": "dashed,filled", "fillcolor": "white"},
    # a legend entry for a highlight mark: the border is what counts, on any kind of node
    "mark": {"shape": "box", "style": "rounded,filled", "fillcolor": "#FFFFFF"},
}
CANNOT_COPY = "cannot deepcopy"
COPY_OK = "copy OK"
_MARK_STYLE = {
    CANNOT_COPY: {"color": "#D55E00", "penwidth": "2.5", "peripheries": "2"},  # vermillion
    COPY_OK: {"color": "#009E73", "penwidth": "2.5"},  # bluish green
}
# (shown when the picture has this kind or mark, or "always"), kind, mark, label
_LEGEND = (
    ("always", "leaf", None, "leaf tensor\\ngrad_fn is None"),
    ("always", "backward", None, "backward node\\na grad_fn, or AccumulateGrad"),
    ("always", "non_leaf", None, "non-leaf tensor\\nmade by the grad_fn pointing at it"),
    ("saved", "saved", None, "saved tensor\\nkept for backward()"),
    (CANNOT_COPY, "mark", CANNOT_COPY, "highlighted:\\ncannot deepcopy"),
    (COPY_OK, "mark", COPY_OK, "highlighted:\\ncopy OK"),
)
_NODE_ATTR = {"style": "filled", "shape": "box", "align": "left", "fontsize": "10",
              "height": "0.2", "fontname": "monospace"}
_SAVED_EDGE = {"dir": "none", "style": "dashed"}
_FALLBACK_LINES = 80
BR = "\\n"  # a line break inside a DOT label
LEFT_BR = "\\l"  # the same, ending a left-aligned line

_INSTALL_HINT = N_("""\
Graphviz's `dot` program was not found, so the graph cannot be drawn as a picture.
Install it, then run the cell again:
    sudo apt-get install graphviz          # Debian / Ubuntu
    brew install graphviz                  # macOS
    conda install -c conda-forge graphviz  # conda
(`pip install graphviz` installs only the Python bindings, not `dot`.)""")


class GraphvizNotFoundError(RuntimeError):
    """Graphviz's ``dot`` program is not on PATH."""


@dataclass(frozen=True)
class GraphCounts:
    """How many nodes of each kind the graph has (collapsed ones included).

    ``backward`` counts backward nodes (autograd's ``Node`` objects): every ``grad_fn`` and each
    ``AccumulateGrad``, which is no tensor's ``grad_fn``.
    """

    leaves: int
    backward: int
    non_leaves: int
    saved: int = 0
    collapsed: int = 0

    @property
    def nodes(self) -> int:
        return self.leaves + self.backward + self.non_leaves + self.saved

    def summary(self) -> str:
        parts = [_plural(self.leaves, "leaf", "leaves"), f"{self.backward} backward"]
        if self.non_leaves:
            parts.append(f"{self.non_leaves} non-leaf")
        if self.saved:
            parts.append(f"{self.saved} saved")
        text = f"{_plural(self.nodes, 'node', 'nodes')}: {', '.join(parts)}"
        if self.collapsed:
            text += f"; {self.collapsed} backward nodes collapsed in the picture"
        return f"AutogradGraph({text})"


class AutogradGraph:
    """A drawn autograd graph, as ``draw`` returns it: shown as a picture in Jupyter, as a summary in text.

    ``svg()`` and ``png()`` render the picture with Graphviz's ``dot`` once, on first use;
    ``save(path)`` writes a ``.svg`` or ``.png`` file; ``outline()`` is the same graph as text
    (no ``dot`` needed), ``source`` its DOT source. Without ``dot``, Jupyter shows the outline and
    says how to install Graphviz; ``svg()``, ``png()`` and ``save()`` raise ``GraphvizNotFoundError``.

    Attributes:
        counts: how many nodes of each kind (leaves, backward nodes: every ``grad_fn`` and each
            ``AccumulateGrad``; non-leaf tensors; saved tensors).
        source: the DOT source of the picture.

    Example:
        >>> graph = gl.draw(torch.ones(3, requires_grad=True) * 2)
        >>> graph
        AutogradGraph(4 nodes: 1 leaf, 2 backward, 1 non-leaf)
        >>> print(graph.outline())
        n1  non_leaf   output  (3) float32  <- n2
        n2  backward   MulBackward0  <- n3
        n3  backward   AccumulateGrad  <- n4
        n4  leaf       (3) float32
        >>> graph.svg().startswith("<?xml")
        True
    """

    def __init__(self, digraph: graphviz.Digraph, counts: GraphCounts, outline: str):
        self._digraph = digraph
        self.counts = counts
        self._outline = outline
        self._rendered: dict[str, bytes] = {}

    @property
    def source(self) -> str:
        return str(self._digraph.source)

    def outline(self) -> str:
        """The picture as text: one line per node with its kind and the nodes pointing at it."""
        return self._outline

    def svg(self) -> str:
        return self._render("svg").decode("utf-8")

    def png(self) -> bytes:
        return self._render("png")

    def save(self, path: str | Path) -> Path:
        """Write the picture to a ``.svg`` or ``.png`` file and return its path."""
        path = Path(path)
        fmt = path.suffix.lower().lstrip(".")
        if fmt not in ("svg", "png"):
            raise ValueError(say("save() writes .svg or .png files; got {name!r}.", name=path.name))
        path.write_bytes(self._render(fmt))
        return path

    def _render(self, fmt: str) -> bytes:
        if fmt not in self._rendered:
            try:
                self._rendered[fmt] = self._digraph.pipe(format=fmt, quiet=True)
            except graphviz.ExecutableNotFound as err:
                raise GraphvizNotFoundError(say(_INSTALL_HINT)) from err
        return self._rendered[fmt]

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        try:
            bundle = {"image/svg+xml": self.svg(),
                      "image/png": base64.b64encode(self.png()).decode("ascii")}
        except (GraphvizNotFoundError, graphviz.CalledProcessError) as err:
            reason = say(_INSTALL_HINT) if isinstance(err, GraphvizNotFoundError) else str(err)
            return {"text/plain": self._fallback_text(reason)}
        bundle["text/plain"] = repr(self)
        return bundle

    def _fallback_text(self, reason: str) -> str:
        return "\n\n".join([repr(self), reason, say("The graph as text:") + "\n" + _clip(self._outline),
                            say("DOT source (AutogradGraph.source):") + "\n" + _clip(self.source)])

    def __repr__(self) -> str:
        return self.counts.summary()


@dataclass
class Node:
    kind: str
    label: str
    mark: str | None = None
    why: str = ""

    def text(self) -> str:
        return BR.join(line for line in (self.label, self.mark, self.why) if line)


@dataclass(frozen=True)
class Edge:
    tail: str
    head: str
    saved: bool = False


def escape(text: str) -> str:
    return text.replace("\\", "\\\\")


def digraph(nodes: dict[str, Node], edges: list[Edge]) -> graphviz.Digraph:
    dot = graphviz.Digraph(node_attr=_NODE_ATTR)
    for node_id, node in nodes.items():
        dot.node(node_id, node.text(), **_style(node.kind, node.mark))
    for edge in edges:
        dot.edge(edge.tail, edge.head, **(_SAVED_EDGE if edge.saved else {}))
    _add_legend(dot, _legend_entries(nodes.values()))
    resize_graph(dot)
    return dot


def _style(kind: str, mark: str | None) -> dict[str, str]:
    style = dict(_KIND_STYLE[kind])
    if mark:
        style.update(_MARK_STYLE[mark])
    return style


def _legend_entries(nodes: Iterable[Node]) -> list[tuple[str, str | None, str]]:
    present = {"always"} | {node.kind for node in nodes} | {node.mark for node in nodes}
    return [(kind, mark, label) for shown_when, kind, mark, label in _LEGEND
            if shown_when in present]


def _add_legend(dot: graphviz.Digraph, entries: list[tuple[str, str | None, str]]) -> None:
    with dot.subgraph(name="cluster_legend") as legend:
        legend.attr(label="legend", style="dashed", fontname="monospace", fontsize="10")
        for index, (kind, mark, label) in enumerate(entries):
            legend.node(f"legend{index + 1}", label, **_style(kind, mark))
        for index in range(1, len(entries)):
            legend.edge(f"legend{index}", f"legend{index + 1}", style="invis")


def outline_of(nodes: dict[str, Node], edges: list[Edge]) -> str:
    inputs = defaultdict(list)
    for edge in edges:
        inputs[edge.head].append(edge.tail + (" (saved)" if edge.saved else ""))
    width = max(len(node_id) for node_id in nodes)
    lines = []
    for node_id, node in nodes.items():
        line = f"{node_id:>{width}}  {node.kind:<9}  {_plain(node.text())}"
        if inputs[node_id]:
            line += "  <- " + ", ".join(inputs[node_id])
        lines.append(line)
    return "\n".join(lines)


def _plain(label: str) -> str:
    """A DOT label on one line: its line breaks become two spaces, escaped characters plain."""
    return re.sub(r"\\(.)", lambda esc: "  " if esc[1] in "nl" else esc[1], label).strip()


def _clip(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= _FALLBACK_LINES:
        return text
    hidden = len(lines) - _FALLBACK_LINES
    return "\n".join(lines[:_FALLBACK_LINES] + [say("... {hidden} more lines", hidden=hidden)])


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"
