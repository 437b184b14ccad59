"""``torch.nn.utils.prune``: ``weight = weight_orig * weight_mask``, a non-leaf attribute."""
import copy

import torch
from torch import nn
from torch.nn.utils import prune

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
    model = nn.Linear(4, 3)
    prune.l1_unstructured(model, "weight", amount=0.5)
    return {"model": model}


def prune_remove_then_deepcopy(model):
    prune.remove(model, "weight")
    return copy.deepcopy(model)


SCENARIO = Scenario(
    key="pruning",
    title="torch.nn.utils.prune",
    summary=N_(
        "Pruning keeps weight_orig and weight_mask and stores weight = weight_orig * weight_mask on the "
        "module as a plain, non-leaf tensor, from the moment it is applied."
    ),
    setup=setup,
    target="model",
    culprit=".weight",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: copy.deepcopy"), deepcopy_model, N_("it raises")),
        Fix("prune_remove", N_("prune.remove, then deepcopy"), prune_remove_then_deepcopy,
            N_("mutates the original: pruning becomes permanent (the mask is gone, the zeros stay)"),
            mutates_original=True),
        Fix("safe_deepcopy", "graphleaf_edu.safe_deepcopy", safe_deepcopy_model, SAFE_DEEPCOPY_COST),
    ),
    source="wild",
)
