"""`make site`: the book, read in Chromium from disk as a reader would.

Searching for "deepcopy" finds the quick fix and the error index, and each result quotes its page's own
words (over HTTP, where Sphinx can fetch a page to quote it); every link between pages (and to a
heading on a page) resolves; every picture loads and each notebook page shows as many graph pictures
as the notebook stores; a Predict answer stays hidden until its toggle is opened; every notebook page
has Binder, Colab and JupyterHub launch buttons for its own path in the repository; widgets show their
text; nothing is fetched from the network; the sidebar follows the course list. The Chinese book
(OUT/zh-CN/, from README.zh-CN.md and the Chinese notebooks) is read the same way (pictures, widgets, links,
launch buttons that open the Chinese notebook, its sidebar): every page of both books starts with a link
to its twin in the other language, the link works both ways, and searching it in Chinese (jieba's words)
finds its error index and every Chinese notebook page.

`make test` builds a quick book (the quick fix, the first core lesson with a folded answer, the first
exercise, every docs page); `make site-test` (GRAPHLEAF_BOOK=full) builds and reads the whole book.
A screenshot per page goes to ``test-artifacts/site/``.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from chromium import playwright_or_skip
from notebook_files import NOTEBOOKS, ROOT, read

playwright_or_skip()
sys.path.insert(0, str(ROOT / "tools"))
import book  # the builder, a maintainer script from tools/
import predict_prompts  # the Predict rule the book follows

pytestmark = pytest.mark.browser

FULL = os.environ.get("GRAPHLEAF_BOOK") == "full"
SCREENSHOTS = ROOT / "test-artifacts" / "site"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
OWNER_AND_NAME = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"].removeprefix(
    "https://github.com/")

PAGE_FACTS = """() => ({
    images: [...document.images].map(img => ({src: img.src.slice(-60), ok: img.complete && img.naturalWidth > 0})),
    pictures: document.querySelectorAll('.cell_output img').length,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    sidebar: [...document.querySelectorAll('.bd-sidebar-primary nav a.reference.internal')].map(a => a.href),
    captions: [...document.querySelectorAll('.bd-sidebar-primary nav p.caption')].map(p => p.innerText.trim()),
    text: document.body.innerText,
    source: document.body.textContent,
})"""


def with_folded_answer(path: str) -> bool:
    return any(cell.outputs for _, cell in predict_prompts.answer_cells(read(NOTEBOOKS / path)))


def with_folded_solution(path: str) -> bool:
    return any(book.collapsed_heading_level(cell) for cell in read(NOTEBOOKS / path).cells if cell.cell_type == "markdown")


def quick_selection(entries) -> list[str]:
    """One notebook of each kind a reader meets first: the quick fix, a core lesson with a folded answer
    (and a folded solution, where one has both), an exercise."""
    core = [entry.path for entry in entries if entry.group == "core" and with_folded_answer(entry.path)]
    first = {"core": next((path for path in core if with_folded_solution(path)), core[0])}
    for entry in entries:
        first.setdefault(entry.group, entry.path)
    return [first[group] for group in ("quick fix", "core", "exercise")]


def page_of(out: Path, path: str) -> Path:
    return out / "notebooks" / Path(path).with_suffix(".html")


def chinese_page_of(out: Path, path: str) -> Path:
    """The Chinese book's page of the Chinese twin of ``path`` (a path of the course list)."""
    return out / book.ZH / "notebooks" / book.ZH / Path(path).with_suffix(".html")


def notebook_pages(out: Path, entries) -> list[tuple[Path, str]]:
    """Every notebook page of both books with its notebook (relative to notebooks/): the English ones,
    then the Chinese twins (``zh-CN/...``)."""
    return [*((page_of(out, e.path), e.path) for e in entries),
            *((chinese_page_of(out, e.path), f"{book.ZH}/{e.path}") for e in book.chinese_entries(entries))]


def stored_pictures(path: str) -> int:
    return sum(1 for cell in read(NOTEBOOKS / path).cells for output in cell.get("outputs", [])
               if {"image/png", "image/svg+xml"} & set(output.get("data", {})))


def widget_texts(path: str) -> list[str]:
    return [output.data["text/plain"] for cell in read(NOTEBOOKS / path).cells for output in cell.get("outputs", [])
            if WIDGET_VIEW in output.get("data", {})]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    entries = book.course()
    if not FULL:
        entries = book.course(quick_selection(entries))
    out = tmp_path_factory.mktemp("book") / "site"
    only = [] if FULL else ["--only", *(entry.path for entry in entries)]
    subprocess.run([sys.executable, str(ROOT / "tools" / "book.py"), str(out), *only], check=True)
    return out, entries


@pytest.fixture(scope="module")
def reader(browser):
    """A page that records every request leaving the disk."""
    page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
    page.remote_requests = []
    page.on("request", lambda request: None if request.url.startswith(("file:", "data:", "blob:", "about:"))
            else page.remote_requests.append(request.url))
    return page


@pytest.fixture(scope="module")
def facts(site, reader):
    out, _ = site
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    seen = {}
    for path in [*book.pages(out), *book.pages(out / book.ZH)]:
        reader.goto(path.as_uri(), wait_until="load")
        reader.wait_for_function("() => [...document.images].every(img => img.complete)", timeout=30_000)
        seen[path] = reader.evaluate(PAGE_FACTS)
        reader.screenshot(path=str(SCREENSHOTS / f"{path.relative_to(out).with_suffix('').as_posix().replace('/', '_')}.png"))
    return seen


def test_every_page_is_in_the_book_and_nothing_else(site, facts):
    out, entries = site
    expected = {out / "index.html", out / "errors.html", out / book.ZH / "index.html", out / book.ZH / "errors.html",
                *(page for page, _ in notebook_pages(out, entries)),
                *(out / "docs" / f"{name}.html" for names in book.doc_pages().values() for name in names)}
    assert set(facts) == expected
    assert not (out / "instructor").exists()
    for page, path in notebook_pages(out, entries):  # the exercises are the student copies
        source = facts[page]["source"]
        assert "BEGIN SOLUTION" not in source and "BEGIN HIDDEN TESTS" not in source, path


def test_every_link_between_pages_and_to_a_heading_resolves(facts):
    ids_of = {path: set(seen["ids"]) for path, seen in facts.items()}
    problems = []
    for path, seen in facts.items():
        for href in seen["links"]:
            url = urlparse(href)
            if url.scheme != "file":
                continue
            target = Path(unquote(url.path))
            if not target.is_file():
                problems.append(f"{path.name}: broken link {href}")
            elif url.fragment and target in ids_of and unquote(url.fragment) not in ids_of[target]:
                problems.append(f"{path.name}: no heading #{url.fragment} in {target.name}")
    assert not problems, "\n".join(problems)


def test_every_picture_loads_and_each_notebook_shows_its_stored_graphs(site, facts):
    out, entries = site
    broken = [f"{path.name}: {image['src']}" for path, seen in facts.items() for image in seen["images"] if not image["ok"]]
    assert not broken, broken
    for page, path in notebook_pages(out, entries):
        assert facts[page]["pictures"] == stored_pictures(path), path
    assert any(seen["pictures"] for seen in facts.values()) or not any(map(stored_pictures, (e.path for e in entries)))


def test_widgets_show_their_text_and_nothing_comes_from_the_network(site, facts, reader):
    out, entries = site
    for page, path in notebook_pages(out, entries):
        seen = facts[page]
        assert "Loading widget" not in seen["text"] and "Error displaying widget" not in seen["text"]
        for fallback in widget_texts(path):  # shown, or behind a toggle
            assert fallback in seen["source"], path
    assert reader.remote_requests == []


def test_every_notebook_page_has_its_launch_buttons(site, facts):
    """Each opens the page's own notebook: a Chinese page's buttons open the Chinese twin."""
    out, entries = site
    for page, notebook in notebook_pages(out, entries):
        links = facts[page]["links"]
        path = f"notebooks/{notebook}"
        assert f"https://mybinder.org/v2/gh/{OWNER_AND_NAME}/main?urlpath=lab/tree/{path}" in links, path
        assert f"https://colab.research.google.com/github/{OWNER_AND_NAME}/blob/main/{path}" in links, path
        hub = [link for link in links if "/hub/user-redirect/git-pull?" in link]
        assert len(hub) == 1 and f"urlpath=lab/tree/{OWNER_AND_NAME.split('/')[1]}/{path}" in unquote(hub[0]), hub
        assert (ROOT / path).is_file()


def test_the_sidebar_follows_the_course_list(site, facts):
    out, entries = site
    seen = facts[out / "index.html"]
    notebook_links = [Path(unquote(urlparse(h).path)) for h in seen["sidebar"] if "/notebooks/" in h]
    assert notebook_links == [page_of(out, entry.path) for entry in entries]
    groups = [book.GROUP_CAPTIONS[group] for group in dict.fromkeys(entry.group for entry in entries)]
    assert [caption.split(" (")[0] for caption in seen["captions"]][:len(groups)] == groups
    assert Path(unquote(urlparse(seen["sidebar"][0]).path)) == out / "errors.html"


def test_the_chinese_sidebar_follows_the_course_list(site, facts):
    out, entries = site
    chinese = book.chinese_entries(entries)
    seen = facts[out / book.ZH / "index.html"]
    notebook_links = [Path(unquote(urlparse(h).path)) for h in seen["sidebar"] if "/notebooks/" in h]
    assert notebook_links == [chinese_page_of(out, entry.path) for entry in chinese]
    shown = {"quick fix", *(entry.group for entry in chinese)}  # the error index opens the quick fix's group
    assert seen["captions"] == [caption for group, caption in book.GROUP_CAPTIONS_ZH.items() if group in shown]
    assert Path(unquote(urlparse(seen["sidebar"][0]).path)) == out / book.ZH / "errors.html"


def test_the_error_index_is_a_page(site, facts):
    out, _ = site
    readme = (ROOT / "README.md").read_text()
    block = readme.split(book.ERROR_INDEX_START)[1].split(book.ERROR_INDEX_END)[0]
    rows = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    text = facts[out / "errors.html"]["text"]
    assert rows and "gl.explain" in text
    for row in rows:
        message = row.strip("|").split(" | ")[0].replace("`", "").strip()[:40]
        assert message in text, message


def test_searching_deepcopy_finds_the_quick_fix_and_the_error_index(site, reader):
    out, entries = site
    reader.goto((out / "index.html").as_uri())
    reader.locator(".bd-sidebar-primary .search-button-field").click()  # opens the search dialog
    box = reader.locator('form.bd-search input[name="q"]')
    box.fill("deepcopy")
    box.press("Enter")
    # Sphinx lists the results one by one, then says how many it found
    reader.wait_for_function("() => /found \\d+ page/.test(document.querySelector('#search-results')?.innerText)",
                             timeout=30_000)
    found = {Path(unquote(urlparse(a).path)) for a in reader.eval_on_selector_all(
        "#search-results ul.search li a", "links => links.map(a => a.href)")}
    quick_fix = next(entry.path for entry in entries if entry.group == "quick fix")
    assert {page_of(out, quick_fix), out / "errors.html"} <= found


@pytest.fixture
def served(site):
    """The book over HTTP on a free port of this machine: from disk, Chromium lets no page fetch another,
    and Sphinx's search fetches each result's page to quote it."""
    out, _ = site
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_each_search_result_quotes_its_pages_own_words(served, browser):
    """Not the launch buttons, the download button or the language link, which stand in the page's main
    part before its text (every result read "...Binder" or "....md"), nor the in-page contents."""
    page = browser.new_context().new_page()  # not the reader: this one talks to the local server
    try:
        page.goto(f"{served}/search.html?q=deepcopy")
        page.wait_for_function("() => { const items = document.querySelectorAll('#search-results ul.search li');"
                               " return items.length > 0 && [...items].every(li => li.querySelector('p.context')) }",
                               timeout=60_000)
        quotes = page.eval_on_selector_all("#search-results ul.search li",
                                           "items => items.map(li => [li.querySelector('a').innerText,"
                                           " li.querySelector('p.context').innerText])")
    finally:
        page.context.close()
    assert len(quotes) > 3, quotes
    for title, quote in quotes:
        # Sphinx quotes around the search word where its stem is in the text ("deepcopi" is in
        # "deepcopies", not in "deepcopy"), else from the text's start: the page's (or section's) heading
        own_words = "deepcopi" in quote.lower() or title.split(" > ")[-1] in quote
        assert own_words and not quote.startswith(("...Binder", "....md")), (title, quote)


def test_a_predict_answer_stays_hidden_until_its_toggle_is_opened(site, reader):
    out, entries = site
    lesson = next(entry.path for entry in entries if entry.group == "core" and with_folded_answer(entry.path))
    reader.goto(page_of(out, lesson).as_uri())
    answer = reader.locator(".cell.tag_hide-output").first
    output = answer.locator(".cell_output")
    assert not output.is_visible()
    answer.locator("summary").click()
    output.wait_for(state="visible", timeout=5_000)
    assert output.inner_text().strip()


def test_a_task_solution_stays_folded_until_opened(site, reader):
    out, entries = site
    lesson = next((entry.path for entry in entries if with_folded_solution(entry.path)), None)
    if lesson is None:
        pytest.skip("no notebook of this book stores a collapsed solution heading")
    reader.goto(page_of(out, lesson).as_uri())
    solution = reader.locator("details.graphleaf-folded, .cell.tag_hide-cell details").first
    content = solution.locator(":scope > :not(summary)").first
    assert not content.is_visible()
    solution.locator("summary").first.click()
    content.wait_for(state="visible", timeout=5_000)


# --- the Chinese book --------------------------------------------------------------------------------

def language_link(page: Path) -> Path:
    """Where the link at the top of a built page leads."""
    html = page.read_text(encoding="utf-8")
    start = html.index('class="graphleaf-language-link" href="') + len('class="graphleaf-language-link" href="')
    return (page.parent / html[start:html.index('"', start)]).resolve()


def test_every_page_of_both_books_links_its_twin_in_the_other_language(site):
    out, entries = site
    chinese = out / book.ZH
    english_pages, chinese_pages = book.pages(out), book.pages(chinese)
    assert chinese / "index.html" in chinese_pages and chinese / "errors.html" in chinese_pages
    assert set(chinese_pages) == {chinese / "index.html", chinese / "errors.html", *(
        chinese / "notebooks" / book.ZH / Path(entry.path).with_suffix(".html")
        for entry in book.chinese_entries(entries))}
    for page in english_pages:
        assert language_link(page) in chinese_pages, page
    for page in chinese_pages:
        assert language_link(page) in english_pages, page
    assert language_link(out / "errors.html") == chinese / "errors.html"
    assert language_link(chinese / "errors.html") == out / "errors.html"


def test_the_language_link_leads_to_the_same_page_in_the_other_language(site, reader):
    out, _ = site
    reader.goto((out / "errors.html").as_uri())
    link = reader.locator("a.graphleaf-language-link")
    assert link.first.inner_text() == "简体中文"
    link.first.click()
    reader.wait_for_load_state("load")
    assert Path(unquote(urlparse(reader.url).path)) == out / book.ZH / "errors.html"
    assert reader.evaluate("() => document.documentElement.lang") == "zh-CN"
    assert "刚遇到这个错误" in reader.inner_text("main")
    reader.locator("a.graphleaf-language-link").first.click()
    reader.wait_for_load_state("load")
    assert Path(unquote(urlparse(reader.url).path)) == out / "errors.html"


def search_the_chinese_book(out: Path, reader, word: str) -> set[Path]:
    """The pages the Chinese book's search lists for ``word``, as Chromium shows them."""
    reader.goto((out / book.ZH / "index.html").as_uri())
    reader.locator(".bd-sidebar-primary .search-button-field").click()
    box = reader.locator('form.bd-search input[name="q"]')
    box.fill(word)
    box.press("Enter")
    # Sphinx lists the results one by one, then its summary (in Chinese) replaces "searching"
    reader.wait_for_function("() => /\\d/.test(document.querySelector('#search-results .search-summary')?.innerText)",
                             timeout=30_000)
    return {Path(unquote(urlparse(a).path)) for a in reader.eval_on_selector_all(
        "#search-results ul.search li a", "links => links.map(a => a.href)")}


def test_searching_in_chinese_finds_the_chinese_error_index(site, reader):
    out, _ = site
    assert out / book.ZH / "errors.html" in search_the_chinese_book(out, reader, "修复")  # one word to jieba


def a_word_of(title: str) -> str:
    """The last Chinese word of ``title`` as the Chinese search splits it (jieba, as Sphinx calls it)."""
    from jieba import cut_for_search

    return [word for word in cut_for_search(title) if re.fullmatch(r"[\u4e00-\u9fff]{2,}", word)][-1]


def test_searching_in_chinese_finds_every_chinese_notebook(site, reader):
    """A word of each Chinese notebook's title finds its page."""
    out, entries = site
    missed = {}
    for entry in book.chinese_entries(entries):
        word = a_word_of(entry.title_zh)
        if chinese_page_of(out, entry.path) not in search_the_chinese_book(out, reader, word):
            missed[entry.path] = word
    assert book.chinese_entries(entries) and not missed, missed
