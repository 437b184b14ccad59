"""Why a non-leaf tensor sits where the walk found it, and the fix that fits that cause.

One ``Cause`` per kind the package knows (its ``kind`` is a short stable name), chosen from where
the tensor is stored: the object holding it, the edge that reaches it, the objects on the way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.utils.prune import BasePruningMethod
from torch.nn.utils.spectral_norm import SpectralNorm
from torch.nn.utils.weight_norm import WeightNorm
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler
from torch.utils.data import Dataset

from graphleaf_edu import stored_values as sv
from graphleaf_edu.deepcopy_reducers import ReducedParts
from graphleaf_edu.i18n import N_, say
from graphleaf_edu.stored_values import Node


@dataclass(frozen=True)
class Cause:
    kind: str  # a short stable name, for code and grep
    cause: str  # what the tensor is, in words
    fix: str  # the fix that fits, as code where it can be


def _cause(kind: str, cause: str, fix: str) -> Cause:
    return Cause(kind, cause, fix)


def _naming(cause: Cause, **names: str) -> Cause:
    """``cause`` in the user's language, with the names that decided it filled into its words."""
    return Cause(cause.kind, say(cause.cause, **names), say(cause.fix, **names))


def _said(cause: Cause) -> Cause:
    """``cause`` in the user's language (words already said, by ``_naming``, stay as they are)."""
    return Cause(cause.kind, say(cause.cause), say(cause.fix))


# The words that name a holder in KEPT_ON and LOOKS_KEPT_ON, marked for the catalogs.
_HOLDERS = (N_("LR scheduler"), N_("optimizer"), N_("callback"), N_("trainer"), N_("logger"), N_("monitor"),
            N_("tracker"), N_("meter"), N_("recorder"))


ROOT_TENSOR = _cause(
    "root-tensor", N_("the object itself is a non-leaf tensor"),
    N_("copy `t.detach()` instead of t (the graph stays on t for backward)"),
)
NONLEAF_GRAD = _cause(
    "nonleaf-grad", N_(".grad is non-leaf (backward with create_graph=True)"),
    N_("once the higher-order step is done, drop the gradient's graph: `x.grad = x.grad.detach()` (or `x.grad = None`)"),
)
KEYED = _cause(
    "tensor-key", N_("non-leaf tensor used as a dict key or set member"),
    N_("key by something without a graph (a name, an index, or `t.detach()`)"),
)
CACHED = _cause(
    "cached-activation", N_("cached activation in a module attribute"),
    N_("store `output.detach()` where it is cached (in `forward` or the forward hook), or set the attribute to None before copying"),
)
BUFFER_ASSIGNED = _cause(
    "buffer-assigned", N_("buffer re-assigned to a non-leaf tensor"),
    N_("update the buffer under `torch.no_grad()` or assign `value.detach()`"),
)
MODULE_CONTAINER = _cause(
    "module-container", N_("activations kept in a list/dict attribute of a module"),
    N_("store `.detach()`ed tensors in it, or clear it before copying"),
)
HOOK_OBJECT = _cause(
    "hook-object", N_("a hook's object keeps outputs: copying the module copies the hook's bound `self` too"),
    N_("store `output.detach()` in the hook, or remove the hook (`handle.remove()`) before copying the module"),
)
REPLICA_PARAMETER = _cause(
    "replica-parameter", N_("non-leaf parameter of a DataParallel replica (computed from the original's)"),
    N_("copy the original module (`dp.module`), never a replica made inside `forward`"),
)
WEIGHT_DROP = _cause(
    "weight-drop", N_("non-leaf parameter written by WeightDrop/DropConnect (`dropout(weight_raw)` put in `_parameters`)"),
    N_("copy before the first forward or after resetting it from the raw weight: "
       "`module._parameters[name] = nn.Parameter(module.<name>_raw.detach().clone())`, "
       "or compute the dropped weight as a local in `forward`"),
)
FAST_WEIGHTS = _cause(
    "fast-weights", N_("non-leaf parameter: fast weights (a parameter replaced by `w - lr * grad`, learn2learn/higher style)"),
    N_("copy the base model before the inner loop, or keep fast weights outside the module: "
       "`torch.func.functional_call(model, fast_weights, (x,))`"),
)
FX_CONSTANT = _cause(
    "fx-constant", N_("a torch.fx constant kept with its graph: a non-leaf tensor the traced code uses, stored in the GraphModule as {name!r}"),
    N_("make it without a graph: trace under `torch.no_grad()` (when tracing computes it) or compute it from "
       "tensors that do not require grad; or detach it: `gm.{name} = gm.{name}.detach()`"),
)
TRACED_CONSTANT = _cause(
    "fx-constant", N_("a torch.fx constant, not an activation: tracing this module (torch.fx.symbolic_trace) stored on it, "
                      "as {name!r}, a non-leaf tensor its forward uses that no attribute held"),
    N_("make that tensor without a graph: trace under `torch.no_grad()` (when tracing computes it) or compute it "
       "from tensors that do not require grad; or detach it: `module.{name} = module.{name}.detach()` "
       "(the module's own forward never reads this attribute)"),
)
LEARNED_LR = _cause(
    "tensor-hyperparameter", N_("a learned learning rate: a non-leaf tensor as the optimizer's lr (or a scheduler's copy of it)"),
    N_("give the optimizer a detached value (`group['lr'] = lr.detach()`) and keep the learnable one outside it"),
)
HYPERPARAMETER = _cause(
    "tensor-hyperparameter", N_("a tensor hyper-parameter ({name!r}) with a graph, in the optimizer's param_groups"),
    N_("give the optimizer a detached value (`group[{name!r}] = value.detach()`) and keep the learnable one outside it"),
)
OPTIMIZER = _cause(
    "optimizer-state", N_("optimizer state holds a non-leaf tensor"),
    N_("update optimizer state under `torch.no_grad()` (as `optimizer.step()` does)"),
)
OPTIMIZER_PARAM = _cause(
    "optimizer-param", N_("a non-leaf tensor among the optimizer's params (an optimizer updates leaves)"),
    N_("give the optimizer the leaf tensors it should update (the module's parameters, or `nn.Parameter(t.detach())`)"),
)
KEPT_ON = _cause(
    "logged-output", N_("a step's output (a loss or metric) kept with its graph on the {holder}: torch keeps no such tensor there"),
    N_("keep `loss.detach()` there instead: it stays a tensor (`loss.item()` only where a number is what you keep)"),
)
LOOKS_KEPT_ON = _cause(
    "logged-output", N_("looks like a step's output (a loss or metric) kept with its graph on a {holder} (by its class name)"),
    N_("keep `loss.detach()` in the {holder}'s state instead: it stays a tensor (`loss.item()` only where a number is what you keep)"),
)
DATASET = _cause(
    "dataset", N_("dataset holds a non-leaf tensor"),
    N_("store `tensor.detach()` in the dataset (in its `__init__`), or build the data under `torch.no_grad()`"),
)
TENSOR_ATTRIBUTE = _cause(
    "tensor-attribute", N_("non-leaf tensor stored as an attribute of a tensor (a tensor subclass' attribute)"),
    N_("store `value.detach()` on the tensor instead"),
)
LOGGED = _cause(
    "logged-output", N_("looks like a logged metric or step output (by the name {name!r}), still attached to the graph"),
    N_("store `loss.detach()` where it is logged: it stays a tensor (`loss.item()` only where a number is what you keep); "
       "keep only detached outputs in history/state that gets copied"),
)
KV_CACHE = _cause(
    "kv-cache",
    N_("looks like a KV-cache or model kwargs (by the name {name!r}), still attached to the graph, deep-copied with the generation state"),
    N_("generate under `torch.no_grad()` / `torch.inference_mode()`, or detach the cache tensors before copying"),
)
OBJECT_ATTRIBUTE = _cause(
    "object-attribute", N_("non-leaf tensor in an object attribute"),
    N_("store `tensor.detach()` unless you still need to backpropagate through it"),
)
CONTAINED = _cause(
    "container", N_("non-leaf tensor in a container"),
    N_("put `tensor.detach()` in the container; keep the graph only where you call backward"),
)
OLD_WEIGHT_NORM = _cause(
    "old-weight-norm", N_("old torch.nn.utils.weight_norm"),
    N_("use `torch.nn.utils.parametrizations.weight_norm` (it deep-copies), or call "
       "`torch.nn.utils.remove_weight_norm(module, {name!r})` before copying"),
)
OLD_SPECTRAL_NORM = _cause(
    "old-spectral-norm", N_("spectral_norm (old API) after a forward"),
    N_("use `torch.nn.utils.parametrizations.spectral_norm`, or call "
       "`torch.nn.utils.remove_spectral_norm(module, {name!r})` before copying"),
)
PRUNE = _cause(
    "prune", N_("torch.nn.utils.prune reparametrisation"),
    N_("make the pruning permanent with `torch.nn.utils.prune.remove(module, {name!r})` "
       "before copying, or copy the `state_dict()` into a new instance"),
)
# The pre-hooks that write a reparametrised weight: their class, the field naming the weight, the cause.
_REPARAMETRISATIONS = (
    (WeightNorm, "name", OLD_WEIGHT_NORM), (SpectralNorm, "name", OLD_SPECTRAL_NORM),
    (BasePruningMethod, "_tensor_name", PRUNE),
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
        return ROOT_TENSOR
    if kind == sv.GRAD:
        return NONLEAF_GRAD
    if kind == sv.KEY:
        return KEYED
    hook = _through_hook(nodes, index)
    if hook:
        return hook
    owned = _owned_cause(nodes, _owner(nodes, parent), index)
    holder = nodes[parent][0]
    if not isinstance(holder, nn.Module):
        return owned
    if kind in (sv.ATTR, sv.BUFFER) and _is_graph_module(holder):
        return _naming(FX_CONSTANT, name=str(key))
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
        return LEARNED_LR if names and "lr" in names[-1] else _naming(KEPT_ON, holder=say("LR scheduler"))
    if isinstance(owner, Dataset):
        return DATASET
    if isinstance(owner, torch.Tensor):
        return TENSOR_ATTRIBUTE
    kv_name = next((name for name in names if _KV_NAME.search(name)), None)
    if kv_name:
        return _naming(KV_CACHE, name=kv_name)
    if isinstance(owner, nn.Module):
        return MODULE_CONTAINER
    keeper = _keeper_kind(owner)
    if keeper:
        return _naming(LOOKS_KEPT_ON, holder=say(keeper))
    logged_name = next((name for name in names if _LOGGED_NAME.search(name)), None)
    if logged_name:
        return _naming(LOGGED, name=logged_name)
    return CONTAINED if owner is None else OBJECT_ATTRIBUTE


def _optimizer_cause(names: list[str]) -> Cause:
    """By where the tensor sits in the optimizer (``names``: from the tensor up to the optimizer)."""
    store = names[-1] if names else ""
    if store == "state":
        return OPTIMIZER
    if store not in ("param_groups", "defaults"):
        return _naming(KEPT_ON, holder=say("optimizer"))
    if "params" in names:
        return OPTIMIZER_PARAM
    setting = names[-2] if len(names) > 1 else ""
    return LEARNED_LR if setting in _LR_SETTINGS else _naming(HYPERPARAMETER, name=setting)


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
            return HOOK_OBJECT if through_self else None
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
            return REPLICA_PARAMETER
        raw = f"{name}_raw"
        for state in (stored, sv.instance_dict(wrapper) if isinstance(wrapper, nn.Module) else {}):
            if raw in state.get("_parameters", {}) or raw in state:
                return WEIGHT_DROP
        return FAST_WEIGHTS
    if kind == sv.BUFFER:
        return BUFFER_ASSIGNED
    if kind not in (sv.ATTR, sv.SLOT):
        return otherwise
    for hook in stored.get("_forward_pre_hooks", {}).values():
        for hook_class, name_field, said in _REPARAMETRISATIONS:
            if isinstance(hook, hook_class) and sv.instance_dict(hook).get(name_field) == name:
                return Cause(said.kind, say(said.cause), say(said.fix, name=name))
    if isinstance(name, str) and _TRACED_CONSTANT_NAME.fullmatch(name):
        return _naming(TRACED_CONSTANT, name=name)
    return CACHED
