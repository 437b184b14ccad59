"""Short tracebacks in a real kernel: type, message, the student's lines and the raising line; the real
exception unchanged; every frame back with %xmode Context."""
import re

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from graphleaf_edu.tracebacks import keep_frames, short_worker_message

ANSI = re.compile(r"\x1b\[[0-9;]*m")
DEEPCOPY_ERROR = "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol"
SETUP = "import copy, torch\nfrom torch import nn\nimport graphleaf_edu as gl\nDEVICE = gl.setup_notebook(seed=0)"
CELLS = {
    "tensor": "x = torch.ones(3, requires_grad=True)\ny = x * 2\ncopy.deepcopy(y)  # the student's line",
    "module": "model = nn.Linear(2, 2)\nmodel.cache = model(torch.ones(1, 2))\ncopy.deepcopy(model)  # the student's line",
    "function": "def keep(batch):\n    return copy.deepcopy(batch)  # the student's line\nkeep({'a': [y]})",
    "full": "%xmode Context\ncopy.deepcopy(model)",
}
FORGET = "get_ipython().InteractiveTB.structured_traceback.forget_shown()  # each case shows in full"
REPEATS = [
    "x = torch.ones(3, requires_grad=True)\ncopy.deepcopy(x * 2)",
    "first = x[0]\nsnapshot = copy.deepcopy(first)  # the student's line",
    "def keep(batch):\n    return copy.deepcopy(batch)  # inside the student's function\nkeep([x * 3])",
    "model = nn.Linear(2, 2)\nmodel(torch.ones(2, 3))",
    "%xmode Context\ncopy.deepcopy(x * 4)",
    "%xmode Plain\n%load_ext graphleaf_edu\ncopy.deepcopy({'kept': x * 5})",
]


@pytest.fixture(scope="module")
def shown():
    sources = [SETUP, *(part for cell in CELLS.values() for part in (FORGET, cell))]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in sources])
    NotebookClient(notebook, kernel_name="graphleaf-cpu", allow_errors=True, timeout=120).execute()
    errors = {}
    for name, cell in zip(CELLS, notebook.cells[2::2]):
        (error,) = [o for o in cell.outputs if o.output_type == "error"]
        errors[name] = (error, ANSI.sub("", "\n".join(error.traceback)))
    return errors


@pytest.mark.parametrize("name", ["tensor", "module", "function"])
def test_a_student_sees_type_message_and_their_own_line_in_few_lines(shown, name):
    error, text = shown[name]
    assert len(text.splitlines()) <= 15, text
    assert "the student's line" in text and "Cell In[" in text
    assert f"RuntimeError: {DEEPCOPY_ERROR}" in text
    assert "torch/_tensor.py" in text and "raise RuntimeError(" in text, "the line that raised is shown"
    assert "copy.py" not in text and "interactiveshell.py" not in text
    assert error.ename == "RuntimeError" and error.evalue.startswith(DEEPCOPY_ERROR), "the real exception"


def test_hidden_frames_are_counted_and_xmode_context_shows_them(shown):
    _, short = shown["module"]
    assert re.search(r"\[\.\.\. \d+ library frames not shown: %xmode Context shows them\]", short)
    _, full = shown["full"]
    assert "copy.py" in full and len(full.splitlines()) > len(short.splitlines())


def test_keep_frames_keeps_the_students_frames_and_the_raising_one():
    def library(value):
        return copy_it(value)

    def copy_it(value):
        raise ValueError(value)

    try:
        library(1)
    except ValueError as error:
        tb = error.__traceback__
    short, hidden = keep_frames(tb, lambda filename: filename == __file__ and False)
    assert hidden == 2 and short.tb_next is None and short.tb_frame.f_code.co_name == "copy_it"
    short, hidden = keep_frames(tb, lambda filename: filename == __file__)
    assert hidden == 0


def test_a_worker_error_is_shown_with_its_first_line_and_its_cause():
    message = ("Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
               '  File "/somewhere/worker.py", line 1, in _worker_loop\n    data = fetcher.fetch(index)\n'
               f"RuntimeError: {DEEPCOPY_ERROR} at the moment.")
    shown = str(short_worker_message(RuntimeError(message)))
    assert shown.splitlines()[0] == "Caught RuntimeError in DataLoader worker process 0."
    assert shown.splitlines()[-1].strip() == f"RuntimeError: {DEEPCOPY_ERROR} at the moment."
    assert "/somewhere" not in shown
    plain = RuntimeError("no worker here")
    assert short_worker_message(plain) is plain


def test_setup_outside_ipython_changes_nothing(capsys):
    from graphleaf_edu import setup_notebook
    assert isinstance(setup_notebook(seed=0), torch.device)
    assert "graphleaf_edu ready" in capsys.readouterr().out


@pytest.fixture(scope="module")
def repeated():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in [SETUP, *REPEATS]])
    NotebookClient(notebook, kernel_name="graphleaf-cpu", allow_errors=True, timeout=120).execute()
    return [next(o for o in cell.outputs if o.output_type == "error") for cell in notebook.cells[1:]]


def test_an_error_shown_before_shows_again_as_one_line_naming_the_students_line(repeated):
    first, again, in_function, other, full, with_notes = ([ANSI.sub("", line) for line in error.traceback] for error in repeated)
    assert len(first) > 3 and f"RuntimeError: {DEEPCOPY_ERROR}" in "\n".join(first)
    assert again == [(f"RuntimeError: {DEEPCOPY_ERROR} at the moment. (shown in full above)  "
                      "<- Cell In[3], line 2: snapshot = copy.deepcopy(first)  # the student's line")]
    assert len(in_function) == 1 and in_function[0].endswith("line 2: return copy.deepcopy(batch)  # inside the student's function")
    assert len(other) > 1, "another error is shown in full"
    assert len(full) > 3, "%xmode Context shows every frame, repeat or not"
    assert [e.ename for e in repeated] == ["RuntimeError"] * 6
    assert with_notes[0].endswith("copy.deepcopy({'kept': x * 5})") and len(with_notes) > 1
    assert any("root['kept']" in line for line in with_notes[1:]), "the notes naming the culprit follow the line"
    assert repeated[1].evalue == repeated[0].evalue, "the exception itself is unchanged"


def test_a_cause_chained_inside_the_package_is_not_shown_but_kept():
    cells = [SETUP,
             "import threading\nbox = {'lock': threading.Lock()}\ngl.safe_deepcopy(box)  # the student's line",
             "import sys\nprint(type(sys.last_value.__cause__).__name__)"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(notebook, kernel_name="graphleaf-cpu", allow_errors=True, timeout=120).execute()
    (error,) = [o for o in notebook.cells[1].outputs if o.output_type == "error"]
    lines = [ANSI.sub("", line) for line in error.traceback]
    text = "\n".join(lines)
    assert "Cell In[" in lines[1], text
    assert "direct cause" not in text and "graphleaf_edu/" not in text, "no frame from inside the package"
    assert "cannot pickle '_thread.lock' object" in text, "the package's message says what the cause said"
    assert notebook.cells[2].outputs[0].text == "TypeError\n", "the real exception keeps its cause"
