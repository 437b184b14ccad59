"""A forward hook that keeps activations on the module, and one that keeps them outside."""
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


def keep_output(module, inputs, output):
    module.activation = output


def keep_detached_output(module, inputs, output):
    module.activation = output.detach()


def setup(hook=keep_output):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    model[0].register_forward_hook(hook)
    model(torch.randn(2, 4))
    return {"model": model}


def setup_detached():
    return setup(keep_detached_output)


def setup_outside_dict():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    activations = {}

    def keep_output_outside(module, inputs, output):
        activations["linear"] = output

    model[0].register_forward_hook(keep_output_outside)
    model(torch.randn(2, 4))
    return {"model": model, "activations": activations}


def load_state_dict_into_a_new_model(model):
    copied = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    copied.load_state_dict(model.state_dict())
    return copied


SCENARIO = Scenario(
    key="forward_hook",
    title=N_("A forward hook that keeps activations on the module"),
    summary=N_(
        "A hook that stores the output on the module (for a feature loss, logging, a target network) "
        "leaves a non-leaf tensor inside the model. A hook that stores it outside the module does not."
    ),
    setup=setup,
    target="model",
    culprit="[0].activation",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: copy.deepcopy"), deepcopy_model, N_("it raises")),
        Fix("detach_at_source", N_("store output.detach() in the hook"), deepcopy_model,
            N_("no gradient can flow through the stored activation"), setup=setup_detached),
        Fix("outside_dict", N_("keep activations in a dict outside the module"), deepcopy_model,
            N_("gradient still flows through the stored activation; the copy's hook writes into the same dict"),
            setup=setup_outside_dict),
        Fix("state_dict", N_("load the state_dict into a fresh model"), load_state_dict_into_a_new_model,
            N_("needs the architecture; hooks and other attributes are not copied")),
        Fix("safe_deepcopy", "graphleaf_edu.safe_deepcopy", safe_deepcopy_model, SAFE_DEEPCOPY_COST),
    ),
    source="wild",
)
