"""Notes that name the user's own line, on real scripts (tests/note_scripts) run by
``python -m graphleaf_edu`` and on the same failures in cells of a real kernel with ``%load_ext``:
the ``file:line  text`` (``Cell In[n], line k``) named, the walk's rules, the advice."""
from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient
from script_runs import SCRIPTS, line_of, run_script, run_scripts

from graphleaf_edu import causes as C
from graphleaf_edu import messages as M

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_notes(name: str, *args: str, origins: bool = False) -> subprocess.CompletedProcess[str]:
    return run_script(name, *args, options=("--origins",) if origins else ())


def notes_in(text: str) -> list[str]:
    return [line.removeprefix(M.NOTE_PREFIX) for line in ANSI.sub("", text).splitlines()
            if line.startswith(M.NOTE_PREFIX)]


@pytest.fixture(scope="module")
def plain_runs() -> dict[str, subprocess.CompletedProcess[str]]:
    runs = {name: (name,) for name in (
        "simple_queue.py", "feeder_queue.py", "process_args.py", "averaged_model.py", "losses_dataclass.py",
        "wrapped_error.py", "hidden_copy.py", "hook_cache.py")}
    return run_scripts(runs | {"loaders.py fork": ("loaders.py", "fork"), "loaders.py spawn": ("loaders.py", "spawn")})


SENT = [  # (run, the user's line that sent it, what root is, the finding's start)
    ("simple_queue.py", "queue.put(logits)", "a Tensor (" + M.HOW_PICKLED + ")", "root: " + C.known("ROOT_TENSOR").cause),
    ("feeder_queue.py", "queue.put(logits)", "a Tensor (" + M.HOW_QUEUE + ")", "root: " + C.known("ROOT_TENSOR").cause),
    ("process_args.py", "worker.start()", "a SpawnProcess (" + M.HOW_PROCESS + ")", "root._args[0]: "),
]


@pytest.mark.parametrize(("run", "statement", "root", "finding"), SENT, ids=[case[0] for case in SENT])
def test_a_send_names_the_line_that_sent_and_the_detach_at_that_call(plain_runs, run, statement, root, finding):
    completed = plain_runs[run]
    notes = notes_in(completed.stderr)
    assert notes[-1] == M.say(M.ORIGINS_HINT_RUNNER, command=f"python -m graphleaf_edu --origins {run}")
    assert notes[0] == M.say(M.SENT_AT, place=line_of(run, statement))
    assert notes[1] == M.say(M.SENDING_ROOT, type_name=root.split(" (")[0].removeprefix("a "),
                             how=root.split(" (", 1)[1].removesuffix(")"))
    assert notes[2] == M.SEND_RULES
    assert notes[3].startswith(finding) and notes[3].endswith("| fix: " + M.SEND_FIX)
    assert M.CLONE_RULE in notes
    assert "no_grad" not in completed.stderr.split(M.NOTE_PREFIX, 1)[1], "never no_grad for a training output"
    assert not any("cannot look inside" in note for note in notes)


def test_a_queues_feeder_thread_error_is_printed_with_the_notes_and_the_script_goes_on(plain_runs):
    completed = plain_runs["feeder_queue.py"]
    assert completed.returncode == 0 and "the script went on" in completed.stdout
    assert notes_in(completed.stderr)[-2] == M.FEEDER_THREAD, "the diagnosis, then the hint"


def test_a_simple_queue_refusal_stops_the_script_at_put(plain_runs):
    completed = plain_runs["simple_queue.py"]
    assert completed.returncode == 1 and "Cowardly refusing" in completed.stderr


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_dataloaders_dataset_is_named_at_the_loop_with_the_datasets_fix(plain_runs, start_method):
    notes = notes_in(plain_runs[f"loaders.py {start_method}"].stderr)
    verb = M.SENT_AT if start_method == "spawn" else M.COPIED_AT
    assert notes[0] == M.say(verb, place=line_of("loaders.py", "for batch in loader:"))
    assert notes[1].startswith(("sending" if start_method == "spawn" else "copying") + " root = a Embeddings (the DataLoader's dataset")
    assert f"root.rows: {C.known('DATASET').cause} (grad_fn=AddmmBackward0) | fix: {C.known('DATASET').fix}" in notes
    assert (M.SEND_RULES in notes) == (start_method == "spawn")


COPIED = [  # (run, the user's line that copied, the finding's line, its fix)
    ("averaged_model.py", "swa = AveragedModel(model)", f"root.attention: {C.known('CACHED').cause} (grad_fn=SoftmaxBackward0)",
     C.known("CACHED").fix),
    ("losses_dataclass.py", "checkpoint = copy.deepcopy(history)",
     f"root.losses[0..19]: 20 tensors, {C.known('LOGGED').cause.format(name='losses')} (grad_fn=MeanBackward0)", C.known('LOGGED').fix),
    ("hook_cache.py", "ema = copy.deepcopy(encoder)", f"root[0].features: {C.known('CACHED').cause} (grad_fn=AddmmBackward0)",
     C.known("CACHED").fix),
    ("hidden_copy.py", "fresh.state = copy.deepcopy(self.state, memo)", "root['last_output']: ", None),
    ("wrapped_error.py", "snapshot_pipeline.snapshot(batch)", "root['outputs']: ", None),
]


@pytest.mark.parametrize(("run", "statement", "finding", "fix"), COPIED, ids=[case[0] for case in COPIED])
def test_a_copy_names_the_line_that_copied_each_culprit_and_its_fix(plain_runs, run, statement, finding, fix):
    completed = plain_runs[run]
    assert completed.returncode == 1
    notes = notes_in(completed.stderr)
    assert notes[0] == M.say(M.COPIED_AT, place=line_of(run, statement))
    matching = [note for note in notes if note.startswith(finding)]
    assert len(matching) == 1, notes
    if fix:
        assert matching[0].endswith("| fix: " + fix)
    assert M.SAFE_COPY_HINT in notes and M.CLONE_RULE in notes
    assert "no_grad" not in completed.stderr.split(M.NOTE_PREFIX, 1)[1]


def test_the_innermost_failing_copy_is_walked_when_an_own_deepcopy_hides_the_culprit(plain_runs):
    notes = notes_in(plain_runs["hidden_copy.py"].stderr)
    assert notes[1] == M.say(M.COPYING_ROOT, type_name="dict", how=M.say(
        M.HOW_INNER_DEEPCOPY, called_in="__main__, Trainer.__deepcopy__"))
    assert M.NOTHING_REACHABLE_COPY not in notes


def test_a_wrapped_error_gets_the_notes_on_the_exception_the_user_sees(plain_runs):
    stderr = plain_runs["wrapped_error.py"].stderr
    inner, outer = stderr.split("The above exception was the direct cause of the following exception:")
    assert M.NOTE_PREFIX not in inner and "graph leaves" in inner
    assert "snapshot_pipeline.PipelineError: could not snapshot the batch" in outer
    assert notes_in(outer)[1] == M.say(M.COPYING_ROOT, type_name="dict",
                                       how=M.say(M.HOW_DEEPCOPY, called_in="snapshot_pipeline, snapshot"))


ORIGINS = [  # (run, the finding's start, the line that created it, in which function, made inside a library)
    ("averaged_model.py", "root.attention", "self.attention = scores.softmax(-1)", "forward", False),
    ("losses_dataclass.py", "root.losses[0..19]", "loss = ((model(x) - y) ** 2).mean()", "main", False),
    ("hook_cache.py", "root[0].features", "encoder(torch.randn(2, 4))", "main", True),
]


@pytest.mark.parametrize(("run", "finding", "statement", "function", "in_library"), ORIGINS,
                         ids=[case[0] for case in ORIGINS])
def test_with_origins_each_culprit_names_the_users_line_that_created_it(run, finding, statement, function, in_library):
    notes = notes_in(run_notes(run, origins=True).stderr)
    assert not any(note.startswith("to name the line") for note in notes), "origins are on: no hint"
    where, text = line_of(run, statement).split("  ", 1)
    created = notes[next(i for i, note in enumerate(notes) if note.startswith(finding)) + 1]
    template = M.CREATED_IN_LIBRARY if in_library else M.CREATED_AT
    head, tail = template.split("{places}")
    called_from = " (called from " if function == "forward" else tail  # a script's main() call is not named
    assert created.startswith(f"  {head}{where} in {function}  {text}{called_from}") and created.endswith(tail)


def test_the_runner_says_how_it_is_used():
    usage = subprocess.run([sys.executable, "-m", "graphleaf_edu", "--help"], capture_output=True, text=True,
                           timeout=120, check=False)
    assert usage.returncode == 0 and usage.stdout.strip() == f"{M.RUNNER_USAGE}\n\n{M.KG_CANNOT_CONTINUE}"
    wrong = subprocess.run([sys.executable, "-m", "graphleaf_edu", "--origin", "x.py"], capture_output=True,
                           text=True, timeout=120, check=False)
    assert wrong.returncode == 2 and wrong.stderr.startswith(M.say(M.RUNNER_UNKNOWN_OPTION, option="--origin"))


# --- the same failures in a real kernel, with %load_ext ----------------------------------------------

KERNEL_SETUP = f"""%load_ext graphleaf_edu
import copy, sys, time
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.optim.swa_utils import AveragedModel
from torch.utils.data import DataLoader
sys.path.insert(0, {str(SCRIPTS / 'site-packages')!r})
import snapshot_pipeline
from graphleaf_edu.dataloading import TensorRows
logits = nn.Linear(4, 2)(torch.randn(3, 4))"""
KERNEL_CELLS = {  # name: (cell, the line of the cell that copies or sends)
    "simple queue": ("queue = mp.get_context('spawn').SimpleQueue()\nqueue.put(logits)", 2),
    "feeder queue": ("feeder = mp.get_context('spawn').Queue()\nfeeder.put(logits)\ntime.sleep(1)", 2),
    "process": ("worker = mp.get_context('spawn').Process(target=print, args=(logits,))\nworker.start()", 2),
    "averaged model": ("model = nn.Linear(4, 2)\nmodel.last = model(torch.randn(1, 4))\nAveragedModel(model)", 3),
    "losses": (("from dataclasses import dataclass, field\n\n@dataclass\nclass History:\n"
                "    losses: list = field(default_factory=list)\n\nhistory = History([logits.sum() for _ in range(3)])\n"
                "copy.deepcopy(history)"), 8),
    "hidden copy": (("class Holder:\n    def __init__(self, state):\n        self.state = state\n\n"
                     "    def __deepcopy__(self, memo):\n        return Holder(copy.deepcopy(self.state, memo))\n\n"
                     "copy.deepcopy(Holder({'out': logits}))"), 6),
    "wrapped": ("snapshot_pipeline.snapshot({'outputs': logits})", 1),
    "fork loader": (("rows = TensorRows(nn.Linear(2, 2)(torch.randn(4, 2)), deepcopy_in_getitem=True)\n"
                     "next(iter(DataLoader(rows, batch_size=2, num_workers=1, multiprocessing_context='fork', timeout=60)))"),
                    2),
    "spawn loader": ("next(iter(DataLoader(rows, batch_size=2, num_workers=1, multiprocessing_context='spawn', timeout=60)))", 1),
}


@pytest.fixture(scope="module")
def kernel_outputs() -> dict[str, tuple[int, str]]:
    cells = [nbformat.v4.new_code_cell(KERNEL_SETUP)] + [nbformat.v4.new_code_cell(c) for c, _ in KERNEL_CELLS.values()]
    notebook = nbformat.v4.new_notebook(cells=cells)
    NotebookClient(notebook, kernel_name="graphleaf-cpu", allow_errors=True, timeout=300).execute()
    shown = {}
    for name, cell in zip(KERNEL_CELLS, notebook.cells[1:]):
        text = "\n".join("\n".join(o.traceback) if o.output_type == "error" else o.get("text", "") for o in cell.outputs)
        shown[name] = (cell.execution_count, ANSI.sub("", text))
    return shown


@pytest.mark.parametrize("name", KERNEL_CELLS)
def test_in_a_kernel_the_notes_name_the_cell_and_line(kernel_outputs, name):
    count, text = kernel_outputs[name]
    cell, line = KERNEL_CELLS[name]
    statement = cell.splitlines()[line - 1].strip()
    notes = notes_in(text)
    verb = M.SENT_AT if name in ("simple queue", "feeder queue", "process", "spawn loader") else M.COPIED_AT
    assert notes[-1] == M.ORIGINS_HINT_CODE
    assert notes[0] == M.say(verb, place=f"Cell In[{count}], line {line}  {statement}")
    assert "ipykernel" not in "\n".join(notes) and ".py:" not in "\n".join(notes), "no temporary file path"
    assert "no_grad" not in "\n".join(notes) or name in ("fork loader", "spawn loader")


def test_in_a_kernel_the_dataclass_and_the_hidden_copy_are_walked_as_in_a_script(kernel_outputs):
    losses = notes_in(kernel_outputs["losses"][1])
    assert any(note.startswith("root.losses[0..2]: 3 tensors, ") for note in losses)
    hidden = notes_in(kernel_outputs["hidden copy"][1])
    assert hidden[1] == M.say(M.COPYING_ROOT, type_name="dict",
                              how=M.say(M.HOW_INNER_DEEPCOPY, called_in="__main__, Holder.__deepcopy__"))


def test_in_a_kernel_a_wrapped_error_and_a_feeder_thread_get_their_notes(kernel_outputs):
    _, wrapped = kernel_outputs["wrapped"]
    assert wrapped.index("PipelineError") < wrapped.index(M.NOTE_PREFIX + "copied at")
    _, fed = kernel_outputs["feeder queue"]
    assert notes_in(fed)[-2] == M.FEEDER_THREAD
