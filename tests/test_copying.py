"""safe_deepcopy: detached copies of non-leaf tensors, everything else as copy.deepcopy makes it,
and the original never touched."""
from __future__ import annotations

import copy
import dataclasses
import threading
import warnings
from collections import namedtuple

import pytest
import torch
from torch import nn
from torch.nn.utils import prune
from torch.utils.data import DataLoader
from torch_cases import DEVICES, tensors_in

from graphleaf_edu.copying import DetachedTensorsWarning, safe_deepcopy
from graphleaf_edu.dataloading import TensorRows
from graphleaf_edu.diagnose import find_nonleaf

pytestmark = pytest.mark.usefixtures("quiet_torch_deprecations")


def copied(obj, expected_paths: list[str] | None = None):
    """safe_deepcopy(obj), checking the warning (paths in find_nonleaf order) and the result."""
    expected = [f.path for f in find_nonleaf(obj)] if expected_paths is None else expected_paths
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        duplicate = safe_deepcopy(obj)
    ours = [w for w in caught if issubclass(w.category, DetachedTensorsWarning)]
    if expected:
        assert len(ours) == 1
        assert ours[0].message.paths == tuple(expected)
        assert ours[0].filename == __file__  # stacklevel points at the caller
    else:
        assert ours == []
    assert find_nonleaf(duplicate) == []
    copy.deepcopy(duplicate)
    return duplicate


def storages(obj) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors_in(obj) if t.numel()}


def fingerprint(obj):
    """Ids, grad_fns and values of every tensor reachable from obj (to prove nothing changed)."""
    return [
        (id(t), t.grad_fn, t.requires_grad, t.detach().clone(), None if not t.is_leaf else t.grad)
        for t in tensors_in(obj)
    ]


def assert_unchanged(before, after):
    assert len(before) == len(after)
    for (id1, fn1, rg1, v1, g1), (id2, fn2, rg2, v2, g2) in zip(before, after):
        assert (id1, rg1) == (id2, rg2) and fn1 is fn2 and g1 is g2
        assert torch.equal(v1, v2)


class Cached(nn.Module):
    def __init__(self, width: int, depth: int = 1, *, scale: float):
        super().__init__()
        self.body = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
        self.norm = nn.BatchNorm1d(width)
        self.scale = scale
        self.cache = None
        self.acts: list = []

    def forward(self, x):
        out = self.norm(self.body(x)) * self.scale
        self.cache = out
        self.acts.append(out.relu())
        return out


# --- the four failure scenarios -------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_intermediate_tensor(device):
    x = torch.randn(3, device=device, requires_grad=True)
    y = x * 2
    twin = copied(y, [""])
    assert torch.equal(twin, y) and twin.grad_fn is None and not twin.requires_grad
    assert twin.device == y.device and twin.untyped_storage().data_ptr() != y.untyped_storage().data_ptr()


def test_model_output():
    out = nn.Linear(3, 2)(torch.randn(4, 3))
    assert torch.equal(copied(out, [""]), out)


def test_dataset_holding_a_nonleaf_tensor():
    y = torch.randn(8, 3, requires_grad=True) * 2
    dataset = TensorRows(y, deepcopy_in_getitem=True)
    twin = copied(dataset, [".data"])
    assert type(twin) is TensorRows and twin.data.grad_fn is None
    batch = next(iter(DataLoader(twin, batch_size=4)))
    assert torch.equal(batch, y[:4].detach())
    assert dataset.data is y and y.grad_fn is not None


@pytest.mark.parametrize("device", DEVICES)
def test_model_caching_activations_whose_constructor_takes_arguments(device):
    model = Cached(4, 2, scale=0.5).to(device=device, dtype=torch.float64).eval()
    model(torch.randn(3, 4, device=device, dtype=torch.float64, requires_grad=True))
    before = fingerprint(model)
    twin = copied(model, [".cache", ".acts[0]"])
    assert_unchanged(before, fingerprint(model))
    assert type(twin) is Cached and twin.scale == 0.5 and twin.training is False
    assert isinstance(twin.body[0].weight, nn.Parameter) and twin.body[0].weight.requires_grad
    for (name, ours), (_, theirs) in zip(model.state_dict(keep_vars=True).items(), twin.state_dict(keep_vars=True).items()):
        assert torch.equal(ours, theirs), name
        assert (theirs.device, theirs.dtype, type(theirs)) == (ours.device, ours.dtype, type(ours))
        assert theirs is not ours
    assert [n for n, _ in twin.named_buffers()] == [n for n, _ in model.named_buffers()]
    assert torch.equal(twin.cache, model.cache) and twin.cache.grad_fn is None
    assert twin.acts[0].grad_fn is None
    assert storages(twin).isdisjoint(storages(model))


# --- other real causes: the copy works and still runs ---------------------------------------------


def test_old_weight_norm_spectral_norm_and_prune_copies_still_run_forward():
    model = nn.Sequential(
        nn.utils.weight_norm(nn.Linear(4, 4)),
        nn.utils.spectral_norm(nn.Linear(4, 4)),
        nn.Linear(4, 2),
    )
    prune.l1_unstructured(model[2], "weight", amount=0.5)
    x = torch.randn(3, 4)
    model.eval()
    model(x)  # spectral_norm's weight becomes a non-leaf only now
    twin = copied(model, ["[0].weight", "[1].weight", "[2].weight"])
    assert torch.allclose(twin(x), model(x))
    twin.train()
    twin(x).sum().backward()
    assert twin[0].weight_v.grad is not None and model[0].weight_v.grad is None


def test_forward_hook_cache_and_dict_attribute():
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    model[1].register_forward_hook(lambda module, args, out: setattr(module, "seen", out))
    model.named = {}
    model[0].register_forward_hook(lambda module, args, out: model.named.update(first=out))
    model(torch.randn(2, 3))
    twin = copied(model, ["[1].seen", ".named['first']"])
    twin(torch.randn(2, 3))
    assert twin[1].seen.grad_fn is not None  # the copied hooks work on the copy
    assert twin.named["first"].grad_fn is None


@pytest.mark.parametrize("device", DEVICES)
def test_leaf_whose_grad_is_nonleaf(device):
    x = torch.randn(3, device=device, requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    grad, grad_fn = x.grad, x.grad.grad_fn
    twin = copied({"x": x, "same grad": x.grad}, ["['same grad']"])  # the shorter path
    assert twin["x"].is_leaf and twin["x"].requires_grad and twin["x"].device == x.device
    assert twin["x"].grad is twin["same grad"]
    assert twin["x"].grad.grad_fn is None and torch.equal(twin["x"].grad, grad)
    assert x.grad is grad and x.grad.grad_fn is grad_fn


def test_leaf_with_nonleaf_grad_keeps_its_tensor_attributes():
    x = torch.randn(2, requires_grad=True)
    (x**2).sum().backward(create_graph=True)
    x.tag = ["kept"]
    twin = copied(x, [".grad"])
    assert twin.tag == ["kept"] and twin.tag is not x.tag


def test_parameter_with_nonleaf_grad_copies_without_detaching():
    weight = nn.Parameter(torch.randn(3))
    (weight**3).sum().backward(create_graph=True)
    twin = copied(weight, [])
    assert isinstance(twin, nn.Parameter) and twin.grad is None


# --- structure: aliasing, cycles, containers ------------------------------------------------------


def test_aliasing_is_kept_and_nonleaf_views_become_compact_clones():
    x = torch.randn(1000, requires_grad=True)
    y = x * 2
    first, second = y[:3], y[3:5]  # two small non-leaf views of one big storage
    obj = {"y": y, "again": [y], "x": x, "x too": (x,), "views": (first, second)}
    twin = copied(obj)
    assert twin["y"] is twin["again"][0] and twin["x"] is twin["x too"][0]
    a, b = twin["views"]
    assert torch.equal(a, first) and torch.equal(b, second)
    assert a.untyped_storage().nbytes() == 3 * 4 and b.untyped_storage().nbytes() == 2 * 4


def test_what_a_failed_first_attempt_built_is_reused_only_when_complete():
    w = torch.randn(4, requires_grad=True)
    shared = w.detach()[1:]  # a leaf view of w's storage
    obj = {"before": [w, shared], "middle": [1, w * 2, 2], "after": (w, shared)}
    twin = copied(obj, ["['middle'][1]"])
    assert twin["middle"][0] == 1 and twin["middle"][2] == 2 and len(twin["middle"]) == 3
    assert twin["before"][0] is twin["after"][0] and twin["before"][1] is twin["after"][1]
    assert twin["before"][1].untyped_storage().data_ptr() == twin["before"][0].untyped_storage().data_ptr()
    assert twin["before"][0].untyped_storage().data_ptr() != w.untyped_storage().data_ptr()


def test_nesting_too_deep_for_deepcopy_fails_as_deepcopy_does():
    nested: list = [torch.randn(1, requires_grad=True) * 2]
    for _ in range(9_999):
        nested = [nested]
    with pytest.raises(RecursionError):
        copy.deepcopy(nested)
    with pytest.raises(RecursionError):
        safe_deepcopy(nested)


def test_cycles():
    y = torch.randn(2, requires_grad=True) + 1
    loop: list = [y]
    loop.append(loop)
    twin = copied(loop, ["[0]"])
    assert twin[1] is twin and twin[0].grad_fn is None


def test_namedtuples_dataclasses_and_slots():
    Pair = namedtuple("Pair", "first second")

    @dataclasses.dataclass
    class Record:
        value: object

    class Slotted:
        __slots__ = ("value",)

        def __init__(self, value):
            self.value = value

    y = torch.randn(2, requires_grad=True) * 3
    twin = copied([Pair(1, y), Record(y), Slotted(y)], ["[0].second"])
    assert type(twin[0]) is Pair and twin[0].second is twin[1].value is twin[2].value


def test_optimizer_and_model_together():
    model = Cached(3, scale=1.0)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    new_model, new_opt = copied((model, opt), ["[0].cache", "[0].acts[0]"])
    copied_params = new_opt.param_groups[0]["params"]
    assert all(a is b for a, b in zip(copied_params, new_model.parameters()))
    for old_param, new_param in zip(model.parameters(), new_model.parameters()):
        old_state, new_state = opt.state[old_param], new_opt.state[new_param]
        assert torch.equal(old_state["exp_avg"], new_state["exp_avg"])
        assert old_state["exp_avg"] is not new_state["exp_avg"]
    new_model(torch.randn(4, 3)).sum().backward()
    new_opt.step()


def test_hundred_thousand_element_list():
    x = torch.randn(1, requires_grad=True)
    items: list = [float(i) for i in range(100_000)]
    items[3] = torch.zeros(1)
    items[7] = x * 2
    items[99_999] = items[7]
    twin = copied(items, ["[7]"])
    assert len(twin) == 100_000 and twin[7] is twin[99_999] and twin[7].grad_fn is None


def test_deep_nesting_within_deepcopys_own_recursion_limit():
    y = torch.randn(1, requires_grad=True) * 2
    nested: list = [y]
    for _ in range(150):
        nested = [nested]
    twin = copied(nested)
    for _ in range(151):
        twin = twin[0]
    assert torch.equal(twin, y)


# --- never touching the original -----------------------------------------------------------------


def test_properties_are_not_called_and_getattr_only_asked_what_deepcopy_asks():
    asked = []

    class Lazy:
        def __init__(self, value):
            self.value = value

        @property
        def broken(self):
            raise AssertionError("property called")

        def __getattr__(self, name):
            asked.append(name)
            raise AttributeError(name)

    y = torch.randn(2, requires_grad=True) * 2
    twin = copied(Lazy(y), [".value"])
    assert twin.value.grad_fn is None
    assert asked and all(name.startswith("__") for name in asked)  # deepcopy's own protocol look-ups


def test_the_lock_after_a_nonleaf_raises_deepcopys_error_and_leaves_the_original_intact():
    y = torch.randn(2, requires_grad=True) * 2
    lock = threading.Lock()
    obj = {"y": y, "lock": lock}
    before = fingerprint(obj)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TypeError, match="cannot pickle '_thread.lock' object"):
            safe_deepcopy(obj)
    assert not [w for w in caught if issubclass(w.category, DetachedTensorsWarning)]
    assert obj == {"y": y, "lock": lock} and obj["y"] is y
    assert_unchanged(before, fingerprint(obj))


def test_other_runtime_errors_are_not_swallowed():
    class Refuses:
        def __deepcopy__(self, memo):
            raise RuntimeError("not copyable on purpose")

    with pytest.raises(RuntimeError, match="on purpose"):
        safe_deepcopy([torch.randn(2, requires_grad=True) * 2, Refuses()])


def test_a_nonleaf_hidden_from_the_walk_gets_a_clear_error_naming_where_it_hides():
    hidden = torch.randn(2, requires_grad=True) * 2

    class CopiesItself:
        def __init__(self):
            self.inside = [hidden]

        def __deepcopy__(self, memo):
            duplicate = CopiesItself.__new__(CopiesItself)
            duplicate.inside = copy.deepcopy(self.inside, memo)
            return duplicate

    with pytest.raises(RuntimeError, match=r"cannot reach.*root\['box'\] \(.*CopiesItself\) copies itself") as raised:
        safe_deepcopy({"box": CopiesItself()})
    assert "graph leaves" in str(raised.value.__cause__)


def test_objects_that_reduce_themselves_are_copied_with_their_nonleafs_detached():
    hidden = torch.randn(2, requires_grad=True) * 2

    class Reduces:
        __slots__ = ()

        def __reduce__(self):
            return (list, ([hidden],))

    twin = copied(Reduces(), [".__reduce_ex__(4)[1][0][0]"])
    assert type(twin) is list and twin[0].grad_fn is None and torch.equal(twin[0], hidden)


def test_a_failed_attempt_is_never_reused_a_subclass_memoizing_itself_keeps_its_attributes():
    class Tagged(torch.Tensor):
        def __deepcopy__(self, memo):  # memoizes itself before copying its attributes
            duplicate = self.detach().clone().as_subclass(Tagged)
            memo[id(self)] = duplicate
            duplicate.__dict__ = copy.deepcopy(self.__dict__, memo)
            return duplicate

    leaf = torch.randn(2, requires_grad=True)
    tagged = torch.zeros(2).as_subclass(Tagged)
    tagged.note = {"ok": 1}
    obj = {"tagged": tagged, "then": leaf * 2}
    twin = copied(obj, ["['then']"])
    assert twin["tagged"].note == {"ok": 1}
    tagged.bad = leaf * 3  # now the non-leaf hides inside the subclass' own __deepcopy__
    with pytest.raises(RuntimeError, match=r"root\['tagged'\].*copies itself"):
        safe_deepcopy(obj)


def test_detached_tensors_keep_their_attributes_and_retained_grad():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.sum().backward()
    y.label = ["kept"]
    twin = copied({"y": y, "label again": y.label}, ["['y']"])
    assert twin["y"].label == ["kept"] and twin["y"].label is twin["label again"]
    assert torch.equal(twin["y"].grad, y.grad) and twin["y"].grad is not y.grad


# --- warnings and arguments ------------------------------------------------------------------------


def test_warning_text_lists_the_paths_and_warn_false_is_silent():
    model = Cached(3, scale=1.0)
    model(torch.randn(2, 3))
    with pytest.warns(DetachedTensorsWarning, match=r"detached 2 non-leaf tensors .*root\.cache, root\.acts\[0\]"):
        safe_deepcopy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        safe_deepcopy(model, warn=False)
        safe_deepcopy(nn.Linear(2, 2))


def test_many_paths_are_summarised_in_the_text_but_all_kept():
    x = torch.randn(1, requires_grad=True)
    items = [x * i for i in range(25)]
    with pytest.warns(DetachedTensorsWarning, match=r"root\[19\], \.\.\. \(5 more") as record:
        safe_deepcopy(items)
    assert record[0].message.paths == tuple(f"[{i}]" for i in range(25))
    assert issubclass(DetachedTensorsWarning, UserWarning)


def test_bad_warn_argument():
    with pytest.raises(TypeError, match="True or False"):
        safe_deepcopy([], warn="yes")
