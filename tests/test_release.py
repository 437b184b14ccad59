"""The release a class can pin: the version and the supported torch written once (pyproject.toml, read
by tools/release.py), every install of the suite naming the release tag, and that tag installing for real.

The tag rehearsal makes this working tree a git repository of its own, tags it as a release is tagged
(an annotated ``v<version>``), and runs the setup cell's own install command (what Colab runs) against it
as ``git+file://…@v<version>`` in a fresh venv that has torch and nothing else (``PIP_RETRIES=0``: the
torch CPU wheel is the local one, in tests/fresh_venv.py's cached layer).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib

import nbformat
import pytest
from fresh_venv import make_venv, python, torch_layer
from notebook_files import ROOT, chinese_twins, lessons, read
from packaging.requirements import Requirement
from test_colab_setup import run_setup_cell

import graphleaf_edu as gl

sys.path.insert(0, str(ROOT / "tools"))
import release  # maintainer modules, imported from tools/
import stamp_notebooks
import student_tree

VERSION, TAG, REPOSITORY, TORCH = release.version(), release.tag(), release.repository(), release.torch()
PINNED = release.install_requirement(REPOSITORY, TAG)


def tracked(*patterns: str) -> list[str]:
    return subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.split()


# --- the version and its tag ------------------------------------------------------------------------

def test_the_tag_is_the_version_and_the_cli_prints_what_ci_reads():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION) and TAG == f"v{VERSION}"
    for name, expected in (("version", VERSION), ("tag", TAG), ("torch", TORCH), ("repository", REPOSITORY)):
        done = subprocess.run([sys.executable, str(ROOT / "tools" / "release.py"), name], capture_output=True,
                              text=True, check=True)
        assert done.stdout.strip() == expected


def test_every_mention_of_the_class_image_tag_is_the_version():
    for name in ("classroom/Dockerfile", "docs/classroom.md"):
        tags = re.findall(r"graphleaf-edu-singleuser:([\w.-]+)", (ROOT / name).read_text())
        assert tags and set(tags) == {VERSION}, name


def test_every_install_of_the_suite_is_the_release_tag():
    """In every notebook (any cell) and every page: never a branch, never another address."""
    installs = 0
    for name in tracked("*.ipynb", "*.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        if name.endswith(".ipynb"):
            text = "\n".join(cell.source for cell in nbformat.reads(text, as_version=4).cells)
        for match in release.INSTALL.finditer(text):
            installs += 1
            assert match.group(0) == PINNED, f"{name}: {match.group(0)} (run tools/stamp_notebooks.py)"
    for path in [*lessons(), *chinese_twins(lessons())]:
        assert any(PINNED in cell.source for cell in read(path).cells), f"{path.relative_to(ROOT)} installs no release"
    assert installs >= len(lessons())


def test_the_binder_link_handed_to_a_class_opens_the_release():
    links = re.findall(r"mybinder\.org/v2/gh/[\w.-]+/[\w.-]+/([^?\s)>]+)", (ROOT / "docs" / "instructors.md").read_text())
    assert links and set(links) == {TAG}


SHAPES = [
    '"graphleaf-edu @ git+https://github.com/graphleaf-edu/graphleaf-edu"',
    '"graphleaf-edu @ git+https://github.com/graphleaf-edu/graphleaf-edu@main"',
    "'graphleaf-edu @ git+https://github.com/graphleaf-edu/graphleaf-edu@v0.0.9'",
    '%pip install --quiet "graphleaf-edu @ git+https://github.com/someone/a-fork@feature-branch"',
]


def test_stamping_pins_an_install_line_of_any_shape_and_leaves_the_rest_alone(tmp_path):
    """The setup cell's shape is the lessons' to change: the stamp finds the install by its pattern."""
    folded = nbformat.v4.new_code_cell("\n".join(f"install({shape})" for shape in SHAPES[:2]),
                                       metadata={"jupyter": {"source_hidden": True}})
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A lesson\n\n**Verified with**: torch 1.99 on Linux (the setup cell says so)."),
        folded,
        nbformat.v4.new_code_cell(f"{SHAPES[2]}\nprint('kept as it was')"),
        nbformat.v4.new_markdown_cell(f"Or in a terminal: {SHAPES[3]}"),
    ])
    path = tmp_path / "lesson.ipynb"
    nbformat.write(notebook, path)
    assert stamp_notebooks.stamp(path)
    cells = read(path).cells
    assert cells[1].source == f'install("{PINNED}")\ninstall("{PINNED}")'
    assert cells[1].metadata == {"jupyter": {"source_hidden": True}}
    assert cells[2].source == f"'{PINNED}'\nprint('kept as it was')"
    assert cells[3].source == f'Or in a terminal: %pip install --quiet "{PINNED}"'
    assert cells[0].source.endswith(f"torch {release.major_minor(TORCH)} on Linux (the setup cell says so).")
    assert not stamp_notebooks.stamp(path), "stamping twice changes nothing"


# --- torch, written once ----------------------------------------------------------------------------

def test_the_supported_torch_is_what_this_suite_runs_and_what_the_package_and_pyproject_say():
    import torch

    assert torch.__version__.split("+")[0] == TORCH
    minor = release.major_minor(TORCH)
    assert gl.VERIFIED_TORCH == minor
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (torch_dependency,) = [Requirement(line) for line in project["dependencies"] if line.startswith("torch")]
    assert str(torch_dependency.specifier) == f">={minor}"


def test_every_notebook_header_names_the_supported_torch():
    minor = release.major_minor(TORCH)
    for name in tracked("*.ipynb"):
        header = read(ROOT / name).cells[0].source
        for said in release.VERIFIED_WITH.finditer(header):
            assert said.group(2) == minor, f"{name}: {said.group(0)} (run tools/stamp_notebooks.py)"
    for path in lessons():
        assert release.VERIFIED_WITH.search(read(path).cells[0].source), f"{path.name}: no 'Verified with' line"


# Code and configuration read the supported torch; only these say it, each checked above.
SAYS_THE_TORCH = {
    "pyproject.toml": "the one source ([tool.graphleaf-edu]) and the dependency's lower bound",
    "graphleaf_edu/notebook.py": "VERIFIED_TORCH (installed packages cannot read pyproject.toml) and its examples",
}
CODE_AND_CONFIG = ("*.py", "*.sh", "*.toml", "*.yml", "*.yaml", "*.cfg", "Makefile", "*Dockerfile", "*postBuild",
                   "*.txt")
GENERATED = ("requirements/", "binder/requirements.txt")  # `make lock` writes them from the source


def test_no_code_or_configuration_writes_the_torch_version_but_the_source():
    """Code and configuration never name the release, not even its major.minor; tests never name the
    release in full (a version in a test's own example data is its own business)."""
    def says(pattern: str, name: str) -> bool:
        return re.search(rf"(?<![\w.]){re.escape(pattern)}(?![\d])", (ROOT / name).read_text(encoding="utf-8"))

    minor = release.major_minor(TORCH)
    found = {name for name in tracked(*CODE_AND_CONFIG) if not name.startswith(GENERATED)
             and says(TORCH if name.startswith("tests/") else minor, name)}
    assert found == set(SAYS_THE_TORCH), (
        f"torch {minor} written by hand in {sorted(found - set(SAYS_THE_TORCH))}: read it from "
        "pyproject.toml ([tool.graphleaf-edu] torch, tools/release.py) or gl.VERIFIED_TORCH")


# --- the tag, installed -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tagged_repository(tmp_path_factory):
    """This working tree's files as a repository of their own, released: an annotated tag v<version>."""
    repository = tmp_path_factory.mktemp("published") / "graphleaf-edu"
    for relative in student_tree.repository_files(ROOT):
        (repository / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, repository / relative)
    return repository, tag_release(repository)


def tag_release(repository):
    """``git init``, one commit of everything, the annotated release tag (as docs/releasing.md tags)."""
    git = ["git", "-c", "user.name=release rehearsal", "-c", "user.email=rehearsal@example.org"]
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", f"graphleaf-edu {TAG}"],
                    ["tag", "-a", TAG, "-m", f"graphleaf-edu {TAG}"]):
        subprocess.run([*git, *command], cwd=repository, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", f"{TAG}^{{commit}}"], cwd=repository, capture_output=True, text=True,
                          check=True).stdout.strip()


def file_url(repository):
    """``file://localhost/…``: the pip of Python 3.11's venvs (23.2) refuses ``name @ git+file:///…`` (a URL
    without a host) as an invalid requirement; git and pip take the host ``localhost``."""
    return f"file://localhost{repository}"


def install_into_fresh_venv(venv_folder, pip_arguments):
    """``pip install …`` into a fresh venv that sees only torch; returns what the installed package says."""
    venv = make_venv(venv_folder, [torch_layer()])
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python(venv)), *pip_arguments],
                          capture_output=True, text=True, check=False,
                          env=os.environ | {"PIP_RETRIES": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    probe = ("import json, graphleaf_edu; from importlib import metadata; "
             "print(json.dumps({'file': graphleaf_edu.__file__, 'version': graphleaf_edu.__version__, "
             "'direct_url': json.loads(metadata.distribution('graphleaf-edu').read_text('direct_url.json'))}))")
    shown = subprocess.run([str(python(venv)), "-W", "ignore", "-c", probe], capture_output=True, text=True,
                           cwd=venv_folder, check=True)
    return json.loads(shown.stdout)


@pytest.mark.slow
def test_the_setup_cells_own_install_command_installs_the_tag(tagged_repository, monkeypatch, tmp_path):
    repository, commit = tagged_repository
    pip, *_ = run_setup_cell(monkeypatch, installed=False, dot=True)  # what the cell runs on Colab
    monkeypatch.undo()
    assert pip[:3] == [sys.executable, "-m", "pip"] and PINNED in pip
    arguments = [argument.replace(f"git+{REPOSITORY}@", f"git+{file_url(repository)}@") for argument in pip[3:]]
    installed = install_into_fresh_venv(tmp_path / "venv", arguments)
    assert installed["version"] == VERSION
    assert installed["file"].startswith(str(tmp_path / "venv"))
    assert installed["direct_url"]["vcs_info"] == {"vcs": "git", "requested_revision": TAG, "commit_id": commit}
