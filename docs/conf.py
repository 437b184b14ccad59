"""Sphinx configuration of the book (`make site`: tools/book.py stages the sources and builds with it).

Nothing runs: the notebooks' stored outputs are rendered. Graphs are their stored pictures; a widget
shows its text, since its view needs a kernel (and MyST-NB would load the widget JavaScript from a
CDN). The JupyterHub launch button opens a notebook through nbgitpuller on the hub GRAPHLEAF_JUPYTERHUB_URL
names (`make site GRAPHLEAF_JUPYTERHUB_URL=https://hub.example.edu`); without it, on the hub
`make classroom` starts on this machine (docs/classroom.md).
"""
import os
import tomllib
from pathlib import Path

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
