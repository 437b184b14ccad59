"""Logits put on a spawn Queue as the script's last act: its feeder thread pickles them at exit."""
import torch
import torch.multiprocessing as mp


def main():
    queue = mp.get_context("spawn").Queue()
    logits = torch.nn.Linear(4, 2)(torch.randn(3, 4))
    queue.put(logits)
    print("reached the end")


if __name__ == "__main__":
    main()
