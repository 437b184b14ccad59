"""classroom/Dockerfile rehearsed here, where there is no Docker: the class image's steps, in order.

Every ``COPY`` is honoured: its sources are copied from the build context (the repository root, as
``docker build -f classroom/Dockerfile .`` sends it) into a staging folder that stands for the image's
``/``. The Python steps run in a fresh venv of this Python (the ``FROM`` image's minor release), from
exactly what was copied: ``pip`` and ``python`` are the venv's, and the image's absolute paths point into
the staging folder. The installs have one translation: the fresh venv sees two cached layers
(tests/fresh_venv.py), torch (the local CPU wheel) and the student lock installed by
``pip install -r requirements/student.txt`` once per run (the layer test_wheel.py's ``[lab]`` install uses
too), so the image's own ``pip install -r /tmp/locks/student.txt`` runs against them and checks every pin
of the lock it copied instead of installing the same packages a second time (a pin the layer does not
meet is installed into the image's venv, as in the image); the hub lock, the package and ``pip check``
run in the venv itself. ``PIP_RETRIES=0`` keeps PyTorch's unreachable index from costing retries. The
system steps are checked, not run: ``apt-get install`` must name packages this machine's Debian archive has, ``useradd`` must make the account that ``USER``, ``WORKDIR`` and Zero to
JupyterHub (uid 1000) expect. A step this rehearsal does not know fails the test.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from fresh_venv import (
    PYTHON_VERSION,
    make_venv,
    pip_install,
    student_layer,
    torch_layer,
)
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "classroom" / "Dockerfile"
Z2JH_UID = 1000  # the uid Zero to JupyterHub runs single-user images as (singleuser.uid)


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile: comments dropped, continued lines joined."""
    logical, current = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        logical.append(current.strip())
        current = ""
    assert not current, "the Dockerfile ends inside a continued line"
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in logical]


@dataclass
class Rehearsal:
    """The image as the steps so far have made it: the staging folder for ``/``, the venv, and the checks."""
    staging: Path
    venv: Path
    log: list[str] = field(default_factory=list)
    apt_packages: list[str] = field(default_factory=list)
    users: dict[str, dict] = field(default_factory=dict)
    user: str = "root"
    workdir: str = "/"
    cmd: list[str] = field(default_factory=list)
    python_minor: str = ""

    def in_image(self, path: str) -> Path:
        """Where an absolute path of the image lies in the staging folder."""
        assert path.startswith("/"), path
        return self.staging / path.lstrip("/")

    def translated(self, argument: str) -> str:
        """An argument naming a path the COPY steps made points into the staging folder."""
        if argument.startswith("/") and (self.staging / argument.lstrip("/").split("/")[0]).exists():
            return str(self.in_image(argument))
        return argument


def copy_step(rehearsal: Rehearsal, arguments: str) -> None:
    *sources, destination = shlex.split(arguments)
    assert not any(source.startswith("--") for source in sources), f"COPY flags are not rehearsed: {arguments}"
    if len(sources) > 1:
        assert destination.endswith("/"), f"COPY of several sources needs a folder destination: {arguments}"
    target = rehearsal.in_image(destination)
    for source in sources:
        origin = ROOT / source
        assert origin.exists(), f"COPY {source}: not in the build context"
        if origin.is_dir():
            shutil.copytree(origin, target, dirs_exist_ok=True)
        else:
            place = target / origin.name if destination.endswith("/") else target
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, place)
    rehearsal.log.append(f"COPY {arguments}: copied")


def run_python(rehearsal: Rehearsal, command: list[str]) -> None:
    program = rehearsal.venv / "bin" / command[0]
    done = subprocess.run([str(program), *map(rehearsal.translated, command[1:])], capture_output=True, text=True,
                          cwd=rehearsal.in_image(rehearsal.workdir), check=False,
                          env=os.environ | {"PIP_RETRIES": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert done.returncode == 0, f"{shlex.join(command)} failed in the image:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def apt_get(rehearsal: Rehearsal, command: list[str]) -> None:
    if command[1] == "update":
        return
    assert command[1] == "install", f"apt-get {command[1]} is not rehearsed"
    options = [word for word in command[2:] if word.startswith("-")]
    assert "-y" in options or "--yes" in options, "apt-get install must not wait for an answer"
    packages = [word for word in command[2:] if not word.startswith("-")]
    shown = subprocess.run(["apt-cache", "show", "--no-all-versions", *packages], capture_output=True, text=True,
                           check=False)
    assert shown.returncode == 0, f"the Debian archive here lacks one of {packages}: {shown.stderr}"
    assert sorted(re.findall(r"^Package: (\S+)", shown.stdout, re.MULTILINE)) == sorted(packages)
    rehearsal.apt_packages += packages


def useradd(rehearsal: Rehearsal, command: list[str]) -> None:
    *options, name = command[1:]
    uid = options[options.index("--uid") + 1]
    assert "--create-home" in options or "-m" in options, "the student's home must exist"
    rehearsal.users[name] = {"uid": int(uid), "home": f"/home/{name}"}
    rehearsal.in_image(f"/home/{name}").mkdir(parents=True, exist_ok=True)


def remove(rehearsal: Rehearsal, command: list[str]) -> None:
    assert command[1] == "-rf", command
    for path in command[2:]:
        if path.startswith("/var/lib/apt/lists"):  # apt's own lists: a system step, nothing staged
            continue
        staged = rehearsal.in_image(path)
        assert staged.is_relative_to(rehearsal.staging) and staged.exists(), f"rm -rf {path}: nothing there"
        shutil.rmtree(staged)


SHELL_COMMANDS = {"pip": run_python, "python": run_python, "apt-get": apt_get, "useradd": useradd, "rm": remove}


def run_step(rehearsal: Rehearsal, arguments: str) -> None:
    for part in arguments.split("&&"):
        command = shlex.split(part)
        handler = SHELL_COMMANDS.get(command[0])
        assert handler, f"RUN {part.strip()}: a command this rehearsal does not know; teach it (tests/test_class_image.py)"
        handler(rehearsal, command)
        rehearsal.log.append(f"RUN {part.strip()}: {'ran' if handler is run_python else 'checked'}")


def from_step(rehearsal: Rehearsal, arguments: str) -> None:
    image = re.fullmatch(r"python:(\d+\.\d+)-slim-(\w+)", arguments)
    assert image, f"FROM {arguments}: the rehearsal knows the official python:X.Y-slim-<debian> images"
    rehearsal.python_minor = image.group(1)


def user_step(rehearsal: Rehearsal, arguments: str) -> None:
    assert arguments in rehearsal.users, f"USER {arguments}: no such account was made"
    rehearsal.user = arguments


def workdir_step(rehearsal: Rehearsal, arguments: str) -> None:
    rehearsal.workdir = arguments
    rehearsal.in_image(arguments).mkdir(parents=True, exist_ok=True)


def cmd_step(rehearsal: Rehearsal, arguments: str) -> None:
    rehearsal.cmd = yaml.safe_load(arguments)  # the exec form is a JSON list


STEPS = {"FROM": from_step, "COPY": copy_step, "RUN": run_step, "USER": user_step, "WORKDIR": workdir_step,
         "CMD": cmd_step}


@pytest.fixture(scope="module")
def torch_only() -> Path:
    return torch_layer()


@pytest.fixture(scope="module")
def image(tmp_path_factory, torch_only) -> Rehearsal:
    """Every step of classroom/Dockerfile, in order; the state of the image they leave."""
    scratch = tmp_path_factory.mktemp("class-image")
    venv = make_venv(scratch / "venv", [torch_only, student_layer()], with_pip=True)  # pip in it, as the image has it
    rehearsal = Rehearsal(staging=scratch / "image", venv=venv)
    rehearsal.staging.mkdir()
    for instruction, arguments in instructions(DOCKERFILE.read_text()):
        assert instruction in STEPS, f"{instruction}: an instruction this rehearsal does not know"
        STEPS[instruction](rehearsal, arguments)
    return rehearsal


def test_the_image_is_the_python_this_suite_runs_on(image):
    assert image.python_minor == PYTHON_VERSION


def test_the_package_installs_from_exactly_what_was_copied_and_the_save_hook_is_enabled(image):
    import graphleaf_edu_jupyter

    for path in (graphleaf_edu_jupyter.SERVER_CONFIG, graphleaf_edu_jupyter.LAB_DEFAULTS_FILE):
        assert (image.venv / path).exists(), f"`python -m graphleaf_edu_jupyter enable` did not write {path}"
    probe = ("import graphleaf_edu, graphleaf_edu_jupyter, nbgitpuller, torch; "
             "print(graphleaf_edu.__file__, graphleaf_edu.__version__, torch.__version__)")
    done = subprocess.run([str(image.venv / "bin" / "python"), "-c", probe], capture_output=True, text=True,
                          cwd=image.staging, check=True)
    package_file, version, torch_version = done.stdout.split()
    assert Path(package_file).is_relative_to(image.venv), "the package was installed, not read from a folder"
    assert version == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert torch_version.endswith("+cpu")
    assert not (image.staging / "tmp" / "graphleaf-edu").exists() and not (image.staging / "tmp" / "locks").exists()


def lock_pins(*names: str) -> dict[str, str]:
    """``{name: requirement}`` of the locks' ``name==version`` lines; a later lock's line wins (hub.txt's do)."""
    pins = {}
    for name in names:
        for line in (ROOT / "requirements" / name).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                pins[canonicalize_name(Requirement(line).name)] = line.strip()
    return pins


def test_the_image_runs_every_pin_of_the_locks_it_copied(image):
    """What the image's Python imports is each lock's pinned release (the student lock's packages came from
    the layer its install step checked, the hub lock's were installed into the image's venv)."""
    pins = lock_pins("student.txt", "hub.txt")
    probe = ("import json, sys; from importlib import metadata; "
             "print(json.dumps({name: metadata.version(name) for name in sys.argv[1:]}))")
    done = subprocess.run([str(image.venv / "bin" / "python"), "-c", probe, *pins], capture_output=True, text=True,
                          check=True)
    installed = json.loads(done.stdout)
    assert [line for name, line in pins.items() if not Requirement(line).specifier.contains(installed[name])] == []


def test_the_server_zero_to_jupyterhub_starts_is_the_hub_locks(image):
    assert image.cmd == ["jupyterhub-singleuser"]
    done = subprocess.run([str(image.venv / "bin" / image.cmd[0]), "--version"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    hub_lock = (ROOT / "requirements" / "hub.txt").read_text()
    assert f"jupyterhub=={done.stdout.strip()}" in hub_lock.splitlines()


def test_system_steps_name_real_packages_and_the_account_zero_to_jupyterhub_expects(image):
    assert {"git", "graphviz"} <= set(image.apt_packages), "nbgitpuller needs git, the lessons Graphviz's dot"
    assert image.user in image.users and image.users[image.user]["uid"] == Z2JH_UID
    assert image.workdir == image.users[image.user]["home"]


def test_every_step_was_run_or_checked(image):
    steps = "\n".join(image.log)
    assert "RUN pip install --no-cache-dir --no-deps /tmp/graphleaf-edu: ran" in steps
    assert "RUN python -m graphleaf_edu_jupyter enable: ran" in steps
    assert re.search(r"^RUN apt-get install .*: checked$", steps, re.MULTILINE)
    assert re.search(r"^RUN useradd .*: checked$", steps, re.MULTILINE)


def test_a_copy_of_the_package_without_the_save_hook_fails_as_the_old_image_did(tmp_path, torch_only):
    """The rehearsal catches what the image got wrong before: graphleaf_edu copied, graphleaf_edu_jupyter not."""
    venv = make_venv(tmp_path / "venv", [torch_only])
    rehearsal = Rehearsal(staging=tmp_path / "image", venv=venv)
    rehearsal.staging.mkdir()
    copy_step(rehearsal, "pyproject.toml README.md /tmp/graphleaf-edu/")
    copy_step(rehearsal, "graphleaf_edu /tmp/graphleaf-edu/graphleaf_edu")
    pip_install(venv, "--no-deps", str(rehearsal.in_image("/tmp/graphleaf-edu")))
    with pytest.raises(AssertionError, match="No module named graphleaf_edu_jupyter"):
        run_python(rehearsal, ["python", "-m", "graphleaf_edu_jupyter", "enable"])
