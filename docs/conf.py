"""Sphinx configuration of the book (`make site`: tools/book.py stages the sources and builds with it).

Nothing runs: the notebooks' stored outputs are rendered. Graphs are their stored pictures; a widget
shows its text, since its view needs a kernel (and MyST-NB would load the widget JavaScript from a
CDN). The JupyterHub launch button opens a notebook through nbgitpuller on the hub GRAPHLEAF_JUPYTERHUB_URL
names (`make site GRAPHLEAF_JUPYTERHUB_URL=https://hub.example.edu`); without it, on the hub
`make classroom` starts on this machine (docs/classroom.md).
"""
import html
import json
import os
import tomllib
from pathlib import Path

from sphinx.search import languages as search_languages
from sphinx.search.zh import SearchChinese

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
REPOSITORY = PROJECT["urls"]["Repository"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

project = "graphleaf-edu"
author = "The graphleaf-edu authors"
copyright = "The graphleaf-edu authors; lessons CC BY 4.0, code MIT"
release = PROJECT["version"]

extensions = ["myst_nb", "sphinx.ext.githubpages"]
exclude_patterns = ["**/.ipynb_checkpoints"]

nb_execution_mode = "off"
nb_mime_priority_overrides = [("html", WIDGET_VIEW, None)]
nb_ipywidgets_js = {}
myst_heading_anchors = 4

html_theme = "sphinx_book_theme"
html_title = "graphleaf-edu"
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": "main",
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    "show_toc_level": 2,
    "launch_buttons": {
        "notebook_interface": "jupyterlab",
        "binderhub_url": "https://mybinder.org",
        "colab_url": "https://colab.research.google.com",
        "jupyterhub_url": os.environ.get("GRAPHLEAF_JUPYTERHUB_URL") or "http://127.0.0.1:18600",
    },
}

# The link to the other language at the top of every page: tools/book.py writes, beside the staged
# sources of each book, which page of the other book twins each page (language-links.json).
LANGUAGE_LINKS = "language-links.json"


def read_language_links(app):
    path = Path(app.srcdir) / LANGUAGE_LINKS
    app.env.graphleaf_language_links = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def add_language_link(app, pagename, templatename, context, doctree):
    links = getattr(app.env, "graphleaf_language_links", None)
    if not links or "body" not in context:
        return
    up = "../" * pagename.count("/")
    target = f"{up}{links['root']}{links['twins'].get(pagename, 'index')}.html"
    link = (f'<p class="graphleaf-language"><a class="graphleaf-language-link" href="{html.escape(target)}" '
            f'hreflang="{links["lang"]}" lang="{links["lang"]}">{html.escape(links["label"])}</a></p>\n')
    context["body"] = link + context["body"]


class ChineseSearch(SearchChinese):
    """Sphinx's Chinese search (words split by jieba) with a working JavaScript stemmer: Sphinx 9.0's
    Chinese search ships the English stemmer for Latin words but names it ``ChineseStemmer`` in
    language_data.js ("ChineseStemmer is not defined": the search page finds nothing)."""

    language_name = "English"  # the name of the JavaScript stemmer, as Sphinx builds it


# What a search result quotes of its page: Sphinx takes the text of the page's [role=main], which in this
# theme also holds the article's header (the launch and download buttons), the in-page contents and the
# previous/next links, with the language link first: every result read "...Binder" or "....md". The
# quote is taken from the article alone (.bd-article), without the language link, its white space
# collapsed. This runs before Sphinx's search starts (searchtools.js is loaded after the page's scripts).
SEARCH_SUMMARY_JS = """
document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search === "undefined") return;
  const pageText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    const main = page.querySelector('[role="main"]');
    const article = main && main.querySelector(".bd-article");
    if (article) main.replaceChildren(article);
    page.querySelectorAll(".graphleaf-language").forEach((element) => element.remove());
    return pageText(page.documentElement.outerHTML, anchor).replace(/\\s+/g, " ");
  };
});
"""


def setup(app):
    search_languages["zh"] = ChineseSearch
    app.add_js_file(None, body=SEARCH_SUMMARY_JS)
    app.connect("builder-inited", read_language_links)
    app.connect("html-page-context", add_language_link)
