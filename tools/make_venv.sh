#!/usr/bin/env bash
# Build (or repair) a venv from one lock and install the package into it, editable:
#   tools/make_venv.sh VENV LOCK      e.g. .venv-lab requirements/student.txt
# Checks the interpreter first and says what to install when it cannot make a venv. A venv left
# half-made by an earlier failure (no working pip) is removed and built again.
set -euo pipefail
venv=$1 lock=$2
python=${PYTHON:-python3}
stamp="$venv/.graphleaf-installed"

need_python() {
  cat >&2 <<MSG
$1
This suite needs CPython 3.11 or newer with the venv module (tested with 3.11). Install one, e.g.
    sudo apt-get install python3 python3-venv      # Debian / Ubuntu (3.11 on Debian 12)
    brew install python@3.11                       # macOS
    conda create -n py311 python=3.11              # conda
then run make again, or point make at it: make lab PYTHON=/path/to/python3.11 (or make test ...)
MSG
  exit 1
}

if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "$venv is half-made (no working pip): removing it and building it again"
  rm -rf "$venv"
fi

if [ ! -x "$venv/bin/python" ]; then
  command -v "$python" >/dev/null 2>&1 || need_python "No '$python' on PATH."
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    need_python "$("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])') is too old."
  "$python" -c 'import venv, ensurepip; ensurepip.version()' >/dev/null 2>&1 ||
    need_python "'$python' has no working venv module (on Debian/Ubuntu it is the python3-venv package)."
  echo "creating $venv with $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  "$python" -m venv "$venv" || { rm -rf "$venv"; need_python "'$python -m venv $venv' failed."; }
fi

rm -f "$stamp"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$lock"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
# Opening a lesson in this venv's JupyterLab must not rewrite it (graphleaf_edu_jupyter/__init__.py).
"$venv/bin/python" -m graphleaf_edu_jupyter enable >/dev/null
touch "$stamp"
