"""The old ``torch.nn.utils.weight_norm``: ``weight`` is a non-leaf attribute from the moment it is applied."""
import copy

import torch
from torch import nn

from graphleaf_edu.i18n import N_
from graphleaf_edu.scenarios.catalog.shared import (
    DEEPCOPY_ERROR,
    SAFE_DEEPCOPY_COST,
    deepcopy_model,
    safe_deepcopy_model,
)
from graphleaf_edu.scenarios.engine import NONE, Fix, Scenario


def setup():
    torch.manual_seed(0)
    model = nn.utils.weight_norm(nn.Linear(4, 3))
    return {"model": model}


def setup_parametrizations():
    torch.manual_seed(0)
    model = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
    return {"model": model}


def remove_weight_norm_then_deepcopy(model):
    nn.utils.remove_weight_norm(model)
    return copy.deepcopy(model)


SCENARIO = Scenario(
    key="old_weight_norm",
    title=N_("The old torch.nn.utils.weight_norm, before any forward"),
    summary=N_(
        "weight_norm stores weight = g * v / |v| on the module as a plain, non-leaf tensor as soon as it is "
        "applied, so even a fresh module fails (the hint in the error message is about this). "
        "torch.nn.utils.parametrizations.weight_norm recomputes weight on access and deep-copies fine."
    ),
    setup=setup,
    target="model",
    culprit=".weight",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: copy.deepcopy"), deepcopy_model, N_("it raises")),
        Fix("parametrizations", "torch.nn.utils.parametrizations.weight_norm", deepcopy_model,
            N_("the current API, same values; its state_dict keys differ (parametrizations.weight.original0/1)"),
            setup=setup_parametrizations),
        Fix("remove_weight_norm", N_("nn.utils.remove_weight_norm, then deepcopy"), remove_weight_norm_then_deepcopy,
            N_("mutates the original: it loses weight normalisation (weight becomes a plain Parameter)"),
            mutates_original=True),
        Fix("safe_deepcopy", "graphleaf_edu.safe_deepcopy", safe_deepcopy_model, SAFE_DEEPCOPY_COST),
    ),
    source="wild",
)
