"""The shared setup cell installs what is missing (Colab) and nothing where the suite is installed.

The bootstrap cell (folded) and the setup cell run here twice: as it is (graphleaf_edu importable: no command runs), and with
graphleaf_edu made unimportable and without `dot` on PATH (as on a fresh Colab runtime), where
``subprocess.run`` is replaced by a recorder so nothing is installed for real.
"""
import importlib
import re
import shutil
import subprocess
import sys

import pytest
from notebook_files import (
    NOTEBOOKS,
    ROOT,
    chinese_twins,
    code_cells,
    deep_dives,
    lessons,
    read,
)

sys.path.insert(0, str(ROOT / "tools"))
import release  # maintainer modules, imported from tools/
import stamp_notebooks

REPOSITORY, TAG = release.repository(), release.tag()
BOOTSTRAP, SETUP = (cell.source for cell in code_cells(read(ROOT / "notebooks" / "00_start_here.ipynb"))[:2])


def run_setup_cell(monkeypatch, *, installed: bool, dot: bool) -> list[list[str]]:
    commands, package = [], importlib.import_module("graphleaf_edu")

    def record(command, check):
        assert check is True
        commands.append(command)
        monkeypatch.setitem(sys.modules, "graphleaf_edu", package)  # "installed": the second import finds it
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", record)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/dot" if dot else None)
    if not installed:
        monkeypatch.setitem(sys.modules, "graphleaf_edu", None)  # import graphleaf_edu -> ModuleNotFoundError
    namespace = {}
    for name, source in (("bootstrap cell", BOOTSTRAP), ("setup cell", SETUP.replace("DEVICE = gl.setup_notebook(seed=0)", ""))):
        exec(compile(source, name, "exec"), namespace)  # noqa: S102 (the notebook's own cells)
    assert namespace["gl"].__name__ == "graphleaf_edu"
    return commands


def test_where_the_suite_is_installed_the_setup_cell_installs_nothing(monkeypatch):
    assert run_setup_cell(monkeypatch, installed=True, dot=False) == []


def test_where_the_package_is_missing_it_is_installed_from_the_repository_without_touching_torch(monkeypatch):
    pip, *rest = run_setup_cell(monkeypatch, installed=False, dot=True)
    assert rest == []
    assert pip[:6] == [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    assert release.install_requirement(REPOSITORY, TAG) in pip and "torchviz==0.0.3" in pip
    assert not any(re.match(r"torch\b(?!viz)", argument) for argument in pip[6:])


def test_where_dot_is_missing_too_graphviz_is_installed_with_apt(monkeypatch):
    _, apt = run_setup_cell(monkeypatch, installed=False, dot=False)
    assert apt == ["apt-get", "install", "--yes", "--quiet", "graphviz"]


def test_the_install_line_is_one_line():
    """One recognisable line installs the package (a release tool stamps its version there)."""
    lines = [line for line in BOOTSTRAP.splitlines() if "graphleaf-edu @ git+" in line]
    assert len(lines) == 1 and "pip" in lines[0] and "torchviz==0.0.3" in lines[0]
    assert release.install_requirement(REPOSITORY, TAG) in lines[0], "the install line names the release tag"


LESSONS = [NOTEBOOKS / "quick_fix.ipynb", *lessons(), *deep_dives()]


@pytest.mark.parametrize("path", [*LESSONS, *chinese_twins(LESSONS)], ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_every_lesson_opens_in_colab_from_its_own_header(path):
    """A Chinese twin's badge opens the Chinese notebook (not its English twin), labelled in Chinese."""
    owner_and_name = REPOSITORY.removeprefix("https://github.com/")
    url = f"https://colab.research.google.com/github/{owner_and_name}/blob/{TAG}/notebooks/{path.relative_to(NOTEBOOKS).as_posix()}"
    label = "在 Colab 中打开" if path.relative_to(NOTEBOOKS).parts[0] == "zh-CN" else "Open In Colab"
    badges = [line for line in read(path).cells[0].source.splitlines() if "colab-badge.svg" in line]
    assert badges == [f"[![{label}](https://colab.research.google.com/assets/colab-badge.svg)]({url})"], (
        f"run tools/stamp_notebooks.py {path.relative_to(ROOT)}")


def test_the_colab_badge_of_a_chinese_twin_is_stamped_with_its_own_path():
    """What tools/stamp_notebooks.py does to a twin copied from its English lesson, badge and all."""
    english = read(ROOT / "notebooks" / "00_start_here.ipynb")
    chinese = ROOT / "notebooks" / "zh-CN" / "00_start_here.ipynb"
    stamp_notebooks.colab_badge(english, chinese)
    header = english.cells[0].source
    assert header.count("colab-badge.svg") == 1
    assert header.endswith(f"[![在 Colab 中打开]({stamp_notebooks.COLAB_BADGE})]("
                           f"{release.colab_url(release.github_owner_and_name(REPOSITORY), TAG, 'notebooks/zh-CN/00_start_here.ipynb')})")
    exercise = read(ROOT / "notebooks" / "zh-CN" / "exercises" / "ex1_leaf_flags.ipynb")
    before = exercise.cells[0].source
    stamp_notebooks.colab_badge(exercise, ROOT / "notebooks" / "zh-CN" / "exercises" / "ex1_leaf_flags.ipynb")
    assert exercise.cells[0].source == before, "exercises carry no badge, in either language"
