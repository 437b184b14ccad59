"""graphleaf-edu's Jupyter server extension: opening a lesson never modifies its file.

(A package of its own, beside graphleaf_edu, so that the Jupyter server never imports torch.)

When a kernel connects, JupyterLab copies the kernel's ``language_info`` into the notebook's
metadata. Where the kernel's Python is not the exact release that stored the outputs (Binder, a hub,
another laptop), the notebook turns dirty, autosave rewrites it, and git or nbgitpuller then see an
edit nobody made. Before every save this hook puts back the ``language_info`` that the file on disk
already holds: it records where the stored outputs were made (``make notebooks``), not where the
notebook was last opened.

The same command gives the environment's JupyterLab a quiet first screen: JupyterLab 4 greets a
new user with "Would you like to get notified about official Jupyter news?", a prompt a student meets
on the first lesson, and answering yes makes the lab fetch a feed from the internet. ``LAB_DEFAULTS``
answers it "Never" (and checks for no updates), as a setting default of the environment that a
user's own settings still override. It also keeps JupyterLab in English until a student chooses
another language (Settings > Language > 中文): JupyterLab's own default follows the locale of the
machine the server runs on, so the Chinese language pack of the student environment would otherwise
turn a lab on a ``zh_CN`` machine Chinese by itself, and the same lesson would look different from
one machine to the next.

The suite's environments run it (``make lab``, ``make test``, Binder's ``postBuild``, the classroom
environment and the class image of ``classroom/Dockerfile``)::

    python -m graphleaf_edu_jupyter enable    # for the JupyterLab of the running environment
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXTENSION = "graphleaf_edu_jupyter"
SERVER_CONFIG = Path("etc", "jupyter", "jupyter_server_config.d", f"{EXTENSION}.json")
# JupyterLab 4.6's news prompt: the announcements plugin asks while the notification plugin's
# ``fetchNews`` is "none" (its default), and fetches news when it is "true".
# The translation plugin's ``locale`` is "default" (the server machine's locale) unless set.
LAB_DEFAULTS = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/translation-extension:plugin": {"locale": "en"},
}
# jupyterlab_server merges every file of ``<app settings dir>/overrides.d`` into the setting defaults;
# the app settings dir of an environment's JupyterLab is ``share/jupyter/lab/settings`` in its prefix.
LAB_DEFAULTS_FILE = Path("share", "jupyter", "lab", "settings", "overrides.d", "graphleaf-edu.json")


def keep_stored_language_info(model: dict[str, Any], path: str, contents_manager: Any, **_: Any) -> None:
    """A ``pre_save_hook``: give the notebook being saved the ``language_info`` its file already has."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    stored = _stored_language_info(contents_manager, path)
    if stored is not None:
        model["content"].setdefault("metadata", {})["language_info"] = stored


def _stored_language_info(contents_manager: Any, path: str) -> dict[str, Any] | None:
    root = getattr(contents_manager, "root_dir", None)
    if root is None:
        return None
    file = Path(root, path.lstrip("/"))
    try:
        stored = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    language_info = stored.get("metadata", {}).get("language_info") if isinstance(stored, dict) else None
    return language_info if isinstance(language_info, dict) else None


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": EXTENSION}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.contents_manager.register_pre_save_hook(keep_stored_language_info)


def enable(prefix: str = sys.prefix) -> Path:
    """Turn the extension on for every Jupyter server of the environment at ``prefix``; return the file written.

    (``jupyter server extension enable`` only toggles extensions that a package's own config file lists.)
    """
    return _write_json(Path(prefix, SERVER_CONFIG), {"ServerApp": {"jpserver_extensions": {EXTENSION: True}}})


def quiet_first_screen(prefix: str = sys.prefix) -> Path:
    """Give the JupyterLab of the environment at ``prefix`` the defaults of ``LAB_DEFAULTS`` (no news
    prompt, no update check, English until a user chooses); return the file written."""
    return _write_json(Path(prefix, LAB_DEFAULTS_FILE), LAB_DEFAULTS)


def _write_json(path: Path, content: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=2) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {EXTENSION}", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["enable"])
    parser.parse_args(argv)
    print(f"enabled {EXTENSION} in {enable()}")
    print(f"turned JupyterLab's news prompt off (English until a user chooses) in {quiet_first_screen()}")
    return 0
