"""The API reference: every public name documented (what, arguments, returns, raises, an example), every
example runs as a doctest, docs/api.md is what tools/api_docs.py makes of the docstrings, and
``__all__``, the API page and CHANGELOG.md name the same public API."""
import doctest
import inspect
import re
import sys
from pathlib import Path

import pytest
import torch

import graphleaf_edu as gl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import api_docs

NAMES = api_docs.public_names()


def sections(name: str) -> tuple[str, dict[str, list[str]]]:
    return api_docs.split_sections(api_docs.docstring(name))


@pytest.mark.parametrize("name", NAMES)
def test_every_public_name_says_what_it_is_and_shows_an_example(name):
    intro, found = sections(name)
    assert intro, f"{name}: no docstring (a constant takes a string literal right after its assignment)"
    assert any(line.startswith(">>> ") for line in found.get("Example", [])), f"{name}: no Example: doctest"
    value = getattr(gl, name)
    if api_docs.kind(value) == "function":
        parameters = [p for p in inspect.signature(value).parameters if p not in ("self", "cls")]
        needed = {"Returns", "Raises"} | ({"Args"} if parameters else set())
        assert needed <= found.keys(), f"{name}: missing {sorted(needed - found.keys())}"
        documented = {api_docs.ENTRY.match(line).group(1) for line in found.get("Args", [])
                      if api_docs.ENTRY.match(line) and not line.startswith(" ")}
        assert documented == set(parameters), f"{name}: Args documents {sorted(documented)}, takes {parameters}"


@pytest.mark.parametrize("name", NAMES)
def test_examples_run(name):
    example = "\n".join(sections(name)[1].get("Example", []))
    test = doctest.DocTestParser().get_doctest(example, {"torch": torch, "gl": gl}, name, f"gl.{name}", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    torch.manual_seed(0)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_api_page_is_generated_from_the_docstrings():
    assert (ROOT / "docs" / "api.md").read_text() == api_docs.render(), "run: python tools/api_docs.py"


def changelog_names() -> set[str]:
    """Public names the CHANGELOG adds, minus those it removes, over every release."""
    names: set[str] = set()
    items = re.split(r"\n(?=- |#)", (ROOT / "CHANGELOG.md").read_text())  # a list item runs on in indented lines
    for item in items:
        match = re.match(r"^- (Added to|Removed from) the public API: (.+)", item, re.DOTALL)
        if match:
            listed = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", match.group(2)))
            names = names | listed if match.group(1) == "Added to" else names - listed
    return names


def test_all_api_page_and_changelog_name_the_same_public_api():
    page = re.findall(r"^## (\S+)$", (ROOT / "docs" / "api.md").read_text(), re.MULTILINE)
    assert page == NAMES
    assert changelog_names() == set(NAMES), "CHANGELOG.md: say which public names a release adds or removes"


def test_changelog_names_this_version():
    assert re.search(rf"^## \[{re.escape(gl.__version__)}\]", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
