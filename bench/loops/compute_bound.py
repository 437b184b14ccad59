"""A compute-bound loop: an MLP trained on in-memory batches, no workers, every op on the autograd
graph (what anomaly mode's per-node stack recording costs most on). Prints ``loop_s=... cpu_s=...``.

    python bench/loops/compute_bound.py [STEPS]
"""
import torch
from timing import run_timed
from torch import nn


def train(steps):
    torch.manual_seed(0)
    model = nn.Sequential(*[layer for _ in range(6) for layer in (nn.Linear(64, 64), nn.GELU())], nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randn(32, 1)
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    run_timed(train, 400)
