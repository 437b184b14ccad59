"""Every way this suite's scenarios break ``copy.deepcopy`` (or a queue), and their fixes.

``engine`` runs a scenario and its fixes; ``source`` shows their code; ``catalog`` holds each
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

__all__ = ["NONE", "SCENARIOS", "ExpectedError", "Fix", "Outcome", "Scenario", "require_scenario"]
