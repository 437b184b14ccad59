"""graphleaf_edu.errors: PyTorch's messages as torch really raises them, and the one way to quote an error."""
import copy
import multiprocessing
import warnings

import pytest
import torch
import torch.multiprocessing as torch_mp
from torch.utils.data import DataLoader

from graphleaf_edu.dataloading import TensorRows
from graphleaf_edu.errors import (
    COWARDLY,
    COWARDLY_MESSAGE,
    GRAPH_LEAVES,
    GRAPH_LEAVES_MESSAGE,
    WORKER_ERROR,
    cause_line,
    error_line,
    error_lines_in,
    first_line,
    warning_line,
)


def non_leaf() -> torch.Tensor:
    return torch.ones(2, requires_grad=True) * 2


def test_the_graph_leaves_message_is_what_deepcopy_raises():
    with pytest.raises(RuntimeError) as raised:
        copy.deepcopy(non_leaf())
    assert GRAPH_LEAVES in GRAPH_LEAVES_MESSAGE
    assert error_line(raised.value) == f"RuntimeError: {GRAPH_LEAVES_MESSAGE}"


def test_the_cowardly_message_is_what_a_torch_queue_raises():
    queue = torch_mp.SimpleQueue()
    with pytest.raises(RuntimeError) as raised:
        queue.put(non_leaf())
    assert COWARDLY in COWARDLY_MESSAGE
    assert error_line(raised.value) == f"RuntimeError: {COWARDLY_MESSAGE}"


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method")
def test_a_worker_error_names_its_cause_in_the_last_error_line():
    loader = DataLoader(TensorRows(non_leaf().expand(4, 2), deepcopy_in_getitem=True), batch_size=2,
                        num_workers=1, multiprocessing_context="fork", timeout=30)
    iterator = iter(loader)
    try:
        with pytest.raises(RuntimeError) as raised:
            next(iterator)
    finally:
        iterator._shutdown_workers()  # the worker must not outlive the test
    assert error_line(raised.value) == "RuntimeError: Caught RuntimeError in DataLoader worker process 0."
    assert WORKER_ERROR in str(raised.value)
    assert cause_line(raised.value) == f"RuntimeError: {GRAPH_LEAVES_MESSAGE}"


def test_cause_line_of_an_ordinary_error_is_its_error_line():
    error = ValueError("bad value\nValueError: not a worker's traceback")
    assert cause_line(error) == error_line(error) == "ValueError: bad value"


@pytest.mark.parametrize(("error", "line"), [
    (RuntimeError("one\ntwo"), "RuntimeError: one"),
    (KeyError("key"), "KeyError: 'key'"),
    (ValueError(""), "ValueError: "),
    (TypeError("\n  spaced out\nrest"), "TypeError: spaced out"),
])
def test_error_line_is_the_type_and_the_first_line(error, line):
    assert error_line(error) == line


def test_first_line_of_blank_text_is_empty():
    assert first_line("  \n ") == ""


def test_error_lines_in_a_traceback_in_order():
    text = ("Traceback (most recent call last):\n  File \"x.py\", line 1\n"
            "KeyError: 'a'\n\nDuring handling ...\nRuntimeError: Cowardly refusing\n  not this: Error: x\n")
    assert error_lines_in(text) == ["KeyError: 'a'", "RuntimeError: Cowardly refusing"]
    assert error_lines_in("no errors here") == []
    assert error_lines_in("Original Traceback:\ntorch.AcceleratorError: CUDA error: x\nSearch for it\n") == [
        "torch.AcceleratorError: CUDA error: x"]


def test_warning_line_is_the_category_and_the_first_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("careful\nmore detail", DeprecationWarning, stacklevel=1)
    assert [warning_line(w) for w in caught] == ["DeprecationWarning: careful"]
