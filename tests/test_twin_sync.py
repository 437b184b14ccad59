"""The Chinese notebooks keep their English twins' code, cells and text in step (tools/twin_sync.py).

Every Chinese notebook under notebooks/zh-CN/ and instructor/exercises/zh-CN/ is checked against its
English twin. The rest proves the check can fail: on small cells, and on copies of every real English
notebook made into a "Chinese" twin (the Chinese setup, Chinese strings) and then broken.
"""
from __future__ import annotations

import shutil
import sys

import nbformat
import pytest
from notebook_files import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import twin_sync  # the sync check, a maintainer script from tools/

KEPT = twin_sync.kept_strings()
ENGLISH = sorted(path for folder in twin_sync.TWIN_FOLDERS for path in folder.rglob("*.ipynb")
                 if twin_sync.ZH not in path.parts and ".ipynb_checkpoints" not in path.parts)
SETUP = 'import graphleaf_edu as gl\nDEVICE = gl.setup_notebook(seed=0)'
CHINESE_SETUP = 'import graphleaf_edu as gl\nDEVICE = gl.setup_notebook(seed=0, lang="zh-CN")'


def test_every_chinese_notebook_has_an_english_twin():
    assert twin_sync.orphans() == []


@pytest.mark.parametrize("twins", twin_sync.all_twins(), ids=lambda twins: twins.name)
def test_each_chinese_notebook_is_in_step_with_its_english_twin(twins):
    assert twin_sync.differences(twins, KEPT) == []


# --- the check on single cells ----------------------------------------------------------------------

def differ(english: str, chinese: str) -> list[str]:
    return twin_sync.code_differences(english, chinese, KEPT)


@pytest.mark.parametrize("english, chinese", [
    ('print("copied:", y.is_leaf)  # a leaf now?', 'print("复制后：", y.is_leaf)  # 现在是叶子节点吗？'),
    ('print(f"{name}: is_leaf={t.is_leaf}")', 'print(f"{name}：是否为叶子节点 {t.is_leaf}")'),
    ('def f():\n    """The path of the culprit."""\n    return "model.cache"',
     'def f():\n    """罪魁祸首的路径。"""\n    return "model.cache"'),
    ('loader = gl.run_loader(data, start_method="fork")', 'loader = gl.run_loader(data, start_method="fork")'),
    (SETUP, CHINESE_SETUP),
    ('%xmode Plain\nx = 1  # one', '%xmode Plain\nx = 1  # 一'),
    ('%%writefile rows.py\nimport torch  # the rows\nROWS = 3\n', '%%writefile rows.py\nimport torch  # 数据行\nROWS = 3\n'),
    ('widget = gl.widgets.Explorer(solved="Solved: a copy.")', 'widget = gl.widgets.Explorer(solved="完成：一个副本。")'),
], ids=["comment+print", "f-string", "docstring", "kept string", "setup", "magic", "writefile", "keyword"])
def test_translated_comments_and_strings_are_the_same_code(english, chinese):
    assert differ(english, chinese) == []


@pytest.mark.parametrize("english, chinese, says", [
    ('print("copied:", y.is_leaf)', 'print("复制后：", y.requires_grad)', "the code differs"),
    ('print(f"{t.is_leaf}")', 'print(f"{t.grad_fn}")', "the code differs"),
    ('run(data, start_method="fork")', 'run(data, start_method="spawn")', "the code differs"),
    ('run(data, start_method="fork")', 'run(data, start_method="分叉")', "it depends on the string"),
    ('r = results["after a forward"]', 'r = results["前向之后"]', "it depends on the string"),
    ('v = getattr(model, "cache hit")', 'v = getattr(model, "缓存")', "it depends on the string"),
    ('print("same values:")', 'print("equal values:")', "only where it is translated"),
    (SETUP, SETUP, 'lang="zh-CN"'),
    (SETUP, 'import graphleaf_edu as gl\nDEVICE = gl.setup_notebook(seed=1, lang="zh-CN")', "the code differs"),
    ('%xmode Plain', '%xmode Context', "the code differs"),
    ('%xmode Plain', '%xmode 简洁', "it depends on the string"),
    ('!pip list', '!pip 列表', "it depends on the string"),
    ('%%writefile rows.py\nROWS = 3\n', '%%writefile rows.py\nROWS = 4\n', "the code differs"),
    ('x = 1', 'x = (1', "does not parse"),
], ids=["name", "f-string", "start method", "translated key", "subscript", "attribute", "ascii string", "no lang",
        "setup", "magic", "magic word", "shell", "writefile", "syntax"])
def test_a_change_to_the_code_on_one_side_is_found(english, chinese, says):
    problems = differ(english, chinese)
    assert problems and says in " ".join(problems), problems


# --- the check on whole notebooks: copies of the real ones, then broken ------------------------------

def as_chinese(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A stand-in translation: the Chinese setup, and a Chinese sentence in front of each Markdown cell."""
    chinese = nbformat.from_dict(notebook)
    for cell in chinese.cells:
        if cell.cell_type == "markdown":
            cell.source = "这是翻译。\n\n" + cell.source
        elif twin_sync.calls_setup(cell.source):
            cell.source = cell.source.replace(".setup_notebook(seed=0)", '.setup_notebook(seed=0, lang="zh-CN")')
    return chinese


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """A notebooks/ folder of its own, whose zh-CN/ the check reads."""
    english = tmp_path / "notebooks"
    (english / twin_sync.ZH).mkdir(parents=True)
    monkeypatch.setattr(twin_sync, "TWIN_FOLDERS", [english])
    return english


def twins_of(source, folder):
    english_path = folder / source.name
    shutil.copy(source, english_path)
    chinese_path = folder / twin_sync.ZH / source.name
    nbformat.write(as_chinese(nbformat.read(source, as_version=4)), chinese_path)
    twin_sync.stamp(chinese_path)
    return twin_sync.Twins(chinese_path, english_path)


def edit(path, change):
    notebook = nbformat.read(path, as_version=4)
    change(notebook)
    nbformat.write(notebook, path)


def last_code(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"][-1]


@pytest.mark.parametrize("source", ENGLISH, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_a_translated_copy_of_each_notebook_is_in_step_until_one_side_changes(source, folders):
    twins = twins_of(source, folders)
    assert twin_sync.differences(twins, KEPT) == []
    assert twin_sync.all_twins() == [twins] and twin_sync.orphans() == []

    edit(twins.english, lambda nb: setattr(last_code(nb), "source", last_code(nb).source + "\nprint(DEVICE)"))
    problems = twin_sync.differences(twins, KEPT)
    assert any("the code differs" in problem for problem in problems), problems
    assert any("changed since it was translated" in problem for problem in problems), problems


def test_the_cells_must_match_in_number_type_and_tags(folders):
    twins = twins_of(ROOT / "notebooks" / "quick_fix.ipynb", folders)

    edit(twins.chinese, lambda nb: nb.cells.pop())
    assert "the same cells, in the same order" in " ".join(twin_sync.differences(twins, KEPT))

    twins = twins_of(ROOT / "notebooks" / "quick_fix.ipynb", folders)
    edit(twins.chinese, lambda nb: last_code(nb).metadata.setdefault("tags", []).append("raises-exception"))
    assert "tags, nbgrader or folding differ" in " ".join(twin_sync.differences(twins, KEPT))


def test_an_english_sentence_changed_since_the_translation_fails_until_restamped(folders):
    twins = twins_of(ROOT / "notebooks" / "quick_fix.ipynb", folders)
    edit(twins.english, lambda nb: setattr(nb.cells[0], "source", nb.cells[0].source + "\nOne more sentence."))
    problems = twin_sync.differences(twins, KEPT)
    assert len(problems) == 1 and "cell 1 " in problems[0] and "--stamp" in problems[0], problems

    twin_sync.stamp(twins.chinese)
    assert twin_sync.differences(twins, KEPT) == []


def test_stamping_refuses_twins_whose_code_differs(folders):
    twins = twins_of(ROOT / "notebooks" / "quick_fix.ipynb", folders)
    edit(twins.chinese, lambda nb: setattr(last_code(nb), "source", last_code(nb).source + "\nx = 1"))
    with pytest.raises(SystemExit, match="the code differs"):
        twin_sync.stamp(twins.chinese)


def test_a_chinese_notebook_without_an_english_twin_is_named(folders):
    nbformat.write(nbformat.v4.new_notebook(), folders / twin_sync.ZH / "99_gone.ipynb")
    assert twin_sync.orphans() == [str(folders / twin_sync.ZH / "99_gone.ipynb")]
