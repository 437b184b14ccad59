"""The wheel works where a practitioner installs it: built by ``python -m build``, installed by pip into
a fresh venv that has torch and nothing else, it diagnoses without loading any notebook machinery; with
the ``[lab]`` extra it brings what the widgets and graphs need.

The torch-only venv and the student lock's layer (what ``[lab]`` pulls in) are cached between runs
(tests/fresh_venv.py): the first run installs torch (~900 MB) and the lock's packages, later runs only make a
fresh venv and install the wheel.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest
from fresh_venv import make_venv, pip_install, python, student_layer, torch_layer
from test_public_api import NOTEBOOK_MACHINERY

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import student_tree  # maintainer module, imported from tools/: the repository's files

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``python -m build``: the sdist, then the wheel built from that sdist. It builds from a copy of the
    repository's files: setuptools writes ``graphleaf_edu.egg-info`` into the tree it builds, and one left
    in the checkout shadows the installed package's metadata (an old version after a version bump)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    in_checkout = set(ROOT.glob("*.egg-info"))
    for relative in student_tree.repository_files(ROOT):
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, source / relative)
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                   check=True, capture_output=True)
    assert set(ROOT.glob("*.egg-info")) == in_checkout, "the build wrote into the checkout"
    return out


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    (found,) = dist.glob("graphleaf_edu-*-py3-none-any.whl")
    return found


@pytest.fixture(scope="module")
def torch_only() -> Path:
    return torch_layer()


@pytest.fixture(scope="module")
def lab_layer(torch_only) -> Path:
    """What ``pip install 'graphleaf-edu[lab]'`` adds to a torch-only venv, at the versions a student gets: the
    student lock's layer (tests/fresh_venv.py; the lock is the ``[lab]`` extra resolved, and the class image
    rehearsal installs from the same layer). The test's own ``pip install`` re-resolves the extra against it."""
    return student_layer()


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory, wheel, torch_only) -> Path:
    """A fresh venv with torch only, then ``pip install`` of the wheel."""
    venv = make_venv(tmp_path_factory.mktemp("core") / "venv", [torch_only])
    pip_install(venv, str(wheel))
    return venv


def run_in(venv: Path, code: str, **environment: str) -> dict:
    """Run ``code`` with the venv's Python, outside the repository (so only the installed package is
    importable), with ``environment`` added to this one's, and return the JSON it prints last."""
    completed = subprocess.run([str(python(venv)), "-c", textwrap.dedent(code)], capture_output=True, text=True,
                               cwd=venv, check=False, timeout=300, env=os.environ | environment)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.splitlines()[-1])


CATALOG = "graphleaf_edu/locale/zh_CN/LC_MESSAGES/graphleaf_edu"
MESSAGES = "graphleaf_edu/messages.toml"  # the package's words (graphleaf_edu.messages reads them)


def test_build_makes_a_wheel_and_an_sdist_that_ship_py_typed_the_messages_and_the_catalogs(dist, wheel):
    version = PYPROJECT["version"]
    assert wheel.name == f"graphleaf_edu-{version}-py3-none-any.whl"
    in_wheel = zipfile.ZipFile(wheel).namelist()
    assert {"graphleaf_edu/py.typed", MESSAGES, f"{CATALOG}.mo"} <= set(in_wheel)
    for shipped in (MESSAGES, f"{CATALOG}.mo"):
        assert zipfile.ZipFile(wheel).read(shipped) == (ROOT / shipped).read_bytes(), shipped
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    shipped = ("graphleaf_edu/py.typed", MESSAGES, f"{CATALOG}.po", f"{CATALOG}.mo")
    assert {f"graphleaf_edu-{version}/{name}" for name in shipped} <= set(names)


def test_the_wheel_ships_the_pytest_plugin_and_its_entry_point(wheel):
    archive = zipfile.ZipFile(wheel)
    assert "graphleaf_edu_pytest/__init__.py" in archive.namelist()
    (entry_points,) = [name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt")]
    assert "[pytest11]\ngraphleaf = graphleaf_edu_pytest" in archive.read(entry_points).decode()


def test_core_in_a_venv_with_only_torch(core_venv):
    venv = core_venv
    result = run_in(venv, f"""
        import importlib.util, json, sys, warnings
        warnings.simplefilter("ignore")  # torch warns that NumPy is missing; it is not needed here
        machinery = {NOTEBOOK_MACHINERY!r}
        installed = [name for name in machinery if importlib.util.find_spec(name) is not None]

        import copy, torch
        import graphleaf_edu as gl
        from importlib import metadata, resources
        model = torch.nn.Linear(2, 2)
        model.cache = model(torch.ones(1, 2))
        findings = gl.find_nonleaf(model)
        gl.explain(model)
        copied = gl.safe_deepcopy(model, warn=False)
        try:
            with gl.explain_errors():
                copy.deepcopy(model)
            notes = []
        except RuntimeError as error:
            notes = error.__notes__
        missing_extras = {{}}
        for name in ("draw", "scenario_explorer"):
            try:
                getattr(gl, name)
            except ModuleNotFoundError as error:
                missing_extras[name] = str(error)
        print(json.dumps({{
            "installed_machinery": installed,
            "loaded_machinery": sorted({{m.partition(".")[0] for m in sys.modules}} & set(machinery)),
            "package_file": gl.__file__,
            "version": [gl.__version__, metadata.version("graphleaf-edu")],
            "py_typed": resources.files("graphleaf_edu").joinpath("py.typed").is_file(),
            "paths": [f.path for f in findings],
            "copy_detached": copied.cache.grad_fn is None and model.cache.grad_fn is not None,
            "describe": gl.describe(model.cache).deepcopy_ok,
            "notes": notes,
            "missing_extras": missing_extras,
        }}))
    """)
    assert result["installed_machinery"] == [], "the venv should hold torch only"
    assert result["loaded_machinery"] == []
    assert Path(result["package_file"]).is_relative_to(venv), result["package_file"]
    assert result["version"] == [PYPROJECT["version"]] * 2
    assert result["py_typed"]
    assert result["paths"] == [".cache"]
    assert result["copy_detached"] and result["describe"] is False
    assert any(note.startswith("graphleaf_edu: root.cache: cached activation") for note in result["notes"])
    assert "pip install 'graphleaf-edu[graphs]'" in result["missing_extras"]["draw"]
    assert "pip install 'graphleaf-edu[lab]'" in result["missing_extras"]["scenario_explorer"]


def test_lab_extra_brings_the_widgets_and_graphs(tmp_path, wheel, torch_only, lab_layer):
    venv = make_venv(tmp_path / "venv", [torch_only, lab_layer])
    pip_install(venv, f"{wheel}[lab]")
    result = run_in(venv, """
        import json, warnings
        warnings.simplefilter("ignore")
        import ipywidgets, torch
        import graphleaf_edu as gl
        y = torch.ones(2, requires_grad=True) * 2
        graph = gl.draw(y)
        widget = gl.leaf_playground()
        print(json.dumps({"package_file": gl.__file__, "graph": repr(graph), "svg": "<svg" in graph.svg(),
                          "widget": isinstance(widget, ipywidgets.Widget)}))
    """)
    assert Path(result["package_file"]).is_relative_to(venv)
    assert result["graph"].startswith("AutogradGraph(")
    assert result["svg"]
    assert result["widget"]


def test_the_installed_catalog_speaks_chinese_when_asked(core_venv, tmp_path):
    code = """
        import contextlib, io, json, warnings
        warnings.simplefilter("ignore")
        import torch
        import graphleaf_edu as gl
        from graphleaf_edu import i18n
        model = torch.nn.Linear(2, 2)
        model.cache = model(torch.ones(1, 2))
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            gl.setup_notebook()
            gl.explain(model)
        print(json.dumps({"language": i18n.language(), "said": said.getvalue().splitlines(),
                          "paths": [f.path for f in gl.find_nonleaf(model)], "catalog": str(i18n.LOCALE_DIR)}))
    """
    chinese = run_in(core_venv, code, GRAPHLEAF_EDU_LANG="zh_CN")
    english = run_in(core_venv, code)
    assert chinese["language"] == "zh_CN" and english["language"] == "en"
    assert Path(chinese["catalog"]).is_relative_to(core_venv)
    assert chinese["paths"] == english["paths"] == [".cache"]
    assert "graphleaf_edu 已就绪" in chinese["said"][0] and "graphleaf_edu ready" in english["said"][0]
    assert chinese["said"][1] == "copy.deepcopy(root) 在这个 Linear 上会失败：其中有 1 个非叶子张量。"
    assert "   原因：模块属性里缓存的激活值" in chinese["said"]
    assert len(chinese["said"]) == len(english["said"])
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    completed = subprocess.run([str(python(core_venv)), "-W", "ignore", "-m", "graphleaf_edu", "--lang", "zh-CN",
                                str(script)], capture_output=True, text=True, cwd=tmp_path, check=False, timeout=300)
    assert completed.returncode == 1, completed.stderr
    assert "graphleaf_edu: root.cache：模块属性里缓存的激活值" in completed.stderr, completed.stderr
    assert completed.stdout.splitlines()[-1] == "loaded: []"


SCRIPT = f"""
import atexit, copy, sys
import torch

# What a training script does by mistake: keep an activation on the module, then copy the module.
atexit.register(lambda: print("loaded:", sorted({{m.partition(".")[0] for m in sys.modules}} & {set(NOTEBOOK_MACHINERY)!r})))
model = torch.nn.Linear(2, 2)
model.cache = model(torch.ones(1, 2))
copy.deepcopy(model)
"""


def test_python_m_graphleaf_edu_names_the_culprit_of_a_script(tmp_path, core_venv):
    venv = core_venv
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    completed = subprocess.run([str(python(venv)), "-W", "ignore", "-m", "graphleaf_edu", str(script)],
                               capture_output=True, text=True, cwd=tmp_path, check=False, timeout=300)
    assert completed.returncode == 1, completed.stderr
    assert "Only Tensors created explicitly by the user (graph leaves)" in completed.stderr
    assert "graphleaf_edu: root.cache: cached activation in a module attribute" in completed.stderr, completed.stderr
    assert completed.stdout.splitlines()[-1] == "loaded: []"
