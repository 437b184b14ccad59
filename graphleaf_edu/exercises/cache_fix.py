"""Exercise 5: fix a model that caches an activation, without changing what it computes."""
from __future__ import annotations

import copy

import torch
from torch import nn

from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.errors import error_line, gloss
from graphleaf_edu.exercises.feedback import (
    Wrong,
    call,
    exercise,
    require_class,
    sgd_step,
)
from graphleaf_edu.i18n import N_, say

CACHE_LESSON = "02_model_cache"


class CachingNetAsGiven(nn.Module):
    """Exercise 5's model as given: forward keeps its hidden activation for a monitor to read."""

    def __init__(self, features: int = 4, hidden: int = 8):
        super().__init__()
        self.hidden = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, 1)
        self.last_hidden = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.hidden(x))
        self.last_hidden = h  # read by a monitoring callback after each step
        return self.out(h)


@exercise("Exercise 5 · fix the cache")
def check_cache_fix(model_class: type) -> str:
    """Deepcopy must work after a forward; outputs, the cache and one training step must not change."""
    name = require_class(model_class)
    torch.manual_seed(5)
    reference = CachingNetAsGiven()
    model = call(model_class, f"{name}()")
    if not isinstance(model, nn.Module):
        raise Wrong(say("{name}() should make an nn.Module; it made a {type_name}.", name=name,
                        type_name=type(model).__name__))
    if _shapes(model) != _shapes(reference):
        raise Wrong(say("{name} has different layers from CachingNetAsGiven.", name=name),
                    say("Keep __init__ as given: only what forward() keeps needs to change."))
    model.load_state_dict(reference.state_dict())
    x, target = torch.randn(5, 4), torch.randn(5, 1)
    output = call(model, f"{name}()(x)", x)
    expected = reference(x)
    if not isinstance(output, torch.Tensor) or output.shape != expected.shape or not torch.allclose(output, expected):
        raise Wrong(say("the model's output changed."), say("The fix is about what forward() keeps, not what it returns."))
    _check_cache(model, reference)
    _check_deepcopy(model, N_("after a forward pass"))
    _check_training_step(model, reference, output, expected, target)
    _check_deepcopy(model, N_("after backward() and an optimizer step"))
    summary = say("deepcopy works after forward and after a training step; outputs, gradients, the step "
                  "and the cached values are exactly as before.")
    if model.last_hidden.requires_grad:
        summary += say(" One warning: your cache requires grad, so it is a new leaf. A loss computed from it would "
                       "send gradients to the cache alone, never to the weights: there is no need for "
                       "requires_grad_() on a tensor you keep for its values.")
    return summary


def _shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {name: tuple(value.shape) for name, value in model.state_dict().items()}


def _check_cache(model: nn.Module, reference: CachingNetAsGiven) -> None:
    cache = getattr(model, "last_hidden", None)
    if not isinstance(cache, torch.Tensor):
        what = "None" if cache is None else say("a {type_name}, not a tensor", type_name=type(cache).__name__)
        raise Wrong(say("deepcopy may work now, but model.last_hidden is {what}.", what=what),
                    say("The monitoring callback still needs the activation's values after each step: keep them, "
                        "without what makes deepcopy fail."))
    if cache.shape != reference.last_hidden.shape or not torch.allclose(cache, reference.last_hidden):
        raise Wrong(say("model.last_hidden does not hold the hidden activation any more."),
                    say("Keep the values of relu(self.hidden(x)) that forward computes."))


def _check_deepcopy(model: nn.Module, when: str) -> None:
    try:
        copy.deepcopy(model)
    except Exception as error:  # noqa: BLE001 (the error is the feedback)
        findings = find_nonleaf(model)
        if not findings:
            failed = say("copy.deepcopy(model) fails {when}: {error}", when=say(when), error=error_line(error))
            raise Wrong(f"{failed} {gloss(failed)}".rstrip()) from None
        culprit = findings[0]
        hint = {
            "ReluBackward0": N_("it is still the very tensor forward computed. Assigning it under "
                                "torch.no_grad() or to another name does not change a tensor that already "
                                "has a history."),
            "CloneBackward0": N_("clone() copies the values but is recorded: the clone is still in the graph."),
        }.get(culprit.grad_fn, N_("a tensor with a history is not a leaf, and deepcopy copies only leaves."))
        raise Wrong(say("copy.deepcopy(model) still fails {when}: model{path} has grad_fn={grad_fn}.", when=say(when),
                        path=culprit.path, grad_fn=culprit.grad_fn), f"{say(hint)} ({CACHE_LESSON})") from None


def _check_training_step(model, reference, output, expected, target) -> None:
    nn.functional.mse_loss(output, target).backward()
    nn.functional.mse_loss(expected, target).backward()
    gradients = dict(reference.named_parameters())
    for param_name, param in model.named_parameters():
        if param.grad is None:
            raise Wrong(say("training changed: no gradient reaches {name}.", name=param_name),
                        say("The forward pass goes on from a tensor that was cut from the graph. Cut only the tensor "
                            "you keep, not the one the computation continues with."))
        if not torch.allclose(param.grad, gradients[param_name].grad):
            raise Wrong(say("training changed: the gradient of {name} differs.", name=param_name),
                        say("Keeping an activation must not change the computation it comes from."))
    for net in (model, reference):
        sgd_step(net, lr=0.1)
    if any(not torch.allclose(p, q) for p, q in zip(model.parameters(), reference.parameters())):
        raise Wrong(say("training changed: one SGD step moves the weights differently."))
