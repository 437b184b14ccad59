"""Sending a non-leaf tensor through a ``torch.multiprocessing`` queue: "Cowardly refusing"."""
import torch
import torch.multiprocessing as mp

from graphleaf_edu import safe_deepcopy
from graphleaf_edu.errors import COWARDLY
from graphleaf_edu.i18n import N_
from graphleaf_edu.scenarios.engine import NONE, ExpectedError, Fix, Scenario


def setup():
    torch.manual_seed(0)
    x = torch.randn(2, 4, requires_grad=True)
    y = x * 2
    queue = mp.SimpleQueue()
    return {"x": x, "y": y, "queue": queue}


def send_y(queue, y):
    queue.put(y)
    return queue.get()


def send_y_detached(queue, y):
    queue.put(y.detach())
    return queue.get()


def send_a_detached_clone(queue, y):
    queue.put(y.detach().clone())
    return queue.get()


def send_a_safe_deepcopy(queue, y):
    queue.put(safe_deepcopy(y))
    return queue.get()


SCENARIO = Scenario(
    key="mp_queue",
    title=N_("Sending a non-leaf tensor through a torch.multiprocessing queue"),
    summary=N_(
        "torch.multiprocessing's pickler (ForkingPickler) refuses non-leaf tensors that require grad: "
        "autograd cannot cross processes. SimpleQueue.put pickles in the caller, so the error surfaces "
        "here. multiprocessing.Queue.put pickles in a background feeder thread: the same error is only "
        "printed there, put() returns, and the receiver's get() waits forever. Plain pickle.dumps "
        "does not refuse: it silently drops the graph."
    ),
    setup=setup,
    target="y",
    culprit="",
    error=ExpectedError(RuntimeError, COWARDLY),
    fixes=(
        Fix(NONE, N_("no fix: put y on the queue"), send_y, N_("it raises")),
        Fix("detach", N_("put y.detach()"), send_y_detached,
            N_("sends y's own memory: torch moves it to shared memory and the receiver maps the same storage")),
        Fix("detach_clone", N_("put y.detach().clone()"), send_a_detached_clone,
            N_("sends a fresh copy (moved to shared memory); y is untouched")),
        Fix("safe_deepcopy", N_("put safe_deepcopy(y)"), send_a_safe_deepcopy,
            N_("works for whole objects (dicts of tensors, modules); "
               "every non-leaf tensor inside becomes detach().clone(); the original is only read")),
    ),
    source="wild",
)
