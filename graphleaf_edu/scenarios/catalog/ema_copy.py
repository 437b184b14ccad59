"""An EMA / SWA / teacher copy taken after training started, meeting what ``forward()`` left on the model."""
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel

from graphleaf_edu import safe_deepcopy
from graphleaf_edu.i18n import N_
from graphleaf_edu.scenarios.catalog.shared import DEEPCOPY_ERROR
from graphleaf_edu.scenarios.engine import NONE, Fix, Scenario


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.stats = {}

    def forward(self, x):
        out = self.linear(x)
        self.stats["mean"] = out.mean()  # for logging
        return out


class NetLoggingANumber(Net):
    def forward(self, x):
        out = self.linear(x)
        self.stats["mean"] = out.mean().item()  # for logging
        return out


def setup(net=Net):
    torch.manual_seed(0)
    model = net()
    model(torch.randn(2, 4)).sum().backward()
    return {"model": model}


def setup_ema_before_forward():
    torch.manual_seed(0)
    model = Net()
    ema = AveragedModel(model)
    model(torch.randn(2, 4)).sum().backward()
    return {"model": model, "ema": ema}


def setup_logging_a_number():
    return setup(NetLoggingANumber)


def average_model(model):
    return AveragedModel(model)


def update_the_early_ema(model, ema):
    ema.update_parameters(model)
    return ema


def average_a_safe_deepcopy(model):
    return AveragedModel(safe_deepcopy(model))


SCENARIO = Scenario(
    key="ema_copy",
    title=N_("An EMA / SWA / teacher copy taken after training started"),
    summary=N_(
        "AveragedModel deep-copies the model when it is created, as timm's and ultralytics' EMA, "
        "Lightning's SWA callback and teacher networks do. Created after a training step, it meets "
        "whatever forward() left on the model: here a logging dict holding a non-leaf tensor."
    ),
    setup=setup,
    target="model",
    culprit=".stats['mean']",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, N_("no fix: AveragedModel(model)"), average_model, N_("it raises")),
        Fix("copy_before_forward", N_("create the EMA before the first forward"), update_the_early_ema,
            N_("the copy is taken once, at construction; each update copies values under no_grad"),
            setup=setup_ema_before_forward),
        Fix("detach_at_source", N_("log a number: out.mean().item()"), average_model,
            N_("fixes the model itself: logging wants a number anyway (.item(), or .detach() for a tensor)"),
            setup=setup_logging_a_number),
        Fix("safe_deepcopy", "AveragedModel(safe_deepcopy(model))", average_a_safe_deepcopy,
            N_("two copies (AveragedModel deep-copies again); "
               "every non-leaf tensor inside becomes detach().clone(); the original is only read")),
    ),
    source="wild",
)
