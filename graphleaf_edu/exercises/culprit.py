"""Exercise 3: find the tensors that break ``copy.deepcopy`` of a model, by hand and with a plain-PyTorch search
(the package's own ``find_nonleaf`` does not count: the exercise is to write one)."""
from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from graphleaf_edu.diagnose import resolve
from graphleaf_edu.errors import error_line, gloss
from graphleaf_edu.exercises.feedback import (
    Wrong,
    call,
    exercise,
    grad_fn_name,
    require_function,
)
from graphleaf_edu.i18n import say

FIND_LESSON = "02_model_cache"
FEATURES, WIDTH = 4, 8


class Encoder(nn.Module):
    """Linear, ReLU, LayerNorm; counts its calls in a buffer, and may keep its last output."""

    def __init__(self, keep_output: bool = False):
        super().__init__()
        self.embed = nn.Linear(FEATURES, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.keep_output = keep_output
        self.last_output = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        output = self.norm(torch.relu(self.embed(x)))
        if self.keep_output:
            self.last_output = output
        return output


class Tagger(nn.Module):
    """A shared encoder with two heads; it logs a little about every batch it tags."""

    def __init__(self, confident_heads=("ner",), keep_hidden: bool = False, keep_history: bool = False):
        super().__init__()
        self.encoder = Encoder(keep_output=keep_hidden)
        self.heads = nn.ModuleDict({"pos": nn.Linear(WIDTH, 3), "ner": nn.Linear(WIDTH, 5)})
        self.labels = {"pos": ["noun", "verb", "other"], "ner": ["person", "place", "thing", "time", "none"]}
        self.confident_heads = tuple(confident_heads)
        self.log = {"batches": 0, "confidence": {}}
        self.history = [] if keep_history else None

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        hidden = self.encoder(x)
        scores = {name: head(hidden) for name, head in self.heads.items()}
        self.log["batches"] += 1
        for name in self.confident_heads:
            self.log["confidence"][name] = scores[name].softmax(-1).amax(-1).mean()
        if self.history is not None:
            self.history.append(hidden.mean(0))
        return scores


# (Tagger options, batches tagged, the paths of the tensors that break deepcopy)
TAGGER_VARIANTS = (
    ({}, 1, (".log['confidence']['ner']",)),
    ({"confident_heads": ("pos", "ner"), "keep_hidden": True}, 1,
     (".encoder.last_output", ".log['confidence']['pos']", ".log['confidence']['ner']")),
    ({"confident_heads": (), "keep_history": True}, 2, (".history[0]", ".history[1]")),
    ({"confident_heads": ()}, 1, ()),
)


def culprit_model(variant: int = 0) -> Tagger:
    """A ``Tagger`` (options of ``TAGGER_VARIANTS[variant]``) that has tagged its batches."""
    if variant not in range(len(TAGGER_VARIANTS)):
        raise ValueError(f"variant is an index into TAGGER_VARIANTS, 0 to {len(TAGGER_VARIANTS) - 1}; got {variant!r}")
    options, batches, _ = TAGGER_VARIANTS[variant]
    generator = torch.Generator().manual_seed(variant)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(variant)
        model = Tagger(**options)
    for _ in range(batches):
        model(torch.randn(6, FEATURES, generator=generator))
    return model


def _normalise_path(path: str) -> str:
    path = path.strip()
    for prefix in ("root", "model"):
        if path.startswith(prefix) and path[len(prefix):len(prefix) + 1] in (".", "["):
            return path[len(prefix):]
    if path[:1].isidentifier():  # "log['x']" means ".log['x']": an attribute of the model
        return "." + path
    return path


def _resolve(model: nn.Module, path: str) -> Any:
    try:
        return resolve(model, path)
    except Exception as error:  # noqa: BLE001 (any mistake in the typed path becomes feedback)
        failed = say("root{path} does not evaluate: {error}", path=path, error=error_line(error))
        raise Wrong(f"{failed} {gloss(failed)}".rstrip(),
                    say("Write the path as find_nonleaf does, from the model: e.g. \".encoder.embed.weight\" "
                        "or \".labels['pos'][0]\".")) from None


def _why_not_culprit(path: str, value: Any) -> str:
    where = f"root{path}"
    if isinstance(value, nn.Parameter):
        return say("{where} is a parameter. Parameters are leaves (made directly, not computed), and deepcopy "
                   "copies them. Look for a tensor that forward() computed and kept.", where=where)
    if isinstance(value, torch.Tensor) and value.is_leaf:
        return say("{where} is a leaf tensor (grad_fn=None), so deepcopy copies it; updating a tensor in place "
                   "with values that need no gradient keeps it a leaf.", where=where)
    if isinstance(value, (dict, list, tuple)):
        return say("{where} is a {type_name}: the culprit may be inside it. Go one level deeper.", where=where,
                   type_name=type(value).__name__)
    if isinstance(value, nn.Module):
        return say("{where} is a module: its parameters copy fine. What else does it store? Try vars({model}).",
                   where=where, model=where.replace("root", "model", 1))
    return say("{where} is a {type_name}, not a tensor.", where=where, type_name=type(value).__name__)


@exercise("Exercise 3 · find it by hand")
def check_culprit_by_hand(culprit_path: Callable[[], str]) -> str:
    """``culprit_path()`` returns the path in ``culprit_model()`` of the tensor deepcopy rejects."""
    name = require_function(culprit_path)
    path = call(culprit_path, f"{name}()")
    if not isinstance(path, str):
        raise Wrong(say("{name}() should return the path as a string, like \".encoder.embed.weight\"; it returned "
                        "a {type_name}.", name=name, type_name=type(path).__name__))
    model = culprit_model()
    path = _normalise_path(path)
    value = _resolve(model, path)
    if not isinstance(value, torch.Tensor) or value.is_leaf:
        raise Wrong(say("that is not the tensor deepcopy rejects."), _why_not_culprit(path, value))
    return say("root{path} has grad_fn={grad_fn}: forward() computed it and the model kept it, graph and all.",
               path=path, grad_fn=grad_fn_name(value))


@exercise("Exercise 3 · find them all, with plain PyTorch")
def check_culprit_finder(find_culprits: Callable[[nn.Module], list]) -> str:
    """``find_culprits(model)`` returns the paths of every tensor that breaks deepcopy of ``model``,
    found with plain PyTorch: a function that reaches into graphleaf_edu is turned down."""
    name = require_function(find_culprits)
    used = sorted(set(package_objects_used(find_culprits)))
    if used:
        raise Wrong(say("{name} uses graphleaf_edu ({used}): here the search is yours to write, with plain PyTorch.",
                        name=name, used=", ".join(used)),
                    say("Walk what the model holds (vars(module), module.named_children(), dicts, lists, tuples) and "
                        "keep each tensor whose grad_fn is not None ({lesson}).", lesson=FIND_LESSON))
    answers = []
    for variant, (options, _, expected) in enumerate(TAGGER_VARIANTS):
        model = culprit_model(variant)
        paths = _as_written_here(model, _paths_from(call(find_culprits, f"{name}(model)", model), name), expected)
        answers.append(paths)
        described = f"Tagger({', '.join(f'{k}={v!r}' for k, v in options.items())})"
        extra = sorted(paths - set(expected))
        if extra:
            raise Wrong(say("for {model} you listed root{path}, which deepcopy copies fine.", model=described,
                            path=extra[0]),
                        _why_not_culprit(extra[0], _resolve(model, extra[0])))
        if paths != set(expected):
            missed = len(set(expected) - paths)
            raise Wrong(say("for {model} your function misses {missed} of the {count} tensors that break deepcopy.",
                            model=described, missed=missed, count=len(expected)), _finder_hint(answers))
    return say("your function found every culprit in {count} models ({new} of them new to you), and nothing else.",
               count=len(TAGGER_VARIANTS), new=len(TAGGER_VARIANTS) - 1)


def _paths_from(result: Any, name: str) -> set[str]:
    if not isinstance(result, (list, tuple, set)):
        raise Wrong(say("{name}(model) should return a list of paths (strings); it returned a {type_name}.",
                        name=name, type_name=type(result).__name__))
    if any(not isinstance(item, str) for item in result):
        raise Wrong(say("{name}(model) should return paths as strings; it returned {type_name} items.", name=name,
                        type_name=type(next(item for item in result if not isinstance(item, str))).__name__),
                    say("Return where each tensor is, written from the model: \".encoder.last_output\", \".log['a']\"."))
    return {_normalise_path(path) for path in result}


def _as_written_here(model: nn.Module, paths: set[str], expected: tuple[str, ...]) -> set[str]:
    """``paths``, each that reaches one of the ``expected`` tensors written as ``expected`` writes it: a path
    through ``vars()`` (``._modules['encoder'].last_output``, what ``copy.deepcopy`` walks) names the same
    tensor as ``.encoder.last_output``."""
    wanted = {id(resolve(model, path)): path for path in expected}
    return {wanted.get(id(_resolve(model, path)), path) for path in paths}


def _finder_hint(answers: list[set[str]]) -> str:
    if len(answers) > 1 and all(paths == answers[0] for paths in answers):
        return say("It returns the same paths for every model: look at the model it is given, not at the one in "
                   "the notebook.")
    return say("Walk everything the model holds: its attributes (vars), its submodules, and the dicts, lists and "
               "tuples inside them, one level after another ({lesson}).", lesson=FIND_LESSON)


def package_objects_used(function: Callable[..., Any]) -> Iterator[str]:
    """The graphleaf_edu modules and objects ``function`` reaches by name (its globals and closure), and
    those of the functions it calls by name in turn."""
    seen: set[int] = set()
    todo: list[Any] = [function]
    while todo:
        current = todo.pop()
        code = getattr(current, "__code__", None)
        if code is None or id(current) in seen:
            continue
        seen.add(id(current))
        names, codes = set(), [code]
        while codes:
            block = codes.pop()
            names |= set(block.co_names)
            codes += [const for const in block.co_consts if isinstance(const, types.CodeType)]
        reached = [current.__globals__[n] for n in sorted(names) if n in current.__globals__]
        reached += [_cell_value(cell) for cell in current.__closure__ or ()]
        for value in reached:
            module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
            if isinstance(module, str) and module.split(".")[0] == "graphleaf_edu":
                yield getattr(value, "__name__", module)
            elif isinstance(value, types.FunctionType):
                todo.append(value)


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a closure variable not bound yet
        return None
