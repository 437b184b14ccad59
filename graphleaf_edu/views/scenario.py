"""One fix of one scenario, run: its code, the outcome, and the graph of the tensor being copied."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from graphleaf_edu.diagnose import describe, find_nonleaf, resolve
from graphleaf_edu.errors import gloss
from graphleaf_edu.graphs import AutogradGraph, draw, leaves_behind
from graphleaf_edu.i18n import language, say
from graphleaf_edu.scenarios import NONE, Outcome, Scenario, require_scenario
from graphleaf_edu.views.common import (
    cached,
    keeping_random_state,
    picture_or_hint,
    tensor_text,
    without_build_path,
)

__all__ = ["ScenarioView", "scenario_view"]

_CACHE_SIZE = 128
_MISSING = object()


@dataclass(frozen=True, eq=False)
class ScenarioView:
    """One fix of one scenario, run: its code, the outcome, and the graph of the tensor being copied."""

    scenario: Scenario
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
        graph_line = repr(self.graph) if self.graph is not None else say("no graph to draw")
        return f"{self.result_text}\n\n{self.caption}\n{graph_line}"


def scenario_view(scenario: Scenario, fix: str = NONE) -> ScenarioView:
    """Run ``fix`` of ``scenario`` (cached: the code is seeded) and describe what happened."""
    require_scenario(scenario)
    return _scenario_view(scenario, scenario.fix(fix).key, language())


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _scenario_view(scenario: Scenario, fix: str, _language: str) -> ScenarioView:
    """One view per scenario, fix and language (its text is in the language it was made in)."""
    with keeping_random_state():
        outcome = scenario.run(fix)
    graph, caption = _copy_graph(scenario, outcome)
    svg, hint = picture_or_hint(graph)
    return ScenarioView(
        scenario=scenario,
        fix=fix,
        code=outcome.code,
        ok=outcome.ok,
        error_line=outcome.error_line,
        result_text=_result_text(scenario, outcome),
        caption=caption + (f"\n{hint}" if hint else ""),
        graph=graph,
        picture=svg,
    )


cached(_scenario_view.cache_clear)


def _result_text(scenario: Scenario, outcome: Outcome) -> str:
    fix = scenario.fix(outcome.fix)
    if outcome.ok and _same_memory(outcome.copied, outcome.original):  # detach(): a view, no copy
        lines = ["✓ " + say("no copy made, none needed: copied is a {type_name} outside the graph, on {target}'s "
                            "own memory", type_name=type(outcome.copied).__name__, target=scenario.target),
                 _copy_summary(outcome.copied)]
    elif outcome.ok:
        lines = ["✓ " + say("the copy worked: copied is {type_name}", type_name=type(outcome.copied).__name__),
                 _copy_summary(outcome.copied)]
    else:
        lines = [f"✗ {type(outcome.error).__name__}: {outcome.error}"]
        if gloss(str(outcome.error)):
            lines.append(gloss(str(outcome.error)))
    lines.append(say("fix: {title} ({cost})", title=say(fix.title), cost=say(fix.cost)))
    if fix.mutates_original:
        lines.append(say("careful: this fix changes the original {target}", target=scenario.target))
    lines += [say("warning recorded: {warning}", warning=without_build_path(w)) for w in outcome.warnings]
    return "\n".join(lines)


def _same_memory(copied: Any, original: Any) -> bool:
    """Whether ``copied`` is no copy but a tensor on ``original``'s storage (``detach()`` makes one)."""
    return (isinstance(copied, torch.Tensor) and isinstance(original, torch.Tensor)
            and copied.untyped_storage().data_ptr() == original.untyped_storage().data_ptr())


def _copy_summary(copied: Any) -> str:
    if isinstance(copied, torch.Tensor):
        return say("copied: {description}", description=tensor_text(describe(copied)))
    found = find_nonleaf(copied)
    if not found:
        return say("inside the copy: no tensor with a grad_fn, so copy.deepcopy accepts the copy too")
    return say("inside the copy, still with a grad_fn: {paths}", paths=", ".join(f"copied{f.path}" for f in found))


def _copy_graph(scenario: Scenario, outcome: Outcome) -> tuple[AutogradGraph | None, str]:
    """The tensor at ``culprit`` in the original (and its counterpart in the copy), drawn and described."""
    compared = [(scenario.target + scenario.culprit, _at(outcome.original, scenario.culprit))]
    if outcome.ok:
        compared += _counterpart(outcome.copied, outcome.original, scenario.culprit)
    met = {id(f.tensor) for root in (outcome.original, outcome.copied) for f in find_nonleaf(root)}
    tensors = {name: value for name, value in compared if isinstance(value, torch.Tensor)}
    lines = [f"{name}: {_value_text(value, met)}" for name, value in compared]
    if not tensors:
        return None, "\n".join(lines)
    roots = list(tensors.values())
    highlighted = [t for t in roots if t.is_leaf or id(t) in met]
    names = names_in_graph({**tensors, **named_tensors(outcome.namespace)}, roots)
    caption = say("the graph shows {names}; highlighted: the tensors copy.deepcopy reaches, marked with what it "
                  "does to them", names=say(" and ").join(tensors))
    return draw(roots, names=names, highlight=highlighted or None), "\n".join([caption, *lines])


def _at(root: Any, path: str) -> Any:
    """``resolve(root, path)``, or ``_MISSING`` when nothing is stored there (any more)."""
    try:
        return resolve(root, path)
    except (AttributeError, KeyError, IndexError, TypeError):
        return _MISSING


def _counterpart(copied: Any, original: Any, path: str) -> list[tuple[str, Any]]:
    """Where the copy keeps what ``path`` names in the original (through a ``.module`` wrapper, e.g. AveragedModel)."""
    if type(copied) is type(original):
        return [("copied" + path, _at(copied, path))]
    if type(getattr(copied, "module", None)) is type(original):
        return [("copied.module" + path, _at(copied.module, path))]
    if isinstance(copied, torch.Tensor):
        return [("copied", copied)]
    return []


def _value_text(value: Any, met: set[int]) -> str:
    if value is _MISSING:
        return say("nothing stored there")
    if value is None:
        return say("None: nothing to copy there")
    if not isinstance(value, torch.Tensor):
        return say("a {type_name}", type_name=type(value).__name__)
    if value.is_leaf or id(value) in met:
        return tensor_text(describe(value))
    return say("non-leaf, grad_fn={grad_fn}, but copy.deepcopy never reaches it (made on each access, or skipped "
               "by the class's own copying)", grad_fn=type(value.grad_fn).__name__)


def named_tensors(namespace: dict[str, Any]) -> dict[str, torch.Tensor]:
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


def names_in_graph(candidates: dict[str, torch.Tensor], roots: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """The candidates that are roots or leaves the roots were computed from (draw() shows every name)."""
    wanted = {id(t) for t in roots} | {id(leaf) for leaf in leaves_behind(roots)}
    return {name: t for name, t in candidates.items() if id(t) in wanted}
