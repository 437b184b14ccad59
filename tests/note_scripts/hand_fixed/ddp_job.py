"""A DistributedDataParallel job (gloo, CPU) for torchrun: forward keeps its logits on the module, rank 0
keeps each step's loss in a list, and an EMA copy of the wrapped model is deep-copied after each step."""
import copy
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def say(line):
    """One write per line: the ranks print at the same moment (after the loop, after the group is destroyed),
    and print() writes a line's text and its newline apart, which an unbuffered stdout (PYTHONUNBUFFERED)
    sends as two writes that the other rank's can come between."""
    sys.stdout.write(line + "\n")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 2)
        self.last_logits = None

    def forward(self, x):
        logits = self.layer(x)
        self.last_logits = logits.detach()
        return logits


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(2):
        torch.manual_seed(step * 10 + rank)
        loss = model(torch.randn(3, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            losses.append(loss.detach())
        ema = copy.deepcopy(model)
    kept = copy.deepcopy(losses)
    say(f"rank {rank}: kept {len(kept)} losses, ema weight {ema.module.layer.weight.sum().item():.4f}")
    dist.destroy_process_group()
    say(f"rank {rank}: reached the end")


if __name__ == "__main__":
    main()
