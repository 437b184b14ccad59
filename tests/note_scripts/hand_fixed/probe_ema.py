"""An EMA teacher deep-copied from a model each step: a probe object's hook keeps the activations in a
dict, a forward hook keeps the features, and forward keeps its logits."""
import copy

import torch
from torch import nn


class Probe:
    def __init__(self):
        self.seen = {}

    def __call__(self, module, inputs, out):
        self.seen.update(tanh=out.detach())


def keep_features(module, inputs, output):
    module.features = output.detach()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.act = nn.Tanh()
        self.head = nn.Linear(8, 2)
        self.last_logits = None

    def forward(self, x):
        logits = self.head(self.act(self.body(x)))
        self.last_logits = logits.detach()
        return logits


def main():
    torch.manual_seed(0)
    model = Net()
    model.act.register_forward_hook(Probe())
    model.body.register_forward_hook(keep_features)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(5, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        teacher = copy.deepcopy(model)
        print(f"step {step}: loss {loss.item():.4f}")
    with torch.no_grad():
        print(f"teacher: {teacher(torch.ones(1, 4)).sum().item():.4f}")
    print("reached the end")


if __name__ == "__main__":
    main()
