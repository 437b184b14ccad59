"""Explorers: change one thing, see the outcome and the autograd graph change.

Each explorer is a thin ipywidgets box: its controls call one pure view from
``graphleaf_edu.views`` and show what it returns. Text is shown escaped in ``widgets.HTML``;
graphs are SVG in a ``widgets.Image`` (an ``<img>``, so no script and no notebook trust involved;
Graphviz writes SVG about three times faster than PNG). ``widgets.Output`` is never used: outside
a front end its capture leaks to stdout. An explorer given a ``Task`` (or the name of one in
``graphleaf_edu.views.TASKS``) shows it above its controls and a "solved" sign once its view shows a
solution.
"""
from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import torch

from graphleaf_edu.dataloading import LoaderOutcome, require_rows
from graphleaf_edu.i18n import say
from graphleaf_edu.scenarios import NONE, SCENARIOS, Scenario, require_scenario
from graphleaf_edu.tables import escape, html_table
from graphleaf_edu.views import (
    LOADER_TIMEOUT_S,
    PLAYGROUND_EXAMPLES,
    LoaderView,
    Measure,
    Task,
    fix_comparison_view,
    fix_summary,
    loader_view,
    model_scenarios,
    playground_namespace,
    playground_view,
    scenario_view,
    task_named,
)

__all__ = [
    "DataLoaderLab",
    "FixComparisonExplorer",
    "LeafPlayground",
    "ScenarioExplorer",
    "dataloader_lab",
    "fix_comparison",
    "leaf_playground",
    "scenario_explorer",
]

_WIDE = "min(100%, 44em)"
# The playground's table: what lesson 00 explains (describe() also knows retains_grad, is_view, device, ...).
PLAYGROUND_COLUMNS = ("is_leaf", "requires_grad", "grad_fn", "shape", "deepcopy_ok")
Change = dict[str, Any]  # what ipywidgets passes an observer: "new", "old", "owner", ...


def _pre(text: str) -> str:
    return f"<pre style='white-space: pre-wrap; margin: 0'>{escape(text)}</pre>"


def _html(css_class: str, value: str = "") -> widgets.HTML:
    box = widgets.HTML(value)
    box.add_class(css_class)
    return box


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


class _Explorer(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no types
    """A box of controls and outputs, with the task (if any) on top and its "solved" sign."""

    def __init__(self, children: list[widgets.Widget], css_class: str, task: Task | str | None):
        task = task_named(task)
        self.task = task
        self.task_status = _html("graphleaf-task")
        super().__init__(([self.task_status] if task else []) + children)
        self.add_class(css_class)
        self._show_task(None)

    def _show_task(self, view: object) -> None:
        if self.task is None:
            return
        solved, line = self.task.check(view)
        if solved:
            sign = f"<div class='graphleaf-solved' style='color: #009E73'><b>✔ {escape(line)}</b></div>"
        else:  # why the view shown is no solution yet, or nothing
            sign = f"<div class='graphleaf-not-yet' style='color: #B04000'>→ {escape(line)}</div>" if line else ""
        self.task_status.value = (f"<div style='border-left: 4px solid #0072B2; padding-left: 6px'>"
                                  f"{escape(self.task.title())}{sign}</div>")

    def __repr__(self) -> str:
        # The text/plain shown where widgets cannot render (a notebook viewer, a terminal).
        return say("{explorer}: an interactive explorer; run this cell in Jupyter to use it", explorer=type(self).__name__)


class ScenarioExplorer(_Explorer):
    """Pick a scenario and a fix, press deepcopy; after the first press every change re-runs at once."""

    def __init__(self, scenario: Scenario, fix: str = NONE, task: Task | str | None = None,
                 fixes: Sequence[str] | None = None):
        require_scenario(scenario)
        # The fixes offered for the first scenario (every one where None); another scenario offers all of its own.
        self._offered = {scenario.key: _offered_fixes(scenario, fixes, fix)} if fixes is not None else {}
        self.scenario = widgets.Dropdown(options=[(say(s.title), s) for s in SCENARIOS.values()], value=scenario,
                                         description=say("scenario"), layout=widgets.Layout(width=_WIDE))
        self.fix = widgets.Dropdown(options=_fix_options(scenario, self._offered.get(scenario.key)),
                                    value=scenario.fix(fix).key, description=say("fix"),
                                    layout=widgets.Layout(width=_WIDE))
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
        super().__init__([self.scenario, self.fix, self.deepcopy, self.code, self.result, self.graph, self.caption],
                         "graphleaf-scenario-explorer", task)
        self._refresh()

    def _on_scenario(self, change: Change) -> None:
        self._switching = True
        try:
            self.fix.options = _fix_options(change["new"], self._offered.get(change["new"].key))
            self.fix.value = NONE
        finally:
            self._switching = False
        self._refresh()

    def _on_fix(self, change: Change) -> None:
        if not self._switching:
            self._refresh()

    def _on_deepcopy(self, _button: widgets.Button) -> None:
        self._live = True
        self._refresh()

    def _refresh(self) -> None:
        scenario = self.scenario.value
        if not self._live:
            self.code.value = _pre(scenario.script(self.fix.value))
            self.result.value = say("<i>Will copying work? Press <b>deepcopy</b> to run this code.</i>")
            return
        view = scenario_view(scenario, self.fix.value)
        self.code.value = _pre(scenario.script(self.fix.value))
        colour = "#009E73" if view.ok else "#D55E00"
        self.result.value = f"<div style='border-left: 4px solid {colour}; padding-left: 6px'>{_pre(view.result_text)}</div>"
        self.caption.value = _pre(view.caption)
        _show_picture(self.graph, view.picture)
        self._show_task(view)


def _fix_options(scenario: Scenario, offered: frozenset[str] | None = None) -> list[tuple[str, str]]:
    return [(f"{fix.key}: {say(fix.title)}", fix.key) for fix in scenario.fixes if offered is None or fix.key in offered]


def _offered_fixes(scenario: Scenario, fixes: Sequence[str], fix: str) -> frozenset[str]:
    """The keys ``fixes`` names (each checked: an unknown one raises the scenario's KeyError), with the
    no-fix run and the fix chosen first always among them."""
    keys = [fixes] if isinstance(fixes, str) else fixes
    return frozenset({NONE, scenario.fix(fix).key, *(scenario.fix(key).key for key in keys)})


class LeafPlayground(_Explorer):
    """Type an expression over x, w, b (or pick one) and see describe() and the graph of the result."""

    def __init__(self, expression: str = "x * 2", task: Task | str | None = None):
        self.examples = widgets.Dropdown(options=[say("(examples)"), *PLAYGROUND_EXAMPLES],
                                      description=say("example"))
        self.expression = widgets.Text(value=expression, description=say("expression"), continuous_update=False,
                                       layout=widgets.Layout(width=_WIDE))
        self.evaluate = widgets.Button(description=say("evaluate"), button_style="primary")
        self.message = _html("graphleaf-playground-message")
        self.info = _html("graphleaf-playground-info")
        self.graph = _graph_image("graphleaf-playground-graph")
        self.examples.observe(self._on_example, "value")
        self.expression.observe(lambda change: self._refresh(), "value")
        self.evaluate.on_click(lambda _button: self._refresh())
        names = ", ".join(name for name in playground_namespace())
        intro = widgets.HTML(say("<i>Names you can use: <code>{names}</code> (fresh, seeded tensors each time).</i>",
                                 names=names))
        super().__init__([intro, self.examples, widgets.HBox([self.expression, self.evaluate]),
                          self.message, self.info, self.graph], "graphleaf-leaf-playground", task)
        self._refresh()

    def _on_example(self, change: Change) -> None:
        if change["new"] in PLAYGROUND_EXAMPLES:
            self.expression.value = change["new"]

    def _refresh(self) -> None:
        view = playground_view(self.expression.value)
        style = "" if view.ok else " style='color: #B04000'"
        self.message.value = f"<div{style}>{_pre(view.message)}</div>"
        info = view.info
        self.info.value = (html_table(list(PLAYGROUND_COLUMNS), [[repr(getattr(info, name)) for name in PLAYGROUND_COLUMNS]])
                           if info else "")
        _show_picture(self.graph, view.picture)
        self._show_task(view)


class DataLoaderLab(_Explorer):
    """Choose a DataLoader configuration, run it for real, and keep every outcome in a table."""

    def __init__(self, task: Task | str | None = None, data: torch.Tensor | None = None, offer_deepcopy: bool = True):
        require_rows(data)
        self.data = data  # the rows each run loads (None: run_loader's own x * 2)
        self.offer_deepcopy = offer_deepcopy  # False: no "deepcopy in __getitem__" checkbox or column
        methods = multiprocessing.get_all_start_methods()  # the platform's default first
        label = {"style": {"description_width": "initial"}}
        self.start_method = widgets.Dropdown(options=methods, value=methods[0], description=say("start method"),
                                            **label)
        self.num_workers = widgets.Dropdown(options=[0, 1, 2], value=1, description="num_workers", **label)
        self.batch_size = widgets.Dropdown(options=[("4", 4), ("None", None)], value=4, description="batch_size",
                                           **label)
        # Off, as in lesson 03's TensorDataset: a fork worker then fails where the lesson says (stack(out=)).
        self.deepcopy_in_getitem = widgets.Checkbox(value=False, description=say("deepcopy in __getitem__"),
                                                   **label)
        self.detach_at_construction = widgets.Checkbox(value=False, description=say("detach at construction"),
                                                      **label)
        self.run = widgets.Button(description=say("run DataLoader"), button_style="primary")
        self.clear = widgets.Button(description=say("clear history"))
        self.status = _html("graphleaf-loader-status",
                            say("<i>Each run waits at most {seconds:g} s for a batch, so it never hangs.</i>",
                                seconds=LOADER_TIMEOUT_S))
        self.table = _html("graphleaf-loader-table")
        self.view: LoaderView | None = None
        self.run.on_click(self._on_run)
        self.clear.on_click(self._on_clear)
        super().__init__([
            widgets.HBox([self.start_method, self.num_workers, self.batch_size]),
            widgets.HBox([self.deepcopy_in_getitem, self.detach_at_construction] if offer_deepcopy
                         else [self.detach_at_construction]),
            widgets.HBox([self.run, self.clear]), self.status, self.table,
        ], "graphleaf-dataloader-lab", task)

    @property
    def history(self) -> tuple[LoaderOutcome, ...]:
        return self.view.history if self.view else ()

    def _on_run(self, _button: widgets.Button) -> None:
        self.run.disabled = True
        self.status.value = say("<b>running…</b> (worker processes are starting)")
        try:
            self.view = loader_view(self.history, start_method=self.start_method.value,
                                    num_workers=self.num_workers.value,
                                    deepcopy_in_getitem=self.deepcopy_in_getitem.value,
                                    detach_at_construction=self.detach_at_construction.value,
                                    batch_size=self.batch_size.value, data=self.data)
        finally:
            self.run.disabled = False
        outcome = self.view.outcome
        printed = say("what the workers printed")
        details = (f"<details><summary>{printed}</summary>{_pre(outcome.worker_stderr)}</details>"
                   if outcome.worker_stderr else "")
        latest = say("latest: {summary}", summary=outcome.summary())
        self.status.value = f"{_pre(latest)}<small>{outcome.elapsed_s:.1f} s</small>{details}"
        self.table.value = self.view.html_table(deepcopy_column=self.offer_deepcopy)
        self._show_task(self.view)

    def _on_clear(self, _button: widgets.Button) -> None:
        self.view = None
        self.table.value = ""


class FixComparisonExplorer(_Explorer):
    """Choose a model and see which fixes make it copyable, and what each one costs."""

    def __init__(self, scenario: Scenario, measure: Measure = fix_summary, task: Task | str | None = None):
        require_scenario(scenario)
        models = model_scenarios()
        if scenario not in models:
            raise ValueError(say("fix_comparison() compares models; choose one of {models}, not {scenario!r}",
                                 models=[s.key for s in models], scenario=scenario.key))
        self.model = widgets.Dropdown(options=[(say(s.title), s) for s in models], value=scenario,
                                      description=say("model"), layout=widgets.Layout(width=_WIDE))
        self.table = _html("graphleaf-fix-table")
        self._measure = measure
        self.model.observe(lambda change: self._refresh(), "value")
        super().__init__([self.model, self.table], "graphleaf-fix-comparison", task)
        self._refresh()

    def _refresh(self) -> None:
        view = fix_comparison_view(self.model.value, self._measure)
        self.table.value = view.html()
        self._show_task(view)


def scenario_explorer(scenario: Scenario | str = SCENARIOS["intermediate_tensor"], fix: str = NONE,
                      task: Task | str | None = None, fixes: Sequence[str] | None = None) -> ScenarioExplorer:
    """A scenario and fix picker with a "deepcopy" button: the code, the result and the graph.

    Args:
        scenario: the scenario shown first (one of ``SCENARIOS``, or its key).
        fix: the key of the fix chosen first.
        task: something to do, shown on top with a "solved" sign once done: a ``graphleaf_edu.views.Task``
            or the name of one in ``graphleaf_edu.views.TASKS``.
        fixes: the keys of the fixes offered for ``scenario`` (with ``"none"`` and ``fix``, in the catalog's
            order); ``None``, the default, offers every one. Another scenario picked offers all of its own.

    Returns:
        The explorer, an ``ipywidgets.VBox``: display it in Jupyter.

    Raises:
        TypeError: ``scenario`` is neither a ``Scenario`` nor a key of ``SCENARIOS``.
        KeyError: no scenario, fix or task of that name (the message lists them).

    Example:
        >>> explorer = gl.scenario_explorer("model_cache", "safe_deepcopy", task="fix at the source")
        >>> explorer.fix.value
        'safe_deepcopy'
        >>> explorer
        ScenarioExplorer: an interactive explorer; run this cell in Jupyter to use it
    """
    if isinstance(scenario, str):
        if scenario not in SCENARIOS:
            raise KeyError(say("no scenario {scenario!r}; the scenarios are {scenarios}", scenario=scenario,
                               scenarios=sorted(SCENARIOS)))
        scenario = SCENARIOS[scenario]
    return ScenarioExplorer(scenario, fix, task, fixes)


def leaf_playground(expression: str = "x * 2", task: Task | str | None = None) -> LeafPlayground:
    """A text box (and examples) over seeded tensors x, w, b: describe() and the graph of the result.

    Args:
        expression: the Python expression shown first (over ``torch``, ``copy``, ``x``, ``w``, ``b``).
        task: something to do, shown on top with a "solved" sign once done (a ``Task`` or a name in ``TASKS``).

    Returns:
        The playground, an ``ipywidgets.VBox``: display it in Jupyter.

    Raises:
        Nothing of its own: an expression that fails shows its error in the widget.

    Example:
        >>> playground = gl.leaf_playground("w @ x + b")
        >>> playground
        LeafPlayground: an interactive explorer; run this cell in Jupyter to use it
    """
    return LeafPlayground(expression, task)


def dataloader_lab(data: torch.Tensor | None = None, task: Task | str | None = None, *,
                   offer_deepcopy: bool = True) -> DataLoaderLab:
    """Start method x workers x deepcopy in __getitem__ x detach at construction, run for real.

    Each run is ``run_loader`` with the chosen options: real worker processes, with a timeout.

    Args:
        data: the rows each run loads, one per item, on the CPU (e.g. the features a lesson computed);
            by default ``run_loader``'s own 8 rows of ``x * 2``.
        task: something to do, shown on top with a "solved" sign once done (a ``Task`` or a name in ``TASKS``).
        offer_deepcopy: show the "deepcopy in __getitem__" checkbox and column; ``False`` leaves it off,
            for a lesson that does not teach it.

    Returns:
        The lab, an ``ipywidgets.VBox``: display it in Jupyter.

    Raises:
        TypeError: ``data`` is not a tensor with at least one dimension.

    Example:
        >>> gl.dataloader_lab()
        DataLoaderLab: an interactive explorer; run this cell in Jupyter to use it
        >>> features = torch.nn.Linear(4, 4)(torch.randn(8, 4))
        >>> gl.dataloader_lab(features, task="a failure that only times out", offer_deepcopy=False).data is features
        True
    """
    return DataLoaderLab(task, data, offer_deepcopy)


def fix_comparison(scenario: Scenario = SCENARIOS["model_cache"], measure: Measure = fix_summary,
                   task: Task | str | None = None) -> FixComparisonExplorer:
    """Pick a model (a cache, old weight_norm, ...) and see which fixes make it copyable.

    Args:
        scenario: the model scenario shown first (one of ``SCENARIOS`` whose target is a model).
        measure: ``measure(scenario, fix) -> {column: value}`` fills the table (default
            ``fix_summary``); a notebook can pass the measuring function it built, so the widget shows its columns.
        task: something to do, shown on top with a "solved" sign once done (a ``Task`` or a name in ``TASKS``).

    Returns:
        The comparison, an ``ipywidgets.VBox`` holding one table row per fix.

    Raises:
        TypeError: ``scenario`` is not a ``Scenario``.

    Example:
        >>> comparison = gl.fix_comparison(gl.SCENARIOS["model_cache"])
        >>> "store out.detach() in forward" in comparison.table.value
        True
    """
    return FixComparisonExplorer(scenario, measure, task)
