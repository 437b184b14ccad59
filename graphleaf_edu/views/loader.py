"""Real DataLoader runs, one configuration at a time, kept as a history."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from graphleaf_edu.dataloading import LoaderOutcome, outcome_table, run_loader
from graphleaf_edu.i18n import say
from graphleaf_edu.views.common import keeping_random_state

__all__ = ["LOADER_TIMEOUT_S", "LoaderView", "loader_view"]

LOADER_TIMEOUT_S = 10.0


@dataclass(frozen=True, eq=False)
class LoaderView:
    """The latest DataLoader run and every run before it in this session."""

    outcome: LoaderOutcome
    history: tuple[LoaderOutcome, ...]

    def table(self, *, deepcopy_column: bool = True) -> str:
        return outcome_table(list(self.history), deepcopy_column=deepcopy_column)

    def html_table(self, *, deepcopy_column: bool = True) -> str:
        return outcome_table(list(self.history), html=True, deepcopy_column=deepcopy_column)

    def text(self) -> str:
        return say("latest: {summary}", summary=self.outcome.summary()) + f"\n\n{self.table()}"


def loader_view(
    history: tuple[LoaderOutcome, ...] = (),
    *,
    start_method: str,
    num_workers: int,
    deepcopy_in_getitem: bool,
    detach_at_construction: bool,
    batch_size: int | None = 4,
    timeout: float = LOADER_TIMEOUT_S,
    data: torch.Tensor | None = None,
) -> LoaderView:
    """Run one real DataLoader configuration (``run_loader``, so it cannot hang) after ``history``, over
    the rows of ``data`` (``run_loader``'s own rows when it is ``None``)."""
    with keeping_random_state():  # the DataLoader draws its workers' base seed from torch's generator
        outcome = run_loader(start_method=start_method, num_workers=num_workers,
                             deepcopy_in_getitem=deepcopy_in_getitem,
                             detach_at_construction=detach_at_construction,
                             batch_size=batch_size, timeout=timeout, data=data)
    return LoaderView(outcome, (*tuple(history), outcome))
