"""Why a non-leaf tensor sits where the walk found it, and the fix that fits that cause.

One ``Cause`` per kind the package knows (its ``kind`` is a short stable name), chosen from where
the tensor is stored: the object holding it, the edge that reaches it, the objects on the way. The
causes themselves, their words and fixes, are data: ``[causes]`` of ``graphleaf_edu/messages.toml``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import nn
from torch.nn.utils.prune import BasePruningMethod
from torch.nn.utils.spectral_norm import SpectralNorm
from torch.nn.utils.weight_norm import WeightNorm
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler
from torch.utils.data import Dataset

from graphleaf_edu import messages as M
from graphleaf_edu import stored_values as sv
from graphleaf_edu.deepcopy_reducers import ReducedParts
from graphleaf_edu.i18n import N_, say
from graphleaf_edu.stored_values import Node


@dataclass(frozen=True)
class Cause:
    kind: str  # a short stable name, for code and grep
    cause: str  # what the tensor is, in words
    fix: str  # the fix that fits, as code where it can be


def known(name: str) -> Cause:
    """The cause ``[causes.NAME]`` of ``graphleaf_edu/messages.toml`` (``known("CACHED")``), its words in
    English: ``diagnose`` says them in the user's language."""
    return _known()[name]


@cache
def _known() -> dict[str, Cause]:
    return {name: Cause(str(entry["kind"]), str(entry["cause"]), str(entry["fix"]))
            for name, entry in M.records("causes").items()}


def _naming(cause: Cause, **names: str) -> Cause:
    """``cause`` in the user's language, with the names that decided it filled into its words."""
    return Cause(cause.kind, say(cause.cause, **names), say(cause.fix, **names))


def _said(cause: Cause) -> Cause:
    """``cause`` in the user's language (words already said, by ``_naming``, stay as they are)."""
    return Cause(cause.kind, say(cause.cause), say(cause.fix))


# The words that name a holder in KEPT_ON and LOOKS_KEPT_ON, marked for the catalogs.
_HOLDERS = (N_("LR scheduler"), N_("optimizer"), N_("callback"), N_("trainer"), N_("logger"), N_("monitor"),
            N_("tracker"), N_("meter"), N_("recorder"))


# The pre-hooks that write a reparametrised weight: their class, the field naming the weight, the cause.
_REPARAMETRISATIONS = (
    (WeightNorm, "name", "OLD_WEIGHT_NORM"), (SpectralNorm, "name", "OLD_SPECTRAL_NORM"),
    (BasePruningMethod, "_tensor_name", "PRUNE"),
)

_HOOK_STORES = re.compile(r"_(forward|backward)(_pre)?_hooks(_with_kwargs)?$|_state_dict_hooks$")
_LOGGED_NAME = re.compile(
    r"(^|_)(loss(es)?|metrics?|logs?|logged|outputs?|outs|history|results?|preds?|predictions?)($|_)", re.IGNORECASE
)
_KEEPER_NAME = re.compile(r"Callback|Trainer|Logger|Monitor|Tracker|Meter|Recorder")
_LR_SETTINGS = ("lr", "initial_lr", "max_lr", "min_lr")
# The name torch.fx's Tracer.create_arg gives a tensor it meets that no attribute holds (setattr on the root it traces).
_TRACED_CONSTANT_NAME = re.compile(r"_tensor_constant\d+")
_KV_NAME = re.compile(r"past_key_values|kv_cache|key_value|model_kwargs|layer_past", re.IGNORECASE)
_CONTAINERS = (dict, list, tuple, set, frozenset, ReducedParts)


def diagnose(nodes: list[Node], index: int) -> Cause:
    """The cause of the non-leaf tensor at ``nodes[index]`` (a node of ``deepcopy_walk.walk``), in the
    user's language."""
    return _said(_cause_of(nodes, index))


def _cause_of(nodes: list[Node], index: int) -> Cause:
    _, parent, kind, key = nodes[index]
    if parent < 0:
        return known("ROOT_TENSOR")
    if kind == sv.GRAD:
        return known("NONLEAF_GRAD")
    if kind == sv.KEY:
        return known("KEYED")
    hook = _through_hook(nodes, index)
    if hook:
        return hook
    owned = _owned_cause(nodes, _owner(nodes, parent), index)
    holder = nodes[parent][0]
    if not isinstance(holder, nn.Module):
        return owned
    if kind in (sv.ATTR, sv.BUFFER) and _is_graph_module(holder):
        return _naming(known("FX_CONSTANT"), name=str(key))
    wrapper_index = _owner(nodes, nodes[parent][1])
    return _module_cause(holder, nodes[wrapper_index][0] if wrapper_index >= 0 else None, kind, key, owned)


def _owned_cause(nodes: list[Node], owner_index: int, index: int) -> Cause:
    """By the object that owns the tensor (the nearest one that is not a plain container) and the
    names on the way down to it."""
    owner = nodes[owner_index][0] if owner_index >= 0 else None
    names = _names_between(nodes, owner_index, index)
    if isinstance(owner, Optimizer):
        return _optimizer_cause(names)
    if isinstance(owner, LRScheduler):
        return known("LEARNED_LR") if names and "lr" in names[-1] else _naming(known("KEPT_ON"), holder=say("LR scheduler"))
    if isinstance(owner, Dataset):
        return known("DATASET")
    if isinstance(owner, torch.Tensor):
        return known("TENSOR_ATTRIBUTE")
    kv_name = next((name for name in names if _KV_NAME.search(name)), None)
    if kv_name:
        return _naming(known("KV_CACHE"), name=kv_name)
    if isinstance(owner, nn.Module):
        return known("MODULE_CONTAINER")
    keeper = _keeper_kind(owner)
    if keeper:
        return _naming(known("LOOKS_KEPT_ON"), holder=say(keeper))
    logged_name = next((name for name in names if _LOGGED_NAME.search(name)), None)
    if logged_name:
        return _naming(known("LOGGED"), name=logged_name)
    return known("CONTAINED") if owner is None else known("OBJECT_ATTRIBUTE")


def _optimizer_cause(names: list[str]) -> Cause:
    """By where the tensor sits in the optimizer (``names``: from the tensor up to the optimizer)."""
    store = names[-1] if names else ""
    if store == "state":
        return known("OPTIMIZER")
    if store not in ("param_groups", "defaults"):
        return _naming(known("KEPT_ON"), holder=say("optimizer"))
    if "params" in names:
        return known("OPTIMIZER_PARAM")
    setting = names[-2] if len(names) > 1 else ""
    return known("LEARNED_LR") if setting in _LR_SETTINGS else _naming(known("HYPERPARAMETER"), name=setting)


def _keeper_kind(owner: Any) -> str | None:
    """"trainer", "callback", ... when the owner's class (or a base) is named like one."""
    for klass in type(owner).__mro__:
        match = _KEEPER_NAME.search(klass.__name__)
        if match:
            return match.group(0).lower()
    return None


def _owner(nodes: list[Node], index: int) -> int:
    """The nearest enclosing object that is not a plain container (-1: containers up to the root)."""
    while index >= 0 and isinstance(nodes[index][0], _CONTAINERS):
        index = nodes[index][1]
    return index


def _names_between(nodes: list[Node], owner: int, index: int) -> list[str]:
    """The attribute names and string keys on the way from the owner down to the tensor."""
    names = []
    while index > owner and index > 0:
        _, parent, kind, key = nodes[index]
        if kind in (sv.ATTR, sv.SLOT, sv.MEMBER, sv.STATE_ITEM) and isinstance(key, str):
            names.append(key)
        elif kind == sv.VALUE and isinstance(key[1], str):
            names.append(key[1])
        index = parent
    return names


def _through_hook(nodes: list[Node], index: int) -> Cause | None:
    """A path through a module's hook dict into a bound method's ``self`` (BYOL-style wrappers)."""
    through_self = False
    while index > 0:
        _, parent, kind, key = nodes[index]
        through_self = through_self or (kind == sv.MEMBER and key == "__self__")
        holder = nodes[parent][0]
        if kind == sv.ATTR and isinstance(holder, nn.Module) and _HOOK_STORES.search(str(key)):
            return known("HOOK_OBJECT") if through_self else None
        index = parent
    return None


def _is_graph_module(module: nn.Module) -> bool:
    return any(klass.__module__ == "torch.fx.graph_module" for klass in type(module).__mro__)


def _module_cause(module: nn.Module, wrapper: Any, kind: str, name: Any, otherwise: Cause) -> Cause:
    """By what the module (and the one around it) stores. A parameter: DataParallel replicas are
    marked ``_is_replica``, WeightDrop keeps ``<name>_raw`` on the module or its wrapper, any other
    computed parameter is a fast weight. An attribute: the pre-hook of an old reparametrisation
    (weight_norm, spectral_norm, prune) that writes it, a constant torch.fx tracing set on the module
    (``_tensor_constant0``), else a cached activation."""
    stored = sv.instance_dict(module)
    if kind == sv.PARAM or (kind == sv.ATTR and stored.get("_is_replica")):
        if stored.get("_is_replica"):
            return known("REPLICA_PARAMETER")
        raw = f"{name}_raw"
        for state in (stored, sv.instance_dict(wrapper) if isinstance(wrapper, nn.Module) else {}):
            if raw in state.get("_parameters", {}) or raw in state:
                return known("WEIGHT_DROP")
        return known("FAST_WEIGHTS")
    if kind == sv.BUFFER:
        return known("BUFFER_ASSIGNED")
    if kind not in (sv.ATTR, sv.SLOT):
        return otherwise
    for hook in stored.get("_forward_pre_hooks", {}).values():
        for hook_class, name_field, cause in _REPARAMETRISATIONS:
            if isinstance(hook, hook_class) and sv.instance_dict(hook).get(name_field) == name:
                return _naming(known(cause), name=name)
    if isinstance(name, str) and _TRACED_CONSTANT_NAME.fullmatch(name):
        return _naming(known("TRACED_CONSTANT"), name=name)
    return known("CACHED")
