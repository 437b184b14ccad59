"""A real DataLoader with real workers: each start method's real error, the fix, and never a hang."""
import multiprocessing
import pickle
from multiprocessing.reduction import ForkingPickler

import psutil
import pytest
import torch
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from graphleaf_edu.dataloading import (
    FEATURES,
    ROWS,
    DetachedTensorRows,
    TensorRows,
    _error_lines_and_cause,
    drain,
    make_dataset,
    outcome_table,
    run_loader,
)

GRAPH_LEAVES = "RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol"
COWARDLY = "RuntimeError: Cowardly refusing to serialize non-leaf tensor which requires_grad"
WORKER_0 = "RuntimeError: Caught RuntimeError in DataLoader worker process 0."
STACK_OUT = "RuntimeError: stack(): functions with out=... arguments don't support automatic differentiation"
# Started once by multiprocessing and kept for the life of the process; not DataLoader workers.
INFRASTRUCTURE = ("forkserver", "resource_tracker")


def workers_left():
    mine = psutil.Process().children(recursive=True)
    return multiprocessing.active_children() + [
        p for p in mine if not any(word in " ".join(p.cmdline()) for word in INFRASTRUCTURE)
    ]


def loader(**changes):
    config = {"start_method": "fork", "num_workers": 2, "deepcopy_in_getitem": False, "detach_at_construction": False}
    return run_loader(**(config | changes))


@pytest.fixture(autouse=True)
def no_worker_survives():
    yield
    assert workers_left() == []


def test_main_process_deepcopy_raises_the_plain_error():
    outcome = loader(num_workers=0, deepcopy_in_getitem=True)
    assert not outcome.ok and outcome.error_type == "RuntimeError"
    assert outcome.error_line.startswith(GRAPH_LEAVES) and outcome.cause_line == outcome.error_line


def test_main_process_without_deepcopy_silently_batches_the_graph():
    outcome = loader(num_workers=0)
    assert outcome.ok and outcome.batches == ROWS // 4
    assert outcome.batch_shape == (4, FEATURES)
    assert outcome.batch_requires_grad and outcome.batch_is_leaf is False


def test_fork_deepcopy_in_getitem_fails_in_the_worker():
    outcome = loader(deepcopy_in_getitem=True)
    assert outcome.error_line == WORKER_0
    assert outcome.cause_line.startswith(GRAPH_LEAVES)
    assert outcome.error_cause is None  # the worker's error is quoted in the message's text, not chained
    assert not outcome.cause_printed and f"{WORKER_0} <- {GRAPH_LEAVES}" in outcome.summary()


def test_error_cause_is_the_raised_errors_chained_cause():
    def failing_rows():
        try:
            raise ValueError("inner")
        except ValueError as inner:
            raise RuntimeError("outer") from inner
        yield

    batches, error = drain(failing_rows())
    assert batches == [] and error == ("RuntimeError", "RuntimeError: outer", "RuntimeError: outer")
    _, error = drain(failing_rows(), describe=_error_lines_and_cause)
    assert error[-1] == "ValueError: inner"


def test_fork_without_deepcopy_fails_in_collate_stack():
    outcome = loader()
    assert outcome.error_line == WORKER_0
    assert outcome.cause_line.startswith(STACK_OUT)


@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
@pytest.mark.parametrize("deepcopy_in_getitem", [False, True])
def test_spawn_and_forkserver_refuse_to_send_the_dataset(start_method, deepcopy_in_getitem):
    outcome = loader(start_method=start_method, deepcopy_in_getitem=deepcopy_in_getitem)
    assert outcome.error_line.startswith(COWARDLY) and outcome.batches == 0


@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
def test_detach_at_construction_works_with_every_start_method(start_method):
    outcome = loader(start_method=start_method, deepcopy_in_getitem=True, detach_at_construction=True, timeout=60.0)
    assert outcome.ok, outcome.summary()
    assert (outcome.batches, outcome.batch_shape) == (ROWS // 4, (4, FEATURES))
    assert outcome.batch_requires_grad is False and outcome.batch_is_leaf


def test_detach_at_construction_works_in_the_main_process_and_unbatched():
    for num_workers in (0, 2):
        outcome = loader(num_workers=num_workers, deepcopy_in_getitem=True, detach_at_construction=True, batch_size=None)
        assert outcome.ok and outcome.batches == ROWS and outcome.batch_shape == (FEATURES,)


def test_unbatched_nonleaf_rows_time_out_instead_of_hanging_and_nothing_is_printed(capfd):
    outcome = loader(batch_size=None, timeout=2.0)
    assert outcome.error_line == "RuntimeError: DataLoader timed out after 2.0 seconds"
    assert outcome.cause_line.startswith(COWARDLY)
    assert "Cowardly refusing" in outcome.worker_stderr
    assert outcome.error_cause is None  # this process sees only the timeout: the refusal is in worker_stderr
    assert outcome.cause_printed and "<-" not in outcome.summary()
    assert outcome.summary() == f"{outcome.error_line}; printed by the worker, not raised here: {outcome.cause_line}"
    assert outcome.elapsed_s >= 2.0
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""


def test_no_worker_output_reaches_a_notebook_cell():
    cell = new_code_cell(
        "from graphleaf_edu.dataloading import run_loader\n"
        "outcome = run_loader(start_method='fork', num_workers=2, deepcopy_in_getitem=False,\n"
        "                     detach_at_construction=False, batch_size=None, timeout=2.0)\n"
        "print(outcome.summary())"
    )
    notebook = new_notebook(cells=[cell, new_code_cell("import time; time.sleep(1)")])
    NotebookClient(notebook, kernel_name="graphleaf-cpu", timeout=120).execute()
    outputs = notebook.cells[0].outputs + notebook.cells[1].outputs
    assert [(o.output_type, o.get("name")) for o in outputs] == [("stream", "stdout")]
    assert outputs[0].text.startswith("RuntimeError: DataLoader timed out after 2.0 seconds; printed by the worker, "
                                      "not raised here: " + COWARDLY)


def test_outcome_table_is_deterministic():
    outcomes = [loader(num_workers=0), loader(num_workers=0, deepcopy_in_getitem=True)]
    again = [loader(num_workers=0), loader(num_workers=0, deepcopy_in_getitem=True)]
    table = outcome_table(outcomes)
    assert table == outcome_table(again)
    header, rule, first, second = table.splitlines()
    assert header.split(" | ")[0].strip() == "start method" and set(rule) <= {"-", "+"}
    assert first.startswith("(main process) | 0") and "ok: 2 batches of shape [4, 4]" in first
    assert GRAPH_LEAVES in second
    assert outcome_table([]) == ""


def test_outcome_table_as_html_has_one_escaped_row_per_outcome():
    outcomes = [loader(num_workers=0), loader(num_workers=1, deepcopy_in_getitem=True)]
    table = outcome_table(outcomes, html=True)
    assert table.startswith("<table ") and "><tr><th " in table and table.endswith("</tr></table>")
    assert table.count("<tr>") == 3 and table.count("<th ") == len(outcomes[0].row())
    assert "deepcopy in __getitem__</th>" in table and GRAPH_LEAVES in table
    assert "<-" not in table  # a result "A <- B" must not open a tag
    assert table.count("&lt;-") == 1 and WORKER_0 in table  # the fork row: "A <- B"
    assert outcome_table([], html=True) == ""


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"start_method": "thread"}, "start_method must be one of"),
        ({"num_workers": -1}, "num_workers must be an int >= 0"),
        ({"batch_size": 0}, "batch_size must be a positive int or None"),
        ({"timeout": 0}, "timeout must be > 0"),
    ],
)
def test_bad_configuration_says_what_to_pass(changes, message):
    with pytest.raises(ValueError, match=message):
        loader(**changes)


def test_datasets_pickle_as_torch_multiprocessing_would_send_them():
    graph = make_dataset(deepcopy_in_getitem=False, detach_at_construction=False)
    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        ForkingPickler.dumps(graph)
    fixed = make_dataset(deepcopy_in_getitem=True, detach_at_construction=True)
    received = pickle.loads(ForkingPickler.dumps(fixed))
    assert type(received) is DetachedTensorRows and torch.equal(received.data, fixed.data)


def test_detaching_dataset_shares_the_given_tensors_memory_and_leaves_its_graph():
    x = torch.ones(ROWS, FEATURES, requires_grad=True)
    data = x * 2
    dataset = DetachedTensorRows(data)
    assert data.grad_fn is not None and not data.is_leaf
    assert dataset.data.is_leaf and not dataset.data.requires_grad
    assert dataset.data.untyped_storage().data_ptr() == data.untyped_storage().data_ptr()  # detach(): no copy
    assert isinstance(dataset, TensorRows) and torch.equal(dataset[0], data[0].detach())


def test_sending_a_detached_dataset_moves_the_given_tensors_memory_into_shared_memory():
    data = torch.ones(ROWS, FEATURES, requires_grad=True) * 2
    assert not data.is_shared()
    ForkingPickler.dumps(DetachedTensorRows(data))  # what a spawn or forkserver DataLoader does at start
    assert data.is_shared() and data.grad_fn is not None


def test_given_data_is_what_the_loader_loads_and_how_each_start_method_treats_it():
    """The DataLoader lab of lesson 03 runs on the lesson's own features: run_loader's ``data``."""
    features = torch.nn.Linear(3, 3)(torch.randn(6, 3))  # 6 rows of 3, each with a grad_fn
    assert make_dataset(deepcopy_in_getitem=False, detach_at_construction=False, data=features).data is features
    fixed = make_dataset(deepcopy_in_getitem=False, detach_at_construction=True, data=features)
    assert fixed.data.is_leaf and fixed.data.untyped_storage().data_ptr() == features.untyped_storage().data_ptr()
    here = loader(num_workers=0, data=features)
    assert here.ok and (here.batches, here.batch_shape, here.batch_is_leaf) == (2, (4, 3), False)
    if "fork" in multiprocessing.get_all_start_methods():
        assert STACK_OUT in loader(num_workers=1, data=features).cause_line
    spawned = loader(start_method="spawn", num_workers=1, data=features)
    assert not spawned.ok and spawned.error_line.startswith(COWARDLY)
    delivered = loader(start_method="spawn", num_workers=1, data=features, detach_at_construction=True)
    assert delivered.ok and (delivered.batches, delivered.batch_is_leaf) == (2, True)


@pytest.mark.parametrize(("data", "message"), [
    ("rows", "data must be a tensor with one row per item, not str"),
    (torch.tensor(1.0), r"data must have one row per item \(at least one dimension\), not shape \[\]"),
])
def test_data_that_is_no_tensor_of_rows_says_what_to_pass(data, message):
    with pytest.raises(TypeError, match=message):
        loader(num_workers=0, data=data)


def test_deepcopy_in_getitem_of_a_detached_dataset_copies_the_whole_storage_for_each_row():
    data = torch.ones(ROWS, FEATURES, requires_grad=True) * 2
    dataset = DetachedTensorRows(data, deepcopy_in_getitem=True)
    whole = dataset.data.untyped_storage().nbytes()
    for index in (0, ROWS - 1):
        row = dataset[index]  # no error now: the row is a leaf
        assert row.is_leaf and row.grad_fn is None and torch.equal(row, data[index].detach())
        assert row.untyped_storage().data_ptr() != dataset.data.untyped_storage().data_ptr()  # a copy
        assert row.untyped_storage().nbytes() == whole == ROWS * row.nbytes  # of all the rows, for one
        assert row.storage_offset() == index * FEATURES
    assert dataset.data[0].clone().untyped_storage().nbytes() == FEATURES * data.element_size()
