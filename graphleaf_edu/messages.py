"""The words of the notes, the runner and the README's error index, written once.

The notes added to an error (``graphleaf_edu.on_error``), the runner's words (``python -m
graphleaf_edu``), the ``--keep-going`` summary and the README's error index (``tools/error_index.py``)
quote these constants; each cause's own words and fix are ``graphleaf_edu.causes``' constants.
Each reaches the user through ``graphleaf_edu.i18n.say`` (re-exported here as ``say``), which fills
in its ``{fields}`` and translates it (each is marked with ``N_`` for the catalogs). A bottom layer: it imports only ``i18n``.

    >>> say(SENT_AT, place="train.py:72  queue.put(logits)")
    'sent at train.py:72  queue.put(logits)'
"""
from __future__ import annotations

from graphleaf_edu.i18n import N_, say

__all__ = ["CLONE_RULE", "say"]


# --- detach() or detach().clone(): the one rule ------------------------------------------------------
CLONE_RULE = N_(
    "`t.detach()` shares t's memory and is enough to copy or send; use `t.detach().clone()` only when t or "
    "the detached tensor is later changed in place (an optimizer step, `+=`): the change shows in both"
)

# A send (a queue, a spawned process' arguments): the fix is at the call that sends.
SEND_FIX = N_("detach it where it is sent: pass `t.detach()` (`queue.put(t.detach())`, `Process(args=(t.detach(),))`)")

# --- the notes on an error (graphleaf_edu.on_error) --------------------------------------------------
NOTE_PREFIX = "graphleaf_edu: "  # a name, the same in every language (notes are found by it)
COPYING_ROOT = N_("copying root = a {type_name} ({how})")
SENDING_ROOT = N_("sending root = a {type_name} ({how})")
COPIED_AT = N_("copied at {place}")
SENT_AT = N_("sent at {place}")
PLACE_UNKNOWN = N_("no line of your own code is on the traceback (the error came from library code alone)")
HOW_DEEPCOPY = N_("copy.deepcopy(x) called in {called_in}")
HOW_INNER_DEEPCOPY = N_("the innermost copy that fails: copy.deepcopy(x) called in {called_in}, inside a __deepcopy__")
HOW_DATASET = N_("the DataLoader's dataset, found in {called_in}")
HOW_PICKLED = N_("the object torch.multiprocessing was pickling")
HOW_PROCESS = N_("a spawned Process: its target and arguments are pickled at start()")
HOW_QUEUE = N_("the object put on a multiprocessing Queue, pickled later by its feeder thread")
HOW_THE_FAILING_LINE = N_("the failing line")
NOT_FOUND_COPIED = N_(
    "could not find the object being copied in the traceback; "
    "call graphleaf_edu.explain(obj) on it to name its non-leaf tensors"
)
NOT_FOUND_SENT = N_(
    "could not find the object being sent in the traceback; "
    "call graphleaf_edu.explain(obj) on it to name its non-leaf tensors"
)
NOTHING_REACHABLE_COPY = N_("no non-leaf tensor is reachable from root by deepcopy's protocol")
NOTHING_REACHABLE_SEND = N_("no tensor that torch.multiprocessing refuses is reachable from root by pickle's rules")
MORE_FINDINGS = N_("... and {count} more: graphleaf_edu.explain(root)")
SAFE_COPY_HINT = N_("graphleaf_edu.safe_deepcopy(root) copies root with these tensors detached")
SEND_RULES = N_("walked by what torch.multiprocessing sends: a tensor's data only (not its .grad, not its attributes)")
CREATED_AT = N_("created at {places}")
CREATED_IN_LIBRARY = N_(
    "created at {places}, inside the library call made there "
    "(a line that stored it later, such as a hook's, is not on this stack)"
)
CREATED_NOT_RECORDED = N_("its creation was not recorded (it was made before origins were turned on)")
CALLED_FROM = N_("{place} (called from {outer})")
ORIGINS_HINT_RUNNER = N_(
    "to name the line that created each tensor, run again with origins on: "
    "{command}"
)
ORIGINS_HINT_CODE = N_(
    "to name the line that created each tensor, turn origins on before the forward pass: "
    "torch.autograd.set_detect_anomaly(True, check_nan=False)"
)
FEEDER_THREAD = N_(
    "the error was raised in the Queue's feeder thread: the item was dropped, and the script went on"
)
CELL_PLACE = N_("Cell {cell}, line {line}")
GROUPED_FINDING = N_("{where}: {count} tensors, {cause} (grad_fn={grad_fn}) | fix: {fix}")

# --- python -m graphleaf_edu ---------------------------------------------------------------------
KG_CANNOT_CONTINUE = N_(
    "What --keep-going cannot continue past: a process it does not run in (a spawned or forkserver child,\n"
    "a torch.multiprocessing.spawn worker: their own deepcopies and sends fail as usual, and the error\n"
    "that reaches this process ends the run); a fork DataLoader worker that collates non-leaf samples its\n"
    "dataset computes in __getitem__ (`stack(): functions with out=... arguments don't support automatic\n"
    "differentiation`; the non-leaf tensors a dataset holds are detached for the run when the loader's\n"
    "iterator starts, so their collate goes on); a tensor subclass with its own __deepcopy__; and any\n"
    "other error the script raises. What a fork child (a DataLoader worker) copies or sends with a\n"
    "culprit detached is not in the summary."
)
RUNNER_USAGE = N_(
    "usage: python -m graphleaf_edu [--keep-going [--patch FILE] [--library PATH]] [--origins] [--lang LANG]\n"
    "                               SCRIPT|DIR [ARGS...]\n"
    "Runs SCRIPT (or DIR/__main__.py) as __main__; if it raises the graph-leaves deepcopy error (or torch.multiprocessing's\n"
    "\"Cowardly refusing to serialize\"), the traceback ends with notes naming the line of your code that\n"
    "copied or sent the object, every non-leaf tensor's path, its cause and its fix.\n"
    "\n"
    "  --keep-going  every cause in one run: each deepcopy or send that would fail is recorded and done\n"
    "                with the culprits detached, so the script goes on; a summary at exit names each\n"
    "                cause once (path, cause, the lines that copied or sent, stored and created it, and\n"
    "                the change to the storing line, else the fix in words).\n"
    "                A failure inside a try of the script that catches it is raised as usual and\n"
    "                listed as handled by the script. Records origins. Exit status: the script's own\n"
    "                non-zero status, else 1 when a cause was found, else 0. Under torchrun\n"
    "                (torchrun --nproc-per-node 2 -m graphleaf_edu --keep-going train.py) each rank keeps\n"
    "                going and rank 0 prints one summary, with the ranks each cause was met on.\n"
    "  --patch FILE  also write the changes shown as one unified diff to FILE (git apply FILE, or\n"
    "                patch -p1 < FILE); your files are never edited\n"
    "  --library PATH  a file or folder of code you do not own (like site-packages): a copy made\n"
    "                there is named at your line that called it, the change at your storing line\n"
    "  --origins     also name the line of your code that created each of those tensors (autograd's\n"
    "                anomaly mode: a compute-bound script runs slower, ~1.5 x in make bench)\n"
    "  --lang LANG   the language of the notes and the summary: en (the default) or zh-CN (Simplified\n"
    "                Chinese); GRAPHLEAF_EDU_LANG=zh_CN does the same"
)  # the runner prints KG_CANNOT_CONTINUE after it, a blank line between
RUNNER_NO_SCRIPT = N_("python -m graphleaf_edu: which script? none given")
RUNNER_UNKNOWN_OPTION = N_("python -m graphleaf_edu: unknown option {option}")
RUNNER_NO_SUCH_SCRIPT = N_("python -m graphleaf_edu: no such script: {script}")

# --- the README's error index (tools/error_index.py writes it between its markers) ------------------
INDEX_RUNNER = N_("`python -m graphleaf_edu --keep-going your_script.py`")
INDEX_EXPLAIN_COPIED = N_("`gl.explain(obj)` on what was copied (for an EMA/SWA/teacher wrapper: the model you gave it)")
INDEX_EXPLAIN_WEIGHT_NORM = N_("`gl.explain(model)` (names `….weight`, cause \"old weight_norm\")")
INDEX_EXPLAIN_GRAD = N_("`gl.explain(w)` (names `.grad`)")
INDEX_EXPLAIN_DATASET = N_("`gl.explain(loader.dataset)`")
INDEX_EXPLAIN_SENT = N_("`gl.explain(loader.dataset, \"multiprocessing\")`, or `gl.explain(t, \"multiprocessing\")` on what you sent")
INDEX_PARAMETRIZED_SAVE = N_("{fix}; save `model.state_dict()` (parametrized modules refuse `torch.save(model)`)")
INDEX_FOR_A_LONE_TENSOR = N_("for a lone tensor: {fix}")
INDEX_FOR_A_DATASET = N_("for a dataset: as in the rows above")
INDEX_SAME_FIX = N_("the same as in the row above")
INDEX_SEE_THE_ERROR = N_("the same as for the dataset rows above; always pass `timeout=` to see the error")

# --- python -m graphleaf_edu --keep-going: the summary at exit ----------------------------------
KG_PREFIX = "graphleaf_edu --keep-going: "
KG_RULE = "=" * 72  # the line above the summary's header: the script's own output ends there
KG_NONE = N_("no deepcopy or torch.multiprocessing send met a non-leaf tensor in this run")
KG_ITSELF = N_("{number}. the {type_name} itself: {how}")
KG_CHANGES_KEEP = N_(
    "each change stores the tensor detached: it stays a tensor (a list of tensors stays a list of tensors) and "
    "shares the original's memory, so the script computes and prints what it did (`.item()` only where a number "
    "is what you keep)"
)
KG_CHANGE_AT = N_("change at {where}:")
KG_IN_LIBRARY = N_("the copy is made inside {module}, code you do not own: the change belongs where the tensor is stored")
KG_RANKS = N_("met on rank {ranks}")
KG_FORK_DETACHED = N_(
    "a fork DataLoader's dataset held non-leaf tensors (checked when its iterator started): for this run only "
    "they were detached before its workers started, so the run went on past the workers' collate; your files "
    "are unchanged"
)
KG_PATCH_WRITTEN = N_("these changes as one diff: {file} (apply it with `git apply {file}` or `patch -p1 < {file}`)")
KG_PATCH_HINT = N_("add `--patch fix.diff` before the script to get these changes as one diff for `git apply fix.diff`")
KG_STOPPED = N_("the script stopped at: {error}")
KG_TIMES = N_(" ({times} times)")
KG_NO_USER_LINE = N_("no line of your own code on the stack")
KG_HANDLED = N_("handled by the script: its own except clause caught the error, raised as without --keep-going")
CHECKED_AT = N_("checked when the loader's iterator started at {place}")
HOW_FORK_DATASET = N_("a fork DataLoader's dataset: its workers read it as it is")
KG_LIMIT_WORKER_STACK = N_(
    "--keep-going cannot continue past a fork DataLoader worker that collates non-leaf samples: "
    "fix the dataset named above and run again"
)
KG_LIMIT_UNREACHED = N_(
    "--keep-going cannot continue past this one: it was raised where its hooks do not run (a spawned child "
    "process, a tensor subclass' own __deepcopy__); its notes above name it"
)
