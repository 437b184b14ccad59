"""`make site`: a static HTML book of every lesson, from the outputs stored in the notebooks (nothing runs).

    .venv/bin/python tools/build_site.py [OUT]        (default build/site)

One page per lesson (nbconvert's lab template) with a navigation bar (contents, previous, next, run it:
Binder / Colab), and index.html listing the lessons. Graphs are the stored pictures; a widget shows its
text fallback (a widget needs a kernel). Links between lessons point at their pages; links to exercises
and other files of the repository point at the repository (pyproject.toml's [project.urls]).
"""
from __future__ import annotations

import html
import re
import shutil
import sys
import tomllib
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# The lessons' "Open in Colab" badge: the navigation bar of every page links to Colab (and Binder) already.
COLAB_BADGE = re.compile(r"^\[!\[Open In Colab\]\(https://colab\.research\.google\.com/assets/colab-badge\.svg\)\]\(.*\)\n?",
                         re.MULTILINE)
LICENSE_NOTE = ('Lessons © The graphleaf-edu authors, <a href="{repository}/blob/main/LICENSE-LESSONS.md">CC BY 4.0'
                '</a>; code MIT.')
STYLE = """
.graphleaf-nav { position: sticky; top: 0; z-index: 10; display: flex; gap: 1.2em; align-items: center;
  padding: 0.6em 1.2em; background: #f4f6f8; border-bottom: 1px solid #d0d7de; font: 15px/1.4 sans-serif; }
.graphleaf-nav a { color: #0969da; text-decoration: none; }
.graphleaf-nav .graphleaf-run { margin-left: auto; }
.graphleaf-footer { padding: 1em 1.2em; color: #57606a; font: 13px sans-serif; border-top: 1px solid #d0d7de; }
"""


def repository() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]


def lessons() -> list[Path]:
    return sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))


def title(notebook: nbformat.NotebookNode) -> str:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            heading = re.search(r"^#\s+(.+)$", cell.source, re.MULTILINE)
            if heading:
                return heading.group(1).replace("`", "").strip()
    raise ValueError("a lesson needs a '# title' in its first markdown cell")


def for_reading(notebook: nbformat.NotebookNode, page_of: dict[str, str], base: str) -> nbformat.NotebookNode:
    """The notebook as the book shows it: widgets as their text, links to pages or to the repository,
    no Colab badge."""
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                del output.data[WIDGET_VIEW]
        if cell.cell_type == "markdown":
            cell.source = COLAB_BADGE.sub("", cell.source).rstrip("\n")
            cell.source = re.sub(r"\]\(([^)\s]+)\)", lambda m: f"]({link(m.group(1), page_of, base)})", cell.source)
    return notebook


def link(target: str, page_of: dict[str, str], base: str) -> str:
    if re.match(r"[a-z]+:", target) or target.startswith("#"):
        return target
    path, _, anchor = target.partition("#")
    if path in page_of:
        return page_of[path] + (f"#{anchor}" if anchor else "")
    resolved = (LESSONS / path).resolve()
    return f"{base}/blob/main/{resolved.relative_to(ROOT).as_posix()}" + (f"#{anchor}" if anchor else "")


def navigation(index: int, pages: list[tuple[str, str, str]], base: str) -> str:
    name = pages[index][0]
    links = ['<a href="index.html">Contents</a>']
    if index > 0:
        links.append(f'<a href="{pages[index - 1][1]}" rel="prev">← {html.escape(pages[index - 1][2])}</a>')
    if index + 1 < len(pages):
        links.append(f'<a href="{pages[index + 1][1]}" rel="next">{html.escape(pages[index + 1][2])} →</a>')
    path = f"notebooks/{name}"
    owner_and_name = base.removeprefix("https://github.com/")
    links.append(f'<span class="graphleaf-run">Run it: '
                 f'<a href="https://mybinder.org/v2/gh/{owner_and_name}/main?urlpath=lab/tree/{path}">Binder</a> · '
                 f'<a href="https://colab.research.google.com/github/{owner_and_name}/blob/main/{path}">Colab</a>'
                 '</span>')
    return f'<nav class="graphleaf-nav">{" ".join(links)}</nav>'


def decorate(body: str, nav: str, base: str) -> str:
    body = body.replace("</style>", STYLE + "</style>", 1)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav, body, count=1)
    footer = f'<footer class="graphleaf-footer">{LICENSE_NOTE.format(repository=base)}</footer>'
    return body.replace("</body>", footer + "</body>", 1)


def index_page(pages: list[tuple[str, str, str]], base: str) -> str:
    items = "\n".join(f'<li><a href="{page}">{html.escape(heading)}</a></li>' for _, page, heading in pages)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>graphleaf-edu: the lessons</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body {{ font: 16px/1.5 sans-serif; max-width: 50em; margin: 2em auto; padding: 0 1em; }}
a {{ color: #0969da; }} {STYLE}</style></head>
<body>
<h1>graphleaf-edu: PyTorch's autograd graph, through one error</h1>
<p>Every lesson of the suite with the outputs it stores, to read without running anything. To run them:
<a href="https://mybinder.org/v2/gh/{base.removeprefix('https://github.com/')}/main?urlpath=lab/tree/notebooks/00_start_here.ipynb">Binder</a>,
Colab (a link on every page), or <code>make lab</code> in a clone of <a href="{base}">the repository</a>,
which also holds the exercises.</p>
<ol start="0">
{items}
</ol>
<footer class="graphleaf-footer">{LICENSE_NOTE.format(repository=base)}</footer>
</body></html>
"""


def build(out: Path) -> list[Path]:
    base = repository()
    notebooks = [(path, nbformat.read(path, as_version=4)) for path in lessons()]
    pages = [(path.name, path.with_suffix(".html").name, title(notebook)) for path, notebook in notebooks]
    page_of = {name: page for name, page, _ in pages}
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    exporter = HTMLExporter(template_name="lab")
    written = []
    for index, (path, notebook) in enumerate(notebooks):
        body, _ = exporter.from_notebook_node(for_reading(notebook, page_of, base),
                                              resources={"metadata": {"name": pages[index][2]}})
        page = out / pages[index][1]
        page.write_text(decorate(body, navigation(index, pages, base), base), encoding="utf-8")
        written.append(page)
    (out / "index.html").write_text(index_page(pages, base), encoding="utf-8")
    (out / ".nojekyll").write_text("")
    return [out / "index.html", *written]


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "build" / "site"
    pages = build(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {len(pages)} pages to {out} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
