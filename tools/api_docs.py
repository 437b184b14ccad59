"""Write docs/api.md, the API reference, from the docstrings of every name in ``graphleaf_edu.__all__``.

    python tools/api_docs.py           write docs/api.md
    python tools/api_docs.py --check   exit 1 if docs/api.md differs from what the docstrings give

Docstrings use Google-style sections (``Args:``, ``Returns:``, ``Raises:``, ``Attributes:``,
``Example:``). A value that has no docstring of its own (a constant such as ``SCENARIOS``) is documented
by the string literal right after its assignment in its module (an attribute docstring). Examples are
doctests; tests/test_api_docs.py runs them with ``torch`` and ``gl`` (the package) imported.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import itertools
import re
import sys
from pathlib import Path
from typing import Any

import graphleaf_edu as gl

ROOT = Path(__file__).resolve().parent.parent
API_PAGE = ROOT / "docs" / "api.md"
SECTIONS = ("Args", "Returns", "Raises", "Attributes", "Example")
SECTION_LINE = re.compile(rf"^({'|'.join(SECTIONS)}):\s*$")
ENTRY = re.compile(r"^(\S[^:]*):\s*(.*)$")  # "name: text" in Args, Raises, Attributes


def public_names() -> list[str]:
    """``__all__`` in reading order: the core names (loaded with the package), then the lazy ones
    in the order of the lazy table (module by module)."""
    return [name for name in gl.__all__ if name not in gl._LAZY] + [name for name in gl._LAZY if name in gl.__all__]


def module_of(name: str) -> str:
    """The module that defines a public name (for constants: the module the lazy table names)."""
    value = getattr(gl, name)
    defined_in = getattr(value, "__module__", None)
    if isinstance(defined_in, str) and (inspect.isclass(value) or inspect.isfunction(value)):
        return defined_in
    return gl._LAZY.get(name) or _assigning_module(name)


def _assigning_module(name: str) -> str:
    for module in {getattr(v, "__module__", "") for v in vars(gl).values()} | set(gl._LAZY.values()):
        if module.startswith("graphleaf_edu.") and name in vars(sys.modules[module]):
            return module
    raise LookupError(f"no module of graphleaf_edu defines {name}")


def docstring(name: str) -> str:
    """The name's own docstring, or for a plain value the attribute docstring after its assignment."""
    value = getattr(gl, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        return inspect.cleandoc(value.__doc__ or "")
    return attribute_docstring(module_of(name), name)


def attribute_docstring(module_name: str, name: str) -> str:
    """The string literal after ``name = ...`` in the module that assigns it, following re-exports."""
    module = importlib.import_module(module_name)
    body = ast.parse(inspect.getsource(module)).body
    for statement, following in itertools.pairwise(body):
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                return inspect.cleandoc(following.value.value)
            return ""
    for statement in body:  # imported from another module of the package: look there
        if isinstance(statement, ast.ImportFrom) and any(alias.name == name for alias in statement.names):
            source = importlib.util.resolve_name("." * statement.level + (statement.module or ""), module.__package__)
            return attribute_docstring(source, name)
    return ""


def split_sections(doc: str) -> tuple[str, dict[str, list[str]]]:
    """The text before the first section, and each section's lines (dedented once)."""
    intro: list[str] = []
    sections: dict[str, list[str]] = {}
    current = intro
    for line in doc.splitlines():
        match = SECTION_LINE.match(line)
        if match:
            current = sections.setdefault(match.group(1), [])
        else:
            current.append(line[4:] if current is not intro and line.startswith("    ") else line)
    return "\n".join(intro).strip(), {key: _trim(lines) for key, lines in sections.items()}


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def kind(value: Any) -> str:
    if inspect.isclass(value):
        return "exception" if issubclass(value, BaseException) else "class"
    if callable(value):
        return "function"
    return "constant"


def signature(name: str, value: Any) -> str:
    if kind(value) == "constant":
        return f"gl.{name}: {type(value).__name__}"
    try:
        text = f"gl.{name}{inspect.signature(value)}"
    except (TypeError, ValueError):
        return f"gl.{name}(...)"
    text = re.sub(r"<function (\S+) at 0x[0-9a-f]+>", r"\1", text)  # a function as default: its name
    text = re.sub(r"= ([A-Z]\w*)\(key='([^']*)'.*?\)(?=, \w+: |\) ->)", r"= <\1 \2>", text)  # a catalog entry
    return re.sub(r"(: |-> )'([^']*)'", r"\1\2", text)  # annotations postponed as strings, unquoted


def extra_of(name: str) -> str:
    """The pip extra a name needs: that of the module the lazy table loads it from (core if eager)."""
    extra = gl._EXTRA.get(gl._LAZY.get(name, ""))
    return f"`[{extra}]`" if extra else "core"


def markdown(text: str) -> str:
    """reStructuredText literals (``x``) as Markdown code (`x`)."""
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def render_entries(lines: list[str]) -> list[str]:
    """``name: text`` entries (continuation lines indented) as a Markdown list."""
    items: list[str] = []
    for line in lines:
        match = ENTRY.match(line)
        if not line.startswith(" ") and line.strip():
            items.append(f"- `{match.group(1)}`: {match.group(2)}" if match else f"- {line}")
        elif items and line.strip():
            items[-1] += " " + line.strip()
    return [markdown(item) for item in items]


def render_name(name: str) -> list[str]:
    value = getattr(gl, name)
    intro, sections = split_sections(docstring(name))
    lines = [f"## {name}", "", "```python", signature(name, value), "```", "",
             f"*{kind(value)}, from `{module_of(name)}` ({extra_of(name)})*", "", markdown(intro), ""]
    for section in SECTIONS:
        if section not in sections:
            continue
        lines += [f"**{section}**", ""]
        if section == "Example":
            lines += ["```pycon", *sections[section], "```"]
        elif section == "Returns":
            lines += [markdown(" ".join(line.strip() for line in sections[section]))]
        else:
            lines += render_entries(sections[section])
        lines.append("")
    return lines


def render() -> str:
    names = public_names()
    summary = [f"| [`{n}`](#{n.lower()}) | {kind(getattr(gl, n))} | {extra_of(n)} | "
               f"{markdown(split_sections(docstring(n))[0].splitlines()[0] if docstring(n) else '')} |" for n in names]
    lines = [
        "# graphleaf_edu API reference",
        "",
        "<!-- Generated by `python tools/api_docs.py` from the docstrings; do not edit by hand. -->",
        "",
        "`import graphleaf_edu as gl`. The core needs torch only: `pip install graphleaf-edu`. Names marked",
        "`[graphs]` need `pip install 'graphleaf-edu[graphs]'` (and Graphviz's `dot` program), names marked",
        "`[lab]` need `pip install 'graphleaf-edu[lab]'`; they load on first use, and say which extra to install",
        "when it is missing. Every example runs as a doctest in `make test`, with `torch` and `gl` imported.",
        "",
        "| name | kind | needs | what |",
        "| --- | --- | --- | --- |",
        *summary,
        "",
    ]
    lines += command_line()
    for name in names:
        lines += render_name(name)
    return "\n".join(lines).rstrip() + "\n"


def command_line() -> list[str]:
    """The runner's own words (``python -m graphleaf_edu --help``): what it does, and what
    ``--keep-going`` cannot continue past."""
    from graphleaf_edu.messages import KG_CANNOT_CONTINUE, RUNNER_USAGE

    return ["## The command line: python -m graphleaf_edu", "", "```text", RUNNER_USAGE, "", KG_CANNOT_CONTINUE, "```", ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if API_PAGE.read_text() != text:
            print(f"{API_PAGE.relative_to(ROOT)} is stale: run python tools/api_docs.py")
            return 1
        return 0
    API_PAGE.write_text(text)
    print(f"wrote {API_PAGE.relative_to(ROOT)} ({len(public_names())} names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
