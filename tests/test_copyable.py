"""``gl.check_copyable`` on modules in the shapes of the reports the suite cites: the clean ones pass,
each broken one fails naming its path and fix, and nothing on the module (or the inputs) changed.

The modules are module-level classes, as a library's are: sending a module through
torch.multiprocessing pickles its class by reference, which a class defined inside a test could not
survive."""
from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

import graphleaf_edu as gl
from graphleaf_edu.copyable import sent_and_received
from graphleaf_edu.i18n import speaking
from graphleaf_edu.snapshot import Snapshot

X = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))


class Clean(nn.Module):
    """A clean module, with what a forward pass changes in place (BatchNorm's running statistics,
    dropout's draw from the random generator)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Dropout(0.5), nn.Linear(5, 2))

    def forward(self, x):
        return self.body(x)


class CachedInForward(Clean):
    """ultralytics/timm-EMA shape: forward keeps its features for later, graph and all."""

    def forward(self, x):
        self.features = self.body[:3](x)
        return self.body[3:](self.features)


class DetachedCache(Clean):
    """The fix of CachedInForward: the cache is detached."""

    def forward(self, x):
        features = self.body[:3](x)
        self.features = features.detach()
        return self.body[3:](features)


def keep_output(module, inputs, output):
    """A forward hook (BYOL's target encoder, skorch): it stores the output on the module."""
    module.activation = output


class HookStoresOutput(Clean):
    def __init__(self):
        super().__init__()
        self.body[0].register_forward_hook(keep_output)


class AuxLossLogged(nn.Module):
    """A mixture-of-experts layer that keeps its load-balancing loss for the logger."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(3, 4)
        self.experts = nn.Linear(3, 2)
        self.aux_losses = []  # empty until a forward pass: the walk skips it, the check must not

    def forward(self, x):
        weights = self.gate(x).softmax(-1)
        self.aux_losses.append((weights.mean(0) ** 2).sum() * 4)
        return self.experts(x) * weights[:, :1]


class OldWeightNorm(nn.Module):
    """The old torch.nn.utils.weight_norm (pytorch #28594, HF Wav2Vec2)."""

    def __init__(self):
        super().__init__()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # it is deprecated: that is the point
            self.proj = torch.nn.utils.weight_norm(nn.Linear(3, 2))

    def forward(self, x):
        return self.proj(x)


class OldSpectralNorm(nn.Module):
    """The old torch.nn.utils.spectral_norm: each training forward updates its u and v buffers in place
    (put back afterwards) and leaves weight non-leaf."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.utils.spectral_norm(nn.Linear(3, 2))

    def forward(self, x):
        return self.proj(x)


class Parametrized(nn.Module):
    """Its fix: torch.nn.utils.parametrizations.weight_norm."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))

    def forward(self, x):
        return self.proj(x)


class TakesADict(nn.Module):
    """HF style: a batch dict in, several tensors and a keyword argument; a dict of outputs out."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(3, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, batch, mask, *, scale=1.0):
        hidden = self.encoder(batch["x"]) * mask
        return {"logits": self.head(hidden) * scale, "hidden": (hidden,), "count": len(batch)}


class WrongShape(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 2)

    def forward(self, x):
        self.seen = x
        return self.proj(x.t())


def fingerprint(*roots) -> list:
    """Everything the call must leave as it was, by value and identity: each module's attributes (names
    and the objects bound to them), its training flag, its parameters, buffers, submodules and hooks;
    each tensor's bytes, requires_grad, .grad (object and bytes), storage address and sharing; and
    torch's random generator state."""
    parts: list = [torch.get_rng_state().tolist()]
    tensors = []
    for root in roots:
        for value in root if isinstance(root, (list, tuple)) else [root]:
            if isinstance(value, torch.Tensor):
                tensors.append(value)
            if not isinstance(value, nn.Module):
                continue
            for name, module in value.named_modules(remove_duplicate=False):
                attributes = vars(module)
                parts.append((name, module.training, sorted(attributes), [id(v) for _, v in sorted(attributes.items())]))
                for store, held in attributes.items():
                    if isinstance(held, dict):
                        parts.append((name, store, [(key, id(v)) for key, v in held.items()]))
                tensors += [v for v in attributes.values() if isinstance(v, torch.Tensor)]
                tensors += [t for t in [*module._parameters.values(), *module._buffers.values()] if t is not None]
    for t in tensors:
        grad = t.grad if t.is_leaf else None
        parts.append((id(t), bytes(t.detach().reshape(-1).contiguous().view(torch.uint8)), t.requires_grad, t.data_ptr(),
                      t.is_shared(), id(grad), None if grad is None else bytes(grad.reshape(-1).view(torch.uint8))))
    return parts


def checked(module, *inputs, **kwargs):
    """check_copyable, asserting that the module and the inputs are as they were, whatever it raised."""
    before = fingerprint(module, inputs, list(kwargs.values()))
    try:
        return gl.check_copyable(module, *inputs, **kwargs)
    finally:
        assert fingerprint(module, inputs, list(kwargs.values())) == before


@pytest.mark.parametrize("model", [Clean, DetachedCache, Parametrized], ids=lambda cls: cls.__name__)
def test_clean_modules_pass_and_say_what_was_checked(model):
    module = model().eval()
    result = checked(module, X)
    assert isinstance(result, gl.CopyableCheck)
    assert (result.type_name, result.backward) == (model.__name__, True)
    assert result.sent == ("state_dict" if model is Parametrized else "module")
    assert result.state_dict_entries == len(module.state_dict())
    assert str(result).splitlines()[1:] == [
        "passed: copy.deepcopy(module)",
        "passed: " + ("sending its state_dict through torch.multiprocessing's pickler (a parametrized module is "
                      "sent that way only: PyTorch's rule)" if model is Parametrized else
                      "sending the module through torch.multiprocessing's pickler (as a queue or a spawned process does)"),
        ("passed: state_dict round trip: torch.save, torch.load(weights_only=True), load_state_dict into a fresh copy, "
        "every entry equal"),
    ]
    assert module.training is False  # put back after the step ran in training mode


def test_a_module_taking_a_dict_several_tensors_and_keywords_passes():
    module = TakesADict()
    batch = {"x": X.clone().requires_grad_(), "ids": torch.arange(4)}
    result = checked(module, batch, torch.ones(4, 1), scale=torch.tensor(2.0, requires_grad=True))
    assert result.backward and batch["x"].grad is None  # the backward reached the input; its grad was put back


# (module, the path named, words of its cause, words of its fix, the checks that fail)
BROKEN = [
    (CachedInForward, ".features", "cached activation in a module attribute", "store `output.detach()`",
     ("deepcopy", "send")),
    (HookStoresOutput, ".body[0].activation", "cached activation in a module attribute",
     "store `output.detach()` where it is cached (in `forward` or the forward hook)", ("deepcopy", "send")),
    (AuxLossLogged, ".aux_losses[0]", "activations kept in a list/dict attribute of a module",
     "store `.detach()`ed tensors in it, or clear it before copying", ("deepcopy", "send")),
    (OldWeightNorm, ".proj.weight", "old torch.nn.utils.weight_norm",
     "use `torch.nn.utils.parametrizations.weight_norm`", ("deepcopy", "send")),
    (OldSpectralNorm, ".proj.weight", "spectral_norm (old API) after a forward",
     "use `torch.nn.utils.parametrizations.spectral_norm`", ("deepcopy", "send")),
]


@pytest.mark.parametrize(("model", "path", "cause", "fix", "failed"), BROKEN, ids=lambda v: getattr(v, "__name__", None))
def test_each_broken_module_fails_naming_its_path_cause_and_fix(model, path, cause, fix, failed):
    module = model()
    with pytest.raises(gl.NotCopyableError) as raised:
        checked(module, X)
    error = raised.value
    assert isinstance(error, AssertionError)
    assert error.failed == failed and error.paths == (path,)
    message = str(error)
    assert message.startswith(f"check_copyable on this {model.__name__}, after one forward and backward pass in training")
    assert f"root{path}" in message and cause in message and fix in message
    assert "FAILED copy.deepcopy(module): RuntimeError: Only Tensors created explicitly by the user" in message
    assert "Cowardly refusing to serialize non-leaf tensor which requires_grad" in message
    assert "passed: state_dict round trip" in message
    assert gl.find_nonleaf(module) == [] or model is OldWeightNorm  # the cache the step left was taken away again


def test_the_report_is_explains_own_report_of_the_module_after_the_step():
    module = CachedInForward()
    with pytest.raises(gl.NotCopyableError) as raised:
        checked(module, X)
    module.train()(X)  # the same step, by hand
    assert gl.find_nonleaf(module).report() in str(raised.value)
    assert gl.find_nonleaf(module, "multiprocessing").report("multiprocessing") in str(raised.value)


def test_a_forward_pass_alone_finds_the_cache_and_no_grad_around_the_call_does_not_hide_it():
    with torch.no_grad(), pytest.raises(gl.NotCopyableError) as raised:
        checked(CachedInForward(), X, backward=False)
    assert "after one forward pass in training mode" in str(raised.value)


def test_what_the_module_held_before_is_put_back_gradients_and_caches_included():
    module = DetachedCache()
    module(X).sum().backward()  # a previous step: every parameter has a .grad
    module.features = torch.zeros(1)  # and a cache of its own
    module.history = []  # and an empty list, which the step's forward leaves alone
    grads = {name: p.grad for name, p in module.named_parameters()}
    checked(module, X)
    assert all(p.grad is grads[name] for name, p in module.named_parameters())
    assert torch.equal(module.features, torch.zeros(1)) and module.history == []


def test_a_module_that_cannot_run_on_the_example_raises_its_own_error_unchanged():
    module = WrongShape()
    with pytest.raises(RuntimeError) as raised:
        checked(module, X)
    assert "mat1 and mat2 shapes cannot be multiplied" in str(raised.value)
    assert not hasattr(raised.value, "__notes__") and "seen" not in vars(module)


def test_bad_arguments_say_what_to_give():
    with pytest.raises(TypeError, match=r"takes a torch.nn.Module, got dict; for any other object use explain"):
        gl.check_copyable({"w": X})
    with pytest.raises(TypeError, match=r"backward=\.\.\.\) takes True or False, got 'yes'"):
        gl.check_copyable(Clean(), X, backward="yes")


def test_a_module_without_parameters_passes_without_a_backward_pass():
    result = checked(nn.Sequential(nn.ReLU(), nn.Dropout()), X)
    assert result.backward is False and result.state_dict_entries == 0
    assert str(result).startswith("check_copyable on this Sequential, after one forward pass in training mode")


def test_a_lazy_module_is_refused_before_anything_runs():
    module = nn.Sequential(nn.LazyLinear(2))
    with pytest.raises(ValueError, match=r"0\.weight is uninitialized \(a lazy module such as nn\.LazyLinear\): run one"):
        gl.check_copyable(module, X)
    assert torch.nn.parameter.is_lazy(module[0].weight)
    module(X)  # built by a forward pass of its own, it can be checked
    assert checked(module, X).state_dict_entries == 2


def test_the_report_speaks_chinese_when_asked():
    with speaking("zh-CN"), pytest.raises(gl.NotCopyableError) as raised:
        checked(CachedInForward(), X)
    assert "root.features" in str(raised.value)
    assert "check_copyable" in str(raised.value) and "训练模式" in str(raised.value)


def test_sending_does_not_move_the_module_into_shared_memory_and_refuses_what_a_queue_refuses():
    module = Clean()
    received = sent_and_received(module)
    assert not any(p.is_shared() for p in module.parameters())
    assert all(torch.equal(a, b) for a, b in zip(received.state_dict().values(), module.state_dict().values()))
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        sent_and_received({"y": X.requires_grad_(False) * torch.ones(3, requires_grad=True)})


class SkipsAKeyOnLoad(nn.Linear):
    """Its load leaves the bias out, and says nothing of it."""

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        kept = {key: value for key, value in state_dict.items() if key != prefix + "bias"}
        super()._load_from_state_dict(kept, prefix, local_metadata, strict, missing, unexpected, errors)
        missing.remove(prefix + "bias")


class ExtraStateObject(nn.Linear):
    """Extra state that torch.load(weights_only=True), the default, refuses."""

    def get_extra_state(self):
        return SkipsAKeyOnLoad

    def set_extra_state(self, state):
        pass


def test_a_state_dict_that_does_not_round_trip_fails_the_check():
    with pytest.raises(gl.NotCopyableError) as raised:
        checked(SkipsAKeyOnLoad(3, 2), X)
    assert raised.value.failed == ("state_dict",) and raised.value.paths == ()
    assert "FAILED state_dict round trip: torch.save, torch.load(weights_only=True), load_state_dict into a fresh copy, " \
           "every entry equal: after load_state_dict the fresh copy differs in bias: " in str(raised.value)
    assert "passed: copy.deepcopy(module)" in str(raised.value)
    with pytest.raises(gl.NotCopyableError, match=r"(?s)FAILED state_dict round trip.*UnpicklingError: Weights only load failed"):
        checked(ExtraStateObject(3, 2), X)


def test_the_snapshot_puts_back_containers_attributes_and_bytes():
    holder = nn.Linear(2, 2)
    holder.log = {"losses": []}
    buffer = torch.zeros(2)
    holder.register_buffer("seen", buffer)
    snapshot = Snapshot(holder)
    holder.log["losses"].append(torch.ones(1))
    holder.log["extra"] = 1
    holder.added = torch.ones(1)
    buffer += 1
    holder.weight.data = torch.ones(3, 3)
    snapshot.restore()
    assert holder.log == {"losses": []} and "added" not in vars(holder)
    assert torch.equal(holder.seen, torch.zeros(2)) and holder.seen is buffer and holder.weight.shape == (2, 2)
    assert copy.deepcopy(holder).log == {"losses": []}
