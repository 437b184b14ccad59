"""Lesson 04's training loop (``train_with_additions``), fixed: fork DataLoader workers, a forward hook on
the ReLU keeping a detached activation, an EMA teacher (AveragedModel, made at the first step, updated
every step) and a checkpoint of both state_dicts into io.BytesIO per epoch. The same model and loop as
notebooks/04_capstone_training_loop.ipynb; the bench's own data (512 rows, batches of 32, a worker
timeout) and EPOCHS. Prints its loop's wall and CPU seconds: ``loop_s=... cpu_s=...`` (timing.py).

    python bench/loops/capstone_like.py [EPOCHS]
"""
import io

import torch
from timing import run_timed
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, TensorDataset


def keep_activation(module, inputs, output):  # lesson 04's fix: values for the dashboard, no graph
    module.last_activation = output.detach()


def train(epochs):
    torch.manual_seed(0)
    features = torch.randn(512, 8)
    targets = features @ torch.randn(8, 1) + 0.1 * torch.randn(512, 1)
    loader = DataLoader(TensorDataset(features, targets), batch_size=32, shuffle=True, num_workers=2,
                        multiprocessing_context="fork", timeout=120)
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    model[1].register_forward_hook(keep_activation)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses, teacher, checkpoints = [], None, []
    for _ in range(epochs):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if teacher is None:
                teacher = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
            teacher.update_parameters(model)
        file = io.BytesIO()
        torch.save({"model": model.state_dict(), "teacher": teacher.state_dict()}, file)
        checkpoints.append(file.getvalue())
    return losses[-1]


if __name__ == "__main__":
    run_timed(train, 4)
