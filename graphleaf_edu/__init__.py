"""graphleaf_edu: see, diagnose and fix PyTorch's "graph leaves ... deepcopy" error.

Public names (notebooks import only these):
    setup_notebook      the setup every notebook shares
    draw                a picture of the autograd graph (-> AutogradGraph)
"""
from graphleaf_edu.graphs import AutogradGraph, draw
from graphleaf_edu.notebook import VERIFIED_TORCH, setup_notebook

__version__ = "0.1.0"

__all__ = ["VERIFIED_TORCH", "setup_notebook", "AutogradGraph", "draw"]
