"""Exercise 6: an EMA update that never puts the average into the training graph."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.exercises.feedback import (
    Wrong,
    call,
    exercise,
    require_class,
    sgd_step,
)
from graphleaf_edu.i18n import say

EMA_LESSON = "deep_dives/in_the_wild"
EMA_DECAY, EMA_STEPS = 0.8, 3


def _ema_setup() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(6)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    return model, torch.randn(8, 3), torch.randn(8, 1)


@exercise("Exercise 6 · an EMA that deepcopy can copy")
def check_ema_update(ema_class: type) -> str:
    """Train a few steps calling ``ema.update(model)``; the shadow must follow the formula, stay out
    of the graph (deepcopy works), and leave the model alone."""
    name = require_class(ema_class)
    model, x, target = _ema_setup()
    ema = call(ema_class, f"{name}(model, decay={EMA_DECAY})", model, EMA_DECAY)
    shadow = getattr(ema, "shadow", None)
    if not isinstance(shadow, dict) or set(shadow) != {n for n, _ in model.named_parameters()}:
        raise Wrong(say("{name}(model) should keep a dict `shadow`, one tensor per named parameter, as given.",
                        name=name))
    expected = {n: p.detach().clone() for n, p in model.named_parameters()}
    for step in range(1, EMA_STEPS + 1):
        model.zero_grad()
        nn.functional.mse_loss(model(x), target).backward()
        sgd_step(model, lr=0.1)
        weights = {n: p.detach().clone() for n, p in model.named_parameters()}
        call(getattr(ema, "update", None), say("ema.update(model) (step {step})", step=step), model)
        _check_model_untouched(model, weights)
        _check_ema_copyable(ema, model, step)
        previous = expected
        expected = {n: EMA_DECAY * previous[n] + (1 - EMA_DECAY) * weights[n] for n in weights}
        _check_ema_values(ema.shadow, expected, previous, weights, step)
    return say("{steps} updates follow decay * shadow + (1 - decay) * weight, the shadow stays out of the graph "
               "(deepcopy works at every step), and the model trains as before.", steps=EMA_STEPS)


def _check_model_untouched(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    for param_name, param in model.named_parameters():
        if not torch.equal(param.detach(), weights[param_name]):
            raise Wrong(say("ema.update(model) changed the model's {name}.", name=param_name),
                        say("The average follows the model; the model never follows the average."))


def _check_ema_copyable(ema: Any, model: nn.Module, step: int) -> None:
    if not isinstance(getattr(ema, "shadow", None), dict):
        raise Wrong(say("after update {step}, ema.shadow is not a dict any more: update the tensors in it.", step=step))
    for param_name, param in model.named_parameters():
        if not isinstance(ema.shadow.get(param_name), torch.Tensor):
            raise Wrong(say("after update {step}, shadow[{name!r}] is {type_name}, not a tensor.", step=step,
                            name=param_name, type_name=type(ema.shadow.get(param_name)).__name__))
        if ema.shadow[param_name].untyped_storage().data_ptr() == param.untyped_storage().data_ptr():
            raise Wrong(say("after update {step}, shadow[{name!r}] shares memory with the parameter.", step=step,
                            name=param_name),
                        say("Then it is not an average: it changes with every optimizer step. The shadow needs "
                            "memory of its own."))
    findings = find_nonleaf(ema)
    if findings:
        first = findings[0]
        raise Wrong(say("after update {step}, copy.deepcopy(ema) fails: ema{path} has grad_fn={grad_fn}.",
                        step=step, path=first.path, grad_fn=first.grad_fn),
                    say("The update read the parameters while autograd was recording, so the shadow joined the "
                        "training graph. The average is bookkeeping, not part of training: compute it where "
                        "autograd records nothing ({lesson}).", lesson=EMA_LESSON))


def _check_ema_values(shadow: dict, expected: dict, previous: dict, weights: dict, step: int) -> None:
    for param_name, value in expected.items():
        if torch.allclose(shadow[param_name], value, atol=1e-6):
            continue
        swapped = (1 - EMA_DECAY) * previous[param_name] + EMA_DECAY * weights[param_name]
        if torch.allclose(shadow[param_name], swapped, atol=1e-6):
            hint = say("The check passes decay={decay} (not your class's default): the shadow keeps {kept:.0%} of "
                       "its old value and moves {moved:.0%} of the way to the weights; yours does the opposite.",
                       decay=EMA_DECAY, kept=EMA_DECAY, moved=1 - EMA_DECAY)
        else:
            hint = say("Each update: new shadow = decay * old shadow + (1 - decay) * the model's weight.")
        raise Wrong(say("after update {step}, shadow[{name!r}] is not the moving average.", step=step,
                        name=param_name), hint)
