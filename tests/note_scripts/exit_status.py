"""Exits with the status given in argv[1], after a deepcopy that meets a cached activation (argv[2] == "cause")."""
import copy
import sys

import torch


def main(status, cause):
    model = torch.nn.Linear(2, 2)
    if cause:
        model.cache = model(torch.randn(1, 2))
    copy.deepcopy(model)
    print("reached the end")
    sys.exit(status)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] == "cause")
