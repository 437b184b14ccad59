"""pyproject.toml, the two locks, environment.yml and binder/ name the same packages at the same versions.

conda cannot be solved on every machine, so this test is what keeps the conda and Binder
environments from drifting away from what CI really installs.
"""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import release  # a maintainer module, imported from tools/

# pip name -> conda-forge name, for the packages whose names differ.
CONDA_NAME = {"torch": "pytorch-cpu", "graphviz": "python-graphviz"}
# What a student runs the lessons with, and the maintainer tools that must stay out of it.
STUDENT_PACKAGES = {"torch", "torchviz", "graphviz", "ipywidgets", "jupyterlab", "ipykernel",
                    "jupyterlab-language-pack-zh-cn"}
MAINTAINER_ONLY = {"nbgrader", "playwright", "pytest", "hypothesis", "nbval", "ruff", "sphinx"}
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


def conda_environment():
    """environment.yml as {conda name: spec} and {pip name: spec}."""
    dependencies = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    conda, pip = {}, {}
    for entry in dependencies:
        if isinstance(entry, dict):
            for line in entry["pip"]:
                requirement = Requirement(line)
                pip[canonicalize_name(requirement.name)] = str(requirement.specifier)
        else:
            name, spec = re.fullmatch(r"([a-z0-9_.-]+)\s*(.*)", entry.split("#")[0].strip()).groups()
            conda[name] = spec
    return conda, pip


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
        assert lock_pins(lock)["torch"] == release.torch()


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


def test_conda_environment_names_every_lesson_package_in_ranges_that_admit_the_locked_versions():
    pins = lock_pins("student")
    conda, pip = conda_environment()
    assert "graphviz" in conda, "the Graphviz program (conda 'graphviz') is missing"
    assert "setuptools" not in conda, "conda-forge's pytorch constrains setuptools; a pin here breaks the solve"
    assert conda["python"] == "=3.11"
    for requirement in runtime_requirements():
        name = canonicalize_name(requirement.name)
        if requirement.marker and not requirement.marker.evaluate():
            continue
        spec = pip.get(name) if name in pip else conda.get(CONDA_NAME.get(name, name))
        assert spec is not None, f"environment.yml does not name {name}"
        assert pins[name] in SpecifierSet(spec), (name, spec)
        if name not in pip:
            assert not spec.startswith("="), f"{name}: an exact conda pin ({spec}) may not be built; use a range"


def binder_pins():
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    return lines, {canonicalize_name(n): v for n, v in (line.split("==") for line in lines if "==" in line)}


def test_binder_installs_the_student_lock_with_cpu_torch_and_nothing_wins_over_it():
    lines, pins = binder_pins()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    assert not any(line.startswith(("--index-url", "-i ")) for line in lines), "PyTorch's index has no jupyterlab"
    student = lock_pins("student")
    assert pins.pop("torch") == student.pop("torch") + "+cpu"
    notebook = pins.pop("notebook")
    assert pins == student
    assert notebook == lock_pins("maintainer")["notebook"]
    binder = ROOT / "binder"
    for winner in ("environment.yml", "Dockerfile", "Pipfile", "setup.py", "pyproject.toml"):
        assert not (binder / winner).exists(), f"binder/{winner} would replace requirements.txt"
    assert (binder / "runtime.txt").read_text().strip() == "python-3.11"
    assert "graphviz" in (binder / "apt.txt").read_text().split()


def test_binder_post_build_installs_the_package_the_cpu_kernel_and_stops_on_error():
    script = (ROOT / "binder" / "postBuild").read_text()
    assert script.startswith("#!") and re.search(r"^set -euo pipefail", script, re.MULTILINE)
    assert "pip install --no-deps --no-build-isolation -e ." in script
    assert "graphleaf_edu.kernels install --cpu-only" in script
    assert "graphleaf_edu_jupyter enable" in script
    assert "cull_idle_timeout=900" in script


def test_ci_and_readme_use_the_same_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    workflow = (ROOT / ".github" / "workflows" / "test.yml").read_text()
    assert ".ci/run" in workflow


def repository_address():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]


# Links that name this suite's repository: Binder, Colab, nbgitpuller, GitHub links to a graphleaf repo, Pages.
SUITE_LINKS = [
    re.compile(r"mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/"),
    re.compile(r"colab\.research\.google\.com/github/([\w.-]+/[\w.-]+)/"),
    re.compile(r"repo=https%3A%2F%2Fgithub\.com%2F([\w.-]+%2F[\w.-]+?)(?:&|$)"),
    re.compile(r"github\.com/([\w.-]+/[\w.-]*graphleaf[\w.-]*)"),
    re.compile(r"([\w-]+)\.github\.io/([\w.-]+)"),
]


def test_every_badge_and_link_uses_the_one_repository_address():
    address = repository_address()
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", address)
    owner_and_name = address.removeprefix("https://github.com/")
    tracked = subprocess.run(["git", "ls-files", "*.md", "*.ipynb", "*.cff", "*.yml", "*.py", "*.toml"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    found = 0
    for name in tracked:
        text = (ROOT / name).read_text(encoding="utf-8")
        for pattern in SUITE_LINKS:
            for match in pattern.finditer(text):
                found += 1
                assert "/".join(match.groups()).replace("%2F", "/") == owner_and_name, f"{name}: {match.group(0)}"
    assert found >= 3
    assert f'repository-code: "{address}"' in (ROOT / "CITATION.cff").read_text()


def test_changelog_and_citation_carry_the_package_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f'version: "{version}"' in (ROOT / "CITATION.cff").read_text()
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert releases and releases[0] == version, "CHANGELOG.md's newest entry must be the version in pyproject.toml"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
