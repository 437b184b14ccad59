"""`make site`: the static book renders in Chromium with every picture and no broken local link.

The book is built from the stored outputs into a temporary folder, then every page is opened from disk:
each image must have loaded, each graph picture must have a size, each link to another page (or to a
heading on it) must resolve, and each page links back to the contents. A screenshot per page goes to
``test-artifacts/site/``.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from chromium import playwright_or_skip
from notebook_files import ROOT, lessons, read

playwright_or_skip()

pytestmark = pytest.mark.browser

SCREENSHOTS = ROOT / "test-artifacts" / "site"

PAGE_FACTS = """() => ({
    images: [...document.images].map(img => ({src: img.src.slice(0, 60), ok: img.complete && img.naturalWidth > 0})),
    svgs: [...document.querySelectorAll('.jp-OutputArea-output svg')].map(svg => svg.getBoundingClientRect().width),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    nav: !!document.querySelector('nav.graphleaf-nav a[href="index.html"]'),
    text: document.body.innerText,
})"""


def stored_pictures(page: str) -> int:
    notebook = read(ROOT / "notebooks" / Path(page).with_suffix(".ipynb").name)
    return sum(1 for cell in notebook.cells for output in cell.get("outputs", [])
               if {"image/png", "image/svg+xml"} & set(output.get("data", {})))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, str(ROOT / "tools" / "build_site.py"), str(out)], check=True)
    return out


def test_the_book_has_a_page_per_lesson_and_renders_every_picture_and_link(site, browser):
    pages = sorted(site.glob("*.html"))
    assert [p.name for p in pages] == sorted(["index.html", *(p.with_suffix(".html").name for p in lessons())])
    ids_of, problems = {}, []
    page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    facts = {}
    for path in pages:
        page.goto(path.as_uri(), wait_until="domcontentloaded")
        page.wait_for_function("() => [...document.images].every(img => img.complete)", timeout=30_000)
        facts[path.name] = page.evaluate(PAGE_FACTS)
        ids_of[path.name] = set(facts[path.name]["ids"])
        page.screenshot(path=str(SCREENSHOTS / f"{path.stem}.png"))

    for name, seen in facts.items():
        problems += [f"{name}: image {i['src']} did not load" for i in seen["images"] if not i["ok"]]
        problems += [f"{name}: a graph picture has no size" for width in seen["svgs"] if width <= 0]
        for href in seen["links"]:
            url = urlparse(href)
            if url.scheme != "file":
                continue
            target = Path(unquote(url.path))
            if not target.is_file():
                problems.append(f"{name}: broken link {href}")
            elif url.fragment and target.name in ids_of and not {url.fragment, unquote(url.fragment)} & ids_of[target.name]:
                problems.append(f"{name}: no heading #{url.fragment} in {target.name}")
        if name != "index.html":
            assert seen["nav"], f"{name} has no link back to the contents"
            pictures = sum(i["ok"] for i in seen["images"]) + len(seen["svgs"])
            assert pictures == stored_pictures(name), f"{name}: {pictures} pictures shown, {stored_pictures(name)} stored"
            assert "Loading widget" not in seen["text"]
    assert not problems, "\n".join(problems)
    lesson_links = {Path(urlparse(h).path).name for h in facts["index.html"]["links"] if h.startswith("file:")}
    assert lesson_links == {p.with_suffix(".html").name for p in lessons()}
