"""An attention map cached in forward, deep-copied by AveragedModel (SWA)."""
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel


class Attention(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.query = nn.Linear(width, width)
        self.attention = None

    def forward(self, x):
        scores = self.query(x) @ x.transpose(-1, -2)
        self.attention = scores.softmax(-1)
        return self.attention @ x


def main():
    model = Attention(4)
    model(torch.randn(2, 3, 4)).sum().backward()
    swa = AveragedModel(model)
    print(swa)
    print("reached the end")


if __name__ == "__main__":
    main()
