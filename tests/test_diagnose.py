"""find_nonleaf / describe / explain on every structure copy.deepcopy walks, against real deepcopy."""
from __future__ import annotations

import collections
import copy
import copyreg
import dataclasses
import functools
import re
import types
from collections import namedtuple

import pytest
import torch
import torch.fx
from torch import nn
from torch.nn.utils import prune
from torch.utils.data import DataLoader
from torch_cases import DEVICES

from graphleaf_edu.dataloading import TensorRows
from graphleaf_edu.diagnose import (
    Finding,
    Findings,
    TensorInfo,
    deepcopy_blocker,
    describe,
    explain,
    find_nonleaf,
    resolve,
)

pytestmark = pytest.mark.usefixtures("quiet_torch_deprecations")


def deepcopy_raises_graph_leaves(obj) -> bool:
    try:
        copy.deepcopy(obj)
    except RuntimeError as error:
        assert "graph leaves" in str(error)
        return True
    return False


def checked(obj) -> Findings:
    """find_nonleaf(obj), after checking the contract every result must meet."""
    findings = find_nonleaf(obj)
    assert isinstance(findings, Findings)
    for finding in findings:
        assert resolve(obj, finding.path) is finding.tensor, finding.path
        assert eval(finding.where, {"root": obj, "copyreg": copyreg}) is finding.tensor, finding.path
        assert not finding.tensor.is_leaf
        assert finding.grad_fn == type(finding.tensor.grad_fn).__name__
        assert finding.cause and finding.fix
    assert len({id(f.tensor) for f in findings}) == len(findings)
    assert bool(findings) == deepcopy_raises_graph_leaves(obj)
    return findings


def only(findings: Findings) -> Finding:
    assert len(findings) == 1, findings
    return findings[0]


def graph_leaf(*shape, device="cpu"):
    return torch.randn(*shape, device=device, requires_grad=True)


class Cached(nn.Module):
    def __init__(self, width: int, keep: str = "attribute"):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.keep = keep
        self.cache = None
        self.acts: list = []
        self.named_acts: dict = {}

    def forward(self, x):
        out = self.linear(x)
        if self.keep == "attribute":
            self.cache = out
        elif self.keep == "list":
            self.acts.append(out)
        elif self.keep == "dict":
            self.named_acts["h"] = out
        return out


# --- the four failure scenarios ---------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_intermediate_tensor_is_its_own_finding(device):
    x = graph_leaf(4, device=device)
    y = x * 2
    finding = only(checked(y))
    assert finding.path == "" and finding.tensor is y
    assert finding.grad_fn == "MulBackward0"
    assert finding.cause == "the object itself is a non-leaf tensor"
    assert checked(x) == []


def test_model_output():
    out = nn.Linear(3, 2)(torch.randn(5, 3))
    finding = only(checked(out))
    assert (finding.path, finding.grad_fn) == ("", "AddmmBackward0")


def test_dataset_holding_a_nonleaf_tensor_and_its_dataloader():
    y = graph_leaf(10, 3) * 2
    dataset = TensorRows(y, deepcopy_in_getitem=True)
    finding = only(checked(dataset))
    assert finding.path == ".data" and finding.cause == "dataset holds a non-leaf tensor"
    loader = DataLoader(dataset, batch_size=4)
    assert only(checked(loader)).path == ".dataset.data"


def test_model_caching_its_activation_in_forward():
    model = Cached(4)
    assert checked(model) == []
    model(torch.randn(2, 4))
    finding = only(checked(model))
    assert finding.path == ".cache" and finding.tensor is model.cache
    assert finding.cause == "cached activation in a module attribute"
    assert "detach()" in finding.fix


# --- real causes beyond the four scenarios -----------------------------------------------------


def test_old_weight_norm_fails_even_before_any_forward():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    nn.utils.weight_norm(model[0])
    finding = only(checked(model))
    assert finding.path == "[0].weight"
    assert finding.cause == "old torch.nn.utils.weight_norm"
    assert "parametrizations.weight_norm" in finding.fix


def test_parametrizations_weight_norm_and_spectral_norm_are_fine():
    model = nn.Sequential(
        nn.utils.parametrizations.weight_norm(nn.Linear(3, 3)),
        nn.utils.parametrizations.spectral_norm(nn.Linear(3, 3)),
    )
    model(torch.randn(2, 3))
    assert checked(model) == []


@pytest.mark.parametrize("training", [True, False])
def test_old_spectral_norm_after_a_forward(training):
    layer = nn.utils.spectral_norm(nn.Linear(3, 3))
    assert checked(layer) == []
    layer.train(training)
    layer(torch.randn(2, 3))
    finding = only(checked(layer))
    assert finding.path == ".weight" and finding.cause == "spectral_norm (old API) after a forward"
    assert "remove_spectral_norm" in finding.fix


def test_prune_reparametrisation():
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    prune.l1_unstructured(model[1], "bias", amount=0.5)
    prune.l1_unstructured(model[1], "bias", amount=0.5)  # a PruningContainer now
    finding = only(checked(model))
    assert finding.path == "[1].bias" and finding.cause == "torch.nn.utils.prune reparametrisation"
    assert "prune.remove(module, 'bias')" in finding.fix
    prune.remove(model[1], "bias")
    assert checked(model) == []


@pytest.mark.parametrize(("keep", "path"), [("list", ".acts[0]"), ("dict", ".named_acts['h']")])
def test_list_and_dict_attributes_holding_activations(keep, path):
    model = Cached(3, keep=keep)
    model(torch.randn(1, 3))
    finding = only(checked(model))
    assert finding.path == path
    assert finding.cause == "activations kept in a list/dict attribute of a module"


def test_forward_hook_caching_on_the_module_and_into_an_outside_dict():
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    outside = {}
    model[1].register_forward_hook(lambda module, args, out: setattr(module, "seen", out))
    model[0].register_forward_hook(lambda module, args, out: outside.update(first=out))
    model(torch.randn(2, 3))
    finding = only(checked(model))
    assert finding.path == "[1].seen" and finding.cause == "cached activation in a module attribute"
    assert only(checked(outside)).path == "['first']"


def test_buffer_reassigned_to_a_nonleaf():
    class Running(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(3))

        def forward(self, x):
            self.mean = 0.9 * self.mean + 0.1 * x.mean(0)
            return x - self.mean

    model = Running()
    model(graph_leaf(4, 3))
    finding = only(checked(model))
    assert finding.path == ".mean" and finding.cause == "buffer re-assigned to a non-leaf tensor"


def test_leaf_whose_grad_is_nonleaf():
    x = graph_leaf(3)
    (x**3).sum().backward(create_graph=True)
    finding = only(checked(x))
    assert finding.path == ".grad" and finding.tensor is x.grad
    assert finding.cause == ".grad is non-leaf (backward with create_graph=True)"
    assert only(checked({"w": x})).path == "['w'].grad"


def test_parameter_with_nonleaf_grad_deep_copies_because_parameters_drop_grad():
    weight = nn.Parameter(torch.randn(3))
    (weight**3).sum().backward(create_graph=True)
    assert not weight.grad.is_leaf
    assert checked(weight) == [] and checked([weight]) == []


def test_optimizer_after_an_adam_step_is_clean():
    model = nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    assert checked(opt) == [] and checked((model, opt)) == []


def test_optimizer_paths_through_param_groups_and_state():
    w = graph_leaf(3)
    opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    (w**3).sum().backward(create_graph=True)
    opt.state[w]["extra"] = w * 2
    paths = {f.path: f.cause for f in checked(opt)}
    assert paths == {
        ".param_groups[0]['params'][0].grad": ".grad is non-leaf (backward with create_graph=True)",
        ".state[list(root.state)[0]]['extra']": "optimizer state holds a non-leaf tensor",
    }


# --- paths for every kind of structure ------------------------------------------------------------


def test_cycles_are_walked_once():
    y = graph_leaf(2) * 3
    loop: list = [1]
    loop.append(loop)
    loop.append({"back": loop, "y": y})

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other, b.value = b, a, y
    assert only(checked(loop)).path == "[2]['y']"
    assert only(checked(a)).path == ".other.value"


def test_aliases_are_found_once_on_the_shortest_path():
    y = graph_leaf(2) + 1
    obj = {"deep": [[[y]]], "near": y, "also": (y, y)}
    finding = only(checked(obj))
    assert finding.path == "['near']"


def test_names_that_are_not_identifiers_use_indexing():
    x = graph_leaf(2)
    model = nn.Module()
    model.add_module("0", nn.Linear(2, 2))
    model.blocks = nn.ModuleDict({"my-layer": nn.Linear(2, 2)})
    model.stack = nn.ModuleList([nn.Identity(), nn.Identity()])
    model._modules["0"].z = x * 1
    model.blocks["my-layer"].z = x * 2
    model.stack[1].z = x * 3
    setattr(model, "my-cache", x * 4)
    model.table = {(1, "a"): x * 5, None: x * 6, 2.5: x * 7, b"k": x * 8}
    paths = [f.path for f in checked(model)]
    assert paths == [  # breadth-first; submodules come first in a module's __dict__
        ".__dict__['my-cache']",
        "._modules['0'].z",
        ".table[(1, 'a')]",
        ".table[None]",
        ".table[2.5]",
        ".table[b'k']",
        ".blocks['my-layer'].z",
        ".stack[1].z",
    ]


def test_sequential_after_a_deletion_keeps_paths_valid():
    seq = nn.Sequential(nn.Identity(), nn.Identity(), nn.Identity())
    del seq[0]
    seq[1].z = graph_leaf(1) * 2
    assert only(checked(seq)).path in ("[1].z", "._modules['2'].z")


def test_keys_that_do_not_round_trip_through_repr():
    class Key:
        pass

    x = graph_leaf(2)
    table = {Key(): x * 1, float("nan"): x * 2}
    assert [f.path for f in checked(table)] == ["[list(root)[0]]", "[list(root)[1]]"]


def test_nonleaf_tensors_as_dict_keys_and_set_members():
    x = graph_leaf(2)
    key, member = x * 2, x * 3
    assert only(checked({key: 1})).path == ".__iter__().__reduce__()[1][0][0]"
    finding = only(checked({"s": {member}}))
    assert finding.path == "['s'].__iter__().__reduce__()[1][0][0]"
    assert finding.cause == "non-leaf tensor used as a dict key or set member"


def test_a_value_reached_elsewhere_is_not_named_through_a_dict_key():
    x = graph_leaf(2)
    y = x * 2
    obj = {"table": {y: "label"}, "deeper": [[y]]}
    assert only(checked(obj)).path == "['deeper'][0][0]"


def test_namedtuples_dataclasses_and_slots():
    x = graph_leaf(2)
    Pair = namedtuple("Pair", "first second")

    @dataclasses.dataclass
    class Record:
        name: str
        value: object

    @dataclasses.dataclass(slots=True)
    class Slotted:
        value: object

    class Private:
        __slots__ = ("__hidden", "shown")

        def __init__(self, hidden):
            self.__hidden = hidden

    obj = [Pair(1, x * 1), Record("r", x * 2), Slotted(x * 3), Private(x * 4)]
    assert [f.path for f in checked(obj)] == [
        "[0].second",
        "[1].value",
        "[2].value",
        "[3]._Private__hidden",
    ]


def test_shadowed_attributes():
    x = graph_leaf(2)

    class Base:
        __slots__ = ("value",)

    class Shadowing(Base):
        __slots__ = ()
        value = property(lambda self: "what deepcopy sees")

    class WithProperty:
        @property
        def cache(self):
            raise AssertionError("a property was called")

    hidden = Shadowing()
    Base.value.__set__(hidden, x * 1)
    with pytest.raises(AttributeError, match="has no setter"):  # it read the property, not the slot
        copy.deepcopy(hidden)
    assert find_nonleaf(hidden) == []
    shown = WithProperty()
    shown.__dict__["cache"] = x * 2
    assert only(checked(shown)).path == ".__dict__['cache']"


def test_tensor_attributes_partials_and_bound_methods():
    x = graph_leaf(2)
    tagged = torch.zeros(2)
    tagged.note = x * 1

    class Holder:
        def __init__(self, value):
            self.value = value

        def method(self):
            return self.value

    obj = {"tagged": tagged, "call": functools.partial(print, x * 2), "bound": Holder(x * 3).method}
    findings = checked(obj)
    assert [f.path for f in findings] == [
        "['tagged'].note",
        "['call'].args[0]",
        "['bound'].__self__.value",
    ]
    assert findings[0].cause == "non-leaf tensor stored as an attribute of a tensor (a tensor subclass' attribute)"


def test_properties_and_getattr_are_never_called():
    calls = []

    class Sneaky(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)

        @property
        def exploding(self):
            calls.append("property")
            raise RuntimeError("property called")

        def __getattr__(self, name):
            calls.append(name)
            return super().__getattr__(name)

    class Lazy:
        def __getattr__(self, name):
            calls.append(name)
            return graph_leaf(1) * 2

    model = Sneaky()
    model.out = model.linear(torch.randn(1, 2))
    calls.clear()
    assert [f.path for f in find_nonleaf(model)] == [".out"]
    assert find_nonleaf(Lazy()) == []
    assert calls == []


def test_objects_whose_own_deepcopy_cannot_be_looked_inside_are_reported_by_path(capsys):
    class SkipsCache(nn.Module):  # its own __deepcopy__ leaves the cache out
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)
            self.cache = None

        def forward(self, x):
            self.cache = self.linear(x)
            return self.cache

        def __deepcopy__(self, memo):
            duplicate = type(self).__new__(type(self))
            memo[id(self)] = duplicate
            state = {k: v for k, v in vars(self).items() if k != "cache"}
            duplicate.__dict__.update(copy.deepcopy(state, memo), cache=None)
            return duplicate

    model = SkipsCache()
    model(torch.randn(1, 2))
    findings = checked({"model": model})
    assert findings == [] and [o.path for o in findings.opaque] == ["['model']"]
    assert "copies itself" in findings.opaque[0].reason
    explain({"model": model})
    text = capsys.readouterr().out
    assert "Nothing to fix" not in text and "root['model'] (" in text and "cannot look inside" in text


class Reduces:  # deepcopy copies what __reduce__ returns, not __dict__
    def __init__(self, value, kept=None):
        self.value = value
        self.kept = kept

    def __reduce__(self):
        return (Reduces, (None, self.kept))


def test_what_a_reduce_returns_is_followed():
    x = graph_leaf(1)
    assert checked([Reduces(x * 2)]) == []
    assert only(checked([Reduces(x * 2, kept=x * 3)])).path == "[0].__reduce_ex__(4)[1][1]"


# --- blind spots of a walk by its own rules: deepcopy's protocol reaches them ---------------------


@pytest.mark.parametrize("parametrize", ["weight_norm", "spectral_norm", "custom"])
def test_a_cache_on_a_parametrized_module(parametrize):
    class Double(nn.Module):
        def forward(self, weight):
            return weight * 2

    layer = nn.Linear(3, 3)
    if parametrize == "custom":
        nn.utils.parametrize.register_parametrization(layer, "weight", Double())
    else:
        layer = getattr(nn.utils.parametrizations, parametrize)(layer)
    model = nn.Sequential(layer, nn.ReLU())
    assert checked(model) == []
    model[0].last = model(torch.randn(2, 3))
    finding = only(checked(model))
    assert finding.path == "[0].last" and finding.kind == "cached-activation"


def test_a_nonleaf_constant_of_a_torch_fx_graph_module():
    class Shift(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 3)

        def forward(self, x):
            return self.linear(x) + torch.ones(3)

    traced = torch.fx.symbolic_trace(Shift())
    assert checked(traced) == [] and find_nonleaf(traced).opaque == ()
    traced._tensor_constant0 = traced._tensor_constant0 * graph_leaf(3)
    finding = only(checked(traced))
    assert finding.path == "._tensor_constant0" and finding.kind == "fx-constant"
    assert "'_tensor_constant0'" in finding.cause and "gm._tensor_constant0.detach()" in finding.fix


def test_the_constant_torch_fx_tracing_sets_on_the_module_it_traces_is_no_cached_activation():
    scale = graph_leaf(3)

    class Shift(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 3)

        def forward(self, x):
            return self.linear(x) + scale * 2  # computed while tracing: a constant with a graph

    module = Shift()
    traced = torch.fx.symbolic_trace(module)
    assert traced._tensor_constant0 is vars(module)["_tensor_constant0"]  # tracing set it on the module
    finding = only(checked(module))
    assert finding.path == "._tensor_constant0" and finding.kind == "fx-constant"
    assert "not an activation" in finding.cause and "cached" not in finding.cause
    assert "torch.no_grad()" in finding.fix and "module._tensor_constant0.detach()" in finding.fix
    with torch.no_grad():  # the fix the finding names
        assert checked(torch.fx.symbolic_trace(Shift())) == []
    module._tensor_constant0 = module._tensor_constant0.detach()  # and the other one
    assert checked(module) == []
    module.kept = module(torch.randn(2, 3))  # any other name stays a cached activation
    assert only(checked(module)).kind == "cached-activation"


def test_deque_simplenamespace_and_defaultdict_factory():
    x = graph_leaf(2)
    factory_owner = types.SimpleNamespace(offset=x * 4)
    obj = {
        "deque": collections.deque([1, x * 1], maxlen=5),
        "namespace": types.SimpleNamespace(a=1, b=x * 2),
        "defaultdict": collections.defaultdict(list, {"k": x * 3}),
        "factory": collections.defaultdict(functools.partial(dict, owner=factory_owner)),
        "ordered": collections.OrderedDict(z=x * 5),
    }
    assert [f.path for f in checked(obj)] == [
        "['deque'][1]",
        "['namespace'].b",
        "['defaultdict']['k']",
        "['ordered']['z']",
        "['factory'].default_factory.keywords['owner'].offset",
    ]


# --- false alarms: deepcopy's own protocol leaves the tensor out ------------------------------------


class LeftOutByCopyreg:
    def __init__(self, cache, kept):
        self.cache, self.kept = cache, kept


def _reduce_left_out(obj):
    return (LeftOutByCopyreg, (None, obj.kept))


def test_a_copyreg_reducer_that_leaves_the_cache_out():
    copyreg.pickle(LeftOutByCopyreg, _reduce_left_out)
    try:
        x = graph_leaf(2)
        assert checked(LeftOutByCopyreg(x * 2, kept=1)) == []
        kept = LeftOutByCopyreg(None, kept=x * 3)
        assert only(checked(kept)).path == "copyreg.dispatch_table[type(root)](root)[1][1]"
    finally:
        del copyreg.dispatch_table[LeftOutByCopyreg]


# --- causes by kind, and the fix that fits ------------------------------------------------------------


def test_dataparallel_replica_parameters():
    model = nn.Linear(3, 3)
    replica = model._replicate_for_data_parallel()  # what nn.parallel.replicate builds, per device
    for name, parameter in model._parameters.items():
        setattr(replica, name, parameter * 1)  # replicate() sets broadcast (non-leaf) copies
    findings = checked(replica)
    assert [f.kind for f in findings] == ["replica-parameter", "replica-parameter"]
    assert "dp.module" in findings[0].fix


def test_fast_weights_and_weight_drop_write_into_parameters():
    learner = nn.Linear(3, 1)
    loss = learner(torch.randn(4, 3)).pow(2).mean()
    grads = torch.autograd.grad(loss, list(learner.parameters()), create_graph=True)
    for (name, weight), grad in zip(list(learner.named_parameters()), grads):
        learner._parameters[name] = weight - 0.1 * grad  # learn2learn's update_module does this
    assert {f.kind for f in checked(learner)} == {"fast-weights"}

    class WeightDrop(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module
            self.weight_raw = nn.Parameter(module.weight.detach().clone())
            del module._parameters["weight"]

        def forward(self, x):
            self.module._parameters["weight"] = nn.functional.dropout(self.weight_raw, 0.5, self.training)
            return self.module(x)

    dropped = WeightDrop(nn.Linear(3, 3))
    dropped(torch.randn(2, 3))
    finding = only(checked(dropped))
    assert finding.path == ".module.weight" and finding.kind == "weight-drop"


def test_a_bound_method_hook_of_a_wrapper_names_the_inner_network():
    class Wrapper(nn.Module):  # BYOL-style: the hook stores the inner network's hidden output
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.hidden = {}
            self.handle = net[0].register_forward_hook(self._store)

        def _store(self, module, args, output):
            self.hidden["projection"] = output

    net = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    wrapper = Wrapper(net)
    net(torch.randn(2, 3))
    hook_id = wrapper.handle.id
    finding = only(checked(net))
    assert finding.path == f"[0]._forward_hooks[{hook_id}].__self__.hidden['projection']"
    assert finding.kind == "hook-object" and "handle.remove()" in finding.fix
    wrapper.handle.remove()
    assert checked(net) == []


def test_a_learned_learning_rate_in_an_optimizer_and_a_scheduler():
    log_lr = torch.zeros((), requires_grad=True)
    weight = graph_leaf(3)
    opt = torch.optim.SGD([weight], lr=log_lr.exp())
    kinds = {f.path: f.kind for f in checked(opt)}
    assert kinds == {".defaults['lr']": "tensor-hyperparameter"}
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
    assert {f.kind for f in checked(scheduler)} == {"tensor-hyperparameter"}


def test_logged_metrics_and_generation_kwargs():
    x = graph_leaf(3)

    class Trainer:
        def __init__(self):
            self.history = {"train_loss": [(x * 2).sum()]}

    assert only(checked(Trainer())).kind == "logged-output"
    state = {"model_kwargs": {"past_key_values": ((x * 2, x * 3),)}}
    assert {f.kind for f in checked(state)} == {"kv-cache"}


def test_one_line_form_and_wording_for_the_error_the_user_got():
    model = Cached(3)
    model(torch.randn(2, 3))
    findings = find_nonleaf(model)
    assert findings.lines() == [
        "root.cache: cached activation in a module attribute (grad_fn=AddmmBackward0) | fix: "
        + findings[0].fix
    ]
    assert findings.report().startswith("copy.deepcopy(root) fails for this Cached")
    refused = RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since ...")
    assert findings.report(refused).startswith("torch.multiprocessing refuses to send this Cached")
    assert findings.report("multiprocessing") == findings.report(refused)
    with pytest.raises(ValueError, match="error="):
        findings.report("pickle")


def test_a_getstate_that_leaves_the_cache_out_is_followed():
    class DetachesInGetstate(nn.Module):
        def __init__(self):
            super().__init__()
            self.cache = graph_leaf(2) * 2
            self.kept = graph_leaf(2) * 3

        def __getstate__(self):
            state = super().__getstate__()
            state["cache"] = state["cache"].detach()
            return state

    model = DetachesInGetstate()
    finding = only(checked(model))  # the cache is fine; the other one is not
    assert finding.path == ".kept" and finding.cause == "cached activation in a module attribute"
    del model.kept
    assert checked(model) == []


def test_model_whose_constructor_takes_arguments():
    class Wide(nn.Module):
        def __init__(self, width, depth, *, act):
            super().__init__()
            self.layers = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
            self.act = act

        def forward(self, x):
            self.last = self.act(self.layers(x))
            return self.last

    model = Wide(5, 3, act=torch.tanh)
    model(torch.randn(2, 5))
    assert only(checked(model)).path == ".last"


def test_ten_thousand_deep_nesting():
    y = graph_leaf(2) * 2
    nested: list = [y]
    for _ in range(9_999):
        nested = [nested]
    finding = only(find_nonleaf(nested))
    assert finding.path == "[0]" * 10_000  # too deep for eval() to compile: follow it by hand
    assert functools.reduce(lambda obj, _: obj[0], range(10_000), nested) is y


def test_hundred_thousand_element_list():
    x = graph_leaf(1)
    items = [torch.zeros(1) for _ in range(100_000)]
    items[50_000] = x * 2
    items[99_999] = x * 3
    findings = find_nonleaf(items)  # (checked() would deep-copy 50,000 tensors: seconds)
    assert [f.path for f in findings] == ["[50000]", "[99999]"]
    assert [f.tensor for f in findings] == [items[50_000], items[99_999]]


def test_find_nonleaf_mutates_nothing():
    model = Cached(3)
    model(torch.randn(2, 3))
    before = dict(vars(model)), dict(model._parameters), dict(model._modules), model.cache.grad_fn
    find_nonleaf(model)
    explain(model)
    assert (dict(vars(model)), dict(model._parameters), dict(model._modules), model.cache.grad_fn) == before


# --- report, repr, html -------------------------------------------------------------------------------


def test_explain_prints_where_why_and_the_fix(capsys):
    model = Cached(3)
    model(torch.randn(2, 3))
    findings = find_nonleaf(model)
    assert findings.explain() is None
    text = capsys.readouterr().out
    assert text.strip() == findings.report()
    assert "copy.deepcopy(root) fails for this Cached: 1 non-leaf tensor." in text
    assert "root.cache" in text and "cause: cached activation" in text and "fix:" in text


def test_explain_says_clearly_when_nothing_is_wrong(capsys):
    explain(nn.Linear(2, 2))
    assert "Nothing to fix" in capsys.readouterr().out


def test_findings_repr_is_deterministic_and_has_no_addresses():
    def build():
        model = Cached(3, keep="list")
        model(torch.randn(2, 3))
        return find_nonleaf(model)

    first, second = build(), build()
    assert repr(first) == repr(second)
    assert "0x" not in repr(first) and "\n" in repr(first)
    assert repr(Findings()) == "Findings([])"
    html = first._repr_html_()
    assert "<table>" in html and "root.acts[0]" in html


# --- describe ----------------------------------------------------------------------------------------


def _tensor_zoo(device):
    x = graph_leaf(3, device=device)
    with_nonleaf_grad = graph_leaf(3, device=device)
    (with_nonleaf_grad**3).sum().backward(create_graph=True)
    param = nn.Parameter(torch.randn(3, device=device))
    (param**3).sum().backward(create_graph=True)
    with torch.no_grad():
        made_without_grad = x * 2
    return {
        "leaf": x,
        "plain": torch.randn(3, device=device),
        "result": x * 2,
        "view": x[1:],
        "no_grad result": made_without_grad,
        "detached": (x * 2).detach(),
        "leaf with non-leaf grad": with_nonleaf_grad,
        "parameter with non-leaf grad": param,
    }


@pytest.mark.parametrize("device", DEVICES)
def test_describe_agrees_with_real_deepcopy(device):
    for name, tensor in _tensor_zoo(device).items():
        info = describe(tensor)
        assert info.deepcopy_ok is not deepcopy_raises_graph_leaves(tensor), name
        assert (info.deepcopy_blocker is None) is info.deepcopy_ok, name


@pytest.mark.parametrize("device", DEVICES)
def test_describe_fields_and_one_line_repr(device):
    zoo = _tensor_zoo(device)
    info = describe(zoo["view"])
    assert info == TensorInfo(
        is_leaf=False, requires_grad=True, grad_fn="SliceBackward0", retains_grad=False,
        device=torch.device(device).type, dtype="float32", shape=(2,), is_view=True,
        deepcopy_ok=False, deepcopy_blocker="non-leaf (grad_fn=SliceBackward0)",
    )
    assert describe(zoo["leaf with non-leaf grad"]).deepcopy_blocker == (
        ".grad is non-leaf (grad_fn=CopyBackwards)"
    )
    text = repr(describe(zoo["result"]))
    assert "\n" not in text and "0x" not in text and "device='" in text
    assert re.search(r"<table>.*grad_fn.*MulBackward0", describe(zoo["result"])._repr_html_())


def test_describe_retains_grad():
    y = graph_leaf(2) * 2
    y.retain_grad()
    assert describe(y).retains_grad is True


def test_describe_rejects_non_tensors_with_a_pointer_to_find_nonleaf():
    with pytest.raises(TypeError, match="find_nonleaf"):
        describe([torch.zeros(1)])


# --- deepcopy_blocker: the one verdict, agreeing with torch -------------------------------------


def _deepcopy_error(obj) -> str | None:
    try:
        copy.deepcopy(obj)
    except Exception as error:  # noqa: BLE001 - any error is a verdict
        return f"{type(error).__name__}: {error}"
    return None


class PlainSubclass(torch.Tensor):
    pass


def test_deepcopy_blocker_matches_torch_on_tensors_torch_cannot_copy():
    nested = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
    cases = {
        "sparse csr": torch.randn(3, 3).to_sparse_csr(),
        "sparse csc": torch.randn(3, 3).to_sparse_csc(),
        "sparse coo": torch.randn(3, 3).to_sparse(),
        "strided nested": nested,
        "jagged nested": torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], layout=torch.jagged),
        "plain subclass": torch.randn(3).as_subclass(PlainSubclass),
        "parameter subclass": type("MyParameter", (nn.Parameter,), {})(torch.randn(2)),
        "nested non-leaf": torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], requires_grad=True) * 2,
    }
    for name, tensor in cases.items():
        blocker = deepcopy_blocker(tensor)
        assert (blocker is None) == (_deepcopy_error(tensor) is None), (name, blocker)
        info = describe(tensor)  # must not crash on any layout
        assert info.deepcopy_ok is (blocker is None) and info.deepcopy_blocker == blocker
    assert "sparse_csr layout" in deepcopy_blocker(cases["sparse csr"])
    assert "layout=torch.jagged" in deepcopy_blocker(cases["strided nested"])
    assert deepcopy_blocker(cases["plain subclass"]).startswith("PlainSubclass (tensor subclass): copy.deepcopy raises")
    assert deepcopy_blocker(cases["nested non-leaf"]) == "non-leaf (grad_fn=MulBackward0)"
    assert describe(nested).shape == (2, None, 3)


def test_nested_tensors_do_not_crash_findings_or_explain(capsys):
    nested = torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], requires_grad=True) * 2
    findings = find_nonleaf({"n": nested})
    assert [f.path for f in findings] == ["['n']"]
    assert "(2, None)" in repr(findings)
    explain({"n": nested})
    assert "root['n']" in capsys.readouterr().out


def test_deepcopy_blocker_names_the_grad_and_attributes():
    x = graph_leaf(3)
    assert deepcopy_blocker(x) is None and deepcopy_blocker(x * 2) == "non-leaf (grad_fn=MulBackward0)"
    tagged = torch.zeros(2)
    tagged.note = x * 1
    assert deepcopy_blocker(tagged) == ".note is non-leaf (grad_fn=MulBackward0)"
    with pytest.raises(TypeError, match="find_nonleaf"):
        deepcopy_blocker(nn.Linear(1, 1))


# --- resolve: a finding's path, followed on the root ------------------------------------------


def test_resolve_follows_every_kind_of_step():
    class Key:
        pass

    x = graph_leaf(2)
    key, member = x * 2, x * 3
    model = nn.Sequential(nn.Linear(2, 2))
    model[0].cache = x * 4
    setattr(model, "my-cache", x * 5)
    obj = {"model": model, "keys": {key: 1}, "set": {member}, Key(): x * 6, (1, "a"): [x * 7]}
    findings = find_nonleaf(obj)
    assert len(findings) == 6
    for finding in findings:
        assert resolve(obj, finding.path) is finding.tensor, finding.path
    assert resolve(obj, "") is obj
    assert resolve(obj, "[(1, 'a')][0]") is obj[(1, "a")][0]


def test_resolve_follows_paths_too_deep_for_eval():
    y = graph_leaf(2) * 2
    nested: list = [y]
    for _ in range(9_999):
        nested = [nested]
    assert resolve(nested, find_nonleaf(nested)[0].path) is y


@pytest.mark.parametrize("path", [".__class__.__init__()", "[0]; import os", ".x(1)", "[__import__('os')]", "[0"])
def test_resolve_refuses_anything_but_reading(path):
    with pytest.raises(ValueError, match="resolve()"):
        resolve([1], path)
    with pytest.raises(TypeError, match="str"):
        resolve([1], 0)


def test_what_deepcopy_itself_refuses_is_reported_where_it_is():
    import threading

    x = graph_leaf(2)
    findings = find_nonleaf({"y": x * 2, "lock": threading.Lock(), "plain": types.SimpleNamespace(a=1)})
    assert [f.path for f in findings] == ["['y']"]
    assert [(o.path, o.type_name) for o in findings.opaque] == [("['lock']", "lock")]
    assert findings.opaque[0].reason == "copy.deepcopy fails here: TypeError: cannot pickle '_thread.lock' object"
    with pytest.raises(TypeError, match="cannot pickle '_thread.lock'"):
        copy.deepcopy(threading.Lock())  # the refusal the report names
