"""Fresh virtual environments for installing the built wheel, without reinstalling torch every time.

A fresh venv is made for every test run, empty, and then chained (by a ``.pth`` file) to read-only
layers: a venv holding only torch (and what torch itself requires), and a layer holding the student lock
(``requirements/student.txt``: what the ``[lab]`` extra pulls in, at the versions a student gets, which are
the suite's own: the maintainer lock holds the student lock's versions, tests/test_config_consistency.py).
The student layer serves both the wheel's ``[lab]`` install (tests/test_wheel.py) and the class image's
lock install (tests/test_class_image.py), so a run installs the student lock's packages once. Layers are
cached under the system's temp folder, keyed by everything that decides their content (Python version,
torch version, the lock's text), so a changed input builds a new layer. pip installs the wheel into the fresh venv and
re-resolves its requirements against the layers each time: a requirement the layers lack is installed,
never assumed.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from cpu_seconds import shared_cost

ROOT = Path(__file__).resolve().parent.parent
STUDENT_LOCK = ROOT / "requirements" / "student.txt"
CACHE = Path(tempfile.gettempdir()) / "graphleaf-edu-venvs"
PYTHON_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
# The interpreter the suite's venv was made from: fresh venvs get the same Python, without its packages.
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


def site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{PYTHON_VERSION}" / "site-packages"


def python(venv: Path) -> Path:
    return venv / "bin" / "python"


def make_venv(venv: Path, layers: list[Path], with_pip: bool = False) -> Path:
    """An empty venv that also sees ``layers``' packages; without pip unless asked (the suite's pip
    installs into it)."""
    subprocess.run([BASE_PYTHON, "-m", "venv", *([] if with_pip else ["--without-pip"]), str(venv)], check=True)
    if layers:
        (site_packages(venv) / "_graphleaf_layers.pth").write_text("".join(f"{site_packages(layer)}\n" for layer in layers))
    return venv


def pip_install(venv: Path, *requirements: str, constraints: Path | None = None) -> str:
    """``pip install`` into ``venv`` with the suite's pip; returns pip's output."""
    command = [sys.executable, "-m", "pip", "--python", str(python(venv)), "install", "--disable-pip-version-check",
               "--no-input", *requirements]
    if constraints is not None:
        command += ["--constraint", str(constraints)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(requirements)} failed:\n{completed.stdout}\n{completed.stderr}")
    return completed.stdout


def torch_requirement() -> str:
    """torch at the suite's version (``X.Y.Z+cpu`` -> ``torch==X.Y.Z``, which the local CPU build matches)."""
    return f"torch=={metadata.version('torch').partition('+')[0]}"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (made if missing): another process (a second pytest-xdist
    worker, another run) that asks for it waits until this one lets go, or until this process ends."""
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def cached_layer(name: str, key: str, layers: list[Path], populate) -> Path:
    """The venv ``CACHE/name-<hash of key>``, made once (chained to ``layers``) and filled by ``populate(venv)``.

    One process builds it while any other that needs it (a second xdist worker, another run) waits on its
    lock and then uses it, so it is never built twice. It is built beside its final place and renamed
    into it, so a run that is interrupted never leaves a half-filled layer."""
    final = CACHE / f"{name}-py{PYTHON_VERSION}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if (final / "complete").exists():
        return final
    CACHE.mkdir(parents=True, exist_ok=True)
    with locked(CACHE / f".{final.name}.lock"):
        if (final / "complete").exists():  # built while this process waited for the lock
            return final
        building = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=CACHE))
        try:
            shutil.rmtree(building)
            with shared_cost(f"the {name} layer ({final.name})"):  # the run's, not the first file's (tests/cpu_seconds.py)
                make_venv(building, layers)
                populate(building)
            (building / "complete").write_text(key)
            os.rename(building, final)
        except OSError:
            if not (final / "complete").exists():  # not a run that takes no lock having finished first
                raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return final


def torch_layer() -> Path:
    """The cached venv holding torch at the suite's version and nothing else."""
    return cached_layer("torch", torch_requirement(), [], lambda venv: pip_install(venv, torch_requirement()))


def student_layer() -> Path:
    """The cached venv, chained to the torch layer, that ``pip install -r requirements/student.txt`` fills:
    every package of the student lock at its pinned version (torch's pin is met by the torch layer)."""
    lock = STUDENT_LOCK.read_text()
    return cached_layer("student", f"{torch_requirement()}\n{lock}", [torch_layer()],
                        lambda venv: pip_install(venv, "-r", str(STUDENT_LOCK)))
