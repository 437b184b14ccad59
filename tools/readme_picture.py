"""Draw the README's picture (`make notebooks` refreshes it with the notebooks' outputs)."""
from pathlib import Path

import torch

import graphleaf_edu as gl

PICTURE = Path(__file__).resolve().parent.parent / "docs" / "autograd-graph.svg"


def main() -> None:
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    snapshot = y.detach().clone()
    gl.draw(y.sum(), names={"x": x, "y": y, "snapshot": snapshot}, highlight=[y, snapshot]).save(PICTURE)
    print(f"wrote {PICTURE.relative_to(Path.cwd())}")


if __name__ == "__main__":
    main()
