"""Exercise 4: a Dataset that DataLoader workers started with ``spawn`` can load."""
from __future__ import annotations

import tempfile

import torch
from torch.utils.data import DataLoader

from graphleaf_edu.dataloading import drain, worker_options
from graphleaf_edu.errors import COWARDLY, error_line, gloss
from graphleaf_edu.exercises.feedback import (
    Wrong,
    call,
    exercise,
    require_class,
)
from graphleaf_edu.i18n import say

LOADER_LESSON = "03_dataloader_workers"
SPAWN_ROWS, SPAWN_BATCH = 8, 4
SPAWN_TIMEOUT_S = 60.0


def _spawn_batches(dataset) -> tuple[list[torch.Tensor], str | None]:
    """All batches of a real DataLoader with two spawn workers, or the error as a line; never hangs."""
    with tempfile.TemporaryDirectory(prefix="graphleaf-exercise-") as folder:
        options = worker_options("spawn", 2, SPAWN_TIMEOUT_S, folder)  # workers' stderr stays out of the notebook
        try:
            batches, error = drain(DataLoader(dataset, batch_size=SPAWN_BATCH, **options))
        except Exception as raised:  # noqa: BLE001 (the student's dataset may raise anything; it is feedback)
            return [], error_line(raised)
    if error is None:
        return batches, None
    _, first, cause = error
    if "exited unexpectedly" in first:  # the message names process ids: keep it deterministic
        return [], "RuntimeError: a DataLoader worker exited unexpectedly"
    return [], cause


def _spawn_data() -> torch.Tensor:
    generator = torch.Generator().manual_seed(4)
    x = torch.randn(SPAWN_ROWS, 3, generator=generator, requires_grad=True)
    return x * 2


@exercise("Exercise 4 · a Dataset for spawn workers")
def check_spawn_dataset(dataset_class: type) -> str:
    """Build ``dataset_class(data)`` from non-leaf ``data`` and load it with two spawn workers."""
    name = require_class(dataset_class)
    if dataset_class.__module__ == "__main__":
        raise Wrong(say("{name} is defined in the notebook itself, in the module __main__.", name=name),
                    say("A spawn worker is a fresh Python process: it imports the dataset's class by module and name, "
                        "and the notebook's __main__ does not exist there (the worker dies with \"AttributeError: "
                        "Can't get attribute ...\"). Keep the class in the module file that the %%writefile cell "
                        "writes, and import it from there ({lesson}).", lesson=LOADER_LESSON))
    data = _spawn_data()
    before = data.detach().clone()
    dataset = call(dataset_class, f"{name}(data)", data)
    if data.is_leaf or not torch.equal(data.detach(), before):
        raise Wrong(say("{name}(data) changed the tensor it was given.", name=name),
                    say("The caller's tensor may still be needed for backward(): an in-place change such as "
                        "detach_() cuts its graph too. Leave the argument alone; keep something else."))
    batches, error = _spawn_batches(dataset)
    if error:
        failed = say("the DataLoader with two spawn workers failed: {error}", error=error)
        raise Wrong(f"{failed} {gloss(error)}".rstrip(), _spawn_hint(error))
    if not all(isinstance(batch, torch.Tensor) for batch in batches):
        raise Wrong(say("each row should be a tensor, as in the dataset given: __getitem__ returns data[index]."))
    rows = torch.cat(batches) if batches else torch.empty(0)
    if rows.shape != before.shape or not torch.equal(rows, before):
        raise Wrong(say("the workers delivered rows that differ from the data the dataset was given."),
                    say("Detaching keeps the values; only the history goes."))
    return say("two spawn workers loaded all {rows} rows, equal to the data, and the caller's tensor kept its graph.",
               rows=SPAWN_ROWS)


def _spawn_hint(error: str) -> str:
    if COWARDLY in error:
        return say("spawn sends the whole dataset to each worker by pickling it, and PyTorch refuses to pickle a "
                   "tensor that has a grad_fn. Detaching a row in __getitem__ is too late: the dataset travels "
                   "before any row is read. Take the data out of the graph once, when the dataset is built "
                   "({lesson}).", lesson=LOADER_LESSON)
    if "exited unexpectedly" in error:
        return say("a worker died before it could report an error, typically because it could not import the "
                   "dataset's class: keep the class in a module file, not in the notebook.")
    if "timed out" in error:
        return say("no batch arrived within {seconds:.0f} s; run the DataLoader yourself with num_workers=0 to see "
                   "why.", seconds=SPAWN_TIMEOUT_S)
    return say("Run the same DataLoader with num_workers=0 in a cell to see the error in this process.")
