"""graphleaf_edu/messages.toml, the one file of the package's words, and the code that reads it.

Every name the code reads (``M.COPIED_AT``, ``from graphleaf_edu.messages import RUNNER_USAGE``,
``known("CACHED")``, ``records("leaf_quiz")``) is in the file, and every name in the file is read by
the package or its tools; each section holds what its readers expect (strings; a cause's kind, cause
and fix; a quiz question's flags and hints); the file is read on first use, not at import.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphleaf_edu import causes, messages

ROOT = Path(__file__).resolve().parent.parent
READERS = sorted([*(ROOT / "graphleaf_edu").rglob("*.py"), *(ROOT / "tools").glob("*.py")])
NAME = re.compile(r"[A-Z][A-Z0-9_]*")
# What the module itself defines (the accessor, the names that stay the same in every language).
DEFINED = {name for name in vars(messages) if not name.startswith("_")}


def reads(path: Path) -> dict[str, set[str]]:
    """What ``path`` reads from the file: ``words`` (``M.NAME``, ``from ... import NAME``), ``causes``
    (``known("NAME")``), ``records`` (``records("section")``)."""
    tree = ast.parse(path.read_text())
    aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and node.module == "graphleaf_edu" for alias in node.names if alias.name == "messages"}
    found: dict[str, set[str]] = {"words": set(), "causes": set(), "records": set()}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found["words"].add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module == "graphleaf_edu.messages":
            found["words"] |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if called in ("known", "records"):
                found["causes" if called == "known" else "records"].add(node.args[0].value)
    found["words"] -= DEFINED
    return found


@pytest.fixture(scope="module")
def read_by_code() -> dict[str, dict[str, set[str]]]:
    return {str(path.relative_to(ROOT)): reads(path) for path in READERS}


def every(read_by_code: dict[str, dict[str, set[str]]], what: str) -> set[str]:
    return set().union(*(found[what] for found in read_by_code.values()))


def test_every_name_the_code_reads_is_in_the_file(read_by_code):
    words, tables = messages.words(), messages._read()[1]
    missing = {path: sorted(found["words"] - words.keys()) + sorted(found["causes"] - tables["causes"].keys())
               + sorted(found["records"] - tables.keys()) for path, found in read_by_code.items()}
    assert {path: names for path, names in missing.items() if names} == {}


def test_every_name_in_the_file_is_read_by_the_package_or_its_tools(read_by_code):
    # causes.py names a reparametrisation's cause in a table (_REPARAMETRISATIONS) and says it with known(name).
    named_in_causes = {node.value for node in ast.walk(ast.parse(Path(causes.__file__).read_text()))
                       if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value)}
    assert named_in_causes <= messages.records("causes").keys()
    assert sorted(messages.words().keys() - every(read_by_code, "words")) == []
    assert sorted(messages.records("causes").keys() - every(read_by_code, "causes") - named_in_causes) == []
    assert sorted(messages._read()[1].keys() - every(read_by_code, "records") - {"causes"}) == []


def test_each_section_holds_what_its_readers_expect():
    assert messages.words() and all(isinstance(text, str) and text for text in messages.words().values())
    for name, record in messages.records("causes").items():
        assert set(record) == {"kind", "cause", "fix"} and all(isinstance(v, str) and v for v in record.values()), name
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", str(record["kind"])), name
    for name, record in messages.records("leaf_quiz").items():
        assert set(record) - {"grad_fn"} == {"is_leaf", "requires_grad", "leaf_hint", "requires_grad_hint"}, name
        assert isinstance(record["is_leaf"], bool) and isinstance(record["requires_grad"], bool), name
        assert ("grad_fn" in record) == (not record["is_leaf"]), f"{name}: a grad_fn exactly for a non-leaf"
    assert messages._read()[1].keys() == {"causes", "leaf_quiz"}


def test_a_name_not_in_the_file_is_an_attribute_error_that_says_so():
    with pytest.raises(AttributeError, match="messages.toml has no message named 'COPIED_ATT'"):
        messages.COPIED_ATT  # noqa: B018


def test_names_repeated_across_sections_are_refused(tmp_path, monkeypatch):
    copy = tmp_path / "messages.toml"
    copy.write_text('[notes]\nSENT_AT = "sent at {place}"\n[keep_going]\nSENT_AT = "sent"\n', encoding="utf-8")
    monkeypatch.setattr(messages, "FILE", copy)
    messages._read.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"\[keep_going\] repeats the names \['SENT_AT'\]"):
            messages.words()
    finally:
        monkeypatch.undo()
        messages._read.cache_clear()


def test_importing_the_package_reads_no_words():
    code = ("import graphleaf_edu, graphleaf_edu.messages as M, graphleaf_edu.keep_going\n"
            "print(M._read.cache_info().currsize)\nM.COPIED_AT\nprint(M._read.cache_info().currsize)")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.split() == ["0", "1"]
