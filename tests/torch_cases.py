"""What several test modules share: the devices, the tensors the copy tests use, one reference walk."""
import warnings

import torch
from torch import nn

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def tensor_pool() -> list[torch.Tensor]:
    """Fresh tensors for one example: leaves, results, views, a leaf whose .grad is non-leaf."""
    a = torch.randn(4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using backward\\(\\) with create_graph=True")
        (a**3).sum().backward(create_graph=True)
    base = b * 2
    return [
        a,  # leaf with a non-leaf .grad
        b,
        torch.randn(3),
        torch.nn.Parameter(torch.randn(2)),
        base,
        base[1:3],  # a non-leaf view sharing base's storage
        (a * b).sum(),
        b.exp()[::2],
        b.detach(),
    ]


def verdict_cases() -> dict[str, torch.Tensor]:
    """Tensors that copy.deepcopy copies or refuses for different reasons, by name (fresh each call)."""
    leaf = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        made_without_grad = leaf * 2
    parameter_with_nonleaf_grad = nn.Parameter(torch.ones(2))  # Parameter copies drop .grad
    leaf_with_nonleaf_attribute = torch.ones(2, requires_grad=True)
    leaf_with_nonleaf_attribute.extra = leaf_with_nonleaf_attribute * 2  # deepcopy copies __dict__
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using backward\\(\\) with create_graph=True")
        (parameter_with_nonleaf_grad ** 3).sum().backward(create_graph=True)
    cases = {"leaf": leaf, "non_leaf": leaf * 2, "view": leaf[0], "detached": (leaf * 2).detach(),
             "no_grad": made_without_grad, "parameter": nn.Parameter(torch.ones(2)), "plain": torch.arange(3),
             "parameter_with_nonleaf_grad": parameter_with_nonleaf_grad,
             "leaf_with_nonleaf_attribute": leaf_with_nonleaf_attribute}
    return cases | {f"pool[{i}]": t for i, t in enumerate(tensor_pool())}


def tensors_in(obj) -> list[torch.Tensor]:
    """Every tensor find_nonleaf's walk would visit, via a plain recursive walk (the tests' oracle)."""
    found, seen = [], set()

    def visit(value):
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            found.append(value)
            if value.is_leaf and value.grad is not None and type(value) is torch.Tensor:
                visit(value.grad)
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(key)
                visit(item)
        elif isinstance(value, (list, tuple, set)):
            for item in value:
                visit(item)
        elif isinstance(value, nn.Module):
            for tensor in [*value._parameters.values(), *value._buffers.values()]:
                visit(tensor)
            for child in value._modules.values():
                visit(child)
            for name, item in vars(value).items():
                if name not in ("_parameters", "_buffers", "_modules"):
                    visit(item)
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            for item in vars(value).values():
                visit(item)

    visit(obj)
    return found
