"""The Chinese edition says each thing one way (docs/glossary.md): one gloss of PyTorch's graph-leaves
message, the catalog's, quoted by every Chinese page; one word for a notebook's cell, for a leaf, for
autograd, for the package; and the catalog carries no stale comments.

What is read: every Chinese notebook (its Markdown, its code with the comments, its stored outputs),
README.zh-CN.md and the catalog's Chinese (``msgstr``).
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from notebook_files import NOTEBOOKS, ROOT, ZH, chinese_notebooks, read

from graphleaf_edu import errors
from graphleaf_edu.i18n import say, speaking

PO = ROOT / "graphleaf_edu" / "locale" / "zh_CN" / "LC_MESSAGES" / "graphleaf_edu.po"
README_ZH = ROOT / "README.zh-CN.md"
SOLUTIONS_ZH = ROOT / "instructor" / "exercises" / ZH
def gloss() -> str:
    """The one Chinese gloss of the graph-leaves message, as the catalog words it."""
    with speaking("zh-CN"):
        return say(errors.GRAPH_LEAVES_GLOSS)


def gloss_words() -> str:
    """The gloss without its brackets and closing stop, as a sentence may quote it."""
    return gloss().removeprefix("（意思是：").removesuffix("）").removesuffix("。")


def catalog_strings() -> list[str]:
    from babel.messages.pofile import read_po

    with PO.open("rb") as file:
        catalog = read_po(file, locale="zh_CN")
    return [s for m in catalog if m.id for s in (m.string if isinstance(m.string, tuple) else (m.string,))]


def notebooks() -> list[Path]:
    return [*chinese_notebooks(), *sorted(SOLUTIONS_ZH.glob("*.ipynb"))]


def shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def cell_texts(path: Path, outputs: bool = True) -> list[str]:
    """Each cell's source, and with ``outputs`` the text its outputs show."""
    texts = []
    for cell in read(path).cells:
        texts.append(cell.source)
        for output in cell.get("outputs", []) if outputs else []:
            data = output.get("data", {})
            texts += [output.get("text", ""), data.get("text/plain", ""), data.get("text/html", ""),
                      output.get("evalue", "")]
    return [t if isinstance(t, str) else "".join(t) for t in texts]


def every_text() -> dict[str, list[str]]:
    """Where -> its Chinese texts."""
    found = {shown(path): cell_texts(path) for path in notebooks()}
    found["README.zh-CN.md"] = [README_ZH.read_text(encoding="utf-8")]
    found["the catalog"] = catalog_strings()
    return found


# --- one gloss ---------------------------------------------------------------------------------------
# What any Chinese gloss of "Only Tensors created explicitly by the user (graph leaves) support the
# deepcopy protocol" says, however it is worded: the user's tensors, or what may be deep-copied.
GLOSS_LIKE = re.compile(r"用户[^，。；）\n]{0,6}创建的张量|只有[^。；\n]{0,30}才(?:支持|能被?)[^。；\n]{0,6}(?:深拷贝|deepcopy)")


def other_glosses(text: str) -> list[str]:
    """The places in ``text`` that gloss the graph-leaves message other than in the catalog's words."""
    quoted = [(m.start(), m.end()) for m in re.finditer(re.escape(gloss_words()), text)]
    return [text[max(0, m.start() - 10):m.end() + 10] for m in GLOSS_LIKE.finditer(text)
            if not any(start <= m.start() < end for start, end in quoted)]


def test_the_gloss_is_a_faithful_translation_in_one_line():
    words = gloss()
    assert words.startswith("（意思是：") and words.endswith("。）") and "\n" not in words
    for faithful in ("目前", "用户显式创建的张量", "叶子张量", "deepcopy 协议"):  # at the moment, explicitly, leaves, protocol
        assert faithful in words, faithful


def test_the_check_finds_a_second_wording_and_spares_the_gloss():
    assert other_glosses(f"报错{gloss()}之后") == []
    assert other_glosses(f"报错（意思是：{gloss_words()}；如果你是在深拷贝一个模块……）") == []
    assert other_glosses("（意思是：只有用户直接创建的张量，也就是计算图的叶子节点，才能被深拷贝）")
    assert other_glosses("（意思是：目前只有用户显式创建的张量（计算图的叶子）支持 deepcopy 协议）")
    assert other_glosses("只有叶子张量才能被深拷贝。")


@pytest.mark.parametrize("where", list(every_text()))
def test_every_chinese_page_glosses_the_message_in_the_catalogs_words(where):
    found = [place for text in every_text()[where] for place in other_glosses(text)]
    assert not found, f"{where}: quote the catalog's gloss, {gloss()}, instead of {found}"


def test_the_pages_that_gloss_the_message_quote_the_gloss():
    quoting = [where for where, texts in every_text().items() if any(gloss_words() in text for text in texts)]
    assert "README.zh-CN.md" in quoting and "the catalog" in quoting
    assert {"instructor/exercises/zh-CN/ex3_find_the_culprit.ipynb", "notebooks/zh-CN/exercises/ex5_fix_the_cache.ipynb"} <= set(quoting)


# --- one word each ---------------------------------------------------------------------------------------
# (what to look for, what the glossary says instead)
ONE_WORD = [
    (re.compile(r"单元(?!格|测试)|这一格"), "a notebook's cell is 单元格"),
    (re.compile(r"(?<!非)叶子节点(?!（叶子张量，leaf）)"), "a leaf is 叶子张量 (the first use reads 叶子节点（叶子张量，leaf）)"),
    (re.compile(r"工具包|这个包"), "the package is 本包"),
    (re.compile(r"只用 PyTorch"), "纯 PyTorch"),
    (re.compile(r"要求梯度"), "requires grad is 需要梯度"),
    (re.compile(r"全部运行"), "Run All is 运行全部单元格, as JupyterLab's Chinese menu says"),
]
# autograd is 自动求导, except in code (`torch.autograd`, a path) and in PyTorch's own messages.
CODE = re.compile(r"`[^`]*`|^.*\b\w*(?:Error|Exception|Warning): .*$|\S*[._()\[\]=/<>@*\"']\S*", re.MULTILINE)


def chinese_prose(where: str) -> list[str]:
    """The texts of ``where`` a Chinese reader reads as prose: a notebook's Markdown and comments and
    strings (not its outputs, which are the catalog's words or PyTorch's), the README, the catalog."""
    if where in ("README.zh-CN.md", "the catalog"):
        return every_text()[where]
    return cell_texts(ROOT / where, outputs=False)


@pytest.mark.parametrize("where", list(every_text()))
def test_each_term_has_one_word(where):
    texts = chinese_prose(where)
    wrong = [f"{hint}: …{text[max(0, m.start() - 12):m.end() + 12]}…" for pattern, hint in ONE_WORD
             for text in texts for m in pattern.finditer(text)]
    wrong += [f"autograd is 自动求导: …{text[max(0, m.start() - 12):m.end() + 12]}…" for text in texts
              for m in re.finditer(r"autograd", CODE.sub("", text))]
    assert not wrong, f"{where}: {wrong}"


@pytest.mark.parametrize("path", notebooks(), ids=shown)
def test_a_notebook_says_leaf_node_once_at_most_at_the_first_leaf(path):
    # headings set aside: a title (course.toml's title_zh) names the leaf in the one word
    text = "\n".join(line for text in cell_texts(path, outputs=False) for line in text.splitlines()
                     if not line.startswith("#"))
    assert text.count("叶子节点（叶子张量，leaf）") <= 1
    if "叶子节点（叶子张量，leaf）" in text:
        assert text.index("叶子节点（叶子张量，leaf）") <= text.index("叶子张量"), "say 叶子节点（叶子张量，leaf） first"


def test_the_term_checks_find_the_old_words():
    old = "全部运行这个单元；它是叶子节点，由工具包分析，只用 PyTorch 也行，要求梯度，autograd 会记录"
    assert len([1 for pattern, _ in ONE_WORD if pattern.search(old)]) == len(ONE_WORD)
    assert "autograd" in CODE.sub("", old) and "autograd" not in CODE.sub("", "`torch.autograd.grad` 和 torch.autograd.grad")


# --- the exercises' titles ---------------------------------------------------------------------------------
def test_an_exercises_feedback_names_it_as_its_notebook_does():
    """An exercise checked in one step says the notebook's own title (course.toml's title_zh)."""
    from babel.messages.pofile import read_po

    with PO.open("rb") as file:
        titles = {m.id: m.string for m in read_po(file, locale="zh_CN") if str(m.id).startswith("Exercise ")}
    listed = tomllib.loads((NOTEBOOKS / "course.toml").read_text(encoding="utf-8"))["notebook"]
    for entry in listed:
        if entry["group"] != "exercise":
            continue
        number = entry["title"].split(" · ")[0]
        said = [chinese for english, chinese in titles.items() if english.startswith(number + " · ")]
        assert said, number
        if len(said) == 1:
            assert said == [entry["title_zh"]], number


# --- the catalog's comments ----------------------------------------------------------------------------
def test_the_catalog_carries_no_stale_previous_messages():
    lines = PO.read_text(encoding="utf-8").splitlines()
    assert not [line for line in lines if line.startswith(("#|", "# |"))]


def test_make_catalogs_drops_a_stale_previous_message_and_writes_none(tmp_path, monkeypatch):
    from babel.messages.catalog import Catalog

    sys.path.insert(0, str(ROOT / "tools"))
    import catalogs

    stale = tmp_path / "graphleaf_edu.po"
    stale.write_text('msgid ""\nmsgstr ""\n\n# | msgid "it raises"\nmsgid "trainer"\nmsgstr "训练器"\n\n'
                     '#, fuzzy\n#| msgid "copied in {place}"\nmsgid "copied at {place}"\nmsgstr "拷贝于 {place}"\n',
                     encoding="utf-8")
    monkeypatch.setattr(catalogs, "po_path", lambda language: stale)
    source = Catalog()
    source.add("trainer")
    source.add("copied at {place}")
    source.add("copied to {place}")  # new, close to the one above: babel's fuzzy match sets a previous id
    written = catalogs.po_bytes(catalogs.updated("zh_CN", source)).decode()
    assert "msgstr \"训练器\"" in written and "拷贝于 {place}" in written
    assert not [line for line in written.splitlines() if line.startswith(("#|", "# |"))], written


# --- English left where Chinese is expected --------------------------------------------------------------
def test_a_chinese_student_copy_clears_a_written_answer_as_the_class_release_does():
    """nbgrader's stub for a cleared answer is one setting for the whole course (ClearSolutions.text_stub),
    so the release `nbgrader generate_assignment` makes of the Chinese assignment says YOUR ANSWER HERE;
    the Chinese student copies say the same, or they would differ from what a class gets
    (tests/test_grading.py compares the two)."""
    written = [cell.source for path in sorted((NOTEBOOKS / ZH / "exercises").glob("*.ipynb"))
               for cell in read(path).cells if cell.metadata.get("nbgrader", {}).get("solution")
               and cell.cell_type == "markdown"]
    assert written and all(source == "YOUR ANSWER HERE" for source in written), written


def test_the_dataloader_lab_labels_its_check_boxes_in_chinese():
    from graphleaf_edu.widgets import DataLoaderLab

    with speaking("zh-CN"):
        lab = DataLoaderLab()
    labels = [lab.deepcopy_in_getitem.description, lab.detach_at_construction.description]
    assert all(re.search("[\u4e00-\u9fff]", label) for label in labels), labels


@pytest.mark.parametrize("path", [p for p in chinese_notebooks() if p.parent.name == ZH], ids=shown)
def test_a_lesson_closes_with_the_one_label_and_marks_pytorchs_docs_english(path):
    text = "\n".join(cell_texts(path, outputs=False))
    assert "深入阅读" not in text, "the closing label is **深入专题**"
    if "docs.pytorch.org" in text:
        assert "**PyTorch 文档**（英文）：" in text
