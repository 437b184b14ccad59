"""Rows computed by an encoder, read by fork DataLoader workers that collate them; a logger that keeps
each step's loss, deep-copied as a checkpoint; predictions sent to a monitor on a SimpleQueue."""
import copy

import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __init__(self, encoder, x):
        self.rows = encoder(x).detach()

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return self.rows[index]


class Logger:
    def __init__(self):
        self.losses = []

    def log(self, loss):
        self.losses.append(loss.detach())


def main():
    torch.manual_seed(0)
    dataset = Features(torch.nn.Linear(3, 3), torch.randn(8, 3))
    loader = DataLoader(dataset, batch_size=4, num_workers=1, multiprocessing_context="fork", timeout=60)
    head = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    logger = Logger()
    monitor = mp.get_context("spawn").SimpleQueue()
    for batch in loader:
        preds = head(batch)
        loss = preds.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        logger.log(loss)
        monitor.put(preds.detach())
    checkpoint = copy.deepcopy(logger)
    print("losses:", [round(loss.item(), 4) for loss in checkpoint.losses])
    print("sent:", [tuple(monitor.get().shape) for _ in range(2)])
    print("reached the end")


if __name__ == "__main__":
    main()
