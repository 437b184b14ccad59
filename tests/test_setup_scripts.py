"""The set-up scripts behind `make lab` and `make test`, on machines that lack something."""
import os
import subprocess
from pathlib import Path

from notebook_files import ROOT


def run_without(tmp_path: Path, script: list[str], programs: list[str], **env: str) -> subprocess.CompletedProcess:
    """Run a script with a PATH that holds only ``programs`` (no dot, no apt-get, no python...)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for program in programs:
        found = subprocess.run(["bash", "-c", f"command -v {program}"], capture_output=True, text=True, check=True)
        (bin_dir / program).symlink_to(found.stdout.strip())
    return subprocess.run(["/bin/bash", *script], cwd=ROOT, capture_output=True, text=True, check=False,
                          env={"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/tmp"), **env})


def test_without_dot_make_lab_warns_and_goes_on(tmp_path):
    result = run_without(tmp_path, ["tools/ensure_graphviz.sh", "--optional"], ["id"])
    assert result.returncode == 0
    assert "WARNING" in result.stderr and "graphs as text" in result.stderr
    assert "sudo apt-get install graphviz" in result.stderr


def test_without_dot_make_test_stops_and_says_what_to_install(tmp_path):
    result = run_without(tmp_path, ["tools/ensure_graphviz.sh"], ["id"])
    assert result.returncode == 1
    assert "could not be installed automatically" in result.stderr
    assert "brew install graphviz" in result.stderr and "conda install -c conda-forge graphviz" in result.stderr


def test_without_a_python_the_venv_script_says_what_to_install(tmp_path):
    result = run_without(tmp_path, ["tools/make_venv.sh", str(tmp_path / "venv"), "requirements/student.txt"], ["cat", "rm"],
                         PYTHON="python3")
    assert result.returncode == 1
    assert "No 'python3' on PATH" in result.stderr
    assert "CPython 3.11 or newer with the venv module" in result.stderr
    assert "apt-get install python3 python3-venv" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_a_python_too_old_is_refused_before_any_venv_is_made(tmp_path):
    old = tmp_path / "python3"
    old.write_text("#!/bin/bash\n# stands in for an old interpreter: sys.version_info < (3, 11)\n"
                   "case \"$*\" in *version_info*\\<*) exit 1;; *) echo /usr/bin/python3.9 3.9.2;; esac\n")
    old.chmod(0o755)
    result = run_without(tmp_path, ["tools/make_venv.sh", str(tmp_path / "venv"), "requirements/student.txt"], ["cat", "rm"],
                         PYTHON=str(old))
    assert result.returncode == 1
    assert "is too old" in result.stderr
    assert not (tmp_path / "venv").exists()
