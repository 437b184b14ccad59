"""Write the README's error index (between its markers) from the package's message constants.

    python tools/error_index.py           rewrite the block in README.md and in README.zh-CN.md
    python tools/error_index.py --check   exit 1 if a README's block differs from what the constants give

README.zh-CN.md's index is the same table in the package's Chinese (its catalogs): PyTorch's messages
stay as PyTorch prints them, the lessons keep their file names.

Each row: a message PyTorch raises (``graphleaf_edu.errors``), what to run, the fix in the words the
notes use (``graphleaf_edu.messages``), and the lessons that explain it.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import course_stats  # with_section: the one way text between two markers is replaced
import torch

from graphleaf_edu import causes as C
from graphleaf_edu import errors
from graphleaf_edu import messages as M
from graphleaf_edu.diagnose import find_nonleaf
from graphleaf_edu.i18n import language, say, speaking

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# Each README with an error index, and the language its index speaks.
READMES = {README: "en", ROOT / "README.zh-CN.md": "zh-CN"}
START, END = "<!-- error-index:start -->", "<!-- error-index:end -->"
HEADER = ("the message", "run", "the fix, in one line", "explained in")
# The index's own words (not the package's), in Chinese.
CHINESE = {
    HEADER: ("错误信息", "运行", "一行说清修复", "讲解"),
    "; or ": "；或",
    "; ": "；",
    ", ": "、",
    "the same message, for a module that uses `torch.nn.utils.weight_norm`":
        "同一条信息，出现在用了 `torch.nn.utils.weight_norm` 的模块上",
    "the same message, after `backward(create_graph=True)`": "同一条信息，出现在 `backward(create_graph=True)` 之后",
    " with `batch_size=None` (or a DataLoader that never returns)": "，且 `batch_size=None`（或 DataLoader 一直不返回）",
    "`detach()` or `detach().clone()`: {rule}.": "`detach()` 还是 `detach().clone()`：{rule}。",
}
CLONE_LINE = "`detach()` or `detach().clone()`: {rule}."
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
    dataset_fix = C.known("DATASET").fix
    runner_first = f"{say(M.INDEX_RUNNER)}{words('; or ')}{say(M.INDEX_EXPLAIN_DATASET)}"  # the runner finds every cause (and a fork loader's, before it hangs)
    return [
        (graph_leaves, f"{say(M.INDEX_RUNNER)}{words('; or ')}{say(M.INDEX_EXPLAIN_COPIED)}",
         f"{say(C.known('CACHED').fix)}{words('; ')}{M.say(M.INDEX_FOR_A_LONE_TENSOR, fix=say(C.known('ROOT_TENSOR').fix))}",
         lessons("`quick_fix`", "`00_start_here` §2", f"`01`{words(', ')}`02`")),
        (words("the same message, for a module that uses `torch.nn.utils.weight_norm`"), say(M.INDEX_EXPLAIN_WEIGHT_NORM),
         M.say(M.INDEX_PARAMETRIZED_SAVE, fix=old_weight_norm_fix()), lessons(dive("in_the_wild", " §1"))),
        (words("the same message, after `backward(create_graph=True)`"), say(M.INDEX_EXPLAIN_GRAD), say(C.known("NONLEAF_GRAD").fix),
         lessons(dive("what_deepcopy_does", " §2"), dive("in_the_wild", " §6"))),
        (f"{WORKER}`{errors.GRAPH_LEAVES.split(' support')[0]}…`", runner_first, say(dataset_fix),
         lessons("`03_dataloader_workers`", dive("dataloader_workers", section="`fork`"))),
        (f"{WORKER}{STACK_OUT}", runner_first, say(M.INDEX_SAME_FIX),
         lessons("`03_dataloader_workers`", dive("dataloader_workers", section="`fork`"))),
        (cowardly, f"{say(M.INDEX_RUNNER)}{words('; or ')}{say(M.INDEX_EXPLAIN_SENT)}",
         f"{say(M.SEND_FIX)}{words('; ')}{say(M.INDEX_FOR_A_DATASET)}",
         lessons("`03_dataloader_workers`", dive("dataloader_workers", section="Why: `torch.multiprocessing`'s pickler"),
                 dive("in_the_wild", " §7"))),
        ("`DataLoader timed out after N seconds`" + words(" with `batch_size=None` (or a DataLoader that never returns)"),
         runner_first, say(M.INDEX_SEE_THE_ERROR),
         lessons(dive("dataloader_workers", section="`batch_size=None`"))),
    ]


def dive(name: str, where: str = "", section: str = "") -> str:
    """A deep dive the index sends the reader to, and a place in it (``" §2"``) or one of its sections
    by its (English) heading: in Chinese marked English, as the deep dives have no Chinese twin yet (the
    quick fix and the core lessons have)."""
    if language() == "en":
        return f"deep dive `{name}`{where}" + (f', "{section}"' if section else "")
    return f"深入专题 `{name}`{where}" + (f" 的“{section}”一节" if section else "") + "（英文）"


def lessons(*places: str) -> str:
    return words("; ").join(places)


def words(english):
    """The index's own words in the language spoken: English, or their Chinese (``CHINESE``)."""
    return english if language() == "en" else CHINESE[english]


def block(lang: str = "en") -> str:
    with speaking(lang):
        header = words(HEADER)
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows()]
        return "\n".join([*lines, "", words(CLONE_LINE).format(rule=say(M.CLONE_RULE))])


def with_block(readme: str, text: str) -> str:
    """``readme`` with the text between the error-index markers replaced by ``text``."""
    if readme.count(START) != 1 or readme.count(END) != 1 or readme.index(START) > readme.index(END):
        raise ValueError(f"README.md needs exactly one {START} line followed by one {END} line")
    return course_stats.with_section(readme, START, END, text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that each README is up to date")
    args = parser.parse_args(argv)
    stale = []
    for readme, lang in READMES.items():
        current = readme.read_text(encoding="utf-8")
        wanted = with_block(current, block(lang))
        if current == wanted:
            continue
        stale.append(readme.name)
        if not args.check:
            readme.write_text(wanted, encoding="utf-8")
            print(f"wrote the error index in {readme.name}")
    if args.check and stale:
        print(f"the error index of {', '.join(stale)} differs from the message constants: run `make error-index`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
