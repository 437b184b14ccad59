"""The release and the torch it supports, each written once in pyproject.toml, and what follows from them.

- the version: ``[project] version``; the release is the annotated git tag ``v<version>``, and what a
  notebook, Colab or a class installs is ``graphleaf-edu @ git+<repository>@v<version>``, never a branch;
- the torch: ``[tool.graphleaf-edu] torch``, the release the locks pin and the stored outputs were made
  with (``make lock`` pins it; ``gl.VERIFIED_TORCH`` and every notebook's header carry its major.minor,
  tests keep them in step; docs/moving-torch.md moves it);
- the repository: ``[project.urls] Repository``, which every badge and install line names, and which
  ``make student REPO=...`` replaces by the class's own.

    python tools/release.py version | tag | torch | repository    # print one of them (CI, make, shells)
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GITHUB = re.compile(r"https://github\.com/([\w.-]+)/([\w.-]+)")
# An install of the suite from git, in any shape a setup cell gives it: the address, then maybe a ref.
INSTALL = re.compile(r"graphleaf-edu @ git\+(?P<address>[^\s\"'@]+)(?:@(?P<ref>[^\s\"']+))?")
# A header's "**Verified with**: torch X.Y" (the rest of the line is the lesson's own words).
VERIFIED_WITH = re.compile(r"(\*\*Verified with\*\*: torch )(\d+\.\d+)\b")


def pyproject(root: Path = ROOT) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())


def version(root: Path = ROOT) -> str:
    return pyproject(root)["project"]["version"]


def tag(root: Path = ROOT) -> str:
    return f"v{version(root)}"


def repository(root: Path = ROOT) -> str:
    return pyproject(root)["project"]["urls"]["Repository"]


def torch(root: Path = ROOT) -> str:
    """The supported torch release, ``'X.Y.Z'``."""
    return pyproject(root)["tool"]["graphleaf-edu"]["torch"]


def major_minor(release: str) -> str:
    """``'X.Y.Z+cpu'`` -> ``'X.Y'``."""
    return ".".join(release.split("+")[0].split(".")[:2])


def install_requirement(address: str, ref: str) -> str:
    """What pip installs the suite from: ``graphleaf-edu @ git+ADDRESS@REF``."""
    return f"graphleaf-edu @ git+{address}@{ref}"


def pin_installs(text: str, address: str, ref: str) -> str:
    """Every install of the suite in ``text``, whatever address or ref it had, made ``address@ref``."""
    return INSTALL.sub(lambda match: install_requirement(address, ref), text)


def github_owner_and_name(address: str) -> str:
    match = GITHUB.fullmatch(address)
    if not match:
        raise ValueError(f"{address!r} is not a GitHub repository address (https://github.com/OWNER/NAME): "
                         "the Colab and Binder badges open GitHub repositories only.")
    return "/".join(match.groups())


def retarget(text: str, new_address: str, old_address: str) -> str:
    """``text`` with every link to the suite's repository (its address, Colab, Binder, nbgitpuller and
    GitHub Pages forms) pointing at ``new_address`` instead."""
    old, new = github_owner_and_name(old_address), github_owner_and_name(new_address)
    (old_owner, old_name), (new_owner, new_name) = old.split("/"), new.split("/")
    forms = [
        (old_address, new_address),
        (f"colab.research.google.com/github/{old}/", f"colab.research.google.com/github/{new}/"),
        (f"mybinder.org/v2/gh/{old}/", f"mybinder.org/v2/gh/{new}/"),
        (f"github.com%2F{old_owner}%2F{old_name}", f"github.com%2F{new_owner}%2F{new_name}"),
        (f"{old_owner}.github.io/{old_name}", f"{new_owner}.github.io/{new_name}"),
    ]
    for before, after in forms:
        text = text.replace(before, after)
    return text


def colab_url(owner_and_name: str, ref: str, path: str) -> str:
    return f"https://colab.research.google.com/github/{owner_and_name}/blob/{ref}/{path}"


COMMANDS = {"version": version, "tag": tag, "torch": torch, "repository": repository}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(f"usage: python tools/release.py {' | '.join(COMMANDS)}", file=sys.stderr)
        return 2
    print(COMMANDS[argv[0]]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
