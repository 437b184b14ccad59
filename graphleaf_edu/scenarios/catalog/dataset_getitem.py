"""A Dataset whose ``__getitem__`` deep-copies a non-leaf row.

The dataset classes live in this module, not in a notebook, so that spawn and forkserver
DataLoader workers, which unpickle the dataset, can import them.
"""
import copy

import torch
from torch.utils.data import DataLoader, Dataset

from graphleaf_edu import safe_deepcopy
from graphleaf_edu.i18n import N_
from graphleaf_edu.scenarios.catalog.shared import DEEPCOPY_ERROR
from graphleaf_edu.scenarios.engine import NONE, Fix, Scenario


class Rows(Dataset):
    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return copy.deepcopy(self.data[i])


class RowsDetachedAtConstruction(Rows):
    def __init__(self, data):
        super().__init__(data.detach())


class RowsDetachedInGetitem(Rows):
    def __getitem__(self, i):
        return self.data[i].detach().clone()


def setup(rows=Rows):
    torch.manual_seed(0)
    x = torch.randn(8, 4, requires_grad=True)
    dataset = rows(x * 2)
    return {"x": x, "dataset": dataset}


def setup_detached_at_construction():
    return setup(rows=RowsDetachedAtConstruction)


def setup_detached_in_getitem():
    return setup(rows=RowsDetachedInGetitem)


def first_batch(dataset):
    return next(iter(DataLoader(dataset, batch_size=2)))


def first_batch_of_a_safe_deepcopy(dataset):
    return next(iter(DataLoader(safe_deepcopy(dataset), batch_size=2)))


SCENARIO = Scenario(
    key="dataset_getitem",
    title=N_("A Dataset whose __getitem__ deep-copies a non-leaf row"),
    summary=N_(
        "The rows are x * 2, so each row self.data[i] is a non-leaf view, and deep-copying it in "
        "__getitem__ raises. With num_workers=0 this happens here, in this process; with worker "
        "processes the error depends on the start method (see graphleaf_edu.dataloading)."
    ),
    setup=setup,
    target="dataset",
    culprit=".data",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: load a batch"), first_batch, N_("it raises")),
        Fix("detach_at_construction", N_("detach the data when building the dataset"), first_batch,
            N_("rows are leaves without grad, so batches carry no graph back to x; the dataset pickles for workers"),
            setup=setup_detached_at_construction),
        Fix("detach_in_getitem", N_("detach().clone() in __getitem__"), first_batch,
            N_("a copy per item; the dataset still holds the graph, so spawn/forkserver workers still refuse it"),
            setup=setup_detached_in_getitem),
        Fix("safe_deepcopy", N_("graphleaf_edu.safe_deepcopy of the dataset"), first_batch_of_a_safe_deepcopy,
            N_("copies the whole dataset once, its data detached; "
               "every non-leaf tensor inside becomes detach().clone(); the original is only read")),
    ),
    source="seed",
)
