"""Every way this suite's scenarios break ``copy.deepcopy`` (or a queue), and their fixes.

``engine`` runs a scenario and its fixes; ``measure`` measures what a fix did; ``source`` shows their code; ``catalog`` holds each
scenario as ordinary Python (one module each), so what a widget shows is the code that runs.

    >>> outcome = SCENARIOS["model_cache"].run("detach_at_source")
    >>> outcome.ok, outcome.error_line
    (True, None)
"""
from graphleaf_edu.scenarios.catalog import SCENARIOS
from graphleaf_edu.scenarios.engine import (
    NONE,
    ExpectedError,
    Fix,
    Outcome,
    Scenario,
    require_scenario,
)
from graphleaf_edu.scenarios.measure import (
    MOVED_OUT,
    FixMeasurement,
    measure_fix,
    tensors_in,
)

__all__ = [
    "MOVED_OUT", "NONE", "SCENARIOS", "ExpectedError", "Fix", "FixMeasurement", "Outcome", "Scenario", "measure_fix",
    "require_scenario", "tensors_in",
]
