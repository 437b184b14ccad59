"""A leaf whose ``.grad`` is non-leaf: ``backward(create_graph=True)``, and deepcopy copies ``.grad`` too."""
import copy

import torch

from graphleaf_edu import safe_deepcopy
from graphleaf_edu.i18n import N_
from graphleaf_edu.scenarios.catalog.shared import DEEPCOPY_ERROR, SAFE_DEEPCOPY_COST
from graphleaf_edu.scenarios.engine import NONE, Fix, Scenario


def setup():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    (w ** 3).sum().backward(create_graph=True)
    return {"w": w}


def setup_autograd_grad():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    (grad,) = torch.autograd.grad((w ** 3).sum(), w, create_graph=True)
    return {"w": w, "grad": grad}


def deepcopy_w(w):
    return copy.deepcopy(w)


def clear_grad_then_deepcopy(w):
    w.grad = None
    return copy.deepcopy(w)


def fresh_leaf_like_w(w):
    return w.detach().clone().requires_grad_()


def safe_deepcopy_w(w):
    return safe_deepcopy(w)


SCENARIO = Scenario(
    key="nonleaf_grad",
    title=N_("A leaf whose .grad is non-leaf (backward with create_graph=True)"),
    summary=N_(
        "w is a leaf, but Tensor.__deepcopy__ also deep-copies w.grad, and create_graph=True made that "
        "gradient part of a graph (for second derivatives). nn.Parameter copies drop .grad, so only "
        "plain tensors fail this way."
    ),
    setup=setup,
    target="w",
    culprit=".grad",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: copy.deepcopy"), deepcopy_w, N_("it raises")),
        Fix("autograd_grad", N_("torch.autograd.grad instead of backward"), deepcopy_w,
            N_("the gradient is returned, not stored in w.grad (and no reference cycle through w.grad)"),
            setup=setup_autograd_grad),
        Fix("clear_grad", N_("w.grad = None, then deepcopy"), clear_grad_then_deepcopy,
            N_("mutates the original: its gradient is dropped (what PyTorch's warning advises after use)"),
            mutates_original=True),
        Fix("detach_clone", "detach().clone().requires_grad_()", fresh_leaf_like_w,
            N_("a fresh leaf with the same values and no .grad")),
        Fix("safe_deepcopy", "graphleaf_edu.safe_deepcopy", safe_deepcopy_w, SAFE_DEEPCOPY_COST),
    ),
    source="wild",
)
