"""Static checks on the stored notebooks: the conventions nbval alone cannot enforce."""
import re
import subprocess
import sys

import pytest
from notebook_files import (
    BREAK_BETWEEN_CHINESE,
    ROOT,
    all_notebooks,
    chinese_notebooks,
    code_cells,
    deep_dives,
    lessons,
    read,
    tags,
)

VOLATILE = [
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "a memory address"),
    (re.compile(r"(?<![\d.])\d{12,}(?![\d.])"), "an object id"),
    (re.compile(r"(/root/|/tmp/|/home/|/work/|site-packages)"), "a machine path"),
]
IGNORE_MARKERS = {"nbval-ignore-output", "nbval-skip", "nbval-check-output"}
SKIP_COMMENTS = ("# NBVAL_IGNORE_OUTPUT", "# NBVAL_SKIP")


def output_texts(output):
    if "text" in output:
        yield output["text"]
    for mime in ("text/plain", "text/html", "text/markdown"):
        if mime in output.get("data", {}):
            yield output["data"][mime]
    if output.get("output_type") == "error":
        yield output["evalue"]
        yield "\n".join(output["traceback"])


def test_every_notebook_is_collected_by_nbval():
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--collect-only", "-q", "-p", "no:cacheprovider",
         str(ROOT / "notebooks")],
        capture_output=True, text=True, cwd=ROOT, check=False,
    ).stdout
    collected = {line.split("::")[0] for line in listed.splitlines() if "::Cell" in line}
    expected = {str(p.relative_to(ROOT)) for p in [*all_notebooks(), *chinese_notebooks()]}
    assert expected, "no notebooks found"
    assert collected == expected, f"not collected by nbval: {sorted(expected - collected)}"


def test_lessons_are_numbered_in_reading_order():
    names = [p.name for p in lessons()]
    assert names[0] == "00_start_here.ipynb"
    numbers = [int(n[:2]) for n in names]
    assert numbers == list(range(len(numbers))), names
    for name in names:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", name), name


def setup_cells(path):
    """A notebook's first two code cells: the folded Colab bootstrap, then the setup a student reads."""
    return [cell.source for cell in code_cells(read(path))[:2]]


SHARED_SETUP = setup_cells(ROOT / "notebooks" / "00_start_here.ipynb")
TEACHING = [*lessons(), *deep_dives(), ROOT / "notebooks" / "quick_fix.ipynb",
            *sorted((ROOT / "instructor" / "exercises").glob("*.ipynb"))]


@pytest.mark.parametrize("path", TEACHING, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_notebook_opens_with_the_folded_bootstrap_and_a_short_setup(path):
    assert setup_cells(path) == SHARED_SETUP, "the first two code cells must be 00's bootstrap and setup cells"
    bootstrap = code_cells(read(path))[0]
    assert bootstrap.metadata.get("jupyter", {}).get("source_hidden") is True, "the bootstrap cell is folded"
    assert len(SHARED_SETUP[1].splitlines()) <= 5, "the setup a student reads is at most 5 lines"


NOTEBOOKS = ROOT / "notebooks"
# A lesson's header and recap, in English and in the Chinese twins (notebooks/zh-CN/).
HEADER_WORDS = {"en": ("What you will learn", "Prerequisites", "Verified with", "Recap"),
                "zh-CN": ("你将学到", "预备知识", "验证环境", "小结")}
CHINESE_LESSONS = [path for path in chinese_notebooks() if NOTEBOOKS / path.relative_to(NOTEBOOKS / "zh-CN")
                   in [*lessons(), *deep_dives()]]
STORED = [*all_notebooks(), *chinese_notebooks()]
STUDENT_COPIES = (NOTEBOOKS / "exercises", NOTEBOOKS / "zh-CN" / "exercises")  # stored without outputs, by design


def notebook_id(path):
    return str(path.relative_to(NOTEBOOKS))


ALL_CHINESE = [*chinese_notebooks(), *sorted((ROOT / "instructor" / "exercises" / "zh-CN").glob("*.ipynb"))]


@pytest.mark.parametrize("path", ALL_CHINESE, ids=lambda p: str(p.relative_to(ROOT)))
def test_chinese_text_breaks_no_line_between_two_chinese_characters(path):
    breaks = [match.group(0).replace("\n", "⏎") for cell in read(path).cells if cell.cell_type == "markdown"
              for match in BREAK_BETWEEN_CHINESE.finditer(cell.source)]
    assert not breaks, f"join these lines (each shows as a space between two characters): {breaks}"


@pytest.mark.parametrize("path", [*lessons(), *deep_dives(), *CHINESE_LESSONS], ids=notebook_id)
def test_lesson_has_header_recap_and_links(path):
    notebook = read(path)
    header = notebook.cells[0].source
    *needed_in_header, recap = HEADER_WORDS["zh-CN" if path in CHINESE_LESSONS else "en"]
    for needed in needed_in_header:
        assert needed in header, f"header lacks '{needed}'"
    assert recap in "".join(c.source for c in notebook.cells[-3:] if c.cell_type == "markdown")


@pytest.mark.parametrize("path", STORED, ids=notebook_id)
def test_stored_kernel_is_the_standard_python3(path):
    assert read(path).metadata["kernelspec"]["name"] == "python3"


def test_every_notebook_stores_the_python_release_of_its_outputs():
    # JupyterLab rewrites a notebook whose stored version is missing; graphleaf_edu_jupyter keeps
    # a stored one (test_clean_on_open.py). `make notebooks` stores it; tools/stamp_notebooks.py adds it.
    tracked = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True)
    missing = [path for path in tracked.stdout.split()
               if not read(ROOT / path).metadata.get("language_info", {}).get("version")]
    assert not missing, f"no metadata.language_info.version (run tools/stamp_notebooks.py): {missing}"


@pytest.mark.parametrize("path", STORED, ids=notebook_id)
def test_stored_outputs_are_deterministic(path):
    for index, cell in enumerate(code_cells(read(path))):
        for output in cell.get("outputs", []):
            for text in output_texts(output):
                for pattern, what in VOLATILE:
                    match = pattern.search(text)
                    assert not match, f"code cell {index} stores {what}: {match.group(0)!r}"


@pytest.mark.parametrize("path", STORED, ids=notebook_id)
def test_intentional_errors_are_tagged_stored_and_checked(path):
    """nbval compares a stored error's type and message, so a raises-exception cell that stops
    raising (or raises something else) fails the nbval run, unless its output is not checked."""
    student_copy = path.parent in STUDENT_COPIES
    for index, cell in enumerate(code_cells(read(path))):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if "raises-exception" in tags(cell):
            assert errors or student_copy, f"code cell {index} is tagged raises-exception but stores no error"
            assert not tags(cell) & IGNORE_MARKERS, f"code cell {index}: its error would not be checked"
            assert not cell.source.lstrip().startswith(SKIP_COMMENTS), f"code cell {index}"
        else:
            assert not errors, f"code cell {index} stores an error but is not tagged raises-exception"
