"""A real DataLoader, with real worker processes, over a dataset whose rows may be in the graph.

``run_loader`` reports what really happens for one configuration (start method, workers,
deep copy in ``__getitem__``, detach at construction, batch size) and can never hang: it always
passes ``timeout=`` to the DataLoader and shuts its workers down before returning.

What workers print never reaches the caller's stderr (a notebook cell): each worker's
``worker_init_fn`` points its stderr, Python and C level, at a file of its own, and the outcome
keeps that text in ``worker_stderr``. This matters for ``batch_size=None``: a worker's queue
feeder thread prints "Cowardly refusing ..." there and the main process only sees a timeout.
Errors raised before a worker runs its ``worker_init_fn`` (a dataset class a spawned worker
cannot import) are printed by the worker itself; the datasets here are importable, so none are.

The dataset classes live here, not in a notebook, because spawn and forkserver workers unpickle
the dataset and so must be able to import its class.
"""
from __future__ import annotations

import copy
import functools
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from graphleaf_edu.errors import cause_line, error_line, error_lines_in, gloss
from graphleaf_edu.i18n import say
from graphleaf_edu.tables import html_table, text_table

ROWS, FEATURES = 8, 4


class TensorRows(Dataset):
    """The dataset of the DataLoader lessons: item ``i`` is row ``i`` of ``data``, kept as it was given.

    ``data`` may be part of an autograd graph: the DataLoader workers deep dive loads such a dataset
    with each start method. ``DetachedTensorRows`` detaches ``data`` once, when the dataset is built.

    Args:
        data: the rows, one per item.
        deepcopy_in_getitem: deep-copy each row before returning it (as some datasets do).

    Example:
        >>> rows = gl.TensorRows(torch.arange(6.0).reshape(3, 2))
        >>> len(rows), rows[1]
        (3, tensor([2., 3.]))
    """

    def __init__(self, data: torch.Tensor, deepcopy_in_getitem: bool = False):
        self.data = data
        self.deepcopy_in_getitem = deepcopy_in_getitem

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> torch.Tensor:
        row = self.data[index]
        return copy.deepcopy(row) if self.deepcopy_in_getitem else row


class DetachedTensorRows(TensorRows):
    """The fix for ``TensorRows``: the data leaves the graph once, when the dataset is built.

    Stores ``data.detach()``: rows without ``grad_fn`` that every worker can copy and receive (for
    CUDA data, ``spawn`` or ``forkserver`` workers only: CUDA cannot re-initialise in a forked
    subprocess; expected, not run here), on ``data``'s own memory (``data`` keeps its graph). For CPU
    data, a ``spawn`` or ``forkserver`` DataLoader moves that memory into shared memory when it sends
    the dataset to a worker, ``data``'s too (the same storage; a view's whole base). Pass
    ``data.detach().clone()`` if ``data`` or the rows are later changed in place (the change shows in
    both), or to keep a view without its base's memory.

    Args:
        data: the rows, one per item; may be part of an autograd graph.
        deepcopy_in_getitem: deep-copy each row before returning it (no error now; a row is a view, so
            its copy holds the whole storage of the rows).

    Example:
        >>> x = torch.ones(3, 2, requires_grad=True)
        >>> rows = gl.DetachedTensorRows(x * 2)
        >>> rows[0], rows.data.is_leaf
        (tensor([2., 2.]), True)
    """

    def __init__(self, data: torch.Tensor, deepcopy_in_getitem: bool = False):
        super().__init__(data.detach(), deepcopy_in_getitem)


def make_dataset(*, deepcopy_in_getitem: bool, detach_at_construction: bool,
                 data: torch.Tensor | None = None) -> TensorRows:
    """The rows of ``data`` in a ``TensorRows`` (a ``DetachedTensorRows`` when detached at construction);
    without ``data``, ``ROWS`` x ``FEATURES`` rows computed from a leaf (``x * 2``), so non-leaf unless detached."""
    if data is None:
        generator = torch.Generator().manual_seed(0)
        data = torch.randn(ROWS, FEATURES, generator=generator, requires_grad=True) * 2
    require_rows(data)
    dataset_class = DetachedTensorRows if detach_at_construction else TensorRows
    return dataset_class(data, deepcopy_in_getitem=deepcopy_in_getitem)


def require_rows(data: object) -> None:
    """Raise a ``TypeError`` unless ``data`` is a tensor of rows (at least one dimension) or ``None``."""
    if data is None:
        return
    if not isinstance(data, torch.Tensor):
        raise TypeError(say("data must be a tensor with one row per item, not {type_name}",
                            type_name=type(data).__name__))
    if data.dim() == 0:
        raise TypeError(say("data must have one row per item (at least one dimension), not shape {shape}",
                            shape=list(data.shape)))


@dataclass(frozen=True)
class LoaderOutcome:
    """What one ``run_loader`` run did; ``row()`` and ``summary()`` give its deterministic part.

    Attributes:
        ok: every batch arrived.
        error_type: the exception's class name when the run failed, else ``None``.
        error_line: ``"Type: first line"`` of the error the DataLoader raised.
        cause_line: the line naming the worker's own error, where there is one: quoted in the text of a
            "Caught ... in DataLoader worker" message, or, after a timeout, the first error line of what the
            workers printed (``worker_stderr``); otherwise ``error_line``.
        error_cause: ``"Type: first line"`` of the raised error's ``__cause__``, ``None`` when it has none
            (a worker's error reaches this process only as text, so it never is one).
        batches: how many batches arrived before the end or the error.
        batch_shape: the first batch's shape; batch_requires_grad and batch_is_leaf its flags.
        elapsed_s: wall time of the run; worker_stderr what the workers printed.

    Example:
        >>> outcome = gl.run_loader(start_method="fork", num_workers=0, deepcopy_in_getitem=False,
        ...                         detach_at_construction=True)
        >>> outcome.ok, outcome.batches, outcome.batch_shape
        (True, 2, (4, 4))
        >>> outcome.summary()
        'ok: 2 batches of shape [4, 4], requires_grad=False, is_leaf=True'
    """

    start_method: str
    num_workers: int
    deepcopy_in_getitem: bool
    detach_at_construction: bool
    batch_size: int | None
    ok: bool
    error_type: str | None
    error_line: str | None
    cause_line: str | None
    batches: int
    batch_shape: tuple[int, ...] | None
    batch_requires_grad: bool | None
    batch_is_leaf: bool | None
    elapsed_s: float
    worker_stderr: str
    error_cause: str | None = None

    def row(self) -> dict[str, object]:
        """The deterministic columns (no timing, no worker text), for tables and stored outputs."""
        return {
            say("start method"): self.start_method if self.num_workers else say("(main process)"),
            say("workers"): self.num_workers,
            say("deepcopy in __getitem__"): self.deepcopy_in_getitem,
            say("detach at construction"): self.detach_at_construction,
            "batch_size": self.batch_size,
            say("result"): self.summary(),
        }

    def summary(self) -> str:
        """The result in one line: the batches made, or the error (and its cause, or after a timeout what the
        workers printed, said to be only printed) with a gloss."""
        if self.ok:
            return say("ok: {batches} batches of shape {shape}, requires_grad={requires_grad}, is_leaf={is_leaf}",
                       batches=self.batches, shape=list(self.batch_shape or ()),
                       requires_grad=self.batch_requires_grad, is_leaf=self.batch_is_leaf)
        error = str(self.error_line)
        if self.cause_printed:
            error = say("{error}; printed by the worker, not raised here: {printed}", error=error,
                        printed=self.cause_line)
        elif self.cause_line and self.cause_line != self.error_line:
            error = f"{error} <- {self.cause_line}"
        return f"{error} {gloss(error)}".rstrip()

    @property
    def cause_printed(self) -> bool:
        """The run timed out and ``cause_line`` is what a worker printed (``worker_stderr``): no error of the
        worker's was raised in this process."""
        return _timed_out(self.error_line) and bool(self.cause_line) and self.cause_line != self.error_line


def run_loader(
    *,
    start_method: str,
    num_workers: int,
    deepcopy_in_getitem: bool,
    detach_at_construction: bool,
    batch_size: int | None = 4,
    timeout: float = 10.0,
    data: torch.Tensor | None = None,
) -> LoaderOutcome:
    """Iterate a real DataLoader over non-leaf rows (or their detached fix) and report what happened.

    Never hangs: workers run with ``timeout``, and their output is collected, not printed.

    Args:
        start_method: ``"fork"``, ``"spawn"`` or ``"forkserver"``; ignored when ``num_workers`` is 0.
        num_workers: worker processes; 0 loads in this process.
        deepcopy_in_getitem: the dataset deep-copies each row in ``__getitem__``.
        detach_at_construction: use ``DetachedTensorRows`` (the fix) instead of ``TensorRows``.
        batch_size: rows per batch; ``None`` hands out single rows, uncollated.
        timeout: seconds to wait for each batch; spawn and forkserver workers import torch first,
            so keep it above a few seconds for them.
        data: the rows to load, one per item, on the CPU (a lesson's own features); by default 8 rows of
            4 computed from a leaf (``x * 2``), so non-leaf.

    Returns:
        A ``LoaderOutcome``; a failed run is an outcome too (``ok=False``), not an exception.

    Raises:
        ValueError: an unknown start method, ``num_workers < 0``, ``batch_size < 1`` or ``timeout <= 0``.
        TypeError: ``data`` is not a tensor with at least one dimension.

    Example:
        >>> outcome = gl.run_loader(start_method="fork", num_workers=1, deepcopy_in_getitem=True,
        ...                         detach_at_construction=False)
        >>> outcome.ok, outcome.error_line
        (False, 'RuntimeError: Caught RuntimeError in DataLoader worker process 0.')
        >>> outcome.cause_line
        'RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy ...'
    """
    _check_configuration(start_method, num_workers, batch_size, timeout)
    dataset = make_dataset(deepcopy_in_getitem=deepcopy_in_getitem, detach_at_construction=detach_at_construction,
                           data=data)
    with tempfile.TemporaryDirectory(prefix="graphleaf-workers-") as folder:
        loader = DataLoader(dataset, batch_size=batch_size, **worker_options(start_method, num_workers, timeout, folder))
        start = time.perf_counter()
        batches, error = drain(loader, describe=_error_lines_and_cause)
        elapsed = time.perf_counter() - start
        worker_stderr = "".join(path.read_text() for path in sorted(Path(folder).glob("worker-*.txt")))
    error_type, error_first_line, cause, raised_cause = error or (None, None, None, "")
    if _timed_out(error_first_line):
        cause = next(iter(error_lines_in(worker_stderr)), cause)
    first = batches[0] if batches else None
    return LoaderOutcome(
        start_method=start_method,
        num_workers=num_workers,
        deepcopy_in_getitem=deepcopy_in_getitem,
        detach_at_construction=detach_at_construction,
        batch_size=batch_size,
        ok=error is None,
        error_type=error_type,
        error_line=error_first_line,
        cause_line=cause,
        batches=len(batches),
        batch_shape=tuple(first.shape) if first is not None else None,
        batch_requires_grad=first.requires_grad if first is not None else None,
        batch_is_leaf=first.is_leaf if first is not None else None,
        elapsed_s=elapsed,
        worker_stderr=worker_stderr,
        error_cause=raised_cause or None,
    )


def _timed_out(error_line: str | None) -> bool:
    """The DataLoader's own timeout error ("DataLoader timed out after N seconds")."""
    return bool(error_line) and "DataLoader timed out" in str(error_line)


def outcome_table(outcomes: list[LoaderOutcome], *, html: bool = False, deepcopy_column: bool = True) -> str:
    """A table with one row per DataLoader run: its configuration and its result (deterministic).

    Args:
        outcomes: what ``run_loader`` returned, one per row.
        html: an HTML table, whose long error messages wrap inside their cells, instead of plain text.
        deepcopy_column: show the "deepcopy in __getitem__" column (a lab that does not offer it hides it).

    Returns:
        The table as text (``""`` for no outcomes).

    Raises:
        Nothing of its own.

    Example:
        >>> outcome = gl.run_loader(start_method="fork", num_workers=0, deepcopy_in_getitem=True,
        ...                         detach_at_construction=True)
        >>> print(gl.outcome_table([outcome]))
        start method   | workers | deepcopy in __getitem__ | detach at construction | batch_size | result
        ---------------+---------+-------------------------+------------------------+------------+-----------...
        (main process) | 0       | True                    | True                   | 4          | ok: 2 batches of shape [4, 4], requires_grad=False, is_leaf=True
    """
    rows = [outcome.row() for outcome in outcomes]
    if not rows:
        return ""
    headers = [h for h in rows[0] if deepcopy_column or h != say("deepcopy in __getitem__")]
    body = [[row[h] for h in headers] for row in rows]
    return html_table(headers, body) if html else text_table(headers, body)


def _check_configuration(start_method: str, num_workers: int, batch_size: int | None, timeout: float) -> None:
    methods = multiprocessing.get_all_start_methods()
    if start_method not in methods:
        raise ValueError(say("start_method must be one of {methods} on this system, not {start_method!r}",
                             methods=methods, start_method=start_method))
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(say("num_workers must be an int >= 0, not {num_workers!r}", num_workers=num_workers))
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(say("batch_size must be a positive int or None, not {batch_size!r}", batch_size=batch_size))
    if not timeout > 0:
        raise ValueError(say("timeout must be > 0 seconds (it is what keeps a worker failure from hanging), not "
                             "{timeout!r}", timeout=timeout))


def worker_options(start_method: str, num_workers: int, timeout: float, folder: str) -> dict:
    """DataLoader keyword arguments for real workers that time out and write their stderr to ``folder``."""
    if num_workers == 0:
        return {}
    return {
        "num_workers": num_workers,
        "multiprocessing_context": start_method,
        "timeout": timeout,
        "worker_init_fn": functools.partial(_send_stderr_to_file, folder),
    }


def _send_stderr_to_file(folder: str, worker_id: int) -> None:
    """worker_init_fn: this worker's stderr, Python and C level, goes to ``folder/worker-<id>.txt``."""
    stream = open(os.path.join(folder, f"worker-{worker_id}.txt"), "w", buffering=1)  # noqa: SIM115 (lives as long as the worker)
    os.dup2(stream.fileno(), 2)
    sys.stderr = stream


def drain(loader: DataLoader, each: Callable[[Any], Any] = lambda batch: batch,
          describe: Callable[[RuntimeError], tuple[str, ...]] | None = None) -> tuple[list, tuple[str, ...] | None]:
    """``[each(batch) for batch in loader]``, or the error as ``describe(error)`` (``error_lines`` unless
    given); the workers are gone on return.

    The error is returned as strings: the exception itself would keep the iterator, and so its
    workers, alive. ``each`` runs while the workers live (a worker that sent CUDA tensors must).
    """
    iterator = None
    try:
        iterator = iter(loader)
        return [each(batch) for batch in iterator], None
    except RuntimeError as error:
        return [], (describe or error_lines)(error)
    finally:
        # Workers must be gone before we return, not whenever the iterator is collected.
        if hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()


def error_lines(error: BaseException) -> tuple[str, str, str]:
    """(type name, "Type: first line", the line naming the root cause) for an error, worker errors included."""
    return type(error).__name__, error_line(error), cause_line(error)


def _error_lines_and_cause(error: BaseException) -> tuple[str, str, str, str]:
    """``error_lines(error)`` and the first line of its ``__cause__`` (``""`` when it has none)."""
    raised_cause = error_line(error.__cause__) if error.__cause__ is not None else ""
    return (*error_lines(error), raised_cause)
