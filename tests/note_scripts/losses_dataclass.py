"""Losses appended to a dataclass of training history, which is then deep-copied for a checkpoint."""
import copy
from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class History:
    losses: list = field(default_factory=list)


def main():
    model = nn.Linear(3, 1)
    history = History()
    for _ in range(20):
        x, y = torch.randn(8, 3), torch.randn(8, 1)
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        history.losses.append(loss)
    checkpoint = copy.deepcopy(history)
    print(len(checkpoint.losses))
    print("reached the end")


if __name__ == "__main__":
    main()
