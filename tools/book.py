"""`make site`: the book, from the outputs the notebooks store (nothing runs).

    .venv/bin/python tools/book.py [OUT] [--only PATH ...]      (default build/site)

Sphinx + MyST-NB + sphinx-book-theme (configuration: docs/conf.py) render every notebook of the course
list (notebooks/course.toml, in its order and groups: the sidebar) and every page of docs/. `--only`
keeps the named notebooks (paths relative to notebooks/) and leaves the others out: a quick book.

The sources are staged first, in the repository's own layout (OUT's sibling `book-src/`), so that
links between notebooks and pages keep working and each launch button finds its notebook at its path
in the repository. Staging changes only the copies:
- a cell that answers a Predict prompt (tools/predict_prompts.py's rule, by which the notebook stores
  it folded) gets MyST-NB's `hide-output` tag: the book shows its output behind a toggle;
- what a heading the notebook stores collapsed folds (a task's solution: its text, its code) and the
  source of a cell stored folded (the Colab bootstrap) stay behind toggles too;
- the "Open in Colab" badge goes (every notebook page has launch buttons, and the badge is a remote
  picture); a link to a file that is not in the book points at it in the repository;
- index.md: the README's opening and one table of contents per group; errors.md: the README's
  "I just hit this error" with the error index it keeps between its markers.

The Chinese book is built beside it, into OUT/zh-CN/, with the same docs/conf.py (Sphinx's
`language = "zh_CN"`; its search splits Chinese into words with jieba): index.md and errors.md from
README.zh-CN.md ("刚遇到这个错误？"), and the Chinese twin of each notebook of the course list that has
one (notebooks/zh-CN/). The deep dives and pages that are English only are in the English book. Every
page of each book starts with a link to the same page in the other language (its index where the page
has no twin there): each staging folder's language-links.json, read by docs/conf.py.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import course_stats  # the course list's one reader, a script beside this one
import nbformat
import predict_prompts  # the one "Predict, then run" rule: which cells answer a prompt

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
DOCS = ROOT / "docs"
ZH = course_stats.ZH  # the Chinese notebooks' folder, and the Chinese book's folder in the site
LANGUAGE_LINKS = "language-links.json"  # docs/conf.py reads it from the staged sources

GROUP_CAPTIONS = {"quick fix": "I just hit this error", "core": "The core course", "deep dive": "Deep dives",
                  "exercise": "Exercises"}
GROUP_CAPTIONS_ZH = {"quick fix": "刚遇到这个错误？", "core": "核心课程", "deep dive": "深入专题", "exercise": "练习"}
# docs/ pages by reader; a page not named here (a new one) goes with the maintainers' pages.
DOC_SECTIONS = {
    "Using the suite": ["running", "windows", "api", "library-ci", "package-map", "glossary"],
    "For instructors": ["instructors", "classroom"],
    "For maintainers": ["contributing", "releasing", "moving-torch", "translating", "benchmarks", "gpu-run"],
}
ERROR_INDEX_START, ERROR_INDEX_END = "<!-- error-index:start -->", "<!-- error-index:end -->"
# The "Open in Colab" badge, whatever its label's language (tools/stamp_notebooks.py writes it).
COLAB_BADGE = re.compile(r"^\[!\[[^\]]*\]\([^)]*colab-badge\.svg\)\]\([^)]*\)[ \t]*\n?", re.MULTILINE)
LINK = re.compile(r"(\]\()([^)\s]+)(\))")
PICTURE = (".svg", ".png", ".jpg", ".jpeg", ".gif")
HEADING = re.compile(r"^(#{1,6})\s", re.MULTILINE)
HIDE_OUTPUT, HIDE_INPUT, HIDE_CELL = "hide-output", "hide-input", "hide-cell"
FOLDED_OPEN = '<details class="graphleaf-folded"><summary>Show the folded text</summary>'
FOLDED_CLOSE = "</details>"


def repository() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]


def course(only: list[str] | None = None) -> list[course_stats.Entry]:
    entries = course_stats.course(NOTEBOOKS)
    if only is None:
        return entries
    unknown = set(only) - {entry.path for entry in entries}
    if unknown:
        raise SystemExit(f"not in notebooks/course.toml: {', '.join(sorted(unknown))}")
    return [entry for entry in entries if entry.path in only]


def doc_pages() -> dict[str, list[str]]:
    """Caption -> docs/ page names, every page once."""
    named = {name for names in DOC_SECTIONS.values() for name in names}
    present = {path.stem for path in DOCS.glob("*.md")}
    sections = {caption: [name for name in names if name in present] for caption, names in DOC_SECTIONS.items()}
    sections["For maintainers"] += sorted(present - named)
    return sections


# --- what the book does to a notebook ---------------------------------------------------------------

def collapsed_heading_level(cell: nbformat.NotebookNode) -> int | None:
    """The level of the heading this Markdown cell stores collapsed, if it does."""
    heading = HEADING.match(cell.source)
    return len(heading.group(1)) if heading and cell.metadata.get("jp-MarkdownHeadingCollapsed") else None


def add_tag(cell: nbformat.NotebookNode, tag: str) -> None:
    tags = cell.metadata.setdefault("tags", [])
    if tag not in tags:
        tags.append(tag)


def fold_answers_and_solutions(notebook: nbformat.NotebookNode) -> None:
    """A Predict answer's outputs get `hide-output`; code JupyterLab opens with its source folded (the
    Colab bootstrap) gets `hide-input`; what a collapsed heading folds stays behind a toggle."""
    for _, cell in predict_prompts.answer_cells(notebook):
        if cell.outputs:
            add_tag(cell, HIDE_OUTPUT)
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.metadata.get("jupyter", {}).get("source_hidden") is True:
            add_tag(cell, HIDE_INPUT)
    fold_under_collapsed_headings(notebook)


def fold_under_collapsed_headings(notebook: nbformat.NotebookNode) -> None:
    """A heading stored collapsed (a task's solution) folds everything up to the next heading of its
    level or higher: code cells whole (`hide-cell`), and the text of Markdown cells, its own included,
    under the headings they start with (a `<details>` toggle)."""
    collapsed_at = None
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            heading = HEADING.match(cell.source)
            if heading and collapsed_at is not None and len(heading.group(1)) <= collapsed_at:
                collapsed_at = None
            collapsed_at = collapsed_heading_level(cell) or collapsed_at
            if collapsed_at is not None:
                cell.source = folded_text(cell.source)
        elif collapsed_at is not None:
            add_tag(cell, HIDE_CELL)


def folded_text(markdown: str) -> str:
    """``markdown`` with what follows its heading line (or all of it, without one) behind a toggle."""
    title, body = ("", markdown)
    if HEADING.match(markdown):
        title, _, body = markdown.partition("\n")
    if not body.strip():
        return markdown
    toggle = f"{FOLDED_OPEN}\n\n{body.strip()}\n\n{FOLDED_CLOSE}"
    return f"{title}\n\n{toggle}" if title else toggle


# --- links -------------------------------------------------------------------------------------------

class Links:
    """Rewrites a staged file's relative links: a book page stays a link in the book, a picture is
    staged beside it, anything else of the repository becomes its address there."""

    def __init__(self, pages: set[str], staging: Path, base: str):
        self.pages, self.staging, self.base = pages, staging, base

    def rewrite(self, markdown: str, source: str) -> str:
        return LINK.sub(lambda m: m.group(1) + self.target(m.group(2), source) + m.group(3), markdown)

    def target(self, target: str, source: str) -> str:
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return target
        path, hash_, anchor = target.partition("#")
        resolved = (ROOT / source).parent / path
        try:
            in_repository = resolved.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            return target
        if in_repository in self.pages:
            return target
        if resolved.suffix.lower() in PICTURE and resolved.is_file():
            (self.staging / in_repository).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(resolved, self.staging / in_repository)
            return target
        if not resolved.exists():
            return target  # Sphinx reports it: the build stops on a warning
        kind = "tree" if resolved.is_dir() else "blob"
        return f"{self.base}/{kind}/main/{in_repository}" + (hash_ + anchor)


def stage_notebook(source: str, links: Links, staging: Path) -> None:
    """Stage the notebook at ``source`` (relative to the repository) for the book."""
    notebook = nbformat.read(ROOT / source, as_version=4)
    fold_answers_and_solutions(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = links.rewrite(COLAB_BADGE.sub("", cell.source), source)
    (staging / source).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, staging / source)


# --- pages made from the README ----------------------------------------------------------------------

def readme_section(readme: str, heading: str) -> str:
    """The README's ``## heading`` section, heading included, up to the next ``## ``."""
    start = readme.index(f"## {heading}\n")
    end = readme.find("\n## ", start + 1)
    return readme[start:] if end < 0 else readme[start:end + 1]


def error_index_page(readme: str, heading: str = "I just hit this error", name: str = "README.md") -> str:
    if readme.count(ERROR_INDEX_START) != 1 or readme.count(ERROR_INDEX_END) != 1:
        raise SystemExit(f"{name} must keep its error index between one {ERROR_INDEX_START} and one "
                         f"{ERROR_INDEX_END} line")
    section = readme_section(readme, heading)
    if ERROR_INDEX_START not in section:
        raise SystemExit(f"{name}'s error index must sit in its '## {heading}' section")
    return section[1:]  # "# I just hit this error": the page's title


def opening(readme: str) -> str:
    """The README's title, what the suite is, and its picture: everything before the first badge."""
    head = readme[:readme.index("\n## ")]
    badge = head.find("[![")
    return (head if badge < 0 else head[:badge]).rstrip() + "\n"


def toctree(caption: str, documents: list[str]) -> str:
    return "\n".join(["```{toctree}", f":caption: {caption}", ":maxdepth: 1", "", *documents, "```", ""])


def index_page(readme: str, entries: list[course_stats.Entry], docs: dict[str, list[str]]) -> str:
    parts = [opening(readme), "Every notebook of the suite with the outputs it stores, to read without running "
             "anything. To run one, use the launch buttons at the top of its page (Binder, Colab, "
             "JupyterHub) or `make lab` in a clone of [the repository](" + repository() + ").", ""]
    for group, caption in GROUP_CAPTIONS.items():
        members = [entry for entry in entries if entry.group == group]
        documents = [f"{entry.title.replace('`', '')} <notebooks/{entry.path}>" for entry in members]
        if group == "quick fix":  # the error index comes first, with or without the quick fix notebook
            documents.insert(0, "Find your error message <errors>")
        if documents:
            minutes = f" ({course_stats.whole_minutes(members)} min)" if members else ""  # as 00's map adds them
            parts.append(toctree(caption + minutes, documents))
    parts += [toctree(caption, [f"docs/{name}" for name in names]) for caption, names in docs.items() if names]
    return "\n".join(parts)


def stage(staging: Path, entries: list[course_stats.Entry]) -> None:
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    docs = doc_pages()
    pages = {f"notebooks/{entry.path}" for entry in entries} | {f"docs/{name}.md" for names in docs.values()
                                                               for name in names}
    links = Links(pages, staging, repository())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (staging / "index.md").write_text(links.rewrite(index_page(readme, entries, docs), "README.md"))
    (staging / "errors.md").write_text(links.rewrite(error_index_page(readme), "README.md"))
    for entry in entries:
        stage_notebook(f"notebooks/{entry.path}", links, staging)
    (staging / "docs").mkdir(exist_ok=True)
    for names in docs.values():
        for name in names:
            source = f"docs/{name}.md"
            (staging / source).write_text(links.rewrite((ROOT / source).read_text(encoding="utf-8"), source))


# --- the Chinese book -------------------------------------------------------------------------------

def chinese_entries(entries: list[course_stats.Entry]) -> list[course_stats.Entry]:
    """The notebooks of ``entries`` that have a Chinese twin."""
    return [entry for entry in entries if course_stats.has_chinese_twin(NOTEBOOKS, entry)]


def chinese_index_page(readme: str, entries: list[course_stats.Entry]) -> str:
    parts = [opening(readme), "本书收录套件中每个已有中文版的笔记本及其保存的输出，无需运行即可阅读。要运行某个笔记本，"
             "请用其页面顶部的启动按钮（Binder、Colab、JupyterHub），或在[代码仓库](" + repository() + ")的克隆中运行 "
             "`make lab`。尚未翻译的笔记本和维护者文档见英文版（每页顶部的 English 链接）。", ""]
    for group, caption in GROUP_CAPTIONS_ZH.items():
        documents = [f"notebooks/{ZH}/{entry.path}" for entry in entries if entry.group == group]
        if group == "quick fix":
            documents.insert(0, "查找你的错误信息 <errors>")
        if documents:
            parts.append(toctree(caption, documents))
    return "\n".join(parts)


def stage_chinese(staging: Path, entries: list[course_stats.Entry]) -> None:
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    pages = {f"notebooks/{ZH}/{entry.path}" for entry in entries}
    links = Links(pages, staging, repository())
    readme = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    (staging / "index.md").write_text(links.rewrite(chinese_index_page(readme, entries), "README.zh-CN.md"))
    (staging / "errors.md").write_text(links.rewrite(
        error_index_page(readme, "刚遇到这个错误？", "README.zh-CN.md"), "README.zh-CN.md"))
    for entry in entries:
        stage_notebook(f"notebooks/{ZH}/{entry.path}", links, staging)


# Sphinx's language for the Chinese book, and the lexer of its stored tracebacks: IPython's traceback lexer
# (MyST-NB's default) fails on full-width punctuation (a Chinese comment in the student's line, the package's
# Chinese "frames hidden" line), which -W makes a failed build; Python's traceback lexer reads them.
CHINESE_OPTIONS = ("-D", "language=zh_CN", "-D", "nb_render_error_lexer=pytb")


def write_language_links(staging: Path, label: str, lang: str, root: str, twins: dict[str, str]) -> None:
    """What docs/conf.py puts at the top of each page: a link to ``twins[page]`` (the other book's
    index where the page has no twin), ``root`` being the other book's root seen from this one's."""
    (staging / LANGUAGE_LINKS).write_text(json.dumps(
        {"label": label, "lang": lang, "root": root, "twins": twins}, ensure_ascii=False, indent=1))


def page_twins(entries: list[course_stats.Entry], chinese: list[course_stats.Entry]) -> dict[str, str]:
    """English page name -> Chinese page name, for the pages both books have."""
    twins = {"index": "index", "errors": "errors"}
    twins |= {f"notebooks/{Path(e.path).with_suffix('')}": f"notebooks/{ZH}/{Path(e.path).with_suffix('')}"
              for e in chinese}
    return twins


def sphinx(staging: Path, out: Path, doctrees: Path, *options: str) -> None:
    if out.exists():
        shutil.rmtree(out)
    # -W: a warning (a broken link, a missing picture) fails the build; -E: no stale environment.
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-c", str(DOCS), "-W", "--keep-going", "-E",
                    "-q", "-d", str(doctrees), *options, str(staging), str(out)],
                   check=True)


def build(out: Path, only: list[str] | None = None) -> int:
    """Stage the sources and build the English book into ``out`` and the Chinese one into ``out/zh-CN``;
    return the number of pages of both."""
    entries = course(only)
    chinese = chinese_entries(entries)
    twins = page_twins(entries, chinese)
    staging, chinese_staging = out.parent / f"{out.name}-src", out.parent / f"{out.name}-{ZH}-src"
    stage(staging, entries)
    write_language_links(staging, "简体中文", ZH, f"{ZH}/", twins)
    stage_chinese(chinese_staging, chinese)
    write_language_links(chinese_staging, "English", "en", "../", {zh: en for en, zh in twins.items()})
    sphinx(staging, out, out.parent / f"{out.name}-doctrees")
    sphinx(chinese_staging, out / ZH, out.parent / f"{out.name}-{ZH}-doctrees", *CHINESE_OPTIONS)
    return len(pages(out)) + len(pages(out / ZH))


def pages(out: Path) -> list[Path]:
    """The book's pages in ``out``: every notebook, docs page, index and the error index (the Chinese
    book in ``out/zh-CN`` is a book of its own)."""
    def in_this_book(page: Path) -> bool:
        parts = page.relative_to(out).parts
        return "_static" not in parts and parts[0] != ZH and page.name not in {"search.html", "genindex.html"}

    return sorted(filter(in_this_book, out.rglob("*.html")))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tools/book.py", description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=ROOT / "build" / "site")
    parser.add_argument("--only", nargs="+", metavar="PATH", help="these notebooks only (relative to notebooks/)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    pages = build(args.out.resolve(), args.only)
    print(f"wrote {pages} pages to {args.out} in {time.perf_counter() - started:.0f} s "
          f"(open {args.out / 'index.html'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
