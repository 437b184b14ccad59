"""Pictures of the autograd graph that show why a tensor can or cannot be deep-copied.

``draw(y)`` keeps torchviz's look (tensor boxes labelled by shape, backward nodes named by class,
``AccumulateGrad`` tying each leaf in) but walks ``grad_fn.next_functions`` itself: torchviz's
``make_dot`` recurses (``RecursionError`` near 1,500 chained ops) and names nodes by ``id()``, so
its DOT differs on every run. Here the walk is iterative and ids are numbered in walk order.
That walk is the package's one walk of the graph: ``grad_fn_walk`` and ``leaves_behind``.
A highlighted tensor is marked with ``diagnose.deepcopy_blocker``'s verdict.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch
from torchviz.dot import SAVED_PREFIX

from graphleaf_edu.diagnose import deepcopy_blocker
from graphleaf_edu.graph_picture import (
    BR,
    CANNOT_COPY,
    COPY_OK,
    LEFT_BR,
    AutogradGraph,
    Edge,
    GraphCounts,
    GraphvizNotFoundError,
    Node,
    digraph,
    escape,
    outline_of,
)
from graphleaf_edu.i18n import say, speaking

__all__ = ["AutogradGraph", "GraphCounts", "GraphFreedError", "GraphvizNotFoundError", "draw", "grad_fn_walk",
           "leaves_behind"]


GradFn = Any  # a grad_fn node (torch.autograd.graph.Node); its saved values are read by name

# A straight run of more backward nodes than this is drawn as its two ends and a note.
_LONGEST_CHAIN = 30
_CHAIN_END = 5
_MAX_ATTR_CHARS = 50
_FREED = object()


class GraphFreedError(RuntimeError):
    """The saved tensors to show were already freed by ``backward()``."""


def draw(root: torch.Tensor | Sequence[torch.Tensor], *,
         names: Mapping[str, torch.Tensor] | torch.nn.Module | Sequence[Mapping[str, torch.Tensor] | torch.nn.Module] | None = None,
         highlight: torch.Tensor | Sequence[torch.Tensor] | None = None, show_attrs: bool = False,
         show_saved: bool = False, collapse_chains: bool = True) -> AutogradGraph:
    """Draw the autograd graph behind ``root``: leaves, backward nodes and the tensors named.

    Torchviz's conventions (tensor boxes labelled by shape, backward nodes named by class,
    ``AccumulateGrad`` tying each leaf in), with deterministic node ids, a colour and a shape per
    kind of node, and a legend.

    Args:
        root: the tensor to draw the graph of, or a tuple/list of tensors.
        names: ``{name: tensor}``, an ``nn.Module`` (its named parameters), or a list of these,
            merged; every named tensor is drawn, a named non-leaf beside the ``grad_fn`` that made it.
        highlight: tensor(s) being deep-copied, marked "cannot deepcopy" or "copy OK".
        show_attrs: each ``grad_fn``'s saved non-tensor arguments (e.g. ``dim``); saved tensors
            appear as ``[saved tensor]``, or ``[freed by backward()]`` once freed.
        show_saved: the tensors each ``grad_fn`` saved for backward, as nodes; call it before
            ``backward()`` frees them.
        collapse_chains: a straight run of more than 30 backward nodes is drawn as its two
            ends and a note (``False`` draws every node).

    Returns:
        An ``AutogradGraph``: a picture in Jupyter, ``outline()`` as text, ``save(path)`` to a file.

    Raises:
        TypeError: ``root`` or ``highlight`` holds something other than tensors.
        ValueError: ``root`` holds no tensor.
        GraphFreedError: ``show_saved=True`` after ``backward()`` freed the saved tensors.

    Example:
        >>> x = torch.ones(3, requires_grad=True)
        >>> y = (x * 2).sum()
        >>> graph = gl.draw(y, names={"x": x}, highlight=[x])
        >>> graph
        AutogradGraph(5 nodes: 1 leaf, 3 backward, 1 non-leaf)
        >>> print(graph.outline())
        n1  non_leaf   output  () float32  <- n2
        n2  backward   SumBackward0  <- n3
        n3  backward   MulBackward0  <- n4
        n4  backward   AccumulateGrad  <- n5
        n5  leaf       x  (3) float32  copy OK
    """
    roots = _tensors(root, "root")
    if not roots:
        raise ValueError(say("draw() needs at least one tensor to draw."))
    labels = _names_by_id(names)
    highlighted = _tensors(highlight, "highlight") if highlight is not None else []

    builder = _Builder(labels, show_attrs)
    for index, tensor in enumerate(roots):
        builder.add_tensor(tensor, "output" if len(roots) == 1 else f"output[{index}]")
    for tensor in [t for t, _ in labels.values()] + highlighted:
        builder.add_tensor(tensor, "tensor")
    if show_saved:
        builder.add_saved_tensors()
    for tensor in highlighted:
        builder.mark(tensor)

    nodes, edges, collapsed = (_collapse_chains(builder.nodes, builder.edges) if collapse_chains
                               else (builder.nodes, builder.edges, 0))
    counts = replace(builder.counts(), collapsed=collapsed)
    return AutogradGraph(digraph(nodes, edges), counts, outline_of(nodes, edges))


class _Builder:
    """Walks grad_fn graphs into numbered nodes and edges."""

    def __init__(self, labels: dict[int, tuple[torch.Tensor, list[str]]], show_attrs: bool):
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self._labels = labels
        self._show_attrs = show_attrs
        self._ids: dict[int, str] = {}
        self._alive: list[object] = []  # keeps every drawn object alive so no id() is reused
        self._walked: dict[int, object] = {}

    def add_tensor(self, tensor: torch.Tensor, default_name: str) -> None:
        node_id, is_new = self._tensor_node(tensor, default_name)
        if is_new and tensor.grad_fn is not None:
            self.edges.append(Edge(self._walk(tensor.grad_fn), node_id))

    def add_saved_tensors(self) -> None:
        for fn in list(self._walked.values()):
            for name, tensor in _saved_tensors(fn):
                node_id, _ = self._tensor_node(tensor, name, kind="saved")
                self.edges.append(Edge(self._ids[id(fn)], node_id, saved=True))

    def mark(self, tensor: torch.Tensor) -> None:
        node = self.nodes[self._ids[id(tensor)]]
        with speaking("en"):  # a picture's words stay English (docs/translating.md)
            blocker = deepcopy_blocker(tensor)
        node.mark = COPY_OK if blocker is None else CANNOT_COPY
        # A non-leaf shows why in its shape; anything else that cannot be copied says why.
        node.why = escape(blocker) if blocker and tensor.grad_fn is None else ""

    def counts(self) -> GraphCounts:
        kinds = [node.kind for node in self.nodes.values()]
        return GraphCounts(kinds.count("leaf"), kinds.count("backward"), kinds.count("non_leaf"),
                           kinds.count("saved"))

    def _new_id(self, obj: object) -> str:
        node_id = f"n{len(self._ids) + 1}"
        self._ids[id(obj)] = node_id
        self._alive.append(obj)
        return node_id

    def _tensor_node(self, tensor: torch.Tensor, default_name: str, kind: str | None = None) -> tuple[str, bool]:
        if id(tensor) in self._ids:
            return self._ids[id(tensor)], False
        node_id = self._new_id(tensor)
        given = self._labels.get(id(tensor))
        name = ", ".join(given[1]) if given else default_name
        kind = kind or ("leaf" if tensor.grad_fn is None else "non_leaf")
        self.nodes[node_id] = Node(kind, _tensor_label(name, tensor))
        return node_id, True

    def _fn_node(self, fn: GradFn) -> str:
        if id(fn) not in self._ids:
            label = _attrs_label(fn) if self._show_attrs else type(fn).__name__
            self.nodes[self._new_id(fn)] = Node("backward", label)
        return self._ids[id(fn)]

    def _walk(self, start: GradFn) -> str:
        for fn, inputs in grad_fn_walk([start], walked=self._walked):
            fn_id = self._fn_node(fn)
            leaf = _leaf_of(fn)
            if leaf is not None:  # AccumulateGrad: its leaf flows in
                leaf_id, _ = self._tensor_node(leaf, "")
                self.edges.append(Edge(leaf_id, fn_id))
            for u in inputs:
                self.edges.append(Edge(self._fn_node(u), fn_id))
        return self._ids[id(start)]


def grad_fn_walk(starts: Iterable[Any], *, walked: dict[int, Any] | None = None) -> Iterator[tuple[Any, list[Any]]]:
    """Every backward node reachable from ``starts`` (nodes; None is skipped), once, with its inputs.

    A backward node is a ``grad_fn`` or an ``AccumulateGrad`` (no tensor's ``grad_fn``).

    Depth-first, inputs in ``next_functions`` order, without recursion (a chain of any length
    works). ``walked`` (``{id(node): node}``) holds the nodes already walked: they are skipped,
    and each node walked is added, which also keeps it alive so that no ``id()`` is reused.
    """
    walked = {} if walked is None else walked
    stack = [fn for fn in reversed(list(starts)) if fn is not None]
    while stack:
        fn = stack.pop()
        if id(fn) in walked:
            continue
        walked[id(fn)] = fn
        inputs = [u for u, _ in getattr(fn, "next_functions", ()) if u is not None]
        yield fn, inputs
        stack.extend(reversed(inputs))


def leaves_behind(roots: Iterable[torch.Tensor]) -> list[torch.Tensor]:
    """The leaf tensors the ``roots`` were computed from (those autograd accumulates into), in walk order."""
    leaves = (_leaf_of(fn) for fn, _ in grad_fn_walk(t.grad_fn for t in roots))
    return [leaf for leaf in leaves if leaf is not None]


def _leaf_of(fn: GradFn) -> torch.Tensor | None:
    """The leaf an ``AccumulateGrad`` node accumulates into; None for any other node."""
    return getattr(fn, "variable", None)


def _tensors(value: object, what: str) -> list[torch.Tensor]:
    tensors = []
    for item in list(value) if isinstance(value, (tuple, list)) else [value]:
        if not isinstance(item, torch.Tensor):
            raise TypeError(say("{what} must be a tensor or a tuple/list of tensors; got {type_name}. Pass the tensor "
                                "itself, e.g. draw(y).", what=what, type_name=type(item).__name__))
        tensors.append(item)
    return tensors


def _names_by_id(names: object) -> dict[int, tuple[torch.Tensor, list[str]]]:
    """``{id(tensor): (tensor, [names])}``: a tensor given several names shows them all."""
    sources = names if isinstance(names, (list, tuple)) else [] if names is None else [names]
    labels: dict[int, tuple[torch.Tensor, list[str]]] = {}
    for source in sources:
        pairs = source.named_parameters() if isinstance(source, torch.nn.Module) else _pairs(source)
        for name, tensor in pairs:
            given = labels.setdefault(id(tensor), (tensor, []))[1]
            if name not in given:
                given.append(name)
    return labels


def _pairs(source: object) -> list[tuple[str, torch.Tensor]]:
    if not isinstance(source, Mapping):
        raise TypeError(say("names must be a {{name: tensor}} dict, an nn.Module, or a list of these; got {type_name}.",
                            type_name=type(source).__name__))
    for name, tensor in source.items():
        if not isinstance(name, str) or not isinstance(tensor, torch.Tensor):
            raise TypeError(say("names must map str to tensor; got {name!r}: {type_name}.", name=name,
                                type_name=type(tensor).__name__))
    return list(source.items())


def _tensor_label(name: str, tensor: torch.Tensor) -> str:
    shape = "(" + ", ".join(str(size) for size in tensor.shape) + ")"
    dtype = str(tensor.dtype).removeprefix("torch.")
    details = f"{shape} {dtype}"
    return f"{escape(name)}{BR}{details}" if name else details


def _read_saved(fn: GradFn, attr: str) -> object:
    try:
        return getattr(fn, attr)
    except RuntimeError as err:
        if "freed" not in str(err):
            raise
        return _FREED


def _saved_values(fn: GradFn) -> list[tuple[str, object]]:
    values = [(attr[len(SAVED_PREFIX):], _read_saved(fn, attr))
              for attr in dir(fn) if attr.startswith(SAVED_PREFIX)]
    if isinstance(fn, torch.autograd.function.BackwardCFunction):  # a custom autograd.Function
        values.append(("saved_tensors", _read_saved(fn, "saved_tensors")))
    return values


def _saved_tensors(fn: GradFn) -> list[tuple[str, torch.Tensor]]:
    found = []
    for name, value in _saved_values(fn):
        if value is _FREED:
            raise GraphFreedError(say(
                "{grad_fn}'s saved tensors were already freed by backward(). Call draw(..., show_saved=True) before "
                "backward(), or call backward(retain_graph=True) to keep them.", grad_fn=type(fn).__name__))
        if isinstance(value, torch.Tensor):
            found.append((name, value))
        elif isinstance(value, tuple):
            found.extend((f"{name}[{i}]", t) for i, t in enumerate(value)
                         if isinstance(t, torch.Tensor))
    return found


def _attrs_label(fn: GradFn) -> str:
    rows = [(name, _attr_text(value)) for name, value in _saved_values(fn)]
    title = type(fn).__name__
    if not rows:
        return title
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}: {escape(text)}" for name, text in rows]
    rule = "-" * max(len(title), *(len(line) for line in lines))
    return BR.join([title, rule, ""]) + "".join(line + LEFT_BR for line in lines)


def _attr_text(value: object) -> str:
    if value is _FREED:
        return "[freed by backward()]"
    if isinstance(value, torch.Tensor):
        return "[saved tensor]"
    if isinstance(value, tuple) and any(isinstance(v, torch.Tensor) for v in value):
        return "[saved tensors]"
    text = str(value)
    return text if len(text) <= _MAX_ATTR_CHARS else text[:_MAX_ATTR_CHARS - 3] + "..."


def _collapse_chains(nodes: dict[str, Node], edges: list[Edge]) -> tuple[dict[str, Node], list[Edge], int]:
    """Replace the middle of each straight run of over ``_LONGEST_CHAIN`` backward nodes by a note."""
    into, out_of = defaultdict(list), defaultdict(list)
    for edge in edges:
        out_of[edge.tail].append(edge.head)
        into[edge.head].append(edge.tail)

    def in_line(node_id: str) -> bool:
        node = nodes[node_id]
        return (node.kind == "backward" and node.mark is None
                and len(into[node_id]) == 1 and len(out_of[node_id]) == 1)

    note_for: dict[str, str] = {}
    notes: dict[str, Node] = {}
    for node_id in nodes:
        if not in_line(node_id) or in_line(into[node_id][0]):
            continue
        run = [node_id]
        while in_line(out_of[run[-1]][0]):
            run.append(out_of[run[-1]][0])
        if len(run) > _LONGEST_CHAIN:
            middle = run[_CHAIN_END:-_CHAIN_END]
            note_id = f"chain{len(notes) + 1}"
            notes[note_id] = Node(
                "collapsed", f"... {len(middle)} more backward nodes in a straight line ..."
                f"{BR}(collapsed to keep the picture readable)")
            note_for.update(dict.fromkeys(middle, note_id))
    if not notes:
        return nodes, edges, 0

    kept_nodes: dict[str, Node] = {}
    for node_id, node in nodes.items():
        if node_id not in note_for:
            kept_nodes[node_id] = node
        elif note_for[node_id] not in kept_nodes:
            kept_nodes[note_for[node_id]] = notes[note_for[node_id]]
    kept_edges = []
    for edge in edges:
        tail, head = note_for.get(edge.tail, edge.tail), note_for.get(edge.head, edge.head)
        if tail != head:
            kept_edges.append(Edge(tail, head, edge.saved))
    return kept_nodes, kept_edges, len(note_for)


