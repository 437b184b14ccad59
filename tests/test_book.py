"""tools/book.py stages the book's sources: what it folds, how it rewrites links, the pages it makes from
the README and the course list. (tests/test_site.py builds the book and reads it in Chromium.)"""
from __future__ import annotations

import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from notebook_files import ROOT, read

sys.path.insert(0, str(ROOT / "tools"))
import book  # the builder, a maintainer script from tools/
import predict_prompts  # the Predict rule the book follows

REPOSITORY = book.repository()


def answer(source: str, printed: str | None) -> nbformat.NotebookNode:
    outputs = [new_output("stream", name="stdout", text=printed)] if printed else []
    return new_code_cell(source, outputs=outputs)


def tags(cell: nbformat.NotebookNode) -> list[str]:
    return cell.metadata.get("tags", [])


def test_each_answer_to_a_predict_prompt_gets_the_toggle_and_no_other_cell_does():
    notebook = new_notebook(cells=[answer("before()", "seen\n"), new_markdown_cell("**Predict**: what prints?"),
                                   answer("first()", "label\n"), answer("silent()", None),
                                   new_markdown_cell("Now run this:"), answer("after()", "seen\n")])
    book.fold_answers_and_solutions(notebook)
    assert [tags(cell) for cell in notebook.cells if cell.cell_type == "code"] == [[], ["hide-output"], [], []]


def test_what_a_collapsed_heading_folds_stays_behind_toggles_until_the_next_heading_of_its_level():
    solution = new_markdown_cell("### Solution\n\n`y.detach()`: the answer.")
    solution.metadata["jp-MarkdownHeadingCollapsed"] = True
    notebook = new_notebook(cells=[solution, new_code_cell("fix()"), new_markdown_cell("#### Why\n\nbecause"),
                                   new_markdown_cell("more words"), new_code_cell("more()"),
                                   new_markdown_cell("### Next\n\nshown"), new_code_cell("after()")])
    book.fold_answers_and_solutions(notebook)
    assert [tags(cell) for cell in notebook.cells if cell.cell_type == "code"] == [["hide-cell"], ["hide-cell"], []]
    toggle = f"{book.FOLDED_OPEN}\n\n{{}}\n\n{book.FOLDED_CLOSE}"
    assert [cell.source for cell in notebook.cells if cell.cell_type == "markdown"] == [
        "### Solution\n\n" + toggle.format("`y.detach()`: the answer."), "#### Why\n\n" + toggle.format("because"),
        toggle.format("more words"), "### Next\n\nshown"]


def test_a_cell_whose_source_jupyterlab_folds_shows_it_behind_a_toggle():
    bootstrap, setup = answer("%pip install graphleaf-edu", None), answer("import torch", None)
    bootstrap.metadata["jupyter"] = {"source_hidden": True}
    notebook = new_notebook(cells=[bootstrap, setup])
    book.fold_answers_and_solutions(notebook)
    assert [tags(cell) for cell in notebook.cells] == [["hide-input"], []]


def test_every_answer_folded_in_a_notebook_is_behind_a_toggle_in_the_book(tmp_path):
    entries = book.course()
    book.stage(tmp_path, entries)
    toggles = 0
    for entry in entries:
        source, staged = read(ROOT / "notebooks" / entry.path), read(tmp_path / "notebooks" / entry.path)
        assert [c.source for c in staged.cells if c.cell_type == "code"] == \
            [c.source for c in source.cells if c.cell_type == "code"]
        answers = {id(cell) for _, cell in predict_prompts.answer_cells(source) if cell.outputs}
        for original, copy in zip(source.cells, staged.cells, strict=True):
            if id(original) in answers:
                assert predict_prompts.folded(original), f"{entry.path}: an answer JupyterLab shows open"
                assert {"hide-output", "hide-cell"} & set(tags(copy)), entry.path
                toggles += 1
            else:
                assert "hide-output" not in tags(copy), entry.path
        assert "colab-badge.svg" not in "".join(c.source for c in staged.cells)
    assert toggles > 0
    assert not (tmp_path / "instructor").exists()


def test_links_stay_in_the_book_or_point_at_the_repository(tmp_path):
    links = book.Links({"notebooks/01_leaves_and_grad_fn.ipynb", "docs/running.md"}, tmp_path, REPOSITORY)
    source = "docs/contributing.md"
    markdown = ("[a](running.md#the-two-commands) [b](../notebooks/01_leaves_and_grad_fn.ipynb) "
                "[c](../tests/README.md#nbval) [d](../binder/) [e](https://example.org) [f](#here) "
                "![g](autograd-graph.svg) [h](gone.md)")
    assert links.rewrite(markdown, source) == (
        "[a](running.md#the-two-commands) [b](../notebooks/01_leaves_and_grad_fn.ipynb) "
        f"[c]({REPOSITORY}/blob/main/tests/README.md#nbval) [d]({REPOSITORY}/tree/main/binder) "
        "[e](https://example.org) [f](#here) ![g](autograd-graph.svg) [h](gone.md)")
    assert (tmp_path / "docs" / "autograd-graph.svg").read_bytes() == (ROOT / "docs" / "autograd-graph.svg").read_bytes()


def test_the_error_index_page_is_the_readme_section_that_holds_the_generated_block():
    readme = (ROOT / "README.md").read_text()
    page = book.error_index_page(readme)
    assert page.startswith("# I just hit this error\n")
    block = readme.split(book.ERROR_INDEX_START)[1].split(book.ERROR_INDEX_END)[0]
    assert block.strip() and block in page


@pytest.mark.parametrize("readme", ["## I just hit this error\n\nno index\n",
                                    f"## I just hit this error\n\n{book.ERROR_INDEX_START}\n"])
def test_a_readme_without_its_error_index_markers_is_refused(readme):
    with pytest.raises(SystemExit, match="error-index"):
        book.error_index_page(readme)


def test_the_index_lists_the_course_in_its_order_and_every_docs_page():
    entries = book.course()
    index = book.index_page((ROOT / "README.md").read_text(), entries, book.doc_pages())
    positions = [index.index(f"<notebooks/{entry.path}>") for entry in entries]
    assert positions == sorted(positions)
    assert index.index("<errors>") < positions[0]
    for path in (ROOT / "docs").glob("*.md"):
        assert f"\ndocs/{path.stem}\n" in index, path.name
    assert "[![" not in index, "a badge is a remote picture: the book is read offline"
    core = [entry for entry in entries if entry.group == "core"]
    assert f"({book.course_stats.whole_minutes(core)} min)" in index, "the sidebar's core minutes are 00's map's"


def test_only_keeps_the_named_notebooks_and_refuses_unknown_ones():
    assert [entry.path for entry in book.course(["quick_fix.ipynb"])] == ["quick_fix.ipynb"]
    with pytest.raises(SystemExit, match="not in notebooks/course.toml"):
        book.course(["nope.ipynb"])


def test_the_colab_badge_goes_in_either_language_and_nothing_else_does():
    owner_and_name = REPOSITORY.removeprefix("https://github.com/")
    url = f"https://colab.research.google.com/github/{owner_and_name}/blob/v1/notebooks/zh-CN/00_start_here.ipynb"
    binder = f"[![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/{owner_and_name}/main)\n"
    header = ("# 00 · 从这里开始\n\n说明文字\n\n"
              f"[![在 Colab 中打开](https://colab.research.google.com/assets/colab-badge.svg)]({url})\n"
              f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})\n" + binder)
    assert book.COLAB_BADGE.sub("", header) == "# 00 · 从这里开始\n\n说明文字\n\n" + binder


def test_the_chinese_book_stages_every_chinese_twin_without_its_badge(tmp_path):
    chinese = book.chinese_entries(book.course())
    assert chinese, "notebooks/zh-CN/ holds a twin of a course notebook"
    book.stage_chinese(tmp_path, chinese)
    for entry in chinese:
        staged = read(tmp_path / "notebooks" / book.ZH / entry.path)
        assert "colab-badge.svg" not in "".join(c.source for c in staged.cells), entry.path
