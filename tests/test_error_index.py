"""The README's error index is what tools/error_index.py makes of the package's message constants, and
it quotes the fixes in the notes' own words."""
import re
import sys
from pathlib import Path

from graphleaf_edu import causes as C
from graphleaf_edu import messages as M

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import error_index


def test_the_committed_readme_holds_the_generated_index():
    assert error_index.main(["--check"]) == 0, "run: make error-index"


def test_the_index_quotes_the_fixes_the_notes_give():
    block = error_index.block()
    for fix in (C.known("CACHED").fix, C.known("ROOT_TENSOR").fix, C.known("NONLEAF_GRAD").fix, C.known("DATASET").fix, M.SEND_FIX, M.CLONE_RULE):
        assert fix in block
    assert "`python -m graphleaf_edu" in block


def test_a_readme_without_the_markers_is_refused_with_what_to_add():
    import pytest

    with pytest.raises(ValueError, match="error-index:start"):
        error_index.with_block("# README\n", "table")
    assert error_index.with_block(f"a\n{error_index.START}\nold\n{error_index.END}\nb", "new") == (
        f"a\n{error_index.START}\nnew\n{error_index.END}\nb")


def test_the_chinese_index_marks_each_deep_dive_english_and_nothing_else():
    """The deep dives have no Chinese twin yet; the quick fix and the core lessons have."""
    chinese = error_index.block("zh-CN")
    lesson_cells = [line.rsplit(" | ", 1)[1] for line in chinese.splitlines()[2:] if line.startswith("| ")]
    assert all("deep dive" not in cell for cell in lesson_cells)
    for cell in lesson_cells:
        for part in cell.removesuffix(" |").split("；"):
            assert part.endswith("（英文）") == part.startswith("深入专题"), part


def test_the_chinese_index_joins_its_clauses_with_full_width_punctuation():
    """Between Chinese words a list is joined by ；、，, not by "; " or ", " (which stay inside code)."""
    outside_code = re.sub(r"`[^`]*`", "", error_index.block("zh-CN"))
    assert not re.findall(r".{0,12}[;,] .{0,12}", outside_code)
