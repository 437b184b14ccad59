"""Diagnosis at the moment of the error: explain_errors, the IPython extension, python -m graphleaf_edu,
each on the real error raised by real code (deepcopy, AveragedModel, DataLoader workers, queues)."""
from __future__ import annotations

import copy
import re
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
from graphleaf_edu import causes as C
from graphleaf_edu import messages as M
from graphleaf_edu.dataloading import make_dataset
from graphleaf_edu.on_error import NOTE_PREFIX, add_notes, explain_errors, grouped

pytestmark = pytest.mark.usefixtures("quiet_torch_deprecations")


class Opaque:
    """Copies itself: deepcopy's walk cannot look inside; pickle ignores __deepcopy__."""

    def __init__(self, value):
        self.value = value

    def __deepcopy__(self, memo):
        raise NotImplementedError


def cached_model() -> nn.Sequential:
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    model[1].seen = model(torch.randn(2, 3))
    return model


def raised_inside(function, *args, origins=False):
    with pytest.raises(BaseException) as raised, explain_errors(origins=origins):  # each caller checks the type
        function(*args)
    return raised.value


def root_note(error):
    """The note naming root (after the origins hint and the user's line)."""
    return next(note for note in error.__notes__ if " root = a " in note)


def note_after_root(error, number=1):
    notes = error.__notes__
    return notes[notes.index(root_note(error)) + number]


def test_a_direct_deepcopy_gets_notes_naming_the_root_every_culprit_and_its_fix():
    model = cached_model()
    error = raised_inside(copy.deepcopy, {"model": model})
    assert type(error) is RuntimeError and "graph leaves" in str(error)
    notes = error.__notes__
    assert notes[-1] == NOTE_PREFIX + M.ORIGINS_HINT_CODE, "the last note, after the diagnosis, says how to turn origins on"
    assert notes[0].startswith(NOTE_PREFIX + "copied at test_on_error.py:") or notes[0].startswith(
        NOTE_PREFIX + "copied at tests/test_on_error.py:")
    assert notes[0].endswith("  function(*args)"), "the innermost frame of the user's code"
    assert notes[1].startswith(NOTE_PREFIX + "copying root = a dict (copy.deepcopy(x) called in ")
    assert notes[1].endswith(", raised_inside)")  # the function that called copy.deepcopy
    assert notes[2].startswith(NOTE_PREFIX + "root['model'][1].seen: cached activation in a module attribute")
    assert "| fix: store `output.detach()`" in notes[2]
    assert notes[-3:-1] == [NOTE_PREFIX + M.SAFE_COPY_HINT, NOTE_PREFIX + M.CLONE_RULE]


def test_averaged_model_names_the_library_frame_and_the_model_as_root():
    def average(model):
        return AveragedModel(model)

    error = raised_inside(average, cached_model())
    assert root_note(error) == (
        NOTE_PREFIX + "copying root = a Sequential (copy.deepcopy(x) called in torch.optim.swa_utils, AveragedModel.__init__)"
    )
    assert note_after_root(error).startswith(NOTE_PREFIX + "root[1].seen: cached activation")
    assert error.__notes__[0].endswith("  return AveragedModel(model)")


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
    assert root_note(error) == NOTE_PREFIX + "sending root = a dict (the object torch.multiprocessing was pickling)"
    assert note_after_root(error) == NOTE_PREFIX + M.SEND_RULES
    assert note_after_root(error, 2) == NOTE_PREFIX + (
        f"root['batch']: non-leaf tensor in a container (grad_fn=MulBackward0) | fix: {M.SEND_FIX}")


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
    assert root_note(error).startswith(f"{NOTE_PREFIX}{verb} root = a TensorRows (the DataLoader's dataset, found in ")
    shown = error.__notes__[error.__notes__.index(root_note(error)) + (2 if verb == "sending" else 1)]
    assert shown == NOTE_PREFIX + f"root.data: {C.known('DATASET').cause} (grad_fn=MulBackward0) | fix: {C.known('DATASET').fix}"


def test_ipython_extension_adds_the_notes_to_a_cells_error(capsys):
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "graphleaf_edu")
    try:
        shell.user_ns["model"] = cached_model()
        shell.run_cell("from torch.optim.swa_utils import AveragedModel\nAveragedModel(model)")
        assert note_after_root(sys.last_value).startswith(NOTE_PREFIX + "root[1].seen")
        assert re.fullmatch(re.escape(NOTE_PREFIX) + r"copied at Cell In\[\d+\], line 2  AveragedModel\(model\)",
                            sys.last_value.__notes__[0])
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
    assert f"graphleaf_edu: copied at {script}:8  copy.deepcopy(model)" in run.stderr, "a path outside the cwd stays whole"
    usage = subprocess.run([sys.executable, "-m", "graphleaf_edu"], capture_output=True, text=True, timeout=120,
                           check=False)
    assert usage.returncode == 2 and usage.stderr.startswith(
        "usage: python -m graphleaf_edu [--keep-going [--patch FILE] [--library PATH]] [--origins] [--lang LANG]")


def test_the_extension_hooks_are_importable_from_the_package():
    assert callable(graphleaf_edu.load_ipython_extension) and callable(graphleaf_edu.unload_ipython_extension)
    assert graphleaf_edu.explain_errors is explain_errors


def test_the_libraries_deep_dive_shows_the_notes_of_a_real_averaged_model_failure():
    """nbval reruns the lesson in a real kernel and compares the stored outputs; this pins down what
    they must show: the extension loaded, AveragedModel failing, and its notes naming root.<path>."""
    import nbformat

    from graphleaf_edu.errors import GRAPH_LEAVES

    path = Path(__file__).resolve().parent.parent / "notebooks" / "deep_dives" / "real_causes_in_libraries.ipynb"
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


def test_notes_record_where_each_culprit_was_created_when_origins_are_on():
    def train_step():
        model = nn.Linear(3, 3)
        model.seen = model(torch.randn(2, 3)) * 2  # the line that creates it
        return model

    error = raised_inside(lambda: copy.deepcopy(train_step()), origins=True)
    assert not torch.is_anomaly_enabled(), "anomaly mode is back off after the block"
    assert not any("to name the line" in note for note in error.__notes__)
    created = note_after_root(error, 2)
    assert created.startswith(NOTE_PREFIX + "  created at ") and " in train_step  model.seen = model(" in created


def test_a_send_walks_what_forkingpickler_sends_not_what_deepcopy_copies():
    """A non-leaf .grad and a tensor's attributes break deepcopy but are not sent; an object's own
    __deepcopy__ hides nothing from pickle; real ForkingPickler.dumps is the judge."""
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # registers torch's reductions with ForkingPickler

    w = torch.randn(2, requires_grad=True)
    (w ** 2).sum().backward(create_graph=True)
    tagged = torch.randn(2)
    tagged.note = w * 3

    for sendable in ({"w": w}, {"tagged": tagged}):
        ForkingPickler.dumps(sendable)
        assert graphleaf_edu.find_nonleaf(sendable, "multiprocessing") == []
        assert graphleaf_edu.find_nonleaf(sendable) != [], "deepcopy refuses it"
    hidden = Opaque(w * 2)
    with pytest.raises(RuntimeError, match="Cowardly"):
        ForkingPickler.dumps(hidden)
    assert [f.path for f in graphleaf_edu.find_nonleaf(hidden, "multiprocessing")] == [".value"]
    assert graphleaf_edu.find_nonleaf(hidden) == [] and graphleaf_edu.find_nonleaf(hidden).opaque


def test_a_wrapped_or_chained_graph_error_gets_the_notes_on_the_outer_exception():
    def pipeline(batch):
        try:
            return copy.deepcopy(batch)
        except RuntimeError:
            raise ValueError("pipeline step failed")  # chained: __context__

    error = raised_inside(pipeline, {"out": torch.ones(1, requires_grad=True) * 2})
    assert type(error) is ValueError and not hasattr(error.__context__, "__notes__")
    assert note_after_root(error).startswith(NOTE_PREFIX + "root['out']: ")


def test_repeats_are_grouped_by_their_last_index_when_cause_and_fix_agree():
    x = torch.ones(1, requires_grad=True)
    findings = graphleaf_edu.find_nonleaf({"losses": [x * i for i in range(5)], "other": [x * 2, x * 3]})
    assert [(g.where, g.count) for g in grouped(findings)] == [("root['losses'][0..4]", 5), ("root['other'][0..1]", 2)]
    assert grouped(findings)[0].line().startswith("root['losses'][0..4]: 5 tensors, ")
