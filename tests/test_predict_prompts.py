"""Predict, then run: every prompt asks the same way, and no answer shows before its cell runs.

The rule lives in tools/predict_prompts.py (the executor and the stamper fold with it); these tests
read every stored notebook, the lessons and the instructor's copies, with the same functions.
"""
import io
import re
import sys
import tokenize

import pytest
from notebook_files import (
    NOTEBOOKS,
    ROOT,
    chinese_twins,
    is_solution_heading,
    lessons,
    read,
)

sys.path.insert(0, str(ROOT / "tools"))
import course_stats
import predict_prompts
import twin_sync

EVERY_NOTEBOOK = sorted(p for folder in (NOTEBOOKS, ROOT / "instructor") for p in folder.rglob("*.ipynb")
                        if ".ipynb_checkpoints" not in p.parts)
# The same words in the Chinese twins (notebooks/zh-CN/): fails, errs, succeeds, cannot, (non-)leaf.
CHINESE_OUTCOMES = r"失败|报错|出错|错误|成功|无法|不能|不可以|可以|是叶子|非叶子"
# What a folded output's one visible line must not say: it would answer the question.
GIVES_AWAY = re.compile(r"\b(True|False|raises?|raised|works?|worked|fails?|failed|\w+Error|Traceback)\b|is_leaf=|grad_fn="
                        rf"|{CHINESE_OUTCOMES}")
# A comment in an answer cell that tells the outcome before the cell runs.
OUTCOME_COMMENT = re.compile(r"\b(raises?|raised|fails?|failed|works?|worked|succeeds?|non-leaf|a leaf|cannot|can't"
                             rf"|\w+Error)\b|(?<![=\w])(True|False)\b|{CHINESE_OUTCOMES}")
# A heading above a prompt that tells the outcome ("Why `copy.deepcopy` refuses", "Results that *are* leaves").
OUTCOME_HEADING = re.compile(r"\b(refuses?|refused|raises?|raised|fails?|failed|works?|worked|succeeds?|breaks?|cannot"
                             r"|can't|impossible)\b|\b(is|are)\s+(a\s+)?(non-)?lea(f|ves)\b"
                             rf"|{CHINESE_OUTCOMES}|拒绝|本身就是")
CORE = [*lessons(), *chinese_twins(lessons())]
TASK_BY_NAME = re.compile(r'\btask="([^"]+)"')
SOLUTION_CHECK = re.compile(r"\bTASKS\[['\"][^'\"]+['\"]\]\.done\(")


def ids(path):
    return str(path.relative_to(ROOT))


def comments(source: str) -> list[str]:
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError):
        return [line[line.index("#"):] for line in source.splitlines() if "#" in line]


def test_the_prompt_finder_finds_the_courses_prompts():
    counts = {ids(p): sum(len(predict_prompts.prompts(c.source)) for c in read(p).cells if c.cell_type == "markdown")
              for p in EVERY_NOTEBOOK}
    assert sum(counts.values()) >= 60, counts
    assert sum(1 for _ in predict_prompts.answer_cells(read(NOTEBOOKS / "00_start_here.ipynb"))) >= 2


def test_a_chinese_twin_asks_by_the_same_rule():
    asked = "**预测**：`spawn` worker 在哪里报错？"
    assert predict_prompts.prompts(f"先运行上面的单元。\n\n{asked}\n") == [asked]
    assert predict_prompts.well_formed(asked) and predict_prompts.well_formed("**预测**：打印什么?")
    assert not predict_prompts.well_formed("**预测**：它会报错。"), "a prompt asks a question"
    assert predict_prompts.prompts("预测：哪一个？") == ["预测：哪一个？"], "an unbolded prompt is still found"
    assert predict_prompts.prompts("**先预测，再运行。** 对每个张量预测三件事。") == [], \
        "neither the convention's name nor the ordinary verb is a prompt"


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=ids)
def test_every_prompt_is_predict_then_a_question(path):
    for cell in read(path).cells:
        if cell.cell_type == "markdown":
            for prompt in predict_prompts.prompts(cell.source):
                assert predict_prompts.well_formed(prompt), f"not '**Predict**:' and a question: {prompt!r}"


@pytest.mark.parametrize("path", twin_sync.chinese_notebooks(), ids=ids)
def test_a_chinese_twin_asks_the_prompts_its_english_twin_asks(path):
    """Cell by cell, so that each answer cell is folded (and checked) in both languages."""
    def asked(notebook):
        return [len(predict_prompts.prompts(c.source)) if c.cell_type == "markdown" else 0 for c in notebook.cells]

    assert asked(read(path)) == asked(read(twin_sync.twin_of(path)))


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=ids)
def test_every_answer_is_stored_folded_behind_a_neutral_line(path):
    notebook = read(path)
    for asked, cell in predict_prompts.answer_cells(notebook):
        where = f"the answer to {notebook.cells[asked].source[-120:]!r}:\n{cell.source}"
        assert predict_prompts.folded(cell), f"stored unfolded: {where}"
        line = predict_prompts.placeholder_line(cell)
        assert not GIVES_AWAY.search(line), f"the folded placeholder shows {line!r}: {where}"
        assert not predict_prompts.starts_with_a_table(cell), f"the placeholder shows a table's first line {line!r}: {where}"


@pytest.mark.parametrize("path", CORE, ids=ids)
def test_no_heading_above_a_core_prompt_tells_the_outcome(path):
    """Part of issue 34's rule that a machine can hold: the text a student reads before a prompt (since the
    previous code cell) gives what they need to reason, never the result; a heading that names the outcome
    gives it. Whether the sentences do is for a reader who did not write them."""
    for index, before in predict_prompts.text_before_prompts(read(path)):
        for heading in predict_prompts.headings(before):
            told = OUTCOME_HEADING.search(heading.replace("*", ""))
            assert not told, f"cell {index}: the heading {heading!r} tells the outcome ({told.group(0)!r}) before the prompt"


def test_a_heading_that_tells_the_outcome_is_found():
    notebook = read(NOTEBOOKS / "00_start_here.ipynb")
    asked = [index for index, _ in predict_prompts.text_before_prompts(notebook)]
    assert len(asked) >= 3 and all(predict_prompts.is_prompt(notebook.cells[i]) for i in asked)
    for told in ("## 3. Results that *are* leaves", "## 2. Why `copy.deepcopy` refuses", "## 3. *本身就是*叶子节点的结果"):
        assert OUTCOME_HEADING.search(told.replace("*", "")), told
    for neutral in ("## 1. Leaves and `grad_fn`", "## 3. Four more results", "## Scenario 2: a copied model output",
                    "## 1. 叶子节点与 `grad_fn`"):
        assert not OUTCOME_HEADING.search(neutral), neutral


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=ids)
def test_no_answer_cell_comment_tells_the_outcome(path):
    for _, cell in predict_prompts.answer_cells(read(path)):
        for comment in comments(cell.source):
            assert not OUTCOME_COMMENT.search(comment), f"move this to the Markdown after the cell: {comment!r}"


@pytest.mark.parametrize("path", [p for p in EVERY_NOTEBOOK if course_stats.stats(p, ROOT).tasks], ids=ids)
def test_a_widget_tasks_solution_sits_under_a_folded_solution_heading(path):
    from graphleaf_edu.views import TASKS

    cells = read(path).cells

    def heading_before(index):
        return next(c for c in reversed(cells[:index]) if c.cell_type == "markdown" and c.source.startswith("#"))

    given = [i for i, c in enumerate(cells) if c.cell_type == "code" and course_stats.EXPLORER_WITH_TASK.search(c.source)]
    for index in given:
        names = TASK_BY_NAME.findall(cells[index].source)
        assert names and set(names) <= set(TASKS), f"give the task by its name in graphleaf_edu.views.TASKS:\n{cells[index].source}"
        after = next(c for c in cells[index + 1:] if c.cell_type == "markdown" and c.source.startswith("#"))
        assert is_solution_heading(after), f"no Solution heading after the task:\n{cells[index].source}"
        assert after.metadata.get("jp-MarkdownHeadingCollapsed") is True, "the Solution heading is not folded"
    for index, cell in enumerate(cells):
        if cell.cell_type == "code" and SOLUTION_CHECK.search(cell.source):
            heading = heading_before(index)
            assert is_solution_heading(heading), f"solution outside a Solution heading:\n{cell.source}"
            assert heading.metadata.get("jp-MarkdownHeadingCollapsed") is True, "the Solution heading is not folded"


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=ids)
def test_a_solution_heading_holds_nothing_but_its_heading(path):
    """JupyterLab folds the cells under a collapsed heading, never the heading cell's own text."""
    for cell in read(path).cells:
        rest = cell.source.partition("\n")[2]
        if is_solution_heading(cell):
            assert not rest.strip(), f"this shows while the heading is folded: move it to a cell below:\n{cell.source}"


@pytest.mark.parametrize("name", ["00_start_here.ipynb", "deep_dives/leaves_and_grad_fn.ipynb"])
def test_the_playgrounds_list_of_things_to_try_holds_no_solution(name):
    import graphleaf_edu as gl

    cells = read(NOTEBOOKS / name).cells
    solution = next(i for i, c in enumerate(cells) if c.source.startswith("### Solution"))
    suggested = {snippet for c in cells[:solution] if c.cell_type == "markdown"
                 for snippet in re.findall(r"`([^`]*w @ x \+ b[^`]*)`", c.source)}
    assert "w @ x + b" in suggested
    solving = [s for s in suggested if (view := gl.views.playground_view(s)).ok and view.info.deepcopy_ok]
    assert solving == [], f"suggested before the solution, and solves the task: {solving}"
