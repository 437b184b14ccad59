"""Explorers: change one thing, see the outcome and the autograd graph change.

Each explorer is an ipywidgets box whose controls only call a plain function returning a view
(``scenario_view``, ``playground_view``, ``loader_view``, ``fix_comparison_view``), so a checked
notebook cell can print the same result and tests need no browser. Text is shown escaped in
``widgets.HTML``; graphs are SVG in a ``widgets.Image`` (an ``<img>``, so no script and no notebook
trust involved; Graphviz writes SVG about three times faster than PNG). ``widgets.Output`` is never
used: outside a front end its capture leaks to stdout.
"""
from __future__ import annotations

import builtins
import copy
import functools
import html
import multiprocessing
import re
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import torch
from torch import nn

from graphleaf_edu.dataloading import LoaderOutcome, outcome_table, run_loader
from graphleaf_edu.diagnose import TensorInfo, describe, find_nonleaf
from graphleaf_edu.errors import error_line, first_line
from graphleaf_edu.graphs import (
    AutogradGraph,
    GraphvizNotFoundError,
    draw,
    leaves_behind,
)
from graphleaf_edu.scenarios import NONE, SCENARIOS, Outcome, Scenario

__all__ = [
    "PLAYGROUND_EXAMPLES",
    "FixComparison",
    "LoaderView",
    "PlaygroundView",
    "ScenarioView",
    "dataloader_lab",
    "fix_comparison",
    "fix_comparison_view",
    "fix_summary",
    "leaf_playground",
    "loader_view",
    "model_scenarios",
    "playground_namespace",
    "playground_view",
    "scenario_explorer",
    "scenario_view",
]

_PICTURE_CACHE_SIZE = 256
_pictures: OrderedDict[str, bytes] = OrderedDict()


def picture(graph: AutogradGraph) -> bytes:
    """The graph as SVG bytes; rendered once per distinct DOT source (ids are deterministic, so views repeat)."""
    key = graph.source
    if key in _pictures:
        _pictures.move_to_end(key)
    else:
        _pictures[key] = graph.svg().encode("utf-8")
        if len(_pictures) > _PICTURE_CACHE_SIZE:
            _pictures.popitem(last=False)
    return _pictures[key]


def _picture_or_hint(graph: AutogradGraph | None) -> tuple[bytes | None, str]:
    if graph is None:
        return None, ""
    try:
        return picture(graph), ""
    except GraphvizNotFoundError as missing:
        return None, f"{missing}\n\nThe graph as text:\n{graph.outline()}"


# --- scenario explorer ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ScenarioView:
    """One fix of one scenario, run: its code, the outcome, and the graph of the tensor being copied."""

    scenario: str
    fix: str
    code: str
    ok: bool
    error_line: str | None
    result_text: str
    caption: str
    graph: AutogradGraph | None
    picture: bytes | None

    def text(self) -> str:
        """Deterministic plain text: result, then what the graph shows."""
        graph_line = repr(self.graph) if self.graph is not None else "no graph to draw"
        return f"{self.result_text}\n\n{self.caption}\n{graph_line}"


def scenario_view(scenario: str, fix: str = NONE) -> ScenarioView:
    """Run ``fix`` of ``SCENARIOS[scenario]`` (cached: the code is seeded) and describe what happened."""
    chosen = _scenario(scenario)
    return _scenario_view(chosen.key, chosen.fix(fix).key)


def _scenario(key: str) -> Scenario:
    if key not in SCENARIOS:
        raise KeyError(f"no scenario {key!r}; choose one of {list(SCENARIOS)}")
    return SCENARIOS[key]


def _keeping_random_state():
    """The scenarios seed torch: a click in an explorer must not change the notebook's random numbers."""
    return torch.random.fork_rng(devices=[])


@functools.cache
def _scenario_view(key: str, fix_key: str) -> ScenarioView:
    scenario = SCENARIOS[key]
    with _keeping_random_state():
        outcome = scenario.run(fix_key)
    graph, caption = _copy_graph(scenario, outcome)
    svg, hint = _picture_or_hint(graph)
    return ScenarioView(
        scenario=key,
        fix=fix_key,
        code=outcome.code,
        ok=outcome.ok,
        error_line=outcome.error_line,
        result_text=_result_text(scenario, outcome),
        caption=caption + (f"\n{hint}" if hint else ""),
        graph=graph,
        picture=svg,
    )


def _result_text(scenario: Scenario, outcome: Outcome) -> str:
    fix = scenario.fix(outcome.fix)
    if outcome.ok:
        lines = [f"✓ the copy worked: copied is {type(outcome.copied).__name__}", _copy_summary(outcome.copied)]
    else:
        lines = [f"✗ {type(outcome.error).__name__}: {outcome.error}"]
    lines.append(f"fix: {fix.title} ({fix.cost})")
    if fix.mutates_original:
        lines.append(f"careful: this fix changes the original {scenario.target}")
    lines += [f"warning recorded: {_without_build_path(w)}" for w in outcome.warnings]
    return "\n".join(lines)


def _copy_summary(copied: Any) -> str:
    if isinstance(copied, torch.Tensor):
        return "copied: " + _tensor_text(describe(copied))
    found = find_nonleaf(copied)
    if not found:
        return "find_nonleaf(copied): no non-leaf tensor inside, so the copy deep-copies again"
    return "find_nonleaf(copied): still non-leaf at " + ", ".join(f"copied{f.path}" for f in found)


def _without_build_path(warning: str) -> str:
    # PyTorch's C++ warnings end with the path of the machine that built torch.
    return re.sub(r"\s*\(Triggered internally at [^)]*\)", "", warning)


def _tensor_text(info: TensorInfo) -> str:
    kind = "leaf" if info.is_leaf else "non-leaf"
    verdict = "deepcopy copies it" if info.deepcopy_ok else f"deepcopy refuses it: {info.deepcopy_blocker}"
    return (f"{kind}, grad_fn={info.grad_fn}, requires_grad={info.requires_grad}, "
            f"shape {list(info.shape)}; {verdict}")


def _copy_graph(scenario: Scenario, outcome: Outcome) -> tuple[AutogradGraph | None, str]:
    """The tensor at ``culprit`` in the original (and its counterpart in the copy), drawn and described."""
    compared = [(scenario.target + scenario.culprit, _resolve(outcome.original, scenario.culprit))]
    if outcome.ok:
        compared += _counterpart(outcome.copied, outcome.original, scenario.culprit)
    met = {id(f.tensor) for root in (outcome.original, outcome.copied) for f in find_nonleaf(root)}
    tensors = {name: value for name, value in compared if isinstance(value, torch.Tensor)}
    lines = [f"{name}: {_value_text(value, met)}" for name, value in compared]
    if not tensors:
        return None, "\n".join(lines)
    roots = list(tensors.values())
    highlighted = [t for t in roots if t.is_leaf or id(t) in met]
    names = _names_in_graph({**tensors, **_namespace_tensors(outcome.namespace)}, roots)
    caption = (f"the graph shows {' and '.join(tensors)}; highlighted: the tensors copy.deepcopy reaches, "
               "marked with what it does to them")
    return draw(roots, names=names, highlight=highlighted or None), "\n".join([caption, *lines])


_MISSING = object()


def _resolve(root: Any, path: str) -> Any:
    """``eval("root" + path)``, or ``_MISSING`` when nothing is there."""
    try:
        return eval("root" + path, {"__builtins__": {}, "list": list}, {"root": root})
    except (AttributeError, KeyError, IndexError, TypeError):
        return _MISSING


def _counterpart(copied: Any, original: Any, path: str) -> list[tuple[str, Any]]:
    """Where the copy keeps what ``path`` names in the original (through a ``.module`` wrapper, e.g. AveragedModel)."""
    if type(copied) is type(original):
        return [("copied" + path, _resolve(copied, path))]
    if type(getattr(copied, "module", None)) is type(original):
        return [("copied.module" + path, _resolve(copied.module, path))]
    if isinstance(copied, torch.Tensor):
        return [("copied", copied)]
    return []


def _value_text(value: Any, met: set[int]) -> str:
    if value is _MISSING:
        return "nothing stored there"
    if value is None:
        return "None: nothing to copy there"
    if not isinstance(value, torch.Tensor):
        return f"a {type(value).__name__}"
    if value.is_leaf or id(value) in met:
        return _tensor_text(describe(value))
    return (f"non-leaf, grad_fn={type(value.grad_fn).__name__}, but copy.deepcopy never reaches it "
            "(made on each access, or skipped by the class's own copying)")


def _namespace_tensors(namespace: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Named tensors of a namespace: its tensor variables and its modules' parameters and buffers."""
    found: dict[str, torch.Tensor] = {}
    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        if isinstance(value, torch.Tensor):
            found[name] = value
        elif isinstance(value, nn.Module):
            found.update({f"{name}.{p}": t for p, t in value.named_parameters()})
            found.update({f"{name}.{b}": t for b, t in value.named_buffers()})
    return found


def _names_in_graph(candidates: dict[str, torch.Tensor], roots: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """The candidates that are roots or leaves the roots were computed from (draw() shows every name)."""
    wanted = {id(t) for t in roots} | {id(leaf) for leaf in leaves_behind(roots)}
    return {name: t for name, t in candidates.items() if id(t) in wanted}


# --- leaf playground -----------------------------------------------------------------------------

PLAYGROUND_EXAMPLES = (
    "x", "x * 2", "x.detach()", "x[0]", "w.clone()", "w @ x + b", "(w @ x + b).relu().sum()",
    "x.detach().requires_grad_()", "x.data", "torch.ones(3)", "torch.ones(3) * x",
    "copy.deepcopy(x)", "copy.deepcopy(x * 2)",
)
_SAFE_BUILTINS = {name: getattr(builtins, name)
                  for name in ("abs", "min", "max", "len", "range", "sum", "round", "float", "int", "bool",
                               "list", "tuple", "dict", "zip", "enumerate", "isinstance", "type")}
_LABEL_CHARS = 40


def playground_namespace() -> dict[str, Any]:
    """Fresh, seeded tensors each call (so nothing a previous expression did carries over)."""
    generator = torch.Generator().manual_seed(0)
    return {
        "torch": torch,
        "copy": copy,
        "x": torch.randn(3, generator=generator, requires_grad=True),
        "w": torch.randn(3, 3, generator=generator, requires_grad=True),
        "b": torch.zeros(3, requires_grad=True),
    }


@dataclass(frozen=True, eq=False)
class PlaygroundView:
    """An evaluated expression: ``ok`` when it gave a tensor (then ``info`` and ``graph`` describe it)."""

    expression: str
    ok: bool
    message: str
    info: TensorInfo | None
    graph: AutogradGraph | None
    picture: bytes | None

    def text(self) -> str:
        lines = [self.message]
        if self.info is not None:
            lines.append("describe(): " + _tensor_text(self.info))
        if self.graph is not None:
            lines.append(repr(self.graph))
        return "\n".join(lines)


def playground_view(expression: str) -> PlaygroundView:
    """Evaluate one expression over ``playground_namespace()``; a mistake gives a friendly message.

    A teaching sandbox, not a security boundary: only a few builtins are offered so that typos
    meet clear errors, but Python's introspection can still reach anything. Run it on your own
    machine for your own expressions only.
    """
    text = expression.strip()
    namespace = playground_namespace()
    usable = ", ".join(name for name in namespace)
    if not text:
        return _playground_message(expression, f"Type an expression over {usable} (e.g. x * 2), or pick an example.")
    try:
        code = compile(text, "<playground>", "eval")
    except SyntaxError as error:
        return _playground_message(expression, _syntax_message(text, error))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with _keeping_random_state():
                result = eval(code, {"__builtins__": _SAFE_BUILTINS}, namespace)
        except NameError as error:
            return _playground_message(expression, f"{error}. Names you can use: {usable}.")
        except Exception as error:  # noqa: BLE001 (any mistake in the typed text becomes a message)
            return _playground_message(expression, f"{text} raised {error_line(error)}")
    notes = "".join(f"\nwarning: {_without_build_path(first_line(str(w.message)))}" for w in caught)
    if not isinstance(result, torch.Tensor):
        what = "None" if result is None else f"a {type(result).__name__} ({_label(repr(result))})"
        return _playground_message(expression, f"{text} is {what}, not a tensor: "
                                               "describe() and the graph need a tensor." + notes)
    names = _names_in_graph({_label(text): result, **_namespace_tensors(namespace)}, [result])
    graph = draw(result, names=names, highlight=result)
    svg, hint = _picture_or_hint(graph)
    message = f"{text} is a {'leaf' if result.is_leaf else 'non-leaf'} tensor" + notes + (f"\n{hint}" if hint else "")
    return PlaygroundView(expression, True, message, describe(result), graph, svg)


def _playground_message(expression: str, message: str) -> PlaygroundView:
    return PlaygroundView(expression, False, message, None, None, None)


def _syntax_message(text: str, error: SyntaxError) -> str:
    try:
        compile(text, "<playground>", "exec")
    except SyntaxError:
        return f"That is not valid Python ({error.msg}). Try e.g. x * 2."
    return f"{text} is a statement; type an expression instead (what you would write after `y = `)."


def _label(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[:_LABEL_CHARS - 3] + "..."


# --- DataLoader lab ------------------------------------------------------------------------------

LOADER_TIMEOUT_S = 10.0


@dataclass(frozen=True, eq=False)
class LoaderView:
    """The latest DataLoader run and every run before it in this session."""

    outcome: LoaderOutcome
    history: tuple[LoaderOutcome, ...]

    def table(self) -> str:
        return outcome_table(list(self.history))

    def text(self) -> str:
        return f"latest: {self.outcome.summary()}\n\n{self.table()}"


def loader_view(
    history: tuple[LoaderOutcome, ...] = (),
    *,
    start_method: str,
    num_workers: int,
    deepcopy_in_getitem: bool,
    detach_at_construction: bool,
    batch_size: int | None = 4,
    timeout: float = LOADER_TIMEOUT_S,
) -> LoaderView:
    """Run one real DataLoader configuration (``run_loader``, so it cannot hang) after ``history``."""
    with _keeping_random_state():  # the DataLoader draws its workers' base seed from torch's generator
        outcome = run_loader(start_method=start_method, num_workers=num_workers,
                             deepcopy_in_getitem=deepcopy_in_getitem,
                             detach_at_construction=detach_at_construction,
                             batch_size=batch_size, timeout=timeout)
    return LoaderView(outcome, (*tuple(history), outcome))


# --- fix comparison ------------------------------------------------------------------------------

Measure = Callable[[Scenario, str], Mapping[str, Any]]


def fix_summary(scenario: Scenario, fix: str) -> dict[str, Any]:
    """The fix comparison's default columns: the live outcome, and what the fix declares it costs."""
    declared = scenario.fix(fix)
    outcome = scenario.run(fix)
    return {"how": declared.title, "works": outcome.ok, "original untouched": not declared.mutates_original,
            "result": outcome.error_line or "ok", "cost": declared.cost}


@dataclass(frozen=True)
class FixComparison:
    """Every fix of one scenario, each measured into the same columns."""

    scenario: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]  # one per fix: the fix key, then a value per column

    def column(self, name: str) -> list[Any]:
        index = self.columns.index(name) + 1
        return [row[index] for row in self.rows]

    def table(self) -> str:
        cells = [("fix", *self.columns)] + [tuple(map(str, row)) for row in self.rows]
        widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
        lines = [" | ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]
        lines.insert(1, "-+-".join("-" * w for w in widths))
        return "\n".join(lines)

    def html(self) -> str:
        table = _html_table(("fix", *self.columns), [map(str, row) for row in self.rows])
        return f"<b>{_esc(self.title)}</b>{table}"


def fix_comparison_view(scenario: str, measure: Measure = fix_summary) -> FixComparison:
    """``measure(scenario, fix)`` for every fix of ``SCENARIOS[scenario]`` (cached per measure: runs are seeded)."""
    return _fix_comparison(_scenario(scenario).key, measure)


@functools.cache
def _fix_comparison(key: str, measure: Measure) -> FixComparison:
    scenario = SCENARIOS[key]
    with _keeping_random_state():
        measured = {fix: dict(measure(scenario, fix)) for fix in scenario.fix_keys()}
    columns = tuple(next(iter(measured.values())))
    rows = tuple((fix, *(values[name] for name in columns)) for fix, values in measured.items())
    return FixComparison(key, scenario.title, columns, rows)


def model_scenarios() -> list[str]:
    """The scenarios whose object is a model (what the fix comparison offers)."""
    return [key for key, scenario in SCENARIOS.items() if scenario.target == "model"]


# --- the widgets ---------------------------------------------------------------------------------

def _esc(text: str) -> str:
    return html.escape(text, quote=True)


_CELL = "style='padding: 2px 8px; border-bottom: 1px solid #bbb; text-align: left; vertical-align: top'"


def _html_table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = "".join(f"<th {_CELL}>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td {_CELL}>{_esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table style='border-collapse: collapse'><tr>{head}</tr>{body}</table>"


def _pre(text: str) -> str:
    return f"<pre style='white-space: pre-wrap; margin: 0'>{_esc(text)}</pre>"


def _graph_image(css_class: str) -> widgets.Image:
    image = widgets.Image(format="svg+xml", layout=widgets.Layout(max_width="100%", display="none"))
    image.add_class(css_class)
    return image


def _show_picture(image: widgets.Image, svg: bytes | None) -> None:
    if svg is None:
        image.layout.display = "none"
    else:
        image.value = svg
        image.layout.display = None


def _html(css_class: str, value: str = "") -> widgets.HTML:
    box = widgets.HTML(value)
    box.add_class(css_class)
    return box


class _Explorer(widgets.VBox):
    def __repr__(self) -> str:
        # The text/plain shown where widgets cannot render (a notebook viewer, a terminal).
        return f"{type(self).__name__}: an interactive explorer; run this cell in Jupyter to use it"


class ScenarioExplorer(_Explorer):
    """Pick a scenario and a fix, press deepcopy; after the first press every change re-runs at once."""

    def __init__(self, scenario: str, fix: str):
        chosen = _scenario(scenario)
        self.scenario = widgets.Dropdown(options=[(s.title, k) for k, s in SCENARIOS.items()],
                                         value=chosen.key, description="scenario")
        self.fix = widgets.Dropdown(options=_fix_options(chosen), value=chosen.fix(fix).key, description="fix")
        for dropdown in (self.scenario, self.fix):
            dropdown.layout.width = "min(100%, 44em)"
        self.deepcopy = widgets.Button(description="deepcopy", button_style="primary", icon="copy")
        self.code = _html("graphleaf-scenario-code")
        self.result = _html("graphleaf-scenario-result")
        self.caption = _html("graphleaf-scenario-caption")
        self.graph = _graph_image("graphleaf-scenario-graph")
        self._live = False
        self._switching = False
        self.scenario.observe(self._on_scenario, "value")
        self.fix.observe(self._on_fix, "value")
        self.deepcopy.on_click(self._on_deepcopy)
        super().__init__([self.scenario, self.fix, self.deepcopy, self.code, self.result, self.graph, self.caption])
        self.add_class("graphleaf-scenario-explorer")
        self._refresh()

    def _on_scenario(self, change) -> None:
        self._switching = True
        try:
            self.fix.options = _fix_options(SCENARIOS[change["new"]])
            self.fix.value = NONE
        finally:
            self._switching = False
        self._refresh()

    def _on_fix(self, change) -> None:
        if not self._switching:
            self._refresh()

    def _on_deepcopy(self, _button) -> None:
        self._live = True
        self._refresh()

    def _refresh(self) -> None:
        scenario = SCENARIOS[self.scenario.value]
        if not self._live:
            self.code.value = _pre(scenario.code(self.fix.value))
            self.result.value = "<i>Will copying work? Press <b>deepcopy</b> to run this code.</i>"
            return
        view = scenario_view(scenario.key, self.fix.value)
        self.code.value = _pre(view.code)
        colour = "#009E73" if view.ok else "#D55E00"
        self.result.value = f"<div style='border-left: 4px solid {colour}; padding-left: 6px'>{_pre(view.result_text)}</div>"
        self.caption.value = _pre(view.caption)
        _show_picture(self.graph, view.picture)


def _fix_options(scenario: Scenario) -> list[tuple[str, str]]:
    return [(f"{fix.key}: {fix.title}", fix.key) for fix in scenario.fixes]


def _info_html(info: TensorInfo) -> str:
    """describe()'s fields as one compact row."""
    return _html_table(list(vars(info)), [[repr(value) for value in vars(info).values()]])


class LeafPlayground(_Explorer):
    """Type an expression over x, w, b (or pick one) and see describe() and the graph of the result."""

    def __init__(self, expression: str):
        self.examples = widgets.Dropdown(options=["(examples)", *PLAYGROUND_EXAMPLES], description="example")
        self.expression = widgets.Text(value=expression, description="expression", continuous_update=False,
                                       layout=widgets.Layout(width="min(100%, 44em)"))
        self.evaluate = widgets.Button(description="evaluate", button_style="primary")
        self.message = _html("graphleaf-playground-message")
        self.info = _html("graphleaf-playground-info")
        self.graph = _graph_image("graphleaf-playground-graph")
        self.examples.observe(self._on_example, "value")
        self.expression.observe(lambda change: self._refresh(), "value")
        self.evaluate.on_click(lambda _button: self._refresh())
        names = ", ".join(name for name in playground_namespace())
        intro = widgets.HTML(f"<i>Names you can use: <code>{names}</code> (fresh, seeded tensors each time).</i>")
        super().__init__([intro, self.examples, widgets.HBox([self.expression, self.evaluate]),
                          self.message, self.info, self.graph])
        self.add_class("graphleaf-leaf-playground")
        self._refresh()

    def _on_example(self, change) -> None:
        if change["new"] in PLAYGROUND_EXAMPLES:
            self.expression.value = change["new"]

    def _refresh(self) -> None:
        view = playground_view(self.expression.value)
        style = "" if view.ok else " style='color: #B04000'"
        self.message.value = f"<div{style}>{_pre(view.message)}</div>"
        self.info.value = _info_html(view.info) if view.info is not None else ""
        _show_picture(self.graph, view.picture)


class DataLoaderLab(_Explorer):
    """Choose a DataLoader configuration, run it for real, and keep every outcome in a table."""

    def __init__(self):
        methods = multiprocessing.get_all_start_methods()  # the platform's default first
        label = {"style": {"description_width": "initial"}}
        self.start_method = widgets.Dropdown(options=methods, value=methods[0], description="start method", **label)
        self.num_workers = widgets.Dropdown(options=[0, 1, 2], value=1, description="num_workers", **label)
        self.batch_size = widgets.Dropdown(options=[("4", 4), ("None", None)], value=4, description="batch_size",
                                           **label)
        self.deepcopy_in_getitem = widgets.Checkbox(value=True, description="deepcopy in __getitem__", **label)
        self.detach_at_construction = widgets.Checkbox(value=False, description="detach at construction", **label)
        self.run = widgets.Button(description="run DataLoader", button_style="primary")
        self.clear = widgets.Button(description="clear history")
        self.status = _html("graphleaf-loader-status",
                            f"<i>Each run waits at most {LOADER_TIMEOUT_S:g} s for a batch, so it never hangs.</i>")
        self.table = _html("graphleaf-loader-table")
        self.history: tuple[LoaderOutcome, ...] = ()
        self.run.on_click(self._on_run)
        self.clear.on_click(self._on_clear)
        super().__init__([
            widgets.HBox([self.start_method, self.num_workers, self.batch_size]),
            widgets.HBox([self.deepcopy_in_getitem, self.detach_at_construction]),
            widgets.HBox([self.run, self.clear]), self.status, self.table,
        ])
        self.add_class("graphleaf-dataloader-lab")

    def _on_run(self, _button) -> None:
        self.run.disabled = True
        self.status.value = "<b>running…</b> (worker processes are starting)"
        try:
            view = loader_view(self.history, start_method=self.start_method.value,
                               num_workers=self.num_workers.value,
                               deepcopy_in_getitem=self.deepcopy_in_getitem.value,
                               detach_at_construction=self.detach_at_construction.value,
                               batch_size=self.batch_size.value)
        finally:
            self.run.disabled = False
        self.history = view.history
        outcome = view.outcome
        details = (f"<details><summary>what the workers printed</summary>{_pre(outcome.worker_stderr)}</details>"
                   if outcome.worker_stderr else "")
        self.status.value = f"{_pre('latest: ' + outcome.summary())}<small>{outcome.elapsed_s:.1f} s</small>{details}"
        rows = [outcome.row() for outcome in view.history]
        self.table.value = _html_table(list(rows[0]), [[str(value) for value in row.values()] for row in rows])

    def _on_clear(self, _button) -> None:
        self.history = ()
        self.table.value = ""


class FixComparisonExplorer(_Explorer):
    """Choose a model and see which fixes make it copyable, and what each one costs."""

    def __init__(self, scenario: str, measure: Measure):
        keys = model_scenarios()
        chosen = _scenario(scenario).key
        if chosen not in keys:
            raise ValueError(f"fix_comparison() compares models; choose one of {keys}, not {scenario!r}")
        self.model = widgets.Dropdown(options=[(SCENARIOS[k].title, k) for k in keys], value=chosen,
                                      description="model", layout=widgets.Layout(width="min(100%, 44em)"))
        self.table = _html("graphleaf-fix-table")
        self._measure = measure
        self.model.observe(lambda change: self._refresh(), "value")
        super().__init__([self.model, self.table])
        self.add_class("graphleaf-fix-comparison")
        self._refresh()

    def _refresh(self) -> None:
        self.table.value = fix_comparison_view(self.model.value, self._measure).html()


def scenario_explorer(scenario: str = "intermediate_tensor", fix: str = NONE) -> ScenarioExplorer:
    """A scenario and fix picker with a "deepcopy" button: the code, the result and the graph."""
    return ScenarioExplorer(scenario, fix)


def leaf_playground(expression: str = "x * 2") -> LeafPlayground:
    """A text box (and examples) over seeded tensors x, w, b: describe() and the graph of the result."""
    return LeafPlayground(expression)


def dataloader_lab() -> DataLoaderLab:
    """Start method x workers x deepcopy in __getitem__ x detach at construction, run for real."""
    return DataLoaderLab()


def fix_comparison(model: str = "model_cache", measure: Measure = fix_summary) -> FixComparisonExplorer:
    """Pick a model (a cache, old weight_norm, ...) and see which fixes make it copyable.

    ``measure(scenario, fix) -> {column: value}`` fills the table (default ``fix_summary``); a
    notebook can pass the measuring function it built, so the widget shows its columns.
    """
    return FixComparisonExplorer(model, measure)
