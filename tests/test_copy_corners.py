"""The corners of issue 24, each against the real ``copy.deepcopy`` on the same object.

Where a corner has non-leaf tensors, the reference is ``copy.deepcopy`` of the same object built
without a graph (same values, attributes, slots and aliases; leaves instead of non-leaf tensors):
what deepcopy makes when those tensors are detached. ``safe_deepcopy`` must make exactly that,
leave the original byte-for-byte unchanged, and ``find_nonleaf`` / ``explain`` must say what is true.
"""
from __future__ import annotations

import copy
import functools
import warnings

import pytest
import torch
from torch import nn

from graphleaf_edu.copying import DetachedTensorsWarning, safe_deepcopy
from graphleaf_edu.diagnose import deepcopy_blocker, explain, find_nonleaf, resolve
from graphleaf_edu.errors import GRAPH_LEAVES

pytestmark = pytest.mark.usefixtures("quiet_torch_deprecations")


# --- what "the same copy" and "unchanged" mean -----------------------------------------------------


def parts(obj):
    """What a copy is made of, one entry per step: containers' items, tensors' data, flags, .grad,
    slots and attributes, plain objects' attributes."""
    if isinstance(obj, torch.Tensor):
        yield "tensor", type(obj), obj.dtype, obj.layout, obj.device.type, obj.requires_grad, obj.grad_fn is None
        yield "data", [piece.tolist() for piece in obj.detach().unbind()] if obj.is_nested else obj.detach().tolist()
        if obj.is_leaf or obj.retains_grad:
            yield "grad", obj.grad
        for name in slot_names(obj):
            yield "slot " + name, getattr(obj, name, "<empty>")
        yield "attributes", {k: v for k, v in vars(obj).items() if not k.startswith("_sym_")}
    elif isinstance(obj, dict):
        yield "dict", type(obj), list(obj)
        yield from (("value", value) for value in obj.values())
    elif isinstance(obj, (list, tuple)):
        yield type(obj).__name__, len(obj)
        yield from (("item", item) for item in obj)
    elif hasattr(obj, "__dict__") and not callable(obj):
        yield "object", type(obj)
        yield "attributes", {k: v for k, v in vars(obj).items() if k != "__deepcopy__"}
    else:
        yield "atom", obj


def slot_names(obj) -> list[str]:
    return [name for klass in type(obj).__mro__ for name in klass.__dict__.get("__slots__", ())]


def shape(obj, numbering: dict[int, tuple[int, object]] | None = None):
    """The copy as nested tuples, each object numbered by first visit: equal shapes mean equal
    values, types, flags, slots and attributes, and the same aliasing."""
    numbering = {} if numbering is None else numbering
    if id(obj) in numbering:
        return ("alias", numbering[id(obj)][0])
    numbering[id(obj)] = (len(numbering), obj)  # holding obj keeps its id from being reused
    result = []
    for label, *rest in parts(obj):
        result.append((label, *[shape(v, numbering) if isinstance(v, (torch.Tensor, dict, list, tuple))
                                or hasattr(v, "__dict__") and not isinstance(v, type) else v for v in rest]))
    return tuple(result)


def assert_same_copy(ours, reference):
    assert shape(ours) == shape(reference)


# Every torch op on a jagged nested tensor (detach, clone, deepcopy alike) marks its offsets and
# sequence-length tensors for torch.compile again, with equal but new dicts and lists: those
# marks are compared by value.
DYNAMO_MARKS = frozenset({"_specialize_on", "_dynamo_dynamic_indices", "_dynamo_dynamic_range",
                          "_dynamo_hint_overrides", "_has_dynamo_dim_marking"})


def snapshot(obj, seen: set[int] | None = None) -> list:
    """The original, byte for byte: every object's id and type, every tensor's bytes, flags,
    grad_fn, .grad, slots and attributes (ids), in visiting order."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (int, float, str, type(None))):
        return []
    seen.add(id(obj))
    record = [(id(obj), type(obj))]
    children: list = []
    if isinstance(obj, torch.Tensor):
        data = [piece.detach().clone() for piece in obj.unbind()] if obj.is_nested else [obj.detach().clone()]
        record.append((obj.requires_grad, obj.grad_fn, [bytes(d.contiguous().reshape(-1).view(torch.uint8).tolist())
                                                         for d in data]))
        grad = obj.grad if obj.is_leaf or obj.retains_grad else None
        state = {k: v for k, v in vars(obj).items() if k not in DYNAMO_MARKS}
        record.append(sorted((k, repr(v)) for k, v in vars(obj).items() if k in DYNAMO_MARKS))
        slots = {name: getattr(obj, name) for name in slot_names(obj) if hasattr(obj, name)}
        record.append((id(grad), sorted(state), [id(v) for v in state.values()], {k: id(v) for k, v in slots.items()}))
        children = [grad, *state.values(), *slots.values()]
    elif isinstance(obj, dict):
        record.append([(k if isinstance(k, str) else id(k), id(v)) for k, v in obj.items()])
        children = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        record.append([id(item) for item in obj])
        children = list(obj)
    elif hasattr(obj, "__dict__"):
        record.append({k: id(v) for k, v in vars(obj).items()})
        children = list(vars(obj).values())
    for child in children:
        record += snapshot(child, seen)
    return record


def quietly(function, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args)
    return result, [w for w in caught if issubclass(w.category, DetachedTensorsWarning)]


def check_against_deepcopy(make):
    """safe_deepcopy(make(True)) == copy.deepcopy(make(False)); the original stays as it was."""
    original = make(True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(original)
    before = snapshot(original)
    ours, caught = quietly(safe_deepcopy, original)
    assert snapshot(original) == before
    assert_same_copy(ours, copy.deepcopy(make(False)))
    assert find_nonleaf(ours) == []
    assert len(caught) == 1 and list(caught[0].message.paths) == [f.path for f in find_nonleaf(original)]
    return ours


def leaf_source(requires_grad: bool, *shape_: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(sum(shape_) + 7)
    return torch.randn(*shape_, generator=generator, requires_grad=requires_grad)


# --- a tensor subclass' slots -----------------------------------------------------------------------


class Slotted(torch.Tensor):
    """A subclass with a slot that copy.deepcopy copies (its new_empty keeps the class)."""

    __slots__ = ("tag",)

    def new_empty(self, *args, **kwargs):
        return super().new_empty(*args, **kwargs).as_subclass(type(self))


def test_a_subclass_slot_is_kept_on_the_detached_copy():
    def make(graph: bool):
        x = leaf_source(graph, 3)
        y = (x * 2).as_subclass(Slotted)
        y.tag = ["label"]
        y.note = {"n": 1}
        return {"y": y, "tag": y.tag, "note": y.note}

    ours = check_against_deepcopy(make)
    assert ours["y"].tag == ["label"] and ours["y"].tag is ours["tag"] and ours["y"].note is ours["note"]
    assert type(ours["y"]) is Slotted and ours["y"].grad_fn is None


def test_a_slot_holding_a_nonleaf_is_detached_too():
    def make(graph: bool):
        x = leaf_source(graph, 2)
        y = (x * 2).as_subclass(Slotted)
        y.tag = x * 3
        return [y]

    ours = check_against_deepcopy(make)
    assert [f.path for f in find_nonleaf(make(True))] == ["[0]", "[0].tag"]
    assert ours[0].tag.grad_fn is None


# --- what a non-leaf tensor holds ---------------------------------------------------------------------


def test_a_nonleaf_carrying_a_nonleaf_attribute():
    def make(graph: bool):
        x = leaf_source(graph, 3)
        out = x * 3
        out.aux_loss = out.sum() * 2
        return {"out": out, "aux": out.aux_loss}

    original = make(True)
    findings = find_nonleaf(original)
    assert [(f.path, f.kind) for f in findings] == [("['out']", "container"), ("['aux']", "container")]
    nested = make(True)
    del nested["aux"]
    assert [(f.path, f.kind) for f in find_nonleaf(nested)] == [("['out']", "container"),
                                                                ("['out'].aux_loss", "tensor-attribute")]
    assert resolve(nested, "['out'].aux_loss") is nested["out"].aux_loss
    ours = check_against_deepcopy(make)
    assert ours["out"].aux_loss is ours["aux"]


def test_a_retain_grad_tensor_whose_grad_is_nonleaf():
    def make(graph: bool):
        x = leaf_source(True, 3)
        if graph:
            r = x * 4
            r.retain_grad()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (r**2).sum().backward(create_graph=True)
        else:
            r = (x * 4).detach()
            r.grad = r * 2  # the values backward gave: d(r**2)/dr
        return {"r": r}

    assert not make(True)["r"].grad.is_leaf
    assert [(f.path, f.kind) for f in find_nonleaf(make(True))] == [("['r']", "container"),
                                                                    ("['r'].grad", "nonleaf-grad")]
    ours = check_against_deepcopy(make)
    assert ours["r"].grad.grad_fn is None


# --- nested tensors ---------------------------------------------------------------------------------


def jagged(graph: bool) -> torch.Tensor:
    rows = [leaf_source(False, 2, 3), leaf_source(False, 4, 3)]
    nested = torch.nested.nested_tensor(rows, layout=torch.jagged, requires_grad=graph)
    return nested * 2


def test_a_jagged_nested_nonleaf_is_copied_as_deepcopy_copies_its_detached_form():
    original = jagged(True)
    before = snapshot(original)
    cached = sorted(vars(original))
    ours, caught = quietly(safe_deepcopy, {"n": original})
    assert snapshot(original) == before and sorted(vars(original)) == cached  # its caches kept too
    reference = copy.deepcopy(original.detach())
    assert_same_copy(ours["n"], reference)
    assert ours["n"].is_nested and ours["n"].layout == torch.jagged and not ours["n"].requires_grad
    assert [w.message.paths for w in caught] == [("['n']",)]
    assert find_nonleaf(ours) == [] and deepcopy_blocker(original) == "non-leaf (grad_fn=MulBackward0)"


def test_a_leaf_jagged_nested_tensor_is_walked_without_its_cached_capsules():
    leaf = jagged(False)
    findings = find_nonleaf({"n": leaf})
    assert findings == [] and findings.opaque == ()
    copy.deepcopy(leaf)


def test_a_leaf_jagged_nested_tensor_keeps_the_caches_deepcopy_would_clear_from_it():
    rows = [leaf_source(False, 2, 3), leaf_source(False, 4, 3)]
    leaf = torch.nested.nested_tensor(rows, layout=torch.jagged, requires_grad=True)
    leaf * 1  # an operation caches its sizes on it, in a PyCapsule
    assert "_sym_sizes_capsule" in vars(leaf)
    obj = {"n": leaf, "y": leaf_source(True, 2) * 2}
    before, cached = snapshot(obj), sorted(vars(leaf))
    ours, _ = quietly(safe_deepcopy, obj)
    assert snapshot(obj) == before and sorted(vars(leaf)) == cached
    reference = copy.deepcopy({"n": leaf, "y": obj["y"].detach()})  # deepcopy clears them from the original
    assert "_sym_sizes_capsule" not in vars(leaf)
    assert_same_copy(ours, reference)
    assert ours["n"].requires_grad and ours["n"].is_leaf


def test_a_strided_nested_nonleaf_is_detached_although_deepcopy_cannot_copy_its_detached_form():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        original = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], requires_grad=True) * 2
    with pytest.raises(NotImplementedError):
        copy.deepcopy(original.detach())
    ours, _ = quietly(safe_deepcopy, original)
    assert ours.grad_fn is None and [t.tolist() for t in ours.unbind()] == [[2.0, 2.0], [2.0, 2.0, 2.0]]


# --- an instance-level __deepcopy__ ------------------------------------------------------------------


class Holder:
    def __init__(self, content):
        self.content = content


def copy_without_content(holder: Holder, memo):
    return Holder(None)


def copy_with_content(holder: Holder, memo):
    return Holder(copy.deepcopy(holder.content, memo))


def test_an_instance_level_deepcopy_is_what_deepcopy_calls():
    x = leaf_source(True, 2)
    holder = Holder(x * 5)
    holder.__deepcopy__ = functools.partial(copy_without_content, holder)
    reference = copy.deepcopy(holder)  # deepcopy finds the instance's method with getattr
    findings = find_nonleaf(holder)
    assert findings == [] and [(o.path, o.type_name) for o in findings.opaque] == [("", "Holder")]
    assert "set on the object itself" in findings.opaque[0].reason
    before = snapshot(holder)
    ours, caught = quietly(safe_deepcopy, holder)
    assert caught == [] and snapshot(holder) == before
    assert_same_copy(ours, reference)


def test_an_instance_level_deepcopy_that_meets_a_nonleaf_is_named_as_its_hiding_place(capsys):
    x = leaf_source(True, 2)
    holder = Holder([x * 5])
    holder.__deepcopy__ = functools.partial(copy_with_content, holder)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy({"h": holder})
    with pytest.raises(RuntimeError, match=r"cannot reach.*root\['h'\] \(Holder\) copies itself"):
        safe_deepcopy({"h": holder})
    explain({"h": holder})
    assert "may hide there" in capsys.readouterr().out
    visible = {"h": holder, "also": holder.content}  # reachable outside too: then it is detached
    ours, caught = quietly(safe_deepcopy, visible)
    assert ours["h"].content is ours["also"] and ours["also"][0].grad_fn is None
    assert [w.message.paths for w in caught] == [("['also'][0]",)]


def test_an_instance_level_deepcopy_on_a_module_and_on_a_tensor():
    model = nn.Linear(2, 2)
    model.cache = model(torch.ones(1, 2))
    model.__deepcopy__ = functools.partial(lambda module, memo: "copied its own way", model)
    assert copy.deepcopy(model) == "copied its own way"
    assert find_nonleaf(model) == [] and find_nonleaf(model).opaque[0].path == ""
    assert quietly(safe_deepcopy, model)[0] == "copied its own way"
    y = leaf_source(True, 2) * 2
    y.__deepcopy__ = functools.partial(lambda t, memo: t.detach().clone(), y)
    assert torch.equal(copy.deepcopy(y), y)
    assert find_nonleaf(y) == [] and deepcopy_blocker(y) is None
    assert torch.equal(quietly(safe_deepcopy, y)[0], y)


# --- a subclass whose __torch_function__ implements Tensor.__deepcopy__ -------------------------------


class CopiesThroughTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__deepcopy__:
            return args[0].detach().clone().as_subclass(cls)
        return super().__torch_function__(func, types, args, kwargs or {})


class HandsDeepcopyOn(torch.Tensor):
    """A __torch_function__ of its own that leaves __deepcopy__ to the default."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_subclass_whose_torch_function_copies_it_is_not_a_culprit(capsys):
    y = (leaf_source(True, 3) * 2).as_subclass(CopiesThroughTorchFunction)
    reference = copy.deepcopy(y)
    assert find_nonleaf(y) == [] and find_nonleaf(y).opaque == () and deepcopy_blocker(y) is None
    explain({"y": y})
    assert capsys.readouterr().out.startswith("Nothing to fix")
    before = snapshot(y)
    ours, caught = quietly(safe_deepcopy, {"y": y})
    assert caught == [] and snapshot(y) == before
    assert_same_copy(ours["y"], reference)


def test_a_subclass_whose_torch_function_hands_deepcopy_on_is_a_culprit():
    y = (leaf_source(True, 3) * 2).as_subclass(HandsDeepcopyOn)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(y)
    assert [f.path for f in find_nonleaf(y)] == [""]
    assert deepcopy_blocker(y) == "non-leaf (grad_fn=AliasBackward0)"
    ours, caught = quietly(safe_deepcopy, y)
    assert type(ours) is HandsDeepcopyOn and ours.grad_fn is None and len(caught) == 1


# --- what deepcopy cannot copy at all -----------------------------------------------------------------


def counting():
    yield from range(3)


def test_a_generator_beside_a_nonleaf_is_named_and_never_recommended_to_safe_deepcopy(capsys):
    x = leaf_source(True, 2)
    obj = {"y": x * 2, "steps": counting()}
    with pytest.raises(TypeError, match="cannot pickle 'generator' object"):
        copy.deepcopy({"steps": obj["steps"]})  # deepcopy cannot copy it, graph or not
    findings = find_nonleaf(obj)
    assert [f.path for f in findings] == ["['y']"]
    assert [(o.path, o.type_name, o.blocks_copy) for o in findings.opaque] == [("['steps']", "generator", True)]
    assert findings.lines()[1].startswith("cannot be copied: root['steps'] (generator) copy.deepcopy fails here")
    explain(obj)
    text = capsys.readouterr().out
    assert "copies it anyway" not in text and "safe_deepcopy(root) cannot copy it either" in text
    assert "root['steps'] (generator) copy.deepcopy fails here: TypeError: cannot pickle 'generator' object" in text
    before = snapshot(obj)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DetachedTensorsWarning)
        with pytest.raises(TypeError, match=r"root\['steps'\] \(generator\).*cannot pickle 'generator'") as raised:
            safe_deepcopy(obj)
    assert isinstance(raised.value.__cause__, TypeError)
    assert snapshot(obj) == before and next(obj["steps"]) == 0  # not even the generator was touched


@pytest.mark.parametrize("layout", ["sparse_csr", "strided nested"])
def test_a_leaf_of_a_layout_torch_cannot_copy_is_named_where_it_is(layout):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        leaf = (torch.eye(3).to_sparse_csr() if layout == "sparse_csr"
                else torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]))
    model = nn.Linear(2, 2)
    model.table = leaf
    with pytest.raises(NotImplementedError) as raised_by_deepcopy:
        copy.deepcopy(model)
    findings = find_nonleaf(model)
    assert findings == [] and [(o.path, o.blocks_copy) for o in findings.uncopyable] == [(".table", True)]
    with pytest.raises(NotImplementedError, match=r"root\.table \(Tensor\)") as raised:
        safe_deepcopy(model)
    assert str(raised_by_deepcopy.value).splitlines()[0] in str(raised.value)
    assert "Tensor.__deepcopy__ cannot copy it (NotImplementedError" in deepcopy_blocker(leaf)


def test_nothing_but_an_uncopyable_object(capsys):
    explain({"steps": counting()})
    text = capsys.readouterr().out
    assert text.startswith("No non-leaf tensor is reachable from this dict, but copy.deepcopy(root) fails")
    assert "Nothing to fix" not in text and "root['steps'] (generator)" in text


def test_an_error_type_that_takes_no_message_still_names_the_path():
    class Refusal(Exception):
        def __init__(self, code: int):
            super().__init__(f"refused with code {code}")

    class Refuses:
        def __reduce_ex__(self, protocol):
            raise Refusal(7)

    with pytest.raises(Refusal):
        copy.deepcopy(Refuses())
    with pytest.raises(TypeError, match=r"root\[0\] \(.*Refuses\).*Refusal: refused with code 7"):
        safe_deepcopy([Refuses()])


# --- causes, judged by where the tensor sits ------------------------------------------------------------


def kinds_and_causes(obj) -> dict[str, tuple[str, str]]:
    return {f.path: (f.kind, f.cause) for f in find_nonleaf(obj)}


def test_an_optimizers_learning_rate_and_hyperparameters_by_their_place():
    log_lr = torch.zeros((), requires_grad=True)
    weight = leaf_source(True, 3)
    opt = torch.optim.SGD([weight], lr=0.1, momentum=0.9)
    opt.param_groups[0]["lr"] = log_lr.exp()
    opt.param_groups[0]["momentum"] = log_lr.sigmoid()
    found = kinds_and_causes(opt)
    assert found[".param_groups[0]['lr']"][0] == "tensor-hyperparameter"
    assert "learned learning rate" in found[".param_groups[0]['lr']"][1]
    assert found[".param_groups[0]['momentum']"] == (
        "tensor-hyperparameter", "a tensor hyper-parameter ('momentum') with a graph, in the optimizer's param_groups")
    opt.state[weight]["momentum_buffer"] = weight * 0.5
    assert kinds_and_causes(opt)[".state[list(root.state)[0]]['momentum_buffer']"][0] == "optimizer-state"


def test_a_loss_kept_on_a_scheduler_is_a_logged_output_not_a_learning_rate():
    weight = leaf_source(True, 3)
    opt = torch.optim.SGD([weight], lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
    scheduler.last_loss = (weight * 2).sum()
    kind, cause = kinds_and_causes(scheduler)[".last_loss"]
    assert kind == "logged-output" and "LR scheduler" in cause and "learning rate" not in cause
    scheduler.base_lrs = [torch.zeros((), requires_grad=True).exp()]
    assert kinds_and_causes(scheduler)[".base_lrs[0]"][0] == "tensor-hyperparameter"


def test_callbacks_and_trainers_are_judged_by_class_name_and_say_looks_like():
    x = leaf_source(True, 3)

    class EarlyStoppingCallback:
        def __init__(self):
            self.best = (x * 2).sum()

    class Trainer:
        def __init__(self):
            self.state = {"step_output": x * 3}

    assert kinds_and_causes(EarlyStoppingCallback())[".best"] == (
        "logged-output", "looks like a step's output (a loss or metric) kept with its graph on a callback (by its class name)")
    kind, cause = kinds_and_causes(Trainer())[".state['step_output']"]
    assert kind == "logged-output" and cause.startswith("looks like") and "trainer" in cause


def test_causes_inferred_from_a_name_say_looks_like_and_name_it():
    x = leaf_source(True, 3)
    state = {"model_kwargs": {"past_key_values": ((x * 2,),)}, "history": {"val_loss": [x.sum()]}}
    found = kinds_and_causes(state)
    assert found["['model_kwargs']['past_key_values'][0][0]"] == (
        "kv-cache", ("looks like a KV-cache or model kwargs (by the name 'past_key_values'), still attached "
                     "to the graph, deep-copied with the generation state"))
    assert found["['history']['val_loss'][0]"] == (
        "logged-output", "looks like a logged metric or step output (by the name 'val_loss'), still attached to the graph")
    assert kinds_and_causes({"plain": [x * 2]})["['plain'][0]"][0] == "container"


def test_deepcopy_itself_agrees_with_every_verdict_here():
    """The references above are real: each corner object really makes deepcopy raise or not."""
    y = (leaf_source(True, 3) * 2).as_subclass(CopiesThroughTorchFunction)
    copy.deepcopy(y)
    with pytest.raises(RuntimeError) as raised:
        copy.deepcopy(jagged(True))
    assert GRAPH_LEAVES in str(raised.value)
