"""Features passed to a spawned Process: pickled by Process.start() (multiprocessing.reduction.dump)."""
import torch
import torch.multiprocessing as mp


def consume(features):
    print(features.sum())


def main():
    context = mp.get_context("spawn")
    encoder = torch.nn.Linear(4, 4)
    features = encoder(torch.randn(2, 4))
    worker = context.Process(target=consume, args=(features,))
    worker.start()
    worker.join()
    print("reached the end")


if __name__ == "__main__":
    main()
