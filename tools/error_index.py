"""Write the README's error index (between its markers) from the package's message constants.

    python tools/error_index.py           rewrite the block in README.md
    python tools/error_index.py --check   exit 1 if README.md's block differs from what the constants give

Each row: a message PyTorch raises (``graphleaf_edu.errors``), what to run, the fix in the words the
notes use (``graphleaf_edu.messages``), and the lessons that explain it.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch

from graphleaf_edu import causes as C
from graphleaf_edu import errors
from graphleaf_edu import messages as M
from graphleaf_edu.diagnose import find_nonleaf

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- error-index:start -->", "<!-- error-index:end -->"
HEADER = ("the message", "run", "the fix, in one line", "explained in")
WORKER = "`Caught RuntimeError in DataLoader worker process 0.` … "
STACK_OUT = ("`stack(): functions with out=... arguments don't support automatic differentiation, "
             "but one of the arguments requires grad.`")


def old_weight_norm_fix() -> str:
    """The fix the package gives for a real module under the old ``weight_norm`` (its words name the
    parameter, so they are made where the cause is judged)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the old API warns that it is deprecated
        module = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    return find_nonleaf(module)[0].fix


def rows() -> list[tuple[str, str, str, str]]:
    graph_leaves = f"`{errors.GRAPH_LEAVES} at the moment`"
    cowardly = f"`{errors.COWARDLY_MESSAGE.split('  ')[0]}`"
    dataset_fix = C.DATASET.fix
    return [
        (graph_leaves, f"{M.INDEX_RUNNER}; or {M.INDEX_EXPLAIN_COPIED}",
         f"{C.CACHED.fix}; {M.say(M.INDEX_FOR_A_LONE_TENSOR, fix=C.ROOT_TENSOR.fix)}",
         "`quick_fix`; `00_start_here` §2; `01`, `02`"),
        ("the same message, for a module that uses `torch.nn.utils.weight_norm`", M.INDEX_EXPLAIN_WEIGHT_NORM,
         M.say(M.INDEX_PARAMETRIZED_SAVE, fix=old_weight_norm_fix()), "deep dive `in_the_wild` §1"),
        ("the same message, after `backward(create_graph=True)`", M.INDEX_EXPLAIN_GRAD, C.NONLEAF_GRAD.fix,
         "deep dive `what_deepcopy_does` §2; deep dive `in_the_wild` §6"),
        (f"{WORKER}`{errors.GRAPH_LEAVES.split(' support')[0]}…`", M.INDEX_EXPLAIN_DATASET, dataset_fix,
         "`03_dataloader_workers`; deep dive `dataloader_workers`, \"`fork`\""),
        (f"{WORKER}{STACK_OUT}", M.INDEX_EXPLAIN_DATASET, M.INDEX_SAME_FIX, "`03_dataloader_workers`; deep dive `dataloader_workers`, \"`fork`\""),
        (cowardly, f"{M.INDEX_RUNNER}; or {M.INDEX_EXPLAIN_SENT}",
         f"{M.SEND_FIX}; {M.INDEX_FOR_A_DATASET}",
         "`03_dataloader_workers`; deep dive `dataloader_workers`, \"Why: `torch.multiprocessing`'s pickler\"; deep dive `in_the_wild` §7"),
        ("`DataLoader timed out after N seconds` with `batch_size=None` (or a DataLoader that never returns)",
         M.INDEX_EXPLAIN_DATASET, M.INDEX_SEE_THE_ERROR,
         "deep dive `dataloader_workers`, \"`batch_size=None`\""),
    ]


def block() -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "| " + " | ".join("---" for _ in HEADER) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows()]
    return "\n".join([*lines, "", f"`detach()` or `detach().clone()`: {M.CLONE_RULE}."])


def with_block(readme: str, text: str) -> str:
    """``readme`` with the text between the error-index markers replaced by ``text``."""
    if readme.count(START) != 1 or readme.count(END) != 1 or readme.index(START) > readme.index(END):
        raise ValueError(f"README.md needs exactly one {START} line followed by one {END} line")
    head, rest = readme.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{text}\n{END}{tail}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that README.md is up to date")
    args = parser.parse_args(argv)
    current = README.read_text()
    wanted = with_block(current, block())
    if args.check:
        if current != wanted:
            print("README.md's error index differs from the message constants: run `make error-index`")
            return 1
        return 0
    README.write_text(wanted)
    print("wrote the error index in README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
