"""Logits sent on a spawn SimpleQueue: pickled in the caller's thread, refused at put."""
import torch
import torch.multiprocessing as mp


def main():
    context = mp.get_context("spawn")
    model = torch.nn.Linear(4, 2)
    logits = model(torch.randn(3, 4))
    queue = context.SimpleQueue()
    queue.put(logits)
    print("reached the end")


if __name__ == "__main__":
    main()
