"""The single-user environment every student's server and kernels run from.

The project's ``.venv`` is built from an interpreter under root's home (mode 700), so a student
account cannot run it. This one is built from Debian's ``/usr/bin/python3.11`` (``python3-venv``)
in a world-readable folder, from the student lock plus the hub lock (``jupyterhub`` for
``jupyterhub-singleuser``, ``nbgitpuller``, ``jupyterhub-idle-culler``); the hub itself runs from it
too. ``graphleaf_edu`` is installed as a copy, not editable, so no student reads the checkout.

Rebuilding is skipped while the locks and the package's sources are unchanged (stamp files).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name

import graphleaf_edu_jupyter
from classroom.settings import ENVIRONMENT, ROOT

SYSTEM_PYTHON = "/usr/bin/python3.11"
STUDENT_LOCK = ROOT / "requirements" / "student.txt"
HUB_LOCK = ROOT / "requirements" / "hub.txt"
PACKAGE_SOURCES = ("pyproject.toml", "graphleaf_edu", "graphleaf_edu_jupyter")
SERVER_CONFIG_FOLDER = "etc/jupyter/jupyter_server_config.d"
# What `python -m graphleaf_edu_jupyter enable` writes: the save hook's switch, JupyterLab's quiet defaults.
ENABLED_FILES = (graphleaf_edu_jupyter.SERVER_CONFIG, graphleaf_edu_jupyter.LAB_DEFAULTS_FILE)
# Not part of the package: a setuptools build folder in the checkout would put its stale modules
# (graphleaf_edu/save_hook.py, which imports torch, once did) into the installed copy.
NOT_PACKAGED = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "node_modules", "__pycache__",
                                      "*.egg-info", ".pytest_cache", ".hypothesis", "wheels")


def pins(path: Path) -> dict[str, str]:
    """``{canonical name: 'name==version'}`` for every pin in a lock file."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            found[canonicalize_name(line.split("==", 1)[0])] = line
    return found


def requirements() -> list[str]:
    """The student lock with the hub lock added; where both pin a package the hub lock wins (it
    holds the few versions Debian's Python 3.11.2 needs, each with its reason)."""
    merged = pins(STUDENT_LOCK) | pins(HUB_LOCK)
    return [merged[name] for name in sorted(merged)]


def _digest(parts: list[bytes]) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(hashlib.sha256(part).digest())
    return hasher.hexdigest()


def package_digest() -> str:
    files = []
    for name in PACKAGE_SOURCES:
        path = ROOT / name
        files += sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts) \
            if path.is_dir() else [path]
    return _digest([str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() for p in files])


def ensure_python_venv() -> None:
    """Debian's python3.11 with a working venv module, installed with apt-get when it is missing."""
    probe = [SYSTEM_PYTHON, "-c", "import venv, ensurepip; ensurepip.version()"]
    if os.path.exists(SYSTEM_PYTHON) and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return
    if os.geteuid() != 0:
        raise RuntimeError(f"{SYSTEM_PYTHON} with the venv module is needed for the classroom: "
                           "sudo apt-get install python3.11 python3-venv")
    print("installing python3-venv with apt-get", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "python3.11", "python3-venv"],
                   check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def ensure(environment: Path = ENVIRONMENT) -> Path:
    """Build or update the environment; returns its folder. Safe to call from several processes."""
    environment.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(environment.parent, 0o755)
    with open(environment.parent / f".{environment.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        previous_umask = os.umask(0o022)
        try:
            _build(environment)
        finally:
            os.umask(previous_umask)
    return environment


def _build(environment: Path) -> None:
    python = environment / "bin" / "python"
    requirement_lines = requirements()
    locks_digest = _digest([SYSTEM_PYTHON.encode()] + [line.encode() for line in requirement_lines])
    locks_stamp, package_stamp = environment / ".locks-installed", environment / ".package-installed"
    if _stamped(locks_stamp) != locks_digest:
        ensure_python_venv()
        if python.exists() and _stamped(locks_stamp) is None:
            shutil.rmtree(environment)  # left half-made by an earlier failure
        if not python.exists():
            print(f"creating the classroom environment {environment} with {SYSTEM_PYTHON}", flush=True)
            subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(environment)], check=True)
        locks_stamp.unlink(missing_ok=True)
        package_stamp.unlink(missing_ok=True)
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as merged:
            merged.write("\n".join(requirement_lines) + "\n")
            merged.flush()
            print(f"installing the student and hub locks into {environment} (about two minutes the first time)",
                  flush=True)
            _pip(python, "install", "--no-deps", "-r", merged.name)
        locks_stamp.write_text(locks_digest)
    digest = package_digest()
    if _stamped(package_stamp) != digest:
        # A copy, not editable: the students' servers must not read the checkout.
        with tempfile.TemporaryDirectory(prefix="graphleaf-edu-source-") as scratch:
            source = Path(scratch) / "graphleaf-edu"
            shutil.copytree(ROOT, source, ignore=NOT_PACKAGED)
            _pip(python, "install", "--no-deps", "--force-reinstall", str(source))
        _pip(python, "check")
        _drop_stale_server_extensions(environment)
        package_stamp.write_text(digest)
    if not all((environment / path).exists() for path in ENABLED_FILES):
        # Opening a lesson must not rewrite it, or nbgitpuller sees an edit the student never made;
        # a student's first screen must not ask about Jupyter's news.
        subprocess.run([str(python), "-m", "graphleaf_edu_jupyter", "enable"], check=True, capture_output=True)


def _drop_stale_server_extensions(environment: Path) -> None:
    """Remove the server-extension configs whose module the environment no longer has: every
    student's server would otherwise try to load it at start (an extension renamed by an update)."""
    for config in sorted((environment / SERVER_CONFIG_FOLDER).glob("*.json")):
        modules = json.loads(config.read_text()).get("ServerApp", {}).get("jpserver_extensions", {})
        probe = "import importlib.util, sys; sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))"
        found = subprocess.run([str(environment / "bin" / "python"), "-c", probe, *modules], check=False,
                               capture_output=True).returncode == 0
        if modules and not found:
            print(f"removing {config.name}: the classroom environment no longer has {', '.join(modules)}", flush=True)
            config.unlink()


def _stamped(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def _pip(python: Path, *arguments: str) -> None:
    done = subprocess.run([str(python), "-m", "pip", *arguments, "--quiet", "--disable-pip-version-check"],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"pip {arguments[0]} failed in the classroom environment (exit {done.returncode})")
