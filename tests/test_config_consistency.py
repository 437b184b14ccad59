"""pyproject.toml, the lock, environment.yml and binder/ name the same packages at the same versions.

conda cannot be solved on every machine, so this test is what keeps the conda and Binder
environments from drifting away from what CI really installs.
"""
import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
# pip name -> conda-forge name, for the packages whose names differ.
CONDA_NAME = {"torch": "pytorch-cpu", "graphviz": "python-graphviz"}


def runtime_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"]]


def lock_pins():
    pins = {}
    for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version.strip()
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


def test_lock_satisfies_pyproject_and_pins_cpu_torch():
    pins = lock_pins()
    for requirement in runtime_requirements():
        if requirement.marker and not requirement.marker.evaluate():
            continue
        assert requirement.name in pins, f"{requirement.name} missing from requirements/lock.txt"
        assert pins[requirement.name] in requirement.specifier, (requirement, pins[requirement.name])
    assert pins["torch"] == "2.13.0"


def test_test_extra_is_locked():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = lock_pins()
    for line in project["optional-dependencies"]["test"]:
        requirement = Requirement(line)
        assert requirement.name in pins, f"{requirement.name} (extra 'test') missing from the lock"
        assert pins[requirement.name] in requirement.specifier


def test_conda_environments_match_the_lock():
    pins = lock_pins()
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
