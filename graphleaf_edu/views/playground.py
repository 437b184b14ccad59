"""An expression over seeded tensors, evaluated: ``describe()`` and the graph of the result."""
from __future__ import annotations

import builtins
import copy
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from graphleaf_edu.diagnose import TensorInfo, describe
from graphleaf_edu.errors import error_line, first_line, gloss
from graphleaf_edu.graphs import AutogradGraph, draw
from graphleaf_edu.i18n import say
from graphleaf_edu.views.common import (
    keeping_random_state,
    picture_or_hint,
    tensor_text,
    without_build_path,
)
from graphleaf_edu.views.scenario import named_tensors, names_in_graph

__all__ = ["PLAYGROUND_EXAMPLES", "PlaygroundView", "playground_namespace", "playground_view"]

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
            lines.append(say("describe(): {description}", description=tensor_text(self.info)))
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
        return _message(expression, say("Type an expression over {names} (e.g. x * 2), or pick an example.",
                                        names=usable))
    try:
        code = compile(text, "<playground>", "eval")
    except SyntaxError as error:
        return _message(expression, _syntax_message(text, error))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with keeping_random_state():
                result = eval(code, {"__builtins__": _SAFE_BUILTINS}, namespace)
        except NameError as error:
            return _message(expression, say("{error}. Names you can use: {names}.", error=error, names=usable))
        except Exception as error:  # noqa: BLE001 (any mistake in the typed text becomes a message)
            raised = say("{expression} raised {error}", expression=text, error=error_line(error))
            return _message(expression, f"{raised} {gloss(raised)}".rstrip())
    notes = "".join("\n" + say("warning: {warning}", warning=without_build_path(first_line(str(w.message))))
                    for w in caught)
    if not isinstance(result, torch.Tensor):
        what = "None" if result is None else say("a {type_name} ({value})", type_name=type(result).__name__,
                                                  value=_label(repr(result)))
        return _message(expression, say("{expression} is {what}, not a tensor: describe() and the graph need a tensor.",
                                        expression=text, what=what) + notes)
    names = names_in_graph({_label(text): result, **named_tensors(namespace)}, [result])
    graph = draw(result, names=names, highlight=result)
    svg, hint = picture_or_hint(graph)
    if result.is_leaf:
        message = say("{expression} is a leaf tensor", expression=text)
    else:
        message = say("{expression} is a non-leaf tensor", expression=text)
    message += notes + (f"\n{hint}" if hint else "")
    return PlaygroundView(expression, True, message, describe(result), graph, svg)


def _message(expression: str, message: str) -> PlaygroundView:
    return PlaygroundView(expression, False, message, None, None, None)


def _syntax_message(text: str, error: SyntaxError) -> str:
    try:
        compile(text, "<playground>", "exec")
    except SyntaxError:
        return say("That is not valid Python ({reason}). Try e.g. x * 2.", reason=error.msg)
    return say("{expression} is a statement; type an expression instead (what you would write after `y = `).",
               expression=text)


def _label(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[:_LABEL_CHARS - 3] + "..."
