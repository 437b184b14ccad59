"""The Chinese notebooks kept in step with their English twins (issue 29).

    .venv/bin/python tools/twin_sync.py                 check every twin; exit 1 naming each difference
    .venv/bin/python tools/twin_sync.py --stamp ZH...   record that these Chinese notebooks translate their
                                                        English twins' cells as they are now

A Chinese notebook's twin is the English notebook at the same path without ``zh-CN/``:
``notebooks/zh-CN/P`` <-> ``notebooks/P`` and ``instructor/exercises/zh-CN/P`` <-> ``instructor/exercises/P``.
Twins must have:

- the same cells: count, order, type, tags, nbgrader metadata and folding (what JupyterLab and the
  book show folded);
- the same code. Each code cell is parsed (IPython's ``%`` and ``!`` lines turned into the Python they
  run) and the two syntax trees must be equal once comments and translated strings are set aside. A
  string counts as translated when the Chinese one holds Chinese characters (``print("复制后：", y)``);
  any other string must be the English one, so a string the code reads (``"fork"``, a path, a key)
  cannot drift. Strings the code depends on even where they read like prose (the start methods, the
  scenarios' and fixes' keys, a subscript, an attribute's name) are kept: translating them is an error.
  One difference is required: the Chinese setup calls ``setup_notebook(..., lang="zh-CN")``;
- a translation of the English as it is now: each Chinese cell stores the hash of the English cell it
  translates (``metadata.translation.of``), so an English edit (a sentence, a comment, a printed
  string) fails the check until the Chinese cell is updated and ``--stamp`` records it.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import multiprocessing
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import course_stats  # the course list: where the Chinese twins live
import nbformat
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parent.parent
ZH = course_stats.ZH
# Each folder of English notebooks that has Chinese twins, and where those twins live.
TWIN_FOLDERS = [ROOT / "notebooks", ROOT / "instructor" / "exercises"]
# The setup's one required difference: the package speaks Chinese.
SETUP_CALL, LANG_KEYWORD = "setup_notebook", "lang"
CHINESE = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
# Calls whose string argument names an attribute or a submodule (call -> that argument's place): the code reads it.
NAMING_CALLS = {"getattr": 1, "setattr": 1, "hasattr": 1, "delattr": 1, "register_buffer": 0, "register_parameter": 0,
                "get_submodule": 0}
STRING = "<string>"
# What IPython's % and ! lines become: their magic's name, its line and a shell command are code.
MAGIC_CALLS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}
# What nbformat keeps per cell that shows in JupyterLab or the book (beyond the text itself).
SHAPE_KEYS = ("tags", "nbgrader", "jupyter", "jp-MarkdownHeadingCollapsed")


def kept_strings() -> frozenset[str]:
    """Strings a Chinese twin must never translate: the start methods, every scenario's and fix's key."""
    from graphleaf_edu.scenarios import SCENARIOS

    keys = {key for scenario in SCENARIOS.values()
            for key in (scenario.key, *(fix.key for fix in scenario.fixes))}
    return frozenset({*multiprocessing.get_all_start_methods(), *keys, *SCENARIOS})


@dataclass(frozen=True)
class Twins:
    chinese: Path
    english: Path

    @property
    def name(self) -> str:
        return shown(self.chinese)


def shown(path: Path) -> str:
    """A path as the messages name it: from the repository's root where it lies inside."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def chinese_notebooks() -> list[Path]:
    return sorted(path for folder in TWIN_FOLDERS for path in (folder / ZH).rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in path.parts)


def twin_of(chinese: Path) -> Path:
    for folder in TWIN_FOLDERS:
        if chinese.is_relative_to(folder / ZH):
            return folder / chinese.relative_to(folder / ZH)
    raise ValueError(f"{chinese} is not under a zh-CN/ folder of {', '.join(map(str, TWIN_FOLDERS))}")


def all_twins() -> list[Twins]:
    """Every Chinese notebook with its English twin (which may be missing: `orphans` names those)."""
    return [Twins(path, twin_of(path)) for path in chinese_notebooks()]


def orphans() -> list[str]:
    return [twins.name for twins in all_twins() if not twins.english.is_file()]


def source_hash(cell: nbformat.NotebookNode) -> str:
    return hashlib.sha256(cell.source.encode()).hexdigest()[:16]


# --- code -------------------------------------------------------------------------------------------

def python_of(source: str) -> str:
    """The Python a cell runs: IPython's magics and shell lines as the calls they become."""
    return TransformerManager().transform_cell(source)


def called(call: ast.Call) -> str | None:
    """The name a call calls: ``print``, ``setup_notebook`` for ``gl.setup_notebook``."""
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)


class _Strings(ast.NodeTransformer):
    """Takes every string out of a syntax tree (leaving a placeholder), in order, noting the ones the
    code depends on; drops the Chinese setup's ``lang=``."""

    def __init__(self, chinese: bool, kept: frozenset[str]):
        self.chinese, self.kept = chinese, kept
        self.strings: list[tuple[str, bool]] = []  # (the string, whether the code depends on it)
        self._kept_nodes: set[int] = set()

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self._keep(node.slice)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        name = called(node)
        if name in NAMING_CALLS and len(node.args) > NAMING_CALLS[name]:
            self._keep(node.args[NAMING_CALLS[name]])
        if self.chinese and name == SETUP_CALL:
            node.keywords = [kw for kw in node.keywords if kw.arg != LANG_KEYWORD]
        if name in MAGIC_CALLS:
            for argument in node.args[:2]:
                self._keep(argument)
        if name == "run_cell_magic" and len(node.args) == 3 and isinstance(node.args[2], ast.Constant):
            body = node.args[2].value
            try:  # a cell magic over Python (%%writefile x.py) compares as Python
                node.args[2] = ast.Name(id=ast.dump(self.visit(ast.parse(body))))
            except SyntaxError:
                self._keep(node.args[2])
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if not isinstance(node.value, str):
            return node
        self.strings.append((node.value, id(node) in self._kept_nodes or node.value in self.kept))
        return ast.copy_location(ast.Constant(STRING), node)

    def _keep(self, node: ast.AST) -> None:
        self._kept_nodes.update(id(sub) for sub in ast.walk(node) if isinstance(sub, ast.Constant))


def without_strings(source: str, chinese: bool, kept: frozenset[str]) -> tuple[str, list[tuple[str, bool]]]:
    """The cell's syntax tree without its strings (as text), and its strings in order with whether the
    code depends on each."""
    strings = _Strings(chinese, kept)
    tree = strings.visit(ast.parse(python_of(source)))
    return ast.dump(tree), strings.strings


def string_differences(english: list[tuple[str, bool]], chinese: list[tuple[str, bool]]) -> list[str]:
    problems = []
    for (en, depended_on), (zh, _) in zip(english, chinese):
        if en == zh:
            continue
        if depended_on:
            problems.append(f"the code differs: it depends on the string {en!r}, keep it as it is (not {zh!r})")
        elif not CHINESE.search(zh):
            problems.append(f"the code differs: the string {en!r} is {zh!r} here (a string may differ only where "
                            "it is translated into Chinese)")
    return problems


def sets_lang(source: str) -> bool:
    """Whether the cell calls setup_notebook(..., lang="zh-CN")."""
    for node in ast.walk(ast.parse(python_of(source))):
        if isinstance(node, ast.Call) and called(node) == SETUP_CALL:
            return any(kw.arg == LANG_KEYWORD and isinstance(kw.value, ast.Constant) and kw.value.value == ZH
                       for kw in node.keywords)
    return False


def calls_setup(source: str) -> bool:
    return any(isinstance(node, ast.Call) and called(node) == SETUP_CALL
               for node in ast.walk(ast.parse(python_of(source))))


def code_differences(english: str, chinese: str, kept: frozenset[str]) -> list[str]:
    """What differs between two code cells' programs, in words (empty: the same code)."""
    trees = []
    for side, source, is_chinese in (("English", english, False), ("Chinese", chinese, True)):
        try:
            trees.append(without_strings(source, is_chinese, kept))
        except SyntaxError as error:
            return [f"the {side} cell does not parse ({error.msg}, line {error.lineno})"]
    (english_tree, english_strings), (chinese_tree, chinese_strings) = trees
    problems = []
    if calls_setup(english) and not sets_lang(chinese):
        problems.append(f'the Chinese setup must call {SETUP_CALL}(..., {LANG_KEYWORD}="{ZH}")')
    if english_tree != chinese_tree:
        problems.append("the code differs (only comments and strings shown to the student may be translated)")
    else:
        problems += string_differences(english_strings, chinese_strings)
    return problems


# --- notebooks --------------------------------------------------------------------------------------

def shape(cell: nbformat.NotebookNode) -> dict:
    return {"cell_type": cell.cell_type, **{key: cell.metadata[key] for key in SHAPE_KEYS if key in cell.metadata}}


def first_line(cell: nbformat.NotebookNode) -> str:
    return next((line.strip() for line in cell.source.splitlines() if line.strip()), "(empty)")[:60]


def differences(twins: Twins, kept: frozenset[str] | None = None, check_stamps: bool = True) -> list[str]:
    """Every way the Chinese notebook is out of step with its English twin, one line each."""
    if not twins.english.is_file():
        return [f"{twins.name}: no English twin at {shown(twins.english)}"]
    kept = kept_strings() if kept is None else kept
    english, chinese = (nbformat.read(path, as_version=4) for path in (twins.english, twins.chinese))
    if len(english.cells) != len(chinese.cells):
        count = f"{len(chinese.cells)} cells, its English twin {len(english.cells)}"
        return [f"{twins.name}: {count}: the same cells, in the same order"]
    problems = []
    if english.metadata.get("kernelspec") != chinese.metadata.get("kernelspec"):
        problems.append(f"{twins.name}: kernelspec differs from the English one")
    for number, (en, zh) in enumerate(zip(english.cells, chinese.cells), start=1):
        where = f"{twins.name} cell {number} ({first_line(en)!r})"
        if shape(en) != shape(zh):
            problems.append(f"{where}: type, tags, nbgrader or folding differ: {shape(zh)} vs English {shape(en)}")
            continue
        if en.cell_type == "code":
            problems += [f"{where}: {problem}" for problem in code_differences(en.source, zh.source, kept)]
        if check_stamps and zh.metadata.get("translation", {}).get("of") != source_hash(en):
            problems.append(f"{where}: the English cell changed since it was translated: update the Chinese "
                            f"cell, then python tools/twin_sync.py --stamp {twins.name}")
    return problems


def stamp(chinese: Path) -> None:
    """Record that each cell of ``chinese`` translates its English twin's cell as it is now."""
    twins = Twins(chinese.resolve(), twin_of(chinese.resolve()))
    problems = differences(twins, check_stamps=False)
    if problems:
        raise SystemExit("not stamped, the twins differ:\n" + "\n".join(problems))
    english, notebook = (nbformat.read(path, as_version=4) for path in (twins.english, twins.chinese))
    for en, zh in zip(english.cells, notebook.cells):
        zh.metadata["translation"] = {"of": source_hash(en)}
    nbformat.write(notebook, twins.chinese)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tools/twin_sync.py", description=__doc__.splitlines()[0])
    parser.add_argument("--stamp", nargs="+", type=Path, metavar="ZH_NOTEBOOK")
    args = parser.parse_args(argv)
    if args.stamp:
        for path in args.stamp:
            stamp(path)
            print(f"stamped {path}")
        return 0
    kept = kept_strings()
    twins = all_twins()
    problems = [problem for pair in twins for problem in differences(pair, kept)]
    print("\n".join(problems) if problems else f"{len(twins)} Chinese notebook(s) in step with their English twins")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
