"""A model's output: computed from the parameters, so a non-leaf tensor like any other result."""
import copy

import torch
from torch import nn

from graphleaf_edu import safe_deepcopy
from graphleaf_edu.i18n import N_
from graphleaf_edu.scenarios.catalog.shared import DEEPCOPY_ERROR, SAFE_DEEPCOPY_COST
from graphleaf_edu.scenarios.engine import NONE, Fix, Scenario


def setup():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    inputs = torch.randn(2, 4)  # plain data: only the parameters require gradients
    output = model(inputs)
    return {"model": model, "inputs": inputs, "output": output}


def setup_under_no_grad():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    inputs = torch.randn(2, 4)
    with torch.no_grad():
        output = model(inputs)
    return {"model": model, "inputs": inputs, "output": output}


def deepcopy_output(output):
    return copy.deepcopy(output)


def detach_clone_output(output):
    return output.detach().clone()


def detach_output(output):
    return output.detach()


def safe_deepcopy_output(output):
    return safe_deepcopy(output)


SCENARIO = Scenario(
    key="model_output",
    title=N_("A model's output"),
    summary=N_("A module's output is computed from its parameters, so it is a non-leaf tensor like any other result."),
    setup=setup,
    target="output",
    culprit="",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: copy.deepcopy"), deepcopy_output, N_("it raises")),
        Fix("detach_clone", "detach().clone()", detach_clone_output,
            N_("new memory; the copy is a leaf outside the graph; output keeps its graph")),
        Fix("detach", "detach()", detach_output,
            N_("no copy at all: shares output's memory (writing to one changes the other); outside the graph; "
               "output keeps its graph")),
        Fix("no_grad", N_("compute it under torch.no_grad()"), deepcopy_output,
            N_("no graph is recorded, so output cannot be backpropagated; cheap when no gradient is needed"),
            setup=setup_under_no_grad),
        Fix("safe_deepcopy", "graphleaf_edu.safe_deepcopy", safe_deepcopy_output, SAFE_DEEPCOPY_COST),
    ),
    source="seed",
)
