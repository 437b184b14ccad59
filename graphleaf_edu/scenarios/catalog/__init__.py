"""The scenarios, one module each: the code as ordinary functions and classes, then its ``SCENARIO``."""
from graphleaf_edu.scenarios.catalog import (
    dataset_getitem,
    ema_copy,
    forward_hook,
    intermediate_tensor,
    model_cache,
    model_output,
    mp_queue,
    nonleaf_grad,
    old_spectral_norm,
    old_weight_norm,
    pruning,
)
from graphleaf_edu.scenarios.engine import Scenario

# The four of the seed article first, in reading order, then those met in the wild.
SCENARIOS: dict[str, Scenario] = {
    module.SCENARIO.key: module.SCENARIO
    for module in (
        intermediate_tensor, model_output, dataset_getitem, model_cache,
        old_weight_norm, old_spectral_norm, pruning, forward_hook, ema_copy, nonleaf_grad, mp_queue,
    )
}
