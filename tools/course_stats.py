"""What a student meets, per notebook of the course: reading time, code cells, stored traceback lines,
distinct `gl.` names, widgets and their tasks; then each group's total.

    python tools/course_stats.py [notebooks]            the table, in the course's reading order
    python tools/course_stats.py --update [notebooks]   also rewrite the minutes in course.toml, then
                                                        00's map of the course from it (and the Chinese
                                                        00's, notebooks/zh-CN/00_start_here.ipynb)

The course is `notebooks/course.toml`: every notebook in reading order with its group and minutes,
its title and summary, and their Chinese (`title_zh`, `summary_zh`: the Chinese map's words, and the
first heading of the notebook's Chinese twin in notebooks/zh-CN/ where it has one).
Reading time is the course's estimate: 120 words of Markdown a minute, plus 30 seconds per code cell.
Traceback lines are counted as JupyterLab shows a stored error (its entries joined by newlines).
"""
from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat

COURSE_FILE = "course.toml"
GROUPS = ("quick fix", "core", "deep dive", "exercise")
KEYS = {"path", "group", "minutes", "title", "summary"}
OPTIONAL_KEYS = {"after", "title_zh", "summary_zh", "measured"}
WORDS_PER_MINUTE = 120
MINUTES_PER_CODE_CELL = 0.5
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
EXPLORER_WITH_TASK = re.compile(r"\b(?:scenario_explorer|leaf_playground|dataloader_lab|fix_comparison)\([^)]*\btask=")
GL_NAME = re.compile(r"\bgl((?:\.[A-Za-z_]\w*)+)")
MINUTES_LINE = re.compile(r"^minutes = [0-9.]+$", re.MULTILINE)
MAP_NOTEBOOK = "00_start_here.ipynb"
MAP_START, MAP_END = "<!-- course-map:start -->", "<!-- course-map:end -->"
SHORT_TITLE = re.compile(r"^(?:Deep dive|Exercise \d+|深入专题|练习 \d+) · ")
ZH = "zh-CN"  # the Chinese twins' folder: notebooks/zh-CN/P translates notebooks/P
ENGLISH_MARK = "（英文）"  # after a Chinese notebook's link to a notebook that has no Chinese twin yet


@dataclass(frozen=True)
class Entry:
    """One notebook of course.toml."""

    path: str
    group: str
    minutes: float
    title: str
    summary: str
    after: str | None = None
    title_zh: str | None = None
    summary_zh: str | None = None
    measured: float | None = None  # a core lesson's minutes, as a reader took them (0: not measured yet)


@dataclass(frozen=True)
class NotebookStats:
    name: str
    words: int
    code_cells: int
    errors: int
    traceback_lines: int
    longest_traceback: int
    widgets: int
    tasks: int
    gl_names: frozenset[str] = frozenset()

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_cells * MINUTES_PER_CODE_CELL


def course(folder: Path) -> list[Entry]:
    """The entries of ``folder/course.toml``, in reading order; a malformed entry says what to change."""
    listed = tomllib.loads((folder / COURSE_FILE).read_text(encoding="utf-8")).get("notebook", [])
    entries = []
    for number, fields in enumerate(listed, start=1):
        missing, unknown = KEYS - set(fields), set(fields) - KEYS - OPTIONAL_KEYS
        if missing or unknown:
            raise ValueError(f"{COURSE_FILE}, notebook {number}: missing keys {sorted(missing)}, "
                             f"unknown keys {sorted(unknown)}; the keys are {sorted(KEYS | OPTIONAL_KEYS)}")
        if fields["group"] not in GROUPS:
            raise ValueError(f"{COURSE_FILE}, {fields['path']}: group {fields['group']!r} is none of {GROUPS}")
        entries.append(Entry(**fields))
    return entries


def traceback_lines(output) -> int:
    return len(ANSI.sub("", "\n".join(output["traceback"])).splitlines())


def gl_names(sources: list[str]) -> frozenset[str]:
    """The distinct names used through ``gl.`` (``gl.views.Task`` is ``views.Task``)."""
    return frozenset(name.lstrip(".") for source in sources for name in GL_NAME.findall(source))


def stats(path: Path, root: Path) -> NotebookStats:
    notebook = nbformat.read(path, as_version=4)
    words = sum(len(c.source.split()) for c in notebook.cells if c.cell_type == "markdown")
    code = [c for c in notebook.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.get("outputs", [])]
    errors = [traceback_lines(o) for o in outputs if o.output_type == "error"]
    widgets = sum(WIDGET_MIME in o.get("data", {}) for o in outputs)
    tasks = sum(bool(EXPLORER_WITH_TASK.search(c.source)) for c in code)
    return NotebookStats(path.relative_to(root).as_posix(), words, len(code), len(errors), sum(errors),
                         max(errors, default=0), widgets, tasks, gl_names([c.source for c in code]))


def suite(folder: Path) -> list[NotebookStats]:
    """Every notebook of the course, in its reading order."""
    return [stats(folder / entry.path, folder) for entry in course(folder)]


def update_minutes(folder: Path) -> int:
    """Rewrite each entry's ``minutes`` in course.toml with the estimate; how many changed."""
    course_file = folder / COURSE_FILE
    text = course_file.read_text(encoding="utf-8")
    estimates = iter(f"minutes = {round(s.minutes, 1)}" for s in suite(folder))
    lines = MINUTES_LINE.findall(text)
    updated = MINUTES_LINE.sub(lambda _: next(estimates), text)
    course_file.write_text(updated, encoding="utf-8")
    return sum(old != new for old, new in zip(lines, MINUTES_LINE.findall(updated), strict=True))


@dataclass(frozen=True)
class MapWords:
    """The words of a map of the course, in one language."""

    core: str
    total: str
    deep_dives: str
    exercises: str
    read_after: str
    do_after: str
    comma: str
    semicolon: str
    stop: str


MAP_WORDS = {
    "en": MapWords("| the core, in order | minutes (estimate) | minutes (a reader took) |", "**all {count}**", "**Deep dives**, optional, after ",
                   "**Exercises**, after ", "{}: ", "{}: ", ", ", "; ", "."),
    ZH: MapWords("| 核心课程（按顺序） | 分钟（估计） | 分钟（一位读者实测） |", "**共 {count} 课**", "**深入专题**（选读）：", "**练习**：",
                 "学完 {}，可读", "学完 {}，做", "、", "；", "。"),
}


def whole_minutes(entries: list[Entry]) -> int:
    """The minutes of ``entries`` as a map shows them: each notebook's whole minutes, added up, so that
    a total is the sum of the rows above it (rounding the sum instead can differ by a minute or more)."""
    return sum(round(entry.minutes) for entry in entries)


def shown_measured(entries: list[Entry]) -> str:
    """What a map shows of the minutes a reader took for ``entries``: their sum, or "–" until each is measured."""
    measured = [entry.measured for entry in entries]
    return str(round(sum(measured))) if all(measured) else "–"


def course_map(entries: list[Entry], twins: set[str] | None = None) -> str:
    """00's map of the course, as Markdown: the core with its minutes, then the deep dives and the
    exercises, each under the notebook it follows. With ``twins`` (the paths that have a Chinese twin)
    it is the Chinese 00's map, in the Chinese titles: a notebook with a twin is linked there, any
    other in English, marked （英文）; the minutes stay the English notebook's estimate (Chinese text
    is not counted in words)."""
    words = MAP_WORDS["en" if twins is None else ZH]

    def link(entry: Entry) -> str:
        if twins is None:
            return f"[{SHORT_TITLE.sub('', entry.title)}]({entry.path})"
        return chinese_link(SHORT_TITLE.sub("", entry.title_zh or entry.title), entry.path, twins, "", "../")

    def label(path: str) -> str:
        return path[:2] if path[:2].isdigit() else link(next(e for e in entries if e.path == path))

    core = [e for e in entries if e.group == "core"]
    lines = [words.core, "| --- | --- | --- |",
             *(f"| {link(e)} | {round(e.minutes)} | {shown_measured([e])} |" for e in core),
             f"| {words.total.format(count=len(core))} | **{whole_minutes(core)}** | **{shown_measured(core)}** |", ""]
    for group, heading, after_words in (("deep dive", words.deep_dives, words.read_after),
                                        ("exercise", words.exercises, words.do_after)):
        parts = [after_words.format(label(after)) + words.comma.join(map(link, members))
                 for after, members in following(entries, group)]
        lines += [heading + words.semicolon.join(parts) + words.stop, ""]
    return "\n".join(lines).rstrip("\n")


def following(entries: list[Entry], group: str) -> list[tuple[str, list[Entry]]]:
    """The ``group``'s notebooks under each notebook they follow, in the course's order."""
    members = [e for e in entries if e.group == group]
    afters = dict.fromkeys(e.after for e in members if e.after)
    return [(after, [e for e in members if e.after == after]) for after in afters]


def has_chinese_twin(folder: Path, entry: Entry) -> bool:
    return (folder / ZH / entry.path).is_file()


def chinese_twins(folder: Path) -> set[str]:
    """The course's paths that have a Chinese twin in ``folder/zh-CN/``."""
    return {entry.path for entry in course(folder) if has_chinese_twin(folder, entry)}


def chinese_link(title: str, path: str, twins: set[str], chinese_root: str, english_root: str) -> str:
    """A link from a Chinese page to the course's notebook ``path``: its Chinese twin (under
    ``chinese_root``) where it has one, else the English notebook (under ``english_root``), marked （英文）."""
    if path in twins:
        return f"[{title}]({chinese_root}{path})"
    return f"[{title}]({english_root}{path}){ENGLISH_MARK}"


def with_section(text: str, start: str, end: str, section: str) -> str:
    """``text`` with what stands between its ``start`` and ``end`` markers replaced by ``section``."""
    before, _, rest = text.partition(start)
    _, _, after = rest.partition(end)
    return f"{before}{start}\n{section}\n{end}{after}"


def update_map(path: Path, course_map_text: str) -> bool:
    """Write ``course_map_text`` between the markers of the first cell of ``path`` that holds them;
    whether it changed."""
    notebook = nbformat.read(path, as_version=4)
    cell = next((c for c in notebook.cells if MAP_START in c.source and MAP_END in c.source), None)
    if cell is None:
        raise ValueError(f"{path.name} has no cell with {MAP_START} ... {MAP_END}: add the markers where the map goes")
    source = with_section(cell.source, MAP_START, MAP_END, course_map_text)
    if source == cell.source:
        return False
    cell.source = source
    nbformat.write(notebook, path)
    return True


def maps(folder: Path) -> dict[Path, str]:
    """Each map notebook (00, and the Chinese 00 where it exists) with the map it must show."""
    entries = course(folder)
    shown = {folder / MAP_NOTEBOOK: course_map(entries)}
    if (folder / ZH / MAP_NOTEBOOK).is_file():
        shown[folder / ZH / MAP_NOTEBOOK] = course_map(entries, chinese_twins(folder))
    return shown


def update_maps(folder: Path) -> list[str]:
    """Rewrite every map notebook's map; the notebooks that changed."""
    return [path.relative_to(folder).as_posix() for path, text in maps(folder).items() if update_map(path, text)]


HEADER = (f"{'notebook':<46} {'group':<9} {'minutes':>7} {'code':>5} {'errors':>6} {'tb lines':>8} "
          f"{'longest':>7} {'gl':>3} {'widgets':>7} {'tasks':>5}")


def row(name: str, group: str, rows: list[NotebookStats]) -> str:
    names = frozenset().union(*(r.gl_names for r in rows))
    return (f"{name:<46} {group:<9} {sum(r.minutes for r in rows):>7.1f} {sum(r.code_cells for r in rows):>5} "
            f"{sum(r.errors for r in rows):>6} {sum(r.traceback_lines for r in rows):>8} "
            f"{max((r.longest_traceback for r in rows), default=0):>7} {len(names):>3} "
            f"{sum(r.widgets for r in rows):>7} {sum(r.tasks for r in rows):>5}")


def main(argv: list[str]) -> int:
    update = "--update" in argv
    arguments = [a for a in argv if a != "--update"]
    folder = Path(arguments[0] if arguments else "notebooks")
    if update:
        print(f"{COURSE_FILE}: {update_minutes(folder)} minutes updated")
        # The map shows the minutes, which the map's own words change: two rounds settle them.
        for _ in range(2):
            for changed in update_maps(folder):
                print(f"{changed}: the map of the course rewritten")
            update_minutes(folder)
    entries, rows = course(folder), suite(folder)
    print(HEADER)
    for entry, r in zip(entries, rows, strict=True):
        print(row(r.name, entry.group, [r]))
    for group in GROUPS:
        members = [r for entry, r in zip(entries, rows, strict=True) if entry.group == group]
        print(row(f"{group}, {len(members)} notebooks", "", members))
    print(row(f"total, {len(rows)} notebooks", "", rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
