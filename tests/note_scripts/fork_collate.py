"""A fork DataLoader whose dataset hands out non-leaf rows: its worker's collate (stack(out=...)) fails."""
import torch
from loaders import Embeddings
from torch.utils.data import DataLoader


class Rows(Embeddings):
    def __getitem__(self, index):
        return self.rows[index]  # a non-leaf row: the worker's collate stacks it


def main():
    encoder = torch.nn.Linear(3, 3)
    dataset = Rows(encoder(torch.randn(8, 3)))
    loader = DataLoader(dataset, batch_size=4, num_workers=1, multiprocessing_context="fork", timeout=60)
    for batch in loader:
        print(batch.shape)
    print("reached the end")


if __name__ == "__main__":
    main()
