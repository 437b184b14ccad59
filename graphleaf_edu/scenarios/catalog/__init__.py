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
"""Every failure the lessons show, by key: each a ``Scenario`` with its code, its error and its fixes.

The four of the seed article first (an intermediate tensor, a model's output, a dataset's
``__getitem__``, a model's cache), then causes met in real projects (old ``weight_norm`` and
``spectral_norm``, pruning, a forward hook, an EMA copy, a non-leaf ``.grad``, a multiprocessing queue).

Example:
    >>> list(gl.SCENARIOS)[:4]
    ['intermediate_tensor', 'model_output', 'dataset_getitem', 'model_cache']
    >>> gl.SCENARIOS["model_cache"].culprit
    '.cache'
"""
