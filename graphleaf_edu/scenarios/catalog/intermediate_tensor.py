"""An intermediate tensor after ``backward()``: ``y = x * 2`` has a ``grad_fn``, so deepcopy refuses it."""
import copy

import torch

from graphleaf_edu import safe_deepcopy
from graphleaf_edu.i18n import N_
from graphleaf_edu.scenarios.catalog.shared import DEEPCOPY_ERROR, SAFE_DEEPCOPY_COST
from graphleaf_edu.scenarios.engine import NONE, Fix, Scenario


def setup():
    torch.manual_seed(0)
    x = torch.randn(2, 4, requires_grad=True)
    y = x * 2
    y.sum().backward()
    return {"x": x, "y": y}


def deepcopy_y(y):
    return copy.deepcopy(y)


def detach_clone_y(y):
    return y.detach().clone()


def detach_y(y):
    return y.detach()


def safe_deepcopy_y(y):
    return safe_deepcopy(y)


SCENARIO = Scenario(
    key="intermediate_tensor",
    title=N_("An intermediate tensor after backward()"),
    summary=N_(
        "y = x * 2 is made by an operation, so it is not a leaf: it has a grad_fn. "
        "Tensor.__deepcopy__ accepts leaves only, even after backward() has run."
    ),
    setup=setup,
    target="y",
    culprit="",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: copy.deepcopy"), deepcopy_y, N_("it raises")),
        Fix("detach_clone", "detach().clone()", detach_clone_y,
            N_("new memory; the copy is a leaf outside the graph; y keeps its graph")),
        Fix("detach", "detach()", detach_y,
            N_("no copy at all: shares y's memory (writing to one changes the other); outside the graph")),
        Fix("safe_deepcopy", "graphleaf_edu.safe_deepcopy", safe_deepcopy_y, SAFE_DEEPCOPY_COST),
    ),
    source="seed",
)
