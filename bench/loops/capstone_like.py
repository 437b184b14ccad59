"""The capstone's training loop, fixed: fork DataLoader workers, a forward hook keeping a detached
activation, an EMA teacher (AveragedModel) updated every step. Prints its loop's wall and CPU
seconds: ``loop_s=... cpu_s=...`` (timing.py).

    python bench/loops/capstone_like.py [EPOCHS]
"""
import torch
from timing import run_timed
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(self.body(x))


def keep_activation(module, inputs, output):
    module.last_activation = output.detach()


def train(epochs):
    torch.manual_seed(0)
    features = torch.randn(512, 8)
    targets = features @ torch.randn(8, 1) + 0.1 * torch.randn(512, 1)
    loader = DataLoader(TensorDataset(features, targets), batch_size=32, shuffle=True, num_workers=2,
                        multiprocessing_context="fork", timeout=120)
    model = Regressor(8, 16)
    model.body.register_forward_hook(keep_activation)
    teacher = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(epochs):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            teacher.update_parameters(model)
    return loss.item()


if __name__ == "__main__":
    run_timed(train, 4)
