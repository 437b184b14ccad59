"""What several scenarios share: the copy functions of the model scenarios, the error, the costs."""
import copy

from graphleaf_edu import safe_deepcopy
from graphleaf_edu.errors import GRAPH_LEAVES
from graphleaf_edu.i18n import N_
from graphleaf_edu.scenarios.engine import ExpectedError

DEEPCOPY_ERROR = ExpectedError(RuntimeError, GRAPH_LEAVES)
SAFE_DEEPCOPY_COST = N_("new memory; every non-leaf tensor inside becomes detach().clone(); the original is only read")


def deepcopy_model(model):
    return copy.deepcopy(model)


def safe_deepcopy_model(model):
    return safe_deepcopy(model)
