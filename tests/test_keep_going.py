"""``python -m graphleaf_edu --keep-going`` on real scripts (tests/note_scripts): the script reaches its
end where continuing is possible, every cause is in the summary once with the lines that created and
copied or sent it, a failure the script catches is marked handled, and the exit status follows the rule."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from script_runs import SCRIPTS, line_of, run_scripts

from graphleaf_edu import causes as C
from graphleaf_edu import messages as M
from graphleaf_edu.keep_going import _catches_runtime_error


def summary(completed: subprocess.CompletedProcess[str]) -> list[str]:
    """The summary: its header line (the one line with the prefix, which it loses here) and every line after it.
    Whatever the script printed before it, a blank line and a rule set it apart."""
    lines = completed.stderr.splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith(M.KG_PREFIX)]
    assert len(starts) == 1, completed.stderr[-3000:]
    assert lines[starts[0] - 2:starts[0]] == ["", M.KG_RULE], completed.stderr[-3000:]
    return [lines[starts[0]].removeprefix(M.KG_PREFIX), *lines[starts[0] + 1:]]


def entries(lines: list[str]) -> dict[str, list[str]]:
    """Each numbered cause of the summary: its first line (the path) -> the lines of its block."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in lines:
        match = re.match(r"^\d+\. (.+)$", line)
        if match:
            current = found.setdefault(match.group(1), [])
        elif not line:
            current = []  # a blank line ends a block (whatever follows the summary is not in it)
        elif line.startswith("   "):
            current.append(line.strip())
    return found


def starting(lines: list[str], prefix: str) -> str:
    (line,) = [line for line in lines if line.startswith(prefix)]
    return line


def itself(type_name: str, how: str) -> str:
    """The title of a cause that is the object copied or sent itself, without its number."""
    return M.say(M.KG_ITSELF, number=0, type_name=type_name, how=how).removeprefix("0. ")


@pytest.fixture(scope="module")
def runs() -> dict[str, subprocess.CompletedProcess[str]]:
    return run_scripts({" ".join(args): args for args in [
        ("three_causes.py",), ("averaged_model.py",), ("simple_queue.py",), ("losses_dataclass.py",),
        ("loaders.py", "spawn"), ("loaders.py", "fork"), ("fork_unbatched.py",), ("hook_cache.py",), ("handled_copy.py",),
        ("fork_collate.py",), ("late_queue.py",), ("exit_status.py", "3", "cause"), ("exit_status.py", "0", "cause"),
        ("exit_status.py", "0", "clean")]}, options=("--keep-going",))


def test_three_causes_in_one_run_each_once_with_its_lines(runs):
    completed = runs["three_causes.py"]
    assert completed.stdout.splitlines()[-1] == "reached the end"
    assert completed.returncode == 1
    lines = summary(completed)
    assert lines[0].startswith("3 causes in this run.") and "what a fixed run prints" in lines[0]
    found = entries(lines)
    assert list(found) == [itself("Tensor", M.HOW_PICKLED), "root.attention", "root.losses[0..2] (3 tensors)"]
    sent, cached, logged = found.values()
    assert M.say(M.SENT_AT, place=line_of("three_causes.py", "monitor.put(logits)") + " (3 times)") in sent
    assert sent[-3:] == ["change at three_causes.py:30:", "monitor.put(logits)", "→ monitor.put(logits.detach())"]
    assert M.say(M.COPIED_AT, place=line_of("three_causes.py", "swa = AveragedModel(model, use_buffers=True)")) in cached
    assert M.say(M.KG_IN_LIBRARY, module="torch.optim.swa_utils") in cached
    where, text = line_of("averaged_model.py", "self.attention = scores.softmax(-1)").split("  ", 1)
    assert starting(cached, "created at ").startswith(f"created at {where} in forward  {text} (called from ")
    assert starting(cached, "stored at ") == f"stored at {where} in forward  {text}"
    assert cached[-1] == f"fix: {C.known('CACHED').fix}", "read back in forward: no change is safe, the fix in words"
    assert M.say(M.COPIED_AT, place=line_of("three_causes.py", "checkpoint = copy.deepcopy(history)")) in logged
    where, text = line_of("three_causes.py", "loss = logits.pow(2).mean()").split("  ", 1)
    assert f"created at {where} in main  {text}" in logged
    assert logged[-2:] == ["history.losses.append(loss)", "→ history.losses.append(loss.detach())"]
    assert "no_grad" not in "\n".join(sent + cached + logged)
    assert lines.count(M.CLONE_RULE) == 1 and lines.count(M.KG_CHANGES_KEEP) == 1, "the advice, once"


ONE_CAUSE = [  # (run, the title, how it was copied or sent, the user's line, the line that created it)
    ("averaged_model.py", "root.attention", M.COPIED_AT, "swa = AveragedModel(model)", "self.attention = scores.softmax(-1)"),
    ("simple_queue.py", itself("Tensor", M.HOW_PICKLED), M.SENT_AT, "queue.put(logits)", "logits = model(torch.randn(3, 4))"),
    ("losses_dataclass.py", "root.losses[0..19] (20 tensors)", M.COPIED_AT, "checkpoint = copy.deepcopy(history)",
     "loss = ((model(x) - y) ** 2).mean()"),
    ("loaders.py spawn", "root.rows", M.SENT_AT, "for batch in loader:", "dataset = Embeddings(encoder(torch.randn(8, 3)))"),
    ("loaders.py fork", "root.rows", M.CHECKED_AT, "for batch in loader:", "dataset = Embeddings(encoder(torch.randn(8, 3)))"),
    # batch_size=None: an unfixed run waits for the loader's timeout; the check at the iterator's start names it first
    ("fork_unbatched.py", "root.rows", M.CHECKED_AT, "print([tuple(row.shape) for row in loader])", "self.rows = encoder(x)"),
    ("hook_cache.py", "root[0].features", M.COPIED_AT, "ema = copy.deepcopy(encoder)", "encoder(torch.randn(2, 4))"),
    ("late_queue.py", itself("Tensor", M.HOW_PICKLED), M.SENT_AT, "queue.put(logits)",
     "logits = torch.nn.Linear(4, 2)(torch.randn(3, 4))"),
]


@pytest.mark.parametrize(("run", "title", "operation", "statement", "creating"), ONE_CAUSE, ids=[c[0] for c in ONE_CAUSE])
def test_the_script_reaches_its_end_and_names_its_cause_once(runs, run, title, operation, statement, creating):
    completed = runs[run]
    script = run.split()[0]
    assert completed.stdout.splitlines()[-1] == "reached the end", completed.stderr[-2000:]
    assert completed.returncode == 1
    lines = summary(completed)
    assert lines[0].startswith("1 cause in this run.")
    found = entries(lines)
    assert list(found) == [title]
    (block,) = found.values()
    assert M.say(operation, place=line_of(script, statement)) in block
    where, text = line_of(script, creating).split("  ", 1)
    created = starting(block, "created at ")
    assert created.startswith("created at " + where) and f"  {text}" in created


STORED = [  # (run, the line that stored it, that line as it should be; None: no safe change)
    ("averaged_model.py", "averaged_model.py", "self.attention = scores.softmax(-1)", None),
    ("losses_dataclass.py", "losses_dataclass.py", "history.losses.append(loss)", "history.losses.append(loss.detach())"),
    ("loaders.py spawn", "loaders.py", "self.rows = rows", "self.rows = rows.detach()"),
    ("loaders.py fork", "loaders.py", "self.rows = rows", "self.rows = rows.detach()"),
    ("hook_cache.py", "hook_cache.py", "module.features = output", "module.features = output.detach()"),
    ("simple_queue.py", "simple_queue.py", "queue.put(logits)", "queue.put(logits.detach())"),
]


@pytest.mark.parametrize(("run", "script", "stored", "changed"), STORED, ids=[c[0] for c in STORED])
def test_each_cause_names_the_line_that_stored_it_and_its_change(runs, run, script, stored, changed):
    (block,) = entries(summary(runs[run])).values()
    where, text = line_of(script, stored).split("  ", 1)
    if not run.startswith("simple_queue"):  # there the storing line is the sending line, said once
        assert re.fullmatch(rf"stored at {re.escape(where)}( in \w+)?  {re.escape(text)}", starting(block, "stored at "))
    if changed is None:
        assert starting(block, "fix: ") and not any(line.startswith("change at") for line in block)
    else:
        assert block[-3:] == [M.say(M.KG_CHANGE_AT, where=where), stored, f"→ {changed}"]


def test_a_fork_loaders_dataset_is_named_before_its_workers_read_it(runs):
    lines = summary(runs["loaders.py fork"])
    assert lines[-1] == M.KG_FORK_DETACHED
    assert f"root is an Embeddings: {M.HOW_FORK_DATASET}" in [line.strip() for line in lines]


def test_past_a_fork_workers_collate_the_run_goes_on_with_the_dataset_detached(runs):
    completed = runs["fork_collate.py"]
    assert completed.stdout.splitlines()[-1] == "reached the end", completed.stderr[-2000:]
    assert completed.returncode == 1
    lines = summary(completed)
    assert list(entries(lines)) == ["root.rows"]
    assert lines[-1] == M.KG_FORK_DETACHED and not any(line.startswith(M.say(M.KG_STOPPED, error="")) for line in lines)
    assert (SCRIPTS / "fork_collate.py").read_text().count(".detach()") == 0, "the user's file is untouched"


def test_a_failure_the_script_catches_is_raised_to_it_and_marked_handled(runs):
    completed = runs["handled_copy.py"]
    assert completed.stdout.splitlines() == ["deepcopy failed, copying the state_dict instead", "reached the end"]
    (lines,) = entries(summary(completed)).values()
    assert M.say(M.COPIED_AT, place=line_of("handled_copy.py", "return copy.deepcopy(model)")) in lines
    assert lines[-1] == M.KG_HANDLED


@pytest.mark.parametrize(("run", "status"), [("exit_status.py 3 cause", 3), ("exit_status.py 0 cause", 1),
                                             ("exit_status.py 0 clean", 0)])
def test_exit_status_is_the_scripts_own_else_one_when_a_cause_was_found(runs, run, status):
    completed = runs[run]
    assert completed.returncode == status
    assert completed.stdout.splitlines() == ["reached the end"], "the script's own output is unchanged"
    if run.endswith("clean"):
        assert summary(completed) == [M.KG_NONE]


def test_help_says_what_it_cannot_continue_past():
    usage = subprocess.run([sys.executable, "-m", "graphleaf_edu", "--help"], capture_output=True, text=True,
                           timeout=120, check=False)
    assert usage.returncode == 0 and "--keep-going" in usage.stdout
    assert M.KG_CANNOT_CONTINUE in usage.stdout


def test_the_handler_reading_sees_which_excepts_take_a_runtime_error():
    import dis

    def caught():
        try:
            print()
        except RuntimeError:
            return 2

    def other():
        try:
            print()
        except KeyError:
            return 2

    def bare():
        try:
            print()
        except:  # noqa: E722
            return 2

    def tuple_of():
        try:
            print()
        except (ValueError, Exception):  # noqa: BLE001 - the tuple form is what is read
            return 2

    def with_only():
        with open(__file__):
            print()

    for function, expected in [(caught, True), (other, False), (bare, True), (tuple_of, True), (with_only, False)]:
        code = function.__code__
        instructions = list(dis.get_instructions(code))
        printing = next(n for n, i in enumerate(instructions) if i.argval == "print")
        call = next(i.offset for i in instructions[printing:] if i.opname == "CALL")  # print(), inside the try
        assert _catches_runtime_error(code, call) is expected, function.__name__
