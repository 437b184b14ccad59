"""The two Jupyter kernels the suite is tested on: one that cannot see a GPU, one that can.

    python -m graphleaf_edu.kernels install     # into the running environment (idempotent)
    python -m graphleaf_edu.kernels install --cpu-only   # where no GPU can ever be (Binder)
    python -m graphleaf_edu.kernels list

Notebooks themselves store the standard ``python3`` kernelspec; these kernels exist so that
nbval (``--nbval-kernel-name``) and users can force a device.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from ipykernel.kernelspec import install as install_ipykernel_spec
from jupyter_client.kernelspec import KernelSpecManager


@dataclass(frozen=True)
class KernelSpec:
    name: str
    display_name: str
    env: dict[str, str] = field(default_factory=dict)


CPU_KERNEL = KernelSpec("graphleaf-cpu", "Python 3 (graphleaf, CPU)", {"CUDA_VISIBLE_DEVICES": ""})
GPU_KERNEL = KernelSpec("graphleaf-gpu", "Python 3 (graphleaf, GPU)")
KERNELS = (CPU_KERNEL, GPU_KERNEL)


def install(prefix: str = sys.prefix, kernels: tuple[KernelSpec, ...] = KERNELS) -> list[str]:
    """Install (or overwrite) the kernelspecs (both by default) under ``prefix``; return the folders written."""
    return [
        install_ipykernel_spec(
            kernel_name=spec.name,
            display_name=spec.display_name,
            prefix=prefix,
            env=dict(spec.env) or None,
        )
        for spec in kernels
    ]


def installed() -> dict[str, str]:
    """Map each of our kernel names that Jupyter can find to its folder."""
    found = KernelSpecManager().find_kernel_specs()
    return {spec.name: found[spec.name] for spec in KERNELS if spec.name in found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graphleaf_edu.kernels", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["install", "list"])
    parser.add_argument("--cpu-only", action="store_true", help="install only the CPU kernel")
    args = parser.parse_args(argv)
    if args.command == "install":
        for folder in install(kernels=(CPU_KERNEL,) if args.cpu_only else KERNELS):
            print(f"installed {folder}")
        return 0
    found = installed()
    for spec in KERNELS:
        print(f"{spec.name:15} {found.get(spec.name, 'NOT INSTALLED')}")
    return 0 if len(found) == len(KERNELS) else 1


if __name__ == "__main__":
    sys.exit(main())
