"""A BYOL job: the library deep-copies the encoder, which keeps its projection (set in forward) and its
hidden activation (a hook method stores it in a dict)."""
import torch
from byol_lite import BYOL
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(4, 8)
        self.project = nn.Linear(8, 3)
        self.memory = {}
        self.hidden.register_forward_hook(self.remember)

    def remember(self, module, inputs, output):
        self.memory["hidden"] = output

    def forward(self, x):
        z = self.project(self.hidden(x).relu())
        self.projection = z
        return z


def main():
    torch.manual_seed(0)
    encoder = Encoder()
    encoder(torch.randn(2, 4))  # a warm-up forward before the library is set up
    byol = BYOL(encoder)
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1)
    for step in range(2):
        x = torch.randn(6, 4)
        loss = (encoder(x) - byol.target(x + 0.1).detach()).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        byol.update()
        print(f"step {step}: loss {loss.item():.4f}")
    print("reached the end")


if __name__ == "__main__":
    main()
