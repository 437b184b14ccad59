"""The setup every notebook shares: a seed, one ``DEVICE``, short tracebacks, and a line saying what it runs on;
and the runner, ``python -m graphleaf_edu``, run from a notebook as a terminal runs it."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import warnings
from typing import Any

import torch

from graphleaf_edu.i18n import ENV_VAR, language, say, set_language
from graphleaf_edu.tracebacks import use_short_tracebacks

VERIFIED_TORCH = "2.13"
"""The torch release (major.minor) the notebooks' stored outputs were checked with.

``setup_notebook`` warns when the running torch is another release: what the notebooks say about
PyTorch was verified on this one, and their checked cells show where another one differs.

Example:
    >>> gl.VERIFIED_TORCH
    '2.13'
"""


def torch_minor_version(version: str = torch.__version__) -> str:
    """The major.minor of a torch version: ``'X.Y.Z+cpu'`` -> ``'X.Y'``."""
    return ".".join(version.split("+")[0].split(".")[:2])


def setup_notebook(seed: int = 0, short_tracebacks: bool = True, lang: str | None = None) -> torch.device:
    """The setup every notebook shares: seed the generators, print one status line, pick the device.

    Seeds Python's ``random`` and torch, then prints the torch release, and whether Graphviz's
    ``dot`` was found (without it, graphs show as text). Warns when torch is not the release the
    notebooks were verified with (``VERIFIED_TORCH``). In IPython it also shows errors short
    (``graphleaf_edu.tracebacks``): the type, the message, the notebook's own lines and the line
    that raised; ``%xmode Context`` shows every frame again.

    Args:
        seed: the seed for ``random`` and ``torch.manual_seed``.
        short_tracebacks: show short tracebacks in IPython (the exception itself is unchanged).
        lang: the language of every word the package says from now on: ``"zh-CN"`` (Simplified
            Chinese) or ``"en"``; None keeps ``GRAPHLEAF_EDU_LANG`` or English (never the machine's locale).

    Returns:
        ``torch.device("cuda")`` when a GPU is visible (the ``graphleaf-gpu`` kernel), else ``cpu``.

    Raises:
        ValueError: ``lang`` names a language the package has no words in.
        Otherwise nothing of its own; a ``UserWarning`` when the torch release differs from ``VERIFIED_TORCH``.

    Example:
        >>> device = gl.setup_notebook(seed=0)
        torch 2.13 | graphleaf_edu ready | Graphviz dot found
        >>> device.type in ("cpu", "cuda")
        True
    """
    if lang is not None:
        set_language(lang)
    shell = _ipython()
    if shell is not None and short_tracebacks:
        use_short_tracebacks(shell)
    random.seed(seed)
    torch.manual_seed(seed)
    running = torch_minor_version()
    if running != VERIFIED_TORCH:
        warnings.warn(
            say("These notebooks were verified with torch {verified}; you run torch {running}. "
                "Outputs may differ: the checked cells will tell you where.", verified=VERIFIED_TORCH, running=running),
            stacklevel=2,
        )
    if shutil.which("dot"):
        print(say("torch {running} | graphleaf_edu ready | Graphviz dot found", running=running))
    else:
        print(say("torch {running} | graphleaf_edu ready | Graphviz dot MISSING (graphs fall back to text)",
                  running=running))
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def run_script(*arguments: str, cwd: str | os.PathLike[str] | None = None) -> int:
    """Run ``python -m graphleaf_edu ARGUMENTS`` in a fresh Python, as a terminal runs it, and print what it prints.

    The runner is the one a terminal gets (``python -m graphleaf_edu --keep-going train.py``), started
    with this Python in ``cwd``; what it writes to stdout and stderr is printed in the order written,
    and it speaks the language this process speaks (``setup_notebook(lang=...)``). A notebook shows a
    script's run this way; nothing of the script runs in the notebook's own process.

    Args:
        arguments: the runner's options and the script, as on its command line (``"--keep-going",
            "--patch", "fix.diff", "train.py"``).
        cwd: the folder to run in, where the paths in ``arguments`` start (None: the current folder).

    Returns:
        The runner's exit status (for ``--keep-going``: the script's own non-zero status, else 1 when
        a cause was found, else 0).

    Raises:
        Nothing of its own: the runner's errors are printed, as a terminal shows them.

    Example:
        >>> status = gl.run_script("--help")
        usage: python -m graphleaf_edu [--keep-going [--patch FILE] [--library PATH]] [--origins] [--lang LANG]
        ...
        >>> status
        0
    """
    environment = {**os.environ, ENV_VAR: language()}
    done = subprocess.run([sys.executable, "-m", "graphleaf_edu", *arguments], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, encoding="utf-8", env=environment, cwd=cwd,
                          check=False)
    print(done.stdout, end="")
    return done.returncode


def _ipython() -> Any:
    """The running IPython shell, or None (plain Python, or IPython not installed)."""
    try:
        from IPython import get_ipython
    except ModuleNotFoundError:
        return None
    return get_ipython()
