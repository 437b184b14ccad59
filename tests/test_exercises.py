"""The exercises: every check passes right answers, aims its hints at wrong ones, and says "not yet"
to nbgrader's stub; student copies follow nbgrader's rules and match what `make student` writes."""
import copy
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import textwrap

import nbformat
import psutil
import pytest
import torch
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook
from notebook_files import ROOT, ZH, code_cells, read
from torch import nn

import graphleaf_edu as gl
from graphleaf_edu import exercises, find_nonleaf
from graphleaf_edu.graphs import AutogradGraph

SOURCES = ROOT / "instructor" / "exercises"
STUDENT = ROOT / "notebooks" / "exercises"
# the Chinese twins of both copies (tools/twin_sync.py holds them to the English ones)
SOURCES_ZH, STUDENT_ZH = SOURCES / ZH, ROOT / "notebooks" / ZH / "exercises"
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?", re.MULTILINE | re.DOTALL)
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS\n(.*?)^[ \t]*### END HIDDEN TESTS\n?", re.MULTILINE | re.DOTALL)


def stub(*args):
    raise NotImplementedError()


def hints(feedback):
    return "\n".join(feedback.hints)


def said(feedback):
    """Everything the feedback says, without the line wrapping of its message."""
    return "\n".join([feedback.summary, *feedback.hints])


def right_leaf_flags():
    return {name: question.expected for name, question in exercises.LEAF_QUESTIONS.items()}


def right_copy_predictions():
    return {name: answer for name, (answer, _) in exercises.COPY_QUESTIONS.items()}


# --- feedback ----------------------------------------------------------------------------------------

def test_feedback_reads_as_one_deterministic_message():
    feedback = exercises.check_leaf_flags(lambda: right_leaf_flags() | {"d": (False, True, "mul")})
    assert not feedback.passed and feedback.status == exercises.TRY_AGAIN
    assert repr(feedback) == feedback.message == exercises.check_leaf_flags(
        lambda: right_leaf_flags() | {"d": (False, True, "mul")}).message
    assert feedback.message.startswith("✘ Exercise 1 · leaf flags — try again: 8 of 9 tensors right.")
    assert all(len(line) <= 100 for line in feedback.message.splitlines())


@pytest.mark.parametrize("check, answer", [
    (exercises.check_leaf_flags, stub),
    (exercises.check_copy_predictions, stub),
    (exercises.check_copy_cut, stub),
    (exercises.check_culprit_by_hand, stub),
    (exercises.check_culprit_finder, stub),
], ids=lambda value: getattr(value, "__name__", ""))
def test_the_stub_gets_not_yet(check, answer):
    feedback = check(answer)
    assert feedback.status == exercises.NOT_YET and not feedback.passed
    assert feedback.summary.startswith("stub(") and "still raises NotImplementedError" in feedback.summary


def test_under_nbgrader_a_check_that_does_not_pass_raises(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(AssertionError, match="not yet"):
        exercises.check_leaf_flags(stub)
    with pytest.raises(AssertionError, match="try again"):
        exercises.check_leaf_flags(lambda: right_leaf_flags() | {"f": (True, True, None)})
    assert exercises.check_leaf_flags(right_leaf_flags).passed


def test_errors_in_the_students_code_become_feedback():
    def broken():
        return {}["c"]

    feedback = exercises.check_leaf_flags(broken)
    assert feedback.status == exercises.TRY_AGAIN
    assert feedback.summary == "broken() raised KeyError: 'c'"


def test_a_check_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    exercises.check_cache_fix(CacheDetached)
    assert torch.equal(torch.rand(3), expected)


# --- exercise 1 --------------------------------------------------------------------------------------

def test_leaf_quiz_hints_are_written_for_what_pytorch_does():
    tensors = exercises.leaf_quiz_tensors()
    for name, question in exercises.LEAF_QUESTIONS.items():
        assert exercises.leaf_flags(tensors[name]) == question.expected, name


def test_the_notebook_runs_the_quiz_the_check_grades():
    sources = [cell.source for cell in code_cells(read(SOURCES / "ex1_leaf_flags.ipynb"))]
    assert exercises.leaf_quiz_code().strip() in sources


def test_right_leaf_flags_pass_and_grad_fn_names_are_not_graded():
    answers = right_leaf_flags() | {"c": (False, True, "mul"), "e": (False, True, "indexing")}
    feedback = exercises.check_leaf_flags(lambda: answers)
    assert feedback.passed
    assert "e: SelectBackward0" in feedback.summary


@pytest.mark.parametrize("name, wrong, expected_hint", [
    ("c", (True, True, None), "'created explicitly by the user' means made directly"),
    ("d", (False, True, "mul"), "being computed is not what makes a non-leaf; being recorded is"),
    ("e", (True, True, None), "indexing is an operation too"),
    ("f", (True, True, None), "copying data is not the same as leaving the graph"),
    ("g", (True, True, None), "detach() returns a tensor that does not require grad"),
    ("h", (False, True, "t"), "nn.Linear creates its weight directly"),
    ("k", (True, False, None), "the layer's weight and bias do"),
    ("m", (False, True, "mul"), "inside torch.no_grad() autograd records nothing"),
    ("n", (True, False, None), "requires_grad_() switches requires_grad on"),
])
def test_each_misconception_gets_its_hint(name, wrong, expected_hint):
    feedback = exercises.check_leaf_flags(lambda: right_leaf_flags() | {name: wrong})
    assert feedback.status == exercises.TRY_AGAIN and "8 of 9 tensors right" in feedback.summary
    assert all(hint.startswith(f"{name}, ") for hint in feedback.hints)
    assert expected_hint in hints(feedback)
    assert exercises.LEAVES_LESSON in feedback.summary


def test_is_leaf_and_grad_fn_that_contradict_each_other_are_pointed_out():
    feedback = exercises.check_leaf_flags(lambda: right_leaf_flags() | {"c": (False, True, None)})
    assert hints(feedback) == ("c, grad_fn: a tensor is a leaf exactly when its grad_fn is None; your is_leaf "
                               "and grad_fn disagree.")


@pytest.mark.parametrize("answer, message", [
    ([("c", (False, True, None))], "should return a dict"),
    ({"c": (False, True, None)}, "has no prediction for 'd'"),
    ({**right_leaf_flags(), "g": (1, 0, None)}, "is_leaf and requires_grad are True or False"),
    ({**right_leaf_flags(), "g": (True, False)}, "should be a tuple (is_leaf, requires_grad, grad_fn)"),
])
def test_answers_of_the_wrong_shape_say_what_shape_is_wanted(answer, message):
    feedback = exercises.check_leaf_flags(lambda: answer)
    assert feedback.status == exercises.TRY_AGAIN and message in said(feedback)


def test_passing_the_result_instead_of_the_function_is_explained():
    feedback = exercises.check_leaf_flags(right_leaf_flags())
    assert "pass your function itself (its name, without calling it), not dict" in feedback.summary


# --- exercise 2 --------------------------------------------------------------------------------------

def two_losses(x):
    y = x * 3
    return (y**2).sum(), (copy.copy(y) ** 2).sum()


def test_copy_hints_are_written_for_what_pytorch_does():
    assert exercises.copy_copy_facts() == right_copy_predictions()


@pytest.mark.parametrize("question, expected_hint", [
    ("same_object", "rebuilds a tensor from y's storage"),
    ("is_leaf", "a tensor without a grad_fn is a leaf"),
    ("requires_grad", "which is what makes the cut silent"),
    ("shares_memory", "copy.copy is shallow"),
    ("grad_reaches_x", "so it stops at the copy"),
])
def test_each_wrong_copy_prediction_gets_its_hint(question, expected_hint):
    answers = right_copy_predictions()
    answers[question] = not answers[question]
    feedback = exercises.check_copy_predictions(lambda: answers)
    assert feedback.summary.startswith("4 of 5 right")
    assert hints(feedback).startswith(f"{question}: ") and expected_hint in hints(feedback)


def test_right_copy_predictions_pass():
    assert exercises.check_copy_predictions(right_copy_predictions).passed


def test_the_cut_in_code():
    assert exercises.check_copy_cut(two_losses).passed


@pytest.mark.parametrize("make_losses, expected", [
    (lambda x: ((x * 3) ** 2).sum().repeat(2).unbind(), "still reach x"),
    (lambda x: (((x * 3) ** 2).sum(), ((x * 3).detach() ** 2).sum()), "That is what detach() gives"),
    (lambda x: (((x * 3).detach() ** 2).sum(), ((x * 3).detach() ** 2).sum()), "first loss does not depend on x"),
    (lambda x: ((x * 3) ** 2).sum(), "should return two tensors"),
])
def test_wrong_cuts_get_their_hints(make_losses, expected):
    feedback = exercises.check_copy_cut(make_losses)
    assert feedback.status == exercises.TRY_AGAIN and expected in said(feedback)


def test_the_picture_shows_two_pieces_one_ending_at_the_copy():
    graph = exercises.draw_copy_cut(two_losses)
    assert isinstance(graph, AutogradGraph)
    assert (graph.counts.leaves, graph.counts.non_leaves) == (2, 2)
    outline = graph.outline()
    assert "x" in outline and "the copy" in outline
    assert exercises.draw_copy_cut(stub).status == exercises.NOT_YET


# --- exercise 3 --------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", range(len(exercises.TAGGER_VARIANTS)))
def test_tagger_answer_keys_are_what_breaks_deepcopy(variant):
    model = exercises.culprit_model(variant)
    expected = exercises.TAGGER_VARIANTS[variant][2]
    assert sorted(f.path for f in find_nonleaf(model)) == sorted(expected)
    for path in expected:
        tensor = eval("root" + path, {"root": model})
        assert not tensor.is_leaf
    if expected:
        with pytest.raises(RuntimeError, match="graph leaves"):
            copy.deepcopy(model)
    for path in expected:  # detach each culprit where it is stored: then deepcopy works
        holder_path, key = re.fullmatch(r"(.*)(\.\w+|\[.+?\])", path).groups()
        holder = eval("root" + holder_path, {"root": model}) if holder_path else model
        if key.startswith("."):
            setattr(holder, key[1:], getattr(holder, key[1:]).detach())
        else:
            index = eval(key[1:-1])
            holder[index] = holder[index].detach()
    copy.deepcopy(model)


def test_culprit_model_is_the_same_every_time():
    first, second = exercises.culprit_model(), exercises.culprit_model()
    assert all(torch.equal(p, q) for p, q in zip(first.state_dict().values(), second.state_dict().values()))
    with pytest.raises(ValueError, match="index into TAGGER_VARIANTS, 0 to 3"):
        exercises.culprit_model(4)


@pytest.mark.parametrize("path", [".log['confidence']['ner']", "model.log['confidence']['ner']",
                                  "root.log['confidence']['ner']", "log['confidence']['ner']"])
def test_the_culprit_found_by_hand(path):
    feedback = exercises.check_culprit_by_hand(lambda: path)
    assert feedback.passed and "grad_fn=MeanBackward0" in feedback.summary


@pytest.mark.parametrize("path, expected", [
    (".encoder.embed.weight", "is a parameter. Parameters are leaves"),
    (".encoder.calls", "is a leaf tensor (grad_fn=None)"),
    (".log", "is a dict: the culprit may be inside it"),
    (".heads['ner']", "is a module: its parameters copy fine"),
    (".labels['pos'][0]", "is a str, not a tensor"),
    (".encoder.cache", "does not evaluate: AttributeError"),
    (".log[", "does not evaluate: ValueError: resolve(): '.log[' is not a path find_nonleaf writes"),
])
def test_wrong_culprits_get_their_hints(path, expected):
    feedback = exercises.check_culprit_by_hand(lambda: path)
    assert feedback.status == exercises.TRY_AGAIN and expected in said(feedback)


def tensors_with_graph(obj, path="model"):
    """Lesson 02's plain-PyTorch search, as a student would copy it."""
    if isinstance(obj, torch.Tensor):
        return [path] if obj.grad_fn is not None else []
    if isinstance(obj, nn.Module):
        inside = {f".{name}": value for name, value in vars(obj).items() if not name.startswith("_")}
        inside |= {f".{name}": value for name, value in obj.named_children()}
        inside |= {f".{name}": value for name, value in obj.named_buffers(recurse=False)}
    elif isinstance(obj, dict):
        inside = {f"[{key!r}]": value for key, value in obj.items()}
    elif isinstance(obj, (list, tuple)):
        inside = {f"[{index}]": value for index, value in enumerate(obj)}
    else:
        return []
    return [found for step, value in inside.items() for found in tensors_with_graph(value, path + step)]


def test_a_plain_pytorch_finder_finds_them_all():
    feedback = exercises.check_culprit_finder(tensors_with_graph)
    assert feedback.passed, said(feedback)


def lessons_finder(path):
    """The ``tensors_with_graph`` a lesson defines, as its cell writes it (the function only)."""
    import ast

    source = next(c.source for c in code_cells(read(path)) if "def tensors_with_graph" in c.source)
    definition = next(node for node in ast.parse(source).body
                      if isinstance(node, ast.FunctionDef) and node.name == "tensors_with_graph")
    namespace = {"torch": torch}
    exec(compile(ast.Module([definition], []), str(path), "exec"), namespace)  # noqa: S102 (the lesson's own code)
    return namespace["tensors_with_graph"]


@pytest.mark.parametrize("lesson", ["02_model_cache.ipynb", "04_capstone_training_loop.ipynb"])
def test_the_lessons_finder_passes_exercise_3(lesson):
    """The search lessons 02 and 04 teach walks vars(), as copy.deepcopy does, so it writes a submodule's tensor
    as ._modules['encoder'].last_output: the same tensor as .encoder.last_output, and the check says so."""
    feedback = exercises.check_culprit_finder(lessons_finder(ROOT / "notebooks" / lesson))
    assert feedback.passed, said(feedback)


@pytest.mark.parametrize("finder", [
    lambda model: [f.path for f in find_nonleaf(model)],
    lambda model: [f.path for f in gl.find_nonleaf(model)],
    lambda model: helper_that_asks_the_package(model),
], ids=["find_nonleaf", "gl.find_nonleaf", "through a helper"])
def test_the_packages_own_finder_is_turned_down(finder):
    feedback = exercises.check_culprit_finder(finder)
    assert feedback.status == exercises.TRY_AGAIN
    assert "uses graphleaf_edu" in feedback.summary and "grad_fn is not None" in hints(feedback)


def helper_that_asks_the_package(model):
    return [f.path for f in find_nonleaf(model)]


def test_a_hard_coded_finder_is_caught():
    feedback = exercises.check_culprit_finder(lambda model: [".log['confidence']['ner']"])
    assert "misses 2 of the 3 tensors" in feedback.summary
    assert "same paths for every model" in hints(feedback)


def test_tensors_instead_of_paths_are_explained():
    def the_tensors(model):
        return [eval("root" + path, {"root": model}) for path in tensors_with_graph(model, "")]

    feedback = exercises.check_culprit_finder(the_tensors)
    assert "returned Tensor items" in feedback.summary and ".encoder.last_output" in hints(feedback)


def test_a_finder_that_lists_leaves_is_told_which():
    def with_weights(model):
        return [*tensors_with_graph(model), ".encoder.embed.weight"]

    feedback = exercises.check_culprit_finder(with_weights)
    assert "you listed root.encoder.embed.weight, which deepcopy copies fine" in feedback.summary


# --- exercise 4 --------------------------------------------------------------------------------------

DATASETS = '''
import torch
from torch import nn
from torch.utils.data import Dataset


class AsGiven(Dataset):
    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


class Detached(AsGiven):
    def __init__(self, data):
        self.data = data.detach().clone()


class DetachedInGetitem(AsGiven):
    def __getitem__(self, index):
        return self.data[index].detach()


class DetachedInPlace(AsGiven):
    def __init__(self, data):
        self.data = data.detach_()


class Zeros(AsGiven):
    def __init__(self, data):
        self.data = torch.zeros_like(data.detach())


class Stub(AsGiven):
    def __init__(self, data):
        raise NotImplementedError()
'''
INFRASTRUCTURE = ("forkserver", "resource_tracker")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("student_module")
    (folder / "student_rows.py").write_text(DATASETS)
    sys.path.insert(0, str(folder))  # spawn workers get this sys.path too
    try:
        import student_rows
        yield student_rows
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("student_rows", None)


@pytest.fixture
def no_worker_survives():
    yield
    mine = psutil.Process().children(recursive=True)
    left = [p for p in mine if not any(word in " ".join(p.cmdline()) for word in INFRASTRUCTURE)]
    assert multiprocessing.active_children() == [] and left == []


@pytest.mark.usefixtures("no_worker_survives")
def test_a_detached_dataset_loads_with_two_spawn_workers(datasets):
    feedback = exercises.check_spawn_dataset(datasets.Detached)
    assert feedback.passed, feedback.message


@pytest.mark.usefixtures("no_worker_survives")
@pytest.mark.parametrize("name", ["AsGiven", "DetachedInGetitem"])
def test_spawn_refuses_a_dataset_that_holds_the_graph(datasets, name):
    feedback = exercises.check_spawn_dataset(getattr(datasets, name))
    assert "Cowardly refusing to serialize non-leaf tensor" in feedback.summary
    assert "Detaching a row in __getitem__ is too late" in hints(feedback)


def test_detaching_the_callers_tensor_in_place_is_caught(datasets):
    feedback = exercises.check_spawn_dataset(datasets.DetachedInPlace)
    assert feedback.summary == "DetachedInPlace(data) changed the tensor it was given."


@pytest.mark.usefixtures("no_worker_survives")
def test_rows_must_keep_their_values(datasets):
    feedback = exercises.check_spawn_dataset(datasets.Zeros)
    assert "rows that differ from the data" in feedback.summary


def test_a_dataset_class_in_main_is_explained_without_starting_workers(datasets):
    in_main = type("TensorRows", (datasets.AsGiven,), {"__module__": "__main__"})
    feedback = exercises.check_spawn_dataset(in_main)
    assert "defined in the notebook itself, in the module __main__" in feedback.summary
    assert "Can't get attribute" in hints(feedback)
    assert exercises.check_spawn_dataset(datasets.Stub).status == exercises.NOT_YET
    assert "pass the class itself" in exercises.check_spawn_dataset(datasets.Detached(torch.zeros(2, 2))).summary


@pytest.mark.slow
def test_a_class_defined_in_a_kernel_really_cannot_be_loaded_by_spawn_workers():
    """The fact exercise 4 is built around, in a real Jupyter kernel."""
    notebook = new_notebook(cells=[new_code_cell(textwrap.dedent("""
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Rows(Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, index):
                return torch.zeros(2)

        loader = DataLoader(Rows(), batch_size=2, num_workers=1, multiprocessing_context="spawn", timeout=60)
        try:
            next(iter(loader))
        except RuntimeError as error:
            print("main process:", error)
        """))])
    # Under pytest, ipykernel does not forward what child processes write to fd 2; a classroom kernel does.
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_CURRENT_TEST"}
    NotebookClient(notebook, kernel_name="graphleaf-cpu", timeout=180).execute(env=env)
    outputs = notebook.cells[0].outputs
    stderr = "".join(o.text for o in outputs if o.get("name") == "stderr")
    stdout = "".join(o.text for o in outputs if o.get("name") == "stdout")
    assert "AttributeError: Can't get attribute 'Rows' on <module '__main__'" in stderr
    assert "exited unexpectedly" in stdout


# --- exercise 5 --------------------------------------------------------------------------------------

class CacheDetached(exercises.CachingNetAsGiven):
    def forward(self, x):
        h = torch.relu(self.hidden(x))
        self.last_hidden = h.detach()
        return self.out(h)


class CacheCloned(exercises.CachingNetAsGiven):
    def forward(self, x):
        h = torch.relu(self.hidden(x))
        self.last_hidden = h.clone()
        return self.out(h)


class CacheUnderNoGrad(exercises.CachingNetAsGiven):
    def forward(self, x):
        h = torch.relu(self.hidden(x))
        with torch.no_grad():
            self.last_hidden = h
        return self.out(h)


class CacheCutsTraining(exercises.CachingNetAsGiven):
    def forward(self, x):
        h = torch.relu(self.hidden(x)).detach()
        self.last_hidden = h
        return self.out(h)


class CacheDropped(exercises.CachingNetAsGiven):
    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


class CacheOfTheOutput(exercises.CachingNetAsGiven):
    def forward(self, x):
        out = self.out(torch.relu(self.hidden(x)))
        self.last_hidden = out.detach()
        return out


class CacheRenamedLayers(CacheDetached):
    def __init__(self):
        super().__init__()
        self.first = self.hidden


class CacheWider(CacheDetached):
    def __init__(self):
        super().__init__(hidden=16)


class CacheStub(exercises.CachingNetAsGiven):
    def forward(self, x):
        raise NotImplementedError()


def test_detaching_what_is_cached_fixes_the_model():
    feedback = exercises.check_cache_fix(CacheDetached)
    assert feedback.passed, feedback.message
    assert "requires grad" not in feedback.summary


class CacheDetachedRequiringGrad(exercises.CachingNetAsGiven):
    def forward(self, x):
        h = torch.relu(self.hidden(x))
        self.last_hidden = h.detach().requires_grad_()
        return self.out(h)


def test_a_cache_made_a_leaf_that_requires_grad_passes_with_a_word_on_the_trap():
    feedback = exercises.check_cache_fix(CacheDetachedRequiringGrad)
    assert feedback.passed, feedback.message
    assert "your cache requires grad, so it is a new leaf" in feedback.summary


@pytest.mark.parametrize("model_class, expected", [
    (exercises.CachingNetAsGiven, "model.last_hidden has grad_fn=ReluBackward0"),
    (CacheCloned, "clone() copies the values but is recorded"),
    (CacheUnderNoGrad, "Assigning it under torch.no_grad() or to another name does not change"),
    (CacheCutsTraining, "training changed: no gradient reaches hidden.weight"),
    (CacheDropped, "model.last_hidden is None"),
    (CacheOfTheOutput, "does not hold the hidden activation"),
    (CacheRenamedLayers, "different layers from CachingNetAsGiven"),
    (CacheWider, "different layers from CachingNetAsGiven"),
])
def test_wrong_cache_fixes_get_their_hints(model_class, expected):
    feedback = exercises.check_cache_fix(model_class)
    assert feedback.status == exercises.TRY_AGAIN and expected in said(feedback)


def test_a_cache_stub_is_not_yet_and_an_instance_is_explained():
    assert exercises.check_cache_fix(CacheStub).status == exercises.NOT_YET
    assert "pass the class itself" in exercises.check_cache_fix(CacheDetached()).summary


# --- exercise 6 --------------------------------------------------------------------------------------

class EMA:
    def __init__(self, model, decay=0.9):
        self.decay = decay
        self.shadow = {name: p.detach().clone() for name, p in model.named_parameters()}

    def update(self, model):
        with torch.no_grad():
            for name, p in model.named_parameters():
                self.shadow[name].mul_(self.decay).add_(p, alpha=1 - self.decay)


class EMAByLerpOfDetached(EMA):
    def update(self, model):
        for name, p in model.named_parameters():
            self.shadow[name] = torch.lerp(self.shadow[name], p.detach(), 1 - self.decay)


class EMARecorded(EMA):
    def update(self, model):
        for name, p in model.named_parameters():
            self.shadow[name] = self.decay * self.shadow[name] + (1 - self.decay) * p


class EMARecordedInPlace(EMA):
    def update(self, model):
        for name, p in model.named_parameters():
            self.shadow[name].mul_(self.decay).add_(p, alpha=1 - self.decay)


class EMASwapped(EMA):
    def update(self, model):
        with torch.no_grad():
            for name, p in model.named_parameters():
                self.shadow[name].mul_(1 - self.decay).add_(p, alpha=self.decay)


class EMAAliased(EMA):
    def update(self, model):
        for name, p in model.named_parameters():
            self.shadow[name] = p


class EMAPullsTheModel(EMA):
    def update(self, model):
        super().update(model)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(self.shadow[name])


@pytest.mark.parametrize("ema_class", [EMA, EMAByLerpOfDetached])
def test_an_ema_outside_the_graph_passes(ema_class):
    feedback = exercises.check_ema_update(ema_class)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize("ema_class, expected", [
    (EMARecorded, "copy.deepcopy(ema) fails: ema.shadow['0.weight'] has grad_fn=AddBackward0"),
    (EMARecordedInPlace, "compute it where autograd records nothing"),
    (EMASwapped, "The check passes decay=0.8 (not your class's default)"),
    (EMAAliased, "shares memory with the parameter"),
    (EMAPullsTheModel, "ema.update(model) changed the model's 0.weight"),
])
def test_wrong_ema_updates_get_their_hints(ema_class, expected):
    feedback = exercises.check_ema_update(ema_class)
    assert feedback.status == exercises.TRY_AGAIN and expected in said(feedback)


def test_an_ema_stub_is_not_yet():
    class Stub(EMA):
        def update(self, model):
            raise NotImplementedError()

    assert exercises.check_ema_update(Stub).status == exercises.NOT_YET


# --- the notebooks and their student copies ----------------------------------------------------------

def source_notebooks():
    return sorted(SOURCES.glob("*.ipynb"))


def every_source_notebook():
    """The solution copies in both languages."""
    return [*source_notebooks(), *sorted(SOURCES_ZH.glob("*.ipynb"))]


def student_copy_of(source):
    return (STUDENT_ZH if source.parent == SOURCES_ZH else STUDENT) / source.name


def shown(path):
    return path.relative_to(SOURCES).as_posix()


def test_there_are_six_exercises_with_checks():
    assert len(source_notebooks()) >= 6
    for path in source_notebooks():
        graded = [c for c in code_cells(read(path)) if c.metadata.get("nbgrader", {}).get("grade")]
        assert graded and all("exercises.check_" in c.source for c in graded), path.name


@pytest.mark.parametrize("path", every_source_notebook(), ids=shown)
def test_nbgrader_can_take_the_source_notebook_unchanged(path):
    from nbgrader.nbgraderformat import MetadataValidator

    notebook = read(path)
    MetadataValidator().validate_nb(notebook)
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if SOLUTION.search(cell.source):
            assert meta.get("solution"), f"solution region outside a solution cell:\n{cell.source}"
            # indented: the stub raises only when the student's function or method runs, not the cell
            assert all(match.group(0).startswith((" ", "\t")) for match in SOLUTION.finditer(cell.source))
        if meta.get("grade") and cell.cell_type == "code":
            assert HIDDEN.search(cell.source), "every test cell asserts its check in hidden tests"
            assert "print(feedback)" in cell.source, "feedback is printed: an execute_result is read as a score"
        if HIDDEN.search(cell.source):
            assert meta.get("grade"), f"hidden tests outside an autograder test cell:\n{cell.source}"


def test_make_student_writes_exactly_the_committed_copies(tmp_path):
    subprocess.run([sys.executable, "-m", "graphleaf_edu.exercises", "student", str(SOURCES), str(tmp_path)],
                   check=True, cwd=ROOT, capture_output=True)
    generated = {p.name: p.read_bytes() for p in tmp_path.glob("*.ipynb")}
    committed = {p.name: p.read_bytes() for p in STUDENT.glob("*.ipynb")}
    assert sorted(generated) == sorted(p.name for p in source_notebooks())
    assert generated == committed, "student copies drifted from instructor/exercises: run `make student`"


def test_make_student_writes_exactly_the_committed_chinese_copies(tmp_path):
    """`make student` writes the Chinese student copies from the Chinese solution copies too; each then
    records the English student copy it translates (tools/twin_sync.py --stamp), a record set aside here."""
    subprocess.run([sys.executable, "-m", "graphleaf_edu.exercises", "student", str(SOURCES_ZH), str(tmp_path)],
                   check=True, cwd=ROOT, capture_output=True)

    def unstamped(path):
        notebook = read(path)
        for cell in notebook.cells:
            cell.metadata.pop("translation", None)
        return notebook

    generated = {p.name: unstamped(p) for p in tmp_path.glob("*.ipynb")}
    committed = {p.name: unstamped(p) for p in STUDENT_ZH.glob("*.ipynb")}
    assert sorted(generated) == sorted(p.name for p in SOURCES_ZH.glob("*.ipynb"))
    assert generated == committed, "Chinese student copies drifted from instructor/exercises/zh-CN: run `make student`"


def solution_lines(notebook):
    """Lines of the solution regions and solution cells that appear nowhere else in the notebook."""
    regions, elsewhere = [], []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        found = [m.group(1) for m in SOLUTION.finditer(cell.source)]
        if meta.get("solution") and not found:
            found = [cell.source]
        regions += found
        elsewhere.append(SOLUTION.sub("", cell.source))
    lines = {line.strip() for region in regions for line in region.splitlines()}
    return {line for line in lines if line and line not in "\n".join(elsewhere)}


@pytest.mark.parametrize("path", every_source_notebook(), ids=shown)
def test_a_student_copy_has_no_solution_no_hidden_test_and_no_output(path):
    source, student = read(path), read(student_copy_of(path))
    text = "\n".join(cell.source for cell in student.cells)
    answers = solution_lines(source)
    assert answers, "the source notebook has solutions to hide"
    assert not [line for line in answers if line in text]
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "feedback.passed" not in text
    assert "raise NotImplementedError()" in text
    for cell in student.cells:
        assert cell.get("outputs", []) == [] and cell.get("execution_count") is None


def test_students_need_no_nbgrader():
    probe = "import sys, graphleaf_edu.exercises; print('nbgrader' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "False"


def test_student_copy_follows_nbgrader_and_leaves_its_argument_alone():
    notebook = new_notebook(cells=[
        new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
                      metadata={"nbgrader": {"solution": True, "grade": False, "locked": False,
                                             "grade_id": "f", "schema_version": 3}},
                      outputs=[], execution_count=3),
        new_code_cell("print(f())\n### BEGIN HIDDEN TESTS\nassert f() == 1\n### END HIDDEN TESTS",
                      metadata={"nbgrader": {"solution": False, "grade": True, "locked": True, "points": 1,
                                             "grade_id": "t", "schema_version": 3}},
                      execution_count=4,
                      outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")]),
    ])
    before = copy.deepcopy(notebook)
    student = exercises.student_copy(notebook)
    assert notebook == before
    assert [c.source for c in student.cells] == ["def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()",
                                                 "print(f())"]
    assert [c.outputs for c in student.cells] == [[], []]


def test_solution_regions_outside_solution_cells_are_refused():
    notebook = new_notebook(cells=[new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")])
    with pytest.raises(RuntimeError, match="Solution region detected in a non-solution cell"):
        exercises.student_copy(notebook)


def test_write_student_copies_mirrors_the_source_folder(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(SOURCES / "ex1_leaf_flags.ipynb", source)
    destination = tmp_path / "dest"
    destination.mkdir()
    (destination / "old_exercise.ipynb").write_text("{}")
    (destination / "notes.txt").write_text("kept")
    assert exercises.write_student_copies(source, destination) == [destination / "ex1_leaf_flags.ipynb"]
    assert sorted(p.name for p in destination.iterdir()) == ["ex1_leaf_flags.ipynb", "notes.txt"]
    with pytest.raises(ValueError, match="folder of their own"):
        exercises.write_student_copies(source, source)
    with pytest.raises(FileNotFoundError, match="no notebooks in"):
        exercises.write_student_copies(tmp_path / "dest" / "nothing", tmp_path / "x")


def test_hints_and_links_point_to_lessons_of_the_suite():
    import tomllib

    listed = tomllib.loads((ROOT / "notebooks" / "course.toml").read_text())["notebook"]
    lessons = {entry["path"].removesuffix(".ipynb") for entry in listed if entry["group"] in ("core", "deep dive")}
    named = {getattr(module, name) for module in vars(exercises).values() if isinstance(module, type(exercises))
             for name in vars(module) if name.endswith("_LESSON")}
    assert named and named <= lessons, named - lessons
    for path in every_source_notebook():
        text, student = path.read_text(), student_copy_of(path).parent
        for target in re.findall(r"\]\((\.\./[^)]+\.ipynb)\)", text):
            # the same link must work from the solution copy and from the student copy
            resolved = (path.parent / target).resolve()
            assert resolved == (student / target).resolve(), f"{shown(path)}: {target}"
            assert resolved.is_file(), f"{shown(path)}: {target}"
            lesson = resolved.relative_to(ROOT / "notebooks").as_posix().removeprefix(f"{ZH}/")  # or its twin
            assert lesson.removesuffix(".ipynb") in lessons, f"{shown(path)}: {target}"
        for target in re.findall(r"\]\((ex\d_[a-z_]+\.ipynb)\)", text):
            assert (path.parent / target).exists(), f"{shown(path)} links to {target}"


@pytest.mark.parametrize("folder", [SOURCES, STUDENT, SOURCES_ZH, STUDENT_ZH], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_module_ex4_writes_beside_each_copy_stays_out_of_git(folder):
    """ex4's %%writefile cell writes rows_dataset.py beside the notebook it runs in: the solution in an
    instructor's folder, a student's answer in theirs. Neither is committed or published (the student tree
    takes what git does not ignore)."""
    assert (folder / "ex4_spawn_safe_dataset.ipynb").is_file()
    module = (folder / "rows_dataset.py").relative_to(ROOT).as_posix()
    assert subprocess.run(["git", "check-ignore", "--quiet", module], cwd=ROOT, check=False).returncode == 0, module
