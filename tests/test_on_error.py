"""Diagnosis at the moment of the error: explain_errors, the IPython extension, python -m graphleaf_edu,
each on the real error raised by real code (deepcopy, AveragedModel, DataLoader workers, queues)."""
from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel
from torch.utils.data import DataLoader

import graphleaf_edu
from graphleaf_edu.dataloading import make_dataset
from graphleaf_edu.on_error import NOTE_PREFIX, add_notes, explain_errors

pytestmark = pytest.mark.usefixtures("quiet_torch_deprecations")


def cached_model() -> nn.Sequential:
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    model[1].seen = model(torch.randn(2, 3))
    return model


def raised_inside(function, *args):
    with pytest.raises(BaseException) as raised, explain_errors():  # each caller checks the type
        function(*args)
    return raised.value


def test_a_direct_deepcopy_gets_notes_naming_the_root_every_culprit_and_its_fix():
    model = cached_model()
    error = raised_inside(copy.deepcopy, {"model": model})
    assert type(error) is RuntimeError and "graph leaves" in str(error)
    notes = error.__notes__
    assert notes[0].startswith(NOTE_PREFIX + "copying root = a dict (copy.deepcopy(x) called in ")
    assert notes[0].endswith(", raised_inside)")  # the function that called copy.deepcopy
    assert notes[1].startswith(NOTE_PREFIX + "root['model'][1].seen: cached activation in a module attribute")
    assert "| fix: store `output.detach()`" in notes[1]
    assert notes[-1] == NOTE_PREFIX + "graphleaf_edu.safe_deepcopy(root) copies root with these tensors detached"


def test_averaged_model_names_the_library_frame_and_the_model_as_root():
    def average(model):
        return AveragedModel(model)

    error = raised_inside(average, cached_model())
    assert error.__notes__[0] == (
        NOTE_PREFIX + "copying root = a Sequential (copy.deepcopy(x) called in torch.optim.swa_utils, AveragedModel.__init__)"
    )
    assert error.__notes__[1].startswith(NOTE_PREFIX + "root[1].seen: cached activation")


def test_other_errors_pass_through_unchanged_and_notes_are_added_once():
    original = ValueError("not ours")
    with pytest.raises(ValueError) as raised, explain_errors():
        raise original
    assert raised.value is original and not hasattr(original, "__notes__")
    error = raised_inside(copy.deepcopy, cached_model())
    count = len(error.__notes__)
    assert add_notes(error) is False and len(error.__notes__) == count


def test_torch_multiprocessing_refusal_is_worded_as_sending():
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # registers the tensor reducer that refuses

    y = torch.randn(3, requires_grad=True) * 2
    error = raised_inside(ForkingPickler.dumps, {"batch": y})
    assert "Cowardly refusing" in str(error)
    assert error.__notes__[0] == NOTE_PREFIX + "sending root = a dict (the object torch.multiprocessing was pickling)"
    assert error.__notes__[1].startswith(NOTE_PREFIX + "root['batch']: non-leaf tensor in a container")


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_dataloader_worker_failure_names_the_loaders_dataset(start_method):
    dataset = make_dataset(deepcopy_in_getitem=True, detach_at_construction=False)
    loader = DataLoader(dataset, batch_size=4, num_workers=1, multiprocessing_context=start_method, timeout=60)
    error = raised_inside(lambda: next(iter(loader)))
    if start_method == "fork":  # the worker deep-copies a row and fails in its own process
        assert "Caught RuntimeError in DataLoader worker process 0" in str(error)
        verb = "copying"
    else:  # the dataset is refused while being sent to the spawned worker
        assert "Cowardly refusing" in str(error)
        verb = "sending"
    assert error.__notes__[0].startswith(f"{NOTE_PREFIX}{verb} root = a TensorRows (the DataLoader's dataset, found in ")
    assert error.__notes__[1].startswith(NOTE_PREFIX + "root.data: dataset holds a non-leaf tensor")


def test_ipython_extension_adds_the_notes_to_a_cells_error(capsys):
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "graphleaf_edu")
    try:
        shell.user_ns["model"] = cached_model()
        shell.run_cell("from torch.optim.swa_utils import AveragedModel\nAveragedModel(model)")
        assert sys.last_value.__notes__[1].startswith(NOTE_PREFIX + "root[1].seen")
        shell.run_cell("raise KeyError('plain')")
        assert not hasattr(sys.last_value, "__notes__")
    finally:
        shell.run_line_magic("unload_ext", "graphleaf_edu")
    assert "root[1].seen: cached activation" in capsys.readouterr().out


def test_python_dash_m_graphleaf_edu_runs_a_script_with_the_notes(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import copy, sys
        import torch
        from torch import nn
        print("args:", sys.argv[1:])
        model = nn.Linear(2, 2)
        model.cache = model(torch.randn(1, 2))
        copy.deepcopy(model)
    """))
    run = subprocess.run([sys.executable, "-m", "graphleaf_edu", str(script), "--epochs", "1"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1
    assert "args: ['--epochs', '1']" in run.stdout
    assert "graphleaf_edu: root.cache: cached activation in a module attribute" in run.stderr
    usage = subprocess.run([sys.executable, "-m", "graphleaf_edu"], capture_output=True, text=True, timeout=120,
                           check=False)
    assert usage.returncode == 2 and "usage: python -m graphleaf_edu SCRIPT" in usage.stderr


def test_the_extension_hooks_are_importable_from_the_package():
    assert callable(graphleaf_edu.load_ipython_extension) and callable(graphleaf_edu.unload_ipython_extension)
    assert graphleaf_edu.explain_errors is explain_errors


def test_lesson_11_shows_the_notes_of_a_real_averaged_model_failure():
    """nbval reruns the lesson in a real kernel and compares the stored outputs; this pins down what
    they must show: the extension loaded, AveragedModel failing, and its notes naming root.<path>."""
    import nbformat

    from graphleaf_edu.errors import GRAPH_LEAVES

    path = Path(__file__).resolve().parent.parent / "notebooks" / "11_real_causes_in_libraries.ipynb"
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert any(c.source.strip() == "%load_ext graphleaf_edu" for c in cells)
    failing = next(i for i, c in enumerate(cells) if "AveragedModel(model)" in c.source)
    assert "raises-exception" in cells[failing].metadata.get("tags", [])
    error = next(o for o in cells[failing].outputs if o.output_type == "error")
    assert error.ename == "RuntimeError" and GRAPH_LEAVES in error.evalue
    notes = cells[failing + 1]
    assert "sys.last_value.__notes__" in notes.source
    printed = "".join(o.text for o in notes.outputs if o.output_type == "stream")
    assert "copy.deepcopy(x) called in torch.optim.swa_utils, AveragedModel.__init__" in printed
    assert f"{NOTE_PREFIX}root.last: cached activation in a module attribute" in printed
