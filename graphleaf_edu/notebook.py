"""The setup every notebook shares: a seed, one ``DEVICE``, and a line saying what it runs on."""
from __future__ import annotations

import random
import shutil
import warnings

import torch

VERIFIED_TORCH = "2.13"


def torch_minor_version(version: str = torch.__version__) -> str:
    """``'2.13.0+cpu'`` -> ``'2.13'``."""
    return ".".join(version.split("+")[0].split(".")[:2])


def setup_notebook(seed: int = 0) -> torch.device:
    """Seed every generator, pick the device, and print one deterministic status line.

    Returns ``cuda`` when a GPU is visible (the ``graphleaf-gpu`` kernel), else ``cpu``.
    """
    random.seed(seed)
    torch.manual_seed(seed)
    running = torch_minor_version()
    if running != VERIFIED_TORCH:
        warnings.warn(
            f"These notebooks were verified with torch {VERIFIED_TORCH}; you run torch {running}. "
            "Outputs may differ: the checked cells will tell you where.",
            stacklevel=2,
        )
    dot = "found" if shutil.which("dot") else "MISSING (graphs fall back to text)"
    print(f"torch {running} | graphleaf_edu ready | Graphviz dot {dot}")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
