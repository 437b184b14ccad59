"""The README a newcomer reads to the end: at most 1,000 words outside code blocks, and every file it
names and every link it holds (to a file, a folder or a heading) exists. The pages under docs/ are held
to the same links, and so is README.zh-CN.md, whose notebook map (tools/readme_zh_map.py) follows the
course list and links every Chinese notebook that exists."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from notebook_files import BREAK_BETWEEN_CHINESE

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # maintainer scripts from tools/
import readme_zh_map

README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
FENCED = re.compile(r"```.*?```", re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A path in backticks: a folder/ or a file name with an extension the repository uses.
NAMED_PATH = re.compile(r"`([\w.-]+/[\w./-]*|[\w.-]+\.(?:ipynb|md|py|txt|toml|yml|cff|svg))`")
LESSON_ROW = re.compile(r"^\| `(\w+)` \|", re.MULTILINE)


def words_outside_code(text: str) -> int:
    return len(FENCED.sub(" ", text).split())


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", FENCED.sub("", markdown), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def broken_links(page: Path) -> list[str]:
    """Each relative link of ``page`` whose file, folder or heading does not exist."""
    problems = []
    for target in LINK.findall(INLINE_CODE.sub("", FENCED.sub("", page.read_text()))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            problems.append(f"{page.name}: {target} does not exist")
        elif anchor and resolved.suffix == ".md" and anchor not in heading_anchors(resolved.read_text()):
            problems.append(f"{page.name}: {target} names no heading of {resolved.name}")
    return problems


def test_the_readme_is_short_enough_to_read_to_the_end():
    assert words_outside_code(README.read_text()) <= 1000


def test_every_link_of_the_readme_resolves():
    assert not broken_links(README)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_of_a_docs_page_resolves(page):
    assert not broken_links(page)


def test_every_file_the_readme_names_exists():
    text = README.read_text()
    named = set(NAMED_PATH.findall(FENCED.sub("", text)))
    assert named, "the README names no file: the pattern is wrong"
    missing = [name for name in named if not (ROOT / name).exists()]
    assert not missing, f"the README names files that do not exist: {missing}"


def test_the_readmes_core_table_is_the_core_of_the_course_list_with_its_minutes():
    """The core's table lists the core's lessons, in order, and no other group (the quick fix has its own);
    its minutes are those 00's map adds up."""
    text = README.read_text()
    core = [entry for entry in course_stats.course(ROOT / "notebooks") if entry.group == "core"]
    assert LESSON_ROW.findall(text) == [Path(entry.path).stem for entry in core]
    minutes = f"{course_stats.whole_minutes(core)} minutes by the course's estimate, {course_stats.shown_measured(core)} as a reader"
    assert f"The **core** ({minutes}" in text, "write the core's minutes as 00's map shows them (python tools/course_stats.py)"
    assert "`quick_fix`" in text


def test_links_resolve_check_catches_a_missing_file_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Where it lives\n")
    page.write_text("[a](other.md#where-it-lives) [b](gone.md) [c](other.md#nowhere) [d](https://example.org)\n")
    assert broken_links(page) == ["page.md: gone.md does not exist", "page.md: other.md#nowhere names no heading of other.md"]


# --- README.zh-CN.md, the Chinese README ----------------------------------------------------------

README_ZH = ROOT / "README.zh-CN.md"


def chinese_map() -> str:
    text = README_ZH.read_text(encoding="utf-8")
    return text.split(readme_zh_map.MAP_START)[1].split(readme_zh_map.MAP_END)[0]


def test_the_readmes_link_each_other():
    assert "](README.zh-CN.md)" in README.read_text() and "](README.md)" in README_ZH.read_text(encoding="utf-8")


def test_every_link_of_the_chinese_readme_resolves():
    assert not broken_links(README_ZH)


def test_the_chinese_map_is_in_step_with_the_course_list_and_the_twins():
    assert chinese_map().strip() == readme_zh_map.expected_map(), "run .venv/bin/python tools/readme_zh_map.py"


def test_the_chinese_map_links_every_chinese_notebook_and_marks_the_rest_english():
    """Read from the README itself: every twin in notebooks/zh-CN/ is linked, every other notebook of the
    course (the deep dives among them) links its English notebook and says （英文）."""
    rows = [line for line in chinese_map().splitlines() if line.startswith("| [")]
    linked = {re.search(r"\]\(notebooks/([^)]+)\)", line).group(1): line for line in rows}
    twins = {f"zh-CN/{path.relative_to(ROOT / 'notebooks' / 'zh-CN').as_posix()}"
             for path in (ROOT / "notebooks" / "zh-CN").rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts}
    assert twins and twins <= set(linked), twins - set(linked)
    english = {path: line for path, line in linked.items() if not path.startswith("zh-CN/")}
    assert english, "the deep dives have no Chinese twin yet"
    for path, line in english.items():
        assert "（英文）" in line and not (ROOT / "notebooks" / "zh-CN" / path).exists(), line
    assert {path for path in english if path.startswith("deep_dives/")} == {
        path.relative_to(ROOT / "notebooks").as_posix() for path in (ROOT / "notebooks" / "deep_dives").glob("*.ipynb")
        if not (ROOT / "notebooks" / "zh-CN" / "deep_dives" / path.name).exists()}


def test_the_chinese_binder_badge_opens_a_chinese_notebook():
    opened = re.findall(r"mybinder\.org/v2/gh/[\w.-]+/[\w.-]+/main\?urlpath=lab/tree/([^)\s]+)",
                        README_ZH.read_text(encoding="utf-8"))
    assert len(opened) == 1 and opened[0].startswith("notebooks/zh-CN/") and (ROOT / opened[0]).is_file(), opened


def test_the_chinese_readme_breaks_no_line_between_two_chinese_characters():
    """The rule of the Chinese notebooks (notebook_files.BREAK_BETWEEN_CHINESE) holds for README.zh-CN.md too."""
    breaks = [m.group(0).replace("\n", "⏎") for m in BREAK_BETWEEN_CHINESE.finditer(README_ZH.read_text(encoding="utf-8"))]
    assert not breaks, f"join these lines (each shows as a space between two characters): {breaks}"
