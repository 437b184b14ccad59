"""Logits put on a spawn Queue: its feeder thread pickles them later, prints the refusal and goes on."""
import time

import torch
import torch.multiprocessing as mp


def main():
    context = mp.get_context("spawn")
    model = torch.nn.Linear(4, 2)
    logits = model(torch.randn(3, 4))
    queue = context.Queue()
    queue.put(logits)
    time.sleep(1)  # the feeder thread fails meanwhile
    queue.close()
    queue.join_thread()
    print("the script went on")


if __name__ == "__main__":
    main()
