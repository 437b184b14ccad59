"""A model that caches an activation in ``forward()``: the cache is a non-leaf attribute."""
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


class Cached(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.linear = nn.Linear(d_in, d_out)
        self.cache = None

    def forward(self, x):
        out = self.linear(x)
        self.cache = out
        return out


class CachedDetached(Cached):
    def forward(self, x):
        out = self.linear(x)
        self.cache = out.detach()
        return out


class CachedWithDeepcopy(Cached):
    def __deepcopy__(self, memo):  # copy.deepcopy(model) calls this instead of copying each attribute
        twin = type(self).__new__(type(self))  # an empty object of the class: __init__ is not run
        memo[id(self)] = twin  # deepcopy's record of what it copied: a reference back to model gets twin
        # every attribute deep-copied, but the cache replaced by None; __setstate__ puts them on twin
        twin.__setstate__(copy.deepcopy({**self.__dict__, "cache": None}, memo))
        return twin


class CachedWithGetstate(Cached):
    def __getstate__(self):
        return {**super().__getstate__(), "cache": None}


def setup(model_class=Cached):
    torch.manual_seed(0)
    model = model_class(4, 3)
    output = model(torch.randn(2, 4))
    return {"model": model, "output": output}


def setup_detached():
    return setup(CachedDetached)


def setup_with_deepcopy():
    return setup(CachedWithDeepcopy)


def setup_with_getstate():
    return setup(CachedWithGetstate)


def load_state_dict_into_a_new_model(model):
    copied = Cached(4, 3)
    copied.load_state_dict(model.state_dict())
    return copied


def clear_cache_then_deepcopy(model):
    model.cache = None
    return copy.deepcopy(model)


SCENARIO = Scenario(
    key="model_cache",
    title=N_("A model that caches an activation in forward()"),
    summary=N_(
        "forward() stores its output on the module. The parameters are leaves, but self.cache is not, "
        "and copy.deepcopy(model) copies every attribute."
    ),
    setup=setup,
    target="model",
    culprit=".cache",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: copy.deepcopy"), deepcopy_model, N_("it raises")),
        Fix("detach_at_source", N_("store out.detach() in forward"), deepcopy_model,
            N_("a one-word change where the cache is made; the cache no longer carries a graph"),
            setup=setup_detached),
        Fix("custom_deepcopy", N_("a custom __deepcopy__ that skips the cache"), deepcopy_model,
            N_("more code in the class; the copy starts with an empty cache; the original is untouched"),
            setup=setup_with_deepcopy),
        Fix("getstate", N_("a __getstate__ that drops the cache"), deepcopy_model,
            N_("two lines in the class; the copy starts with an empty cache; the original is untouched"),
            setup=setup_with_getstate),
        Fix("state_dict", N_("load the state_dict into a fresh instance"), load_state_dict_into_a_new_model,
            N_("needs the constructor's arguments (4, 3); the new model gets only what state_dict() holds, so no "
               "cache")),
        Fix("clear_cache", N_("set model.cache = None, then deepcopy"), clear_cache_then_deepcopy,
            N_("mutates the original: its cache is gone"), mutates_original=True),
        Fix("safe_deepcopy", "graphleaf_edu.safe_deepcopy", safe_deepcopy_model, SAFE_DEEPCOPY_COST),
    ),
    source="seed",
)
