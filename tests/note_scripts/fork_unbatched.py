"""A dataset built from model outputs, read by one fork DataLoader worker with batch_size=None: unfixed, the
worker's feeder thread cannot send a sample and the main process waits until the loader's timeout."""
import torch
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self, encoder, x):
        self.rows = encoder(x)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return self.rows[index]


if __name__ == "__main__":
    loader = DataLoader(Rows(torch.nn.Linear(3, 3), torch.randn(4, 3)), batch_size=None, num_workers=1,
                        multiprocessing_context="fork", timeout=20)
    print([tuple(row.shape) for row in loader])
    print("reached the end")
