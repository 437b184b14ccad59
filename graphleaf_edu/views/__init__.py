"""Pure views: data in, text / HTML / a picture out, for the explorers and for checked notebook cells.

Each explorer in ``graphleaf_edu.widgets`` only calls one of these functions and shows what it
returns, so a notebook cell can print the same result and tests need no kernel or browser.
Views are cached where their runs are seeded; ``clear_caches()`` empties every cache.
"""
from graphleaf_edu.views.common import (
    PICTURE_CACHE_SIZE,
    Task,
    clear_caches,
    picture,
    tensor_text,
)
from graphleaf_edu.views.fixes import (
    FixComparison,
    Measure,
    every_fix_table,
    fix_comparison_view,
    fix_measurements,
    fix_summary,
    fix_totals_table,
    model_scenarios,
)
from graphleaf_edu.views.loader import LOADER_TIMEOUT_S, LoaderView, loader_view
from graphleaf_edu.views.playground import (
    PLAYGROUND_EXAMPLES,
    PlaygroundView,
    playground_namespace,
    playground_view,
)
from graphleaf_edu.views.scenario import ScenarioView, scenario_view
from graphleaf_edu.views.tasks import TASKS, task_named
from graphleaf_edu.views.tensors import (
    copy_table,
    deepcopy_result,
    gradient_reaches,
    leaf_table,
)

__all__ = [
    "LOADER_TIMEOUT_S",
    "PICTURE_CACHE_SIZE",
    "PLAYGROUND_EXAMPLES",
    "TASKS",
    "FixComparison",
    "LoaderView",
    "Measure",
    "PlaygroundView",
    "ScenarioView",
    "Task",
    "clear_caches",
    "copy_table",
    "deepcopy_result",
    "every_fix_table",
    "fix_comparison_view",
    "fix_measurements",
    "fix_summary",
    "fix_totals_table",
    "gradient_reaches",
    "leaf_table",
    "loader_view",
    "model_scenarios",
    "picture",
    "playground_namespace",
    "playground_view",
    "scenario_view",
    "task_named",
    "tensor_text",
]
