"""A library catches the graph-leaves error and raises its own from it."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "site-packages"))
import snapshot_pipeline


def main():
    model = torch.nn.Linear(3, 2)
    batch = {"inputs": torch.randn(4, 3)}
    batch["outputs"] = model(batch["inputs"])
    snapshot_pipeline.snapshot(batch)


if __name__ == "__main__":
    main()
