"""A loop that keeps each step's loss and output norm in lists, then copies them in containers built at
the copy: a dict display with the losses, a tuple with the norms, a list with the last output."""
import copy

import torch


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, norms = [], []
    for step in range(3):
        out = model(torch.randn(4, 3))
        loss = out.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
        norms.append(out.norm().detach())
    checkpoint = copy.deepcopy({"step": step, "losses": losses})
    stats = copy.deepcopy((step, norms))
    last = copy.deepcopy([step, out.detach()])
    print("losses:", [round(loss.item(), 4) for loss in checkpoint["losses"]])
    print("norms:", [round(norm.item(), 4) for norm in stats[1]])
    print("last:", [round(value, 4) for value in last[1].flatten().tolist()])
    print("reached the end")


if __name__ == "__main__":
    main()
