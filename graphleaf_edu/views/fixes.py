"""Every fix of one scenario, measured into the same columns."""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphleaf_edu.i18n import N_, say
from graphleaf_edu.scenarios import SCENARIOS, Scenario, measure_fix, require_scenario
from graphleaf_edu.tables import escape, html_table, text_table
from graphleaf_edu.views.common import cached, keeping_random_state, translated_cell

__all__ = [
    "FixComparison", "Measure", "every_fix_table", "fix_comparison_view", "fix_measurements", "fix_summary",
    "fix_totals_table", "model_scenarios",
]

Measure = Callable[[Scenario, str], Mapping[str, Any]]
_CACHE_SIZE = 32


def fix_summary(scenario: Scenario, fix: str) -> dict[str, Any]:
    """The fix comparison's default columns: the live outcome, and what the fix declares it costs."""
    declared = scenario.fix(fix)
    outcome = scenario.run(fix)
    return {N_("how"): declared.title, N_("works"): outcome.ok, N_("original untouched"): not declared.mutates_original,
            N_("result"): outcome.error_line or "ok", N_("cost"): declared.cost}


def fix_measurements(scenario: Scenario, fix: str) -> dict[str, Any]:
    """The measured columns: works, shares memory, original changed, keeps graph, rebuilds (``measure_fix``)."""
    return measure_fix(scenario, fix).columns()


@dataclass(frozen=True)
class FixComparison:
    """Every fix of one scenario, each measured into the same columns."""

    scenario: Scenario
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]  # one per fix: the fix key, then a value per column

    def column(self, name: str) -> list[Any]:
        index = self.columns.index(name) + 1
        return [row[index] for row in self.rows]

    def table(self) -> str:
        return text_table(*self._shown())

    def html(self) -> str:
        return f"<b>{escape(say(self.scenario.title))}</b>{html_table(*self._shown())}"

    def _shown(self) -> tuple[list[str], list[list[object]]]:
        """Headers and rows in the user's language (``columns`` and ``rows`` keep the English keys)."""
        headers = [say("fix"), *(say(name) for name in self.columns)]
        return headers, [[translated_cell(value) for value in row] for row in self.rows]


def fix_comparison_view(scenario: Scenario, measure: Measure = fix_summary) -> FixComparison:
    """``measure(scenario, fix)`` for every fix of ``scenario`` (cached per measure: runs are seeded)."""
    require_scenario(scenario)
    return _fix_comparison(scenario, measure)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _fix_comparison(scenario: Scenario, measure: Measure) -> FixComparison:
    with keeping_random_state():
        measured = {fix: dict(measure(scenario, fix)) for fix in scenario.fix_keys()}
    columns = tuple(next(iter(measured.values())))
    rows = tuple((fix, *(values[name] for name in columns)) for fix, values in measured.items())
    return FixComparison(scenario, columns, rows)


cached(_fix_comparison.cache_clear)


def model_scenarios() -> list[Scenario]:
    """The scenarios whose object is a model (what the fix comparison offers)."""
    return [scenario for scenario in SCENARIOS.values() if scenario.target == "model"]


def every_fix_table(measure: Measure = fix_measurements) -> str:
    """One table: every fix of every scenario, measured (each scenario named on its first row)."""
    comparisons = [fix_comparison_view(scenario, measure) for scenario in SCENARIOS.values()]
    rows = []
    for comparison in comparisons:
        for index, row in enumerate(comparison.rows):
            rows.append((comparison.scenario.key if index == 0 else "", *row))
    headers = [say("scenario"), say("fix"), *(say(name) for name in comparisons[0].columns)]
    return text_table(headers, [[translated_cell(value) for value in row] for row in rows])


def fix_totals_table() -> str:
    """Per fix, over every scenario that offers it: how often it works, changes the original, keeps
    the culprit's graph and rebuilds the model (counts of ``fix_measurements``)."""
    totals: dict[str, list[int]] = {}
    for scenario in SCENARIOS.values():
        for fix, works, _, changed, keeps_graph, rebuilds in fix_comparison_view(scenario, fix_measurements).rows:
            counts = totals.setdefault(fix, [0, 0, 0, 0, 0])
            for index, counted in enumerate([True, works, changed != "no", keeps_graph is True, rebuilds]):
                counts[index] += bool(counted)
    headers = [say(name) for name in (N_("fix"), N_("offered"), N_("works"), N_("changes original"),
                                      N_("keeps graph"), N_("rebuilds"))]
    return text_table(headers, [(fix, *counts) for fix, counts in totals.items()])
