"""Three causes in one training script: an attention map cached in forward and copied by AveragedModel,
logits sent on a spawn SimpleQueue, losses appended to a dataclass that is then deep-copied."""
import copy
from dataclasses import dataclass, field

import torch
import torch.multiprocessing as mp
from averaged_model import Attention  # the attention map it caches in forward
from torch.optim.swa_utils import AveragedModel


@dataclass
class History:
    losses: list = field(default_factory=list)


def main():
    model = Attention(4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    swa = AveragedModel(model)
    history = History()
    monitor = mp.get_context("spawn").SimpleQueue()
    for step in range(3):
        logits = model(torch.randn(2, 3, 4))
        loss = logits.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.losses.append(loss)
        monitor.put(logits)
        if step == 0:
            swa = AveragedModel(model, use_buffers=True)
        swa.update_parameters(model)
    checkpoint = copy.deepcopy(history)
    print("steps:", len(checkpoint.losses))
    print("reached the end")


if __name__ == "__main__":
    main()
