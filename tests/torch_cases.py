"""The devices the package tests run on: the CPU, and CUDA where a GPU is visible."""
import torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
