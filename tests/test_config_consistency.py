"""pyproject.toml, the two locks, environment.yml and binder/ name the same packages at the same versions.

conda cannot be solved on every machine, so this test is what keeps the conda and Binder
environments from drifting away from what CI really installs.
"""
import re
import subprocess
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
# pip name -> conda-forge name, for the packages whose names differ.
CONDA_NAME = {"torch": "pytorch-cpu", "graphviz": "python-graphviz"}
# What a student runs the lessons with, and the maintainer tools that must stay out of it.
STUDENT_PACKAGES = {"torch", "torchviz", "graphviz", "ipywidgets", "jupyterlab", "ipykernel"}
MAINTAINER_ONLY = {"nbgrader", "playwright", "pytest", "hypothesis", "nbval", "ruff"}
# The pyproject.toml extras the lessons need on top of the core dependencies (torch).
LESSON_EXTRAS = ("graphs", "lab")


def runtime_requirements():
    """What the lessons run with: the core dependencies and the extras the notebooks need."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = project["dependencies"] + [line for extra in LESSON_EXTRAS for line in project["optional-dependencies"][extra]]
    return [r for r in map(Requirement, lines) if canonicalize_name(r.name) != "graphleaf-edu"]


def lock_pins(lock="student"):
    pins = {}
    for line in (ROOT / "requirements" / f"{lock}.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def conda_environment(path):
    dependencies = yaml.safe_load(path.read_text())["dependencies"]
    conda, pip = {}, {}
    for entry in dependencies:
        if isinstance(entry, dict):
            for line in entry["pip"]:
                if "==" in line:
                    name, version = line.split("==")
                    pip[name] = version
        else:
            name, _, version = entry.partition("=")
            conda[name] = version
    return conda, pip


def environment_files():
    return [ROOT / "environment.yml", ROOT / "binder" / "environment.yml"]


def assert_locked(requirements, lock):
    pins = lock_pins(lock)
    for requirement in requirements:
        if requirement.marker and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} missing from requirements/{lock}.txt"
        assert pins[name] in requirement.specifier, (lock, str(requirement), pins[name])


def test_both_locks_satisfy_pyproject_and_pin_cpu_torch():
    for lock in ("student", "maintainer"):
        assert_locked(runtime_requirements(), lock)
        assert lock_pins(lock)["torch"] == "2.13.0"


def test_student_lock_has_the_lessons_needs_and_no_maintainer_tools():
    pins = lock_pins("student")
    assert STUDENT_PACKAGES <= pins.keys(), STUDENT_PACKAGES - pins.keys()
    assert not MAINTAINER_ONLY & pins.keys(), f"maintainer tools in the student lock: {MAINTAINER_ONLY & pins.keys()}"


def test_maintainer_lock_is_the_student_lock_plus_every_extra():
    student, maintainer = lock_pins("student"), lock_pins("maintainer")
    assert {name: maintainer.get(name) for name in student} == student
    assert MAINTAINER_ONLY <= maintainer.keys(), MAINTAINER_ONLY - maintainer.keys()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for lines in extras.values():
        requirements = [Requirement(line) for line in lines]
        assert_locked([r for r in requirements if canonicalize_name(r.name) != "graphleaf-edu"], "maintainer")


def dry_run(target):
    """The commands `make` would run for target, every prerequisite included, none executed."""
    return subprocess.run(["make", "--dry-run", "--always-make", target], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


def test_make_lab_uses_the_student_venv_and_make_test_the_maintainer_venv():
    lab = dry_run("lab")
    assert "tools/make_venv.sh .venv-lab requirements/student.txt" in lab
    assert ".venv-lab/bin/jupyter lab" in lab and "maintainer.txt" not in lab
    assert "tools/ensure_graphviz.sh --optional" in lab
    test = dry_run("test")
    assert "tools/make_venv.sh .venv requirements/maintainer.txt" in test
    assert ".venv-lab" not in test and "student.txt" not in test
    assert re.search(r"tools/ensure_graphviz\.sh$", test, re.MULTILINE), "make test must require dot"


def test_conda_environments_match_the_student_lock():
    pins = lock_pins("student")
    for path in environment_files():
        conda, pip = conda_environment(path)
        assert "graphviz" in conda, f"{path}: the Graphviz program (conda 'graphviz') is missing"
        for requirement in runtime_requirements():
            name = requirement.name
            version = pip.get(name) or conda.get(CONDA_NAME.get(name, name))
            assert version is not None, f"{path.name} does not name {name}"
            assert version == pins[name], f"{path}: {name} {version} but the lock has {pins[name]}"


def test_binder_and_root_environment_agree():
    root_conda, root_pip = conda_environment(ROOT / "environment.yml")
    binder_conda, binder_pip = conda_environment(ROOT / "binder" / "environment.yml")
    assert root_conda == binder_conda
    assert root_pip == binder_pip


def test_binder_post_build_installs_package_and_kernels_and_stops_on_error():
    script = (ROOT / "binder" / "postBuild").read_text()
    assert re.search(r"^set -e", script, re.MULTILINE)
    assert "pip install" in script and "-e ." in script
    assert "graphleaf_edu.kernels install" in script


def test_ci_and_readme_use_the_same_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    workflow = (ROOT / ".github" / "workflows" / "test.yml").read_text()
    assert ".ci/run" in workflow
