"""The public names: ``__all__``, the lazy table and what type checkers see agree, every name resolves,
importing the package loads no notebook machinery, and a missing extra is named when it is needed."""
import ast
import importlib
import json
import subprocess
import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import graphleaf_edu as gl

ROOT = Path(__file__).resolve().parent.parent
INIT = ROOT / "graphleaf_edu" / "__init__.py"
# Top-level packages a training job must not pay for when it imports graphleaf_edu.
NOTEBOOK_MACHINERY = ("IPython", "ipywidgets", "ipykernel", "jupyter_client", "jupyter_core", "jupyterlab",
                      "jupyter_server", "nbformat", "traitlets", "comm", "zmq", "tornado", "torchviz", "graphviz")


def type_checking_imports() -> dict[str, str]:
    """Name -> module of the imports under ``if TYPE_CHECKING:`` in the package's __init__."""
    tree = ast.parse(INIT.read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1, "__init__.py should have one `if TYPE_CHECKING:` block"
    return {alias.asname or alias.name: node.module
            for node in blocks[0].body if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_all_is_the_eager_names_plus_the_lazy_table_without_repeats():
    assert len(gl.__all__) == len(set(gl.__all__))
    missing = set(gl._LAZY) - set(gl.__all__)
    assert not missing, f"add {sorted(missing)} (in _LAZY) to __all__"
    for name in set(gl.__all__) - set(gl._LAZY):
        assert name in vars(gl), f"{name} is in __all__ but neither imported eagerly nor in _LAZY"


def test_type_checkers_see_every_lazy_name_from_its_module():
    assert type_checking_imports() == gl._LAZY


def test_every_extra_named_in_the_package_exists_in_pyproject():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(gl._EXTRA.values()) <= extras.keys()
    for module in set(gl._LAZY.values()) | set(gl._EXTRA):
        assert importlib.util.find_spec(module) is not None, module


@pytest.mark.parametrize("name", gl.__all__)
def test_every_public_name_resolves_to_its_module_object(name):
    value = getattr(gl, name)
    if name in gl._LAZY:
        assert value is getattr(importlib.import_module(gl._LAZY[name]), name)
    assert name in dir(gl)


def test_submodules_resolve_as_attributes_and_unknown_names_raise_attribute_error():
    assert gl.widgets is importlib.import_module("graphleaf_edu.widgets")
    assert gl.gpu.GpuLesson is gl.GpuLesson
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        gl.no_such_name  # noqa: B018
    assert not hasattr(gl, "_repr_html_")


def run_python(code: str) -> str:
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                               cwd=ROOT, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_importing_and_using_the_core_loads_no_notebook_machinery():
    loaded = json.loads(run_python(f"""
        import json, sys
        import torch
        import graphleaf_edu as gl
        y = torch.ones(2, requires_grad=True) * 2
        gl.explain({{"cache": y}})
        gl.safe_deepcopy({{"cache": y}}, warn=False)
        gl.describe(y)
        print(json.dumps(sorted({{m.partition(".")[0] for m in sys.modules}} & set({NOTEBOOK_MACHINERY!r}))))
    """).splitlines()[-1])
    assert loaded == []


def test_a_missing_extra_is_named_when_its_name_is_first_used():
    out = run_python("""
        import sys
        sys.modules["graphviz"] = None  # as if the [graphs] extra were not installed
        import graphleaf_edu as gl
        print(gl.describe.__name__)
        for name in ("draw", "scenario_explorer"):
            try:
                getattr(gl, name)
            except ModuleNotFoundError as error:
                print(name, "->", error, "| name:", error.name)
    """)
    needs = "needs 'graphviz', which is not installed. Install the extra that brings it: pip install"
    assert out.splitlines() == [
        "describe",
        f"draw -> graphleaf_edu.draw {needs} 'graphleaf-edu[graphs]' | name: graphviz",
        f"scenario_explorer -> graphleaf_edu.scenario_explorer {needs} 'graphleaf-edu[lab]' | name: graphviz",
    ]


def test_version_comes_from_the_installed_metadata_and_matches_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert gl.__version__ == metadata.version("graphleaf-edu") == declared
