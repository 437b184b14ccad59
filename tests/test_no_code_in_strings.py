"""No Python source lives in the package's string literals: code that runs or is shown is real code."""
import ast
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "graphleaf_edu"
CODE = (ast.Assign, ast.AugAssign, ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.For, ast.With)


def docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            found.add(id(body[0].value))
    return found


def code_in_strings(source: str) -> list[str]:
    tree = ast.parse(source)
    skipped = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped \
                and node.value.count("\n") >= 1:
            try:
                parsed = ast.parse(textwrap.dedent(node.value))
            except SyntaxError:
                continue
            if any(isinstance(statement, CODE) for statement in ast.walk(parsed)):
                found.append(node.value)
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_keeps_code_in_a_string(path):
    assert code_in_strings(path.read_text()) == []


def test_the_check_finds_code_kept_in_a_string():
    assert code_in_strings('QUIZ = """\\na = 1\\nb = a * 2\\n"""\nHINT = "two lines\\nof prose"\n') == ["\na = 1\nb = a * 2\n"]
