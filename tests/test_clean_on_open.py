"""Opening a notebook in JupyterLab and closing it leaves its file byte-identical (git stays clean).

JupyterLab copies the kernel's ``language_info`` into the notebook when the kernel connects; where the
kernel's Python is not the release that stored the outputs, the notebook turns dirty and autosave
rewrites it. The suite's environments enable ``graphleaf_edu_jupyter``, which keeps the stored
``language_info`` on save. Here every tracked notebook is opened in a real JupyterLab in Chromium,
with autosave every second, from a copy whose stored Python version differs from the kernel's (as
on Binder, a hub or another laptop): the kernel connects, autosave fires, the notebook is closed,
and the file must be exactly what it was.
"""
from __future__ import annotations

import json
import platform
import subprocess

import pytest
from chromium import playwright_or_skip
from jupyterlab_process import running_lab
from notebook_files import ROOT

playwright = playwright_or_skip()

pytestmark = pytest.mark.browser

AUTOSAVE = {"@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": True, "autosaveInterval": 1}}
# Opened together: each batch starts this many kernels at once.
BATCH = 4
OPEN_TIMEOUT_MS = 180_000
KERNEL_INFO_AGAIN_MS = 15_000


def tracked_notebooks() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True)
    return sorted(listed.stdout.split())


def another_patch_release() -> str:
    major, minor, patch = platform.python_version_tuple()
    return f"{major}.{minor}.{0 if patch != '0' else 1}"


def as_stored_elsewhere(text: str, version: str) -> str:
    """The notebook's text with only its stored Python version replaced (same bytes otherwise)."""
    stored = json.loads(text)["metadata"]["language_info"]["version"]
    field = f'"version": "{stored}"'
    assert text.count(field) == 1, "the stored Python version must be the only field spelled like this"
    return text.replace(field, f'"version": "{version}"')


# Opens each path, waits until its kernel has connected (the notebook's model then holds the kernel's
# Python version) and autosave has written it since, then closes it and shuts its kernel down.
# Returns, per path, whether JupyterLab had marked it modified. On a loaded machine a kernel can answer
# the server's first kernel_info request too late for JupyterLab to hear it (the notebook then never
# learns its language): a connected kernel whose language is still unknown is asked again every nudgeMs.
OPEN_AUTOSAVE_CLOSE = """async ({paths, kernelVersion, timeoutMs, nudgeMs}) => {
    const app = window.jupyterapp;
    const until = async (condition, what, nudge = () => {}) => {
        const deadline = Date.now() + timeoutMs;
        let nextNudge = Date.now() + nudgeMs;
        while (!condition()) {
            if (Date.now() > deadline) throw new Error('timed out waiting for ' + what());
            if (Date.now() > nextNudge) {
                nudge();
                nextNudge = Date.now() + nudgeMs;
            }
            await new Promise(resolve => setTimeout(resolve, 100));
        }
    };
    const kernelState = panel => {
        const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
        return kernel ? `kernel ${kernel.status}, connection ${kernel.connectionStatus}` : 'no kernel';
    };
    const opened = await Promise.all(paths.map(async path => {
        const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
        const seen = {path, dirty: false};
        await panel.context.ready;
        seen.loaded = panel.context.contentsModel.last_modified;
        panel.context.model.stateChanged.connect((model, change) => {
            if (change.name === 'dirty' && change.newValue) seen.dirty = true;
        });
        return {panel, seen};
    }));
    for (const {panel, seen} of opened) {
        await panel.sessionContext.ready;
        await until(() => {
            const info = panel.context.model.getMetadata('language_info');
            return info && info.version === kernelVersion;
        }, () => `${seen.path}: the kernel connecting (${kernelState(panel)})`, () => {
            const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
            if (kernel && kernel.connectionStatus === 'connected') kernel.requestKernelInfo().catch(() => {});
        });
        await until(() => panel.context.contentsModel.last_modified !== seen.loaded && !panel.context.model.dirty,
                    () => seen.path + ': autosave');
    }
    for (const {panel} of opened) {
        await panel.sessionContext.shutdown();
        panel.dispose();
    }
    return opened.map(({seen}) => ({path: seen.path, dirty: seen.dirty}));
}"""


def test_opening_and_closing_every_notebook_leaves_its_file_unchanged(tmp_path, browser):
    paths = tracked_notebooks()
    assert len(paths) > 10
    elsewhere = another_patch_release()
    root = tmp_path / "repo"
    expected = {}
    for path in paths:
        copy = root / path
        copy.parent.mkdir(parents=True, exist_ok=True)
        text = as_stored_elsewhere((ROOT / path).read_text(encoding="utf-8"), elsewhere)
        copy.write_text(text, encoding="utf-8")
        expected[path] = copy.read_bytes()

    with running_lab(root, tmp_path, settings=AUTOSAVE) as url:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"{url}/lab?reset")
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=OPEN_TIMEOUT_MS)
            page.evaluate("() => window.jupyterapp.started")
            seen = []
            for start in range(0, len(paths), BATCH):
                try:
                    seen += page.evaluate(OPEN_AUTOSAVE_CLOSE, {
                        "paths": paths[start:start + BATCH], "kernelVersion": platform.python_version(),
                        "timeoutMs": OPEN_TIMEOUT_MS, "nudgeMs": KERNEL_INFO_AGAIN_MS})
                except playwright.Error as error:
                    log = (tmp_path / "jupyterlab.log").read_text()
                    raise AssertionError(f"{error}\nJupyterLab's log ends:\n{log[-3000:]}") from None
        finally:
            context.close()
    log = (tmp_path / "jupyterlab.log").read_text()
    assert "graphleaf_edu_jupyter | extension was successfully loaded" in log, log[-3000:]

    # The rewrite really happened: JupyterLab marked every notebook modified (and autosave saved it).
    assert [s["path"] for s in seen] == paths
    assert all(s["dirty"] for s in seen), [s["path"] for s in seen if not s["dirty"]]
    changed = [path for path in paths if (root / path).read_bytes() != expected[path]]
    assert not changed, f"opening these rewrote them: {changed}"
