"""What every view shares: pictures (rendered once, cache bounded), seeded runs, tensor text, tasks."""
from __future__ import annotations

import contextlib
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from graphleaf_edu.diagnose import TensorInfo
from graphleaf_edu.graphs import AutogradGraph, GraphvizNotFoundError
from graphleaf_edu.i18n import N_, say

__all__ = ["PICTURE_CACHE_SIZE", "Task", "clear_caches", "picture", "tensor_text"]

PICTURE_CACHE_SIZE = 256
_pictures: OrderedDict[str, bytes] = OrderedDict()
_caches: list[Callable[[], None]] = [_pictures.clear]


def picture(graph: AutogradGraph) -> bytes:
    """The graph as SVG bytes; rendered once per distinct DOT source (ids are deterministic, so views repeat)."""
    key = graph.source
    if key in _pictures:
        _pictures.move_to_end(key)
    else:
        _pictures[key] = graph.svg().encode("utf-8")
        if len(_pictures) > PICTURE_CACHE_SIZE:
            _pictures.popitem(last=False)
    return _pictures[key]


def picture_or_hint(graph: AutogradGraph | None) -> tuple[bytes | None, str]:
    """``(svg, "")``, or ``(None, the install hint and the graph as text)`` without Graphviz."""
    if graph is None:
        return None, ""
    try:
        return picture(graph), ""
    except GraphvizNotFoundError as missing:
        return None, f"{missing}\n\n" + say("The graph as text:") + f"\n{graph.outline()}"


def cached(clear: Callable[[], None]) -> None:
    """Register a cache of the views, so that ``clear_caches()`` empties it."""
    _caches.append(clear)


def clear_caches() -> None:
    """Forget every cached view and picture (the next call runs and renders again)."""
    for clear in _caches:
        clear()


def keeping_random_state() -> contextlib.AbstractContextManager[None]:
    """The scenarios seed torch: a click in an explorer must not change the notebook's random numbers."""
    return torch.random.fork_rng(devices=[])


def tensor_text(info: TensorInfo) -> str:
    fields = {"grad_fn": info.grad_fn, "requires_grad": info.requires_grad, "shape": list(info.shape)}
    if info.is_leaf:
        text = say("leaf, grad_fn={grad_fn}, requires_grad={requires_grad}, shape {shape}", **fields)
    else:
        text = say("non-leaf, grad_fn={grad_fn}, requires_grad={requires_grad}, shape {shape}", **fields)
    if info.deepcopy_ok:
        return text + say("; deepcopy copies it")
    return text + say("; deepcopy refuses it: {blocker}", blocker=info.deepcopy_blocker)


def translated_cell(value: object) -> object:
    """A table cell in the user's language: a word the catalog knows (a fix's title or cost, a measured
    "no"), each part of a comma list of them; anything else (numbers, code, errors) as it is."""
    if not isinstance(value, str):
        return value
    whole = say(value)
    if whole != value or ", " not in value:
        return whole
    return say(", ").join(say(part) for part in value.split(", "))


def without_build_path(warning: str) -> str:
    # PyTorch's C++ warnings end with the path of the machine that built torch.
    return re.sub(r"\s*\(Triggered internally at [^)]*\)", "", warning)


@dataclass(frozen=True)
class Task:
    """Something to do in an explorer, and how to tell that it is done.

    ``done(view)`` receives the explorer's current view (a ``ScenarioView``, ``PlaygroundView``,
    ``LoaderView`` or ``FixComparison``) and says whether it shows a solution; ``solved`` is the
    sign shown then. ``why_not(view)``, where given, says in one line why a view that is no
    solution is none (e.g. a copy that works but leaves the graph in the model), or ``None``.

        >>> Task("Make the copy work without changing the original model.",
        ...      lambda view: view.ok and "changes the original" not in view.result_text)
    """

    prompt: str
    done: Callable[[Any], bool]
    solved: str = N_("Solved!")
    why_not: Callable[[Any], str | None] | None = None

    def title(self) -> str:
        """``"task: <prompt>"`` in the user's language."""
        return say("task: {prompt}", prompt=say(self.prompt))

    def check(self, view: Any) -> tuple[bool, str | None]:
        """``(True, <solved>)`` once ``view`` shows a solution; else ``(False, <reason>)`` when ``why_not``
        says why it does not, or ``(False, None)`` (in the user's language)."""
        if view is None:
            return False, None
        if self.done(view):
            return True, say(self.solved)
        return False, self.why_not(view) if self.why_not is not None else None

    def status(self, view: Any) -> str:
        """The title, then ``"✔ <solved>"`` or ``"→ <reason>"`` on a line of its own where ``check`` gives one."""
        solved, line = self.check(view)
        return self.title() + ("" if line is None else f"\n{'✔' if solved else '→'} {line}")
