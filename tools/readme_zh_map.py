"""README.zh-CN.md's notebook map, written from the course list (notebooks/course.toml).

    .venv/bin/python tools/readme_zh_map.py           rewrite the map between its markers
    .venv/bin/python tools/readme_zh_map.py --check   exit 1 if the map is out of step (tests/test_readme.py)

One table per group of the course (刚遇到这个错误？, 核心课程, 练习, 深入专题), in reading order, with each
notebook's Chinese title and summary (`title_zh`, `summary_zh`). A notebook that has a Chinese twin
(notebooks/zh-CN/<path>) links it; one that has none yet links the English notebook, marked （英文）,
as the Chinese 00's map does. So when a twin lands, running this script is what moves its row over.
"""
from __future__ import annotations

import sys
from pathlib import Path

import course_stats  # the course list's one reader, a script beside this one

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.zh-CN.md"
NOTEBOOKS = ROOT / "notebooks"
MAP_START, MAP_END = "<!-- notebook-map:start -->", "<!-- notebook-map:end -->"
# Each group's heading, in the order the map shows them (the exercises follow the lessons).
GROUPS = {"quick fix": "刚遇到这个错误？", "core": "核心课程（按阅读顺序）", "exercise": "练习（学生版；答案在 `instructor/`）",
          "deep dive": "深入专题（选读，核心课程讲到相关主题时会链接过去）"}


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def row(entry: course_stats.Entry, twins: set[str]) -> str:
    link = course_stats.chinese_link(cell(entry.title_zh or entry.title), entry.path, twins,
                                     f"notebooks/{course_stats.ZH}/", "notebooks/")
    return f"| {link} | {cell(entry.summary_zh or entry.summary)} | {round(entry.minutes)} |"


def notebook_map(entries: list[course_stats.Entry], twins: set[str]) -> str:
    """The map as Markdown: per group a heading with its count and minutes, then its table."""
    parts = []
    for group, heading in GROUPS.items():
        members = [entry for entry in entries if entry.group == group]
        if not members:
            continue
        translated = sum(entry.path in twins for entry in members)
        measured = f"（一位读者实测 {course_stats.shown_measured(members)} 分钟）" if group == "core" else ""
        parts += [(f"**{heading}**{'' if heading.endswith('？') else '：'}{len(members)} 个笔记本，约 {course_stats.whole_minutes(members)} 分钟"
                   f"{measured}，{translated} 个已有中文版"), "", "| 笔记本 | 讲什么 | 分钟 |", "| --- | --- | --- |",
                  *(row(entry, twins) for entry in members), ""]
    return "\n".join(parts).rstrip("\n")


def expected_map() -> str:
    return notebook_map(course_stats.course(NOTEBOOKS), course_stats.chinese_twins(NOTEBOOKS))


def with_map(readme: str, map_text: str) -> str:
    if readme.count(MAP_START) != 1 or readme.count(MAP_END) != 1:
        raise SystemExit(f"{README.name} must hold one {MAP_START} and one {MAP_END} line, where the map goes")
    return course_stats.with_section(readme, MAP_START, MAP_END, map_text)


def main(argv: list[str]) -> int:
    readme = README.read_text(encoding="utf-8")
    updated = with_map(readme, expected_map())
    if "--check" in argv:
        if updated != readme:
            print(f"{README.name}'s notebook map is out of step with notebooks/course.toml and notebooks/zh-CN/: "
                  "run .venv/bin/python tools/readme_zh_map.py", file=sys.stderr)
            return 1
        return 0
    if updated != readme:
        README.write_text(updated, encoding="utf-8")
        print(f"{README.name}: the notebook map rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
