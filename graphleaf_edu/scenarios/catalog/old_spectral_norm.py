"""The old ``torch.nn.utils.spectral_norm``: every forward stores a non-leaf ``weight`` on the module."""
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
    model = nn.utils.spectral_norm(nn.Linear(4, 3))
    model(torch.randn(2, 4))
    return {"model": model}


def load_state_dict_into_a_new_model(model):
    copied = nn.utils.spectral_norm(nn.Linear(4, 3))
    copied.load_state_dict(model.state_dict())
    return copied


def remove_spectral_norm_then_deepcopy(model):
    nn.utils.remove_spectral_norm(model)
    return copy.deepcopy(model)


SCENARIO = Scenario(
    key="old_spectral_norm",
    title=N_("The old torch.nn.utils.spectral_norm, after a forward"),
    summary=N_(
        "spectral_norm recomputes weight = weight_orig / sigma in every forward (train or eval) and stores "
        "it on the module: non-leaf from the first forward on. "
        "torch.nn.utils.parametrizations.spectral_norm deep-copies fine, but runs its own power iteration, "
        "so its outputs differ: it is a replacement, not a copy."
    ),
    setup=setup,
    target="model",
    culprit=".weight",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: copy.deepcopy"), deepcopy_model, N_("it raises")),
        Fix("state_dict", N_("load the state_dict into a fresh spectral-normed module"), load_state_dict_into_a_new_model,
            N_("needs to know how the module was built; weight_orig, u and v are copied")),
        Fix("remove_spectral_norm", N_("nn.utils.remove_spectral_norm, then deepcopy"),
            remove_spectral_norm_then_deepcopy,
            N_("mutates the original: it loses spectral normalisation (weight is frozen at its last value)"),
            mutates_original=True),
        Fix("safe_deepcopy", "graphleaf_edu.safe_deepcopy", safe_deepcopy_model, SAFE_DEEPCOPY_COST),
    ),
    source="wild",
)
