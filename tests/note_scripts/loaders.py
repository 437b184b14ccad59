"""A dataset built from model outputs, read by DataLoader workers started by fork or spawn (argv[1])."""
import copy
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Embeddings(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return copy.deepcopy(self.rows[index])


def main(start_method):
    encoder = torch.nn.Linear(3, 3)
    dataset = Embeddings(encoder(torch.randn(8, 3)))
    loader = DataLoader(dataset, batch_size=4, num_workers=1, multiprocessing_context=start_method, timeout=60)
    for batch in loader:
        print(batch.shape)
    print("reached the end")


if __name__ == "__main__":
    main(sys.argv[1])
