"""`make binder-check`: build the Binder environment here the way repo2docker would, then use it.

repo2docker's Python route, in its order, from the same files (binder/):
  1. apt.txt: Debian packages (checked to be installed here; repo2docker apt-get installs them);
  2. a fresh environment with the Python of runtime.txt, holding repo2docker's own notebook-server
     packages (BASE_ENVIRONMENT, its conda-forge lock for that Python; pip stands in for conda);
  3. `pip install --no-cache-dir -r binder/requirements.txt` (PIP_RETRIES=0: where PyTorch's index is
     out of reach, the torch CPU wheel that pip finds locally stands in for it);
  4. binder/postBuild, run from the repository root.
Then: every package fits (`pip check`), only the CPU kernel is installed, kernel culling and the save hook
are configured, and JupyterLab from that environment serves the README's Binder link in Chromium to a
user without settings of their own: no news prompt shows, the notebook runs top to bottom with its graphs
as pictures, and a lesson with a widget renders it.

    .venv/bin/python tools/binder_check.py [--keep DIR [--reuse]] [--port N]

--keep builds in DIR and leaves it there; --reuse then skips the build and checks that one again.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from jupyterlab_process import NEW_STUDENT, NEWS_PROMPT, running_lab

import graphleaf_edu_jupyter

# repo2docker's notebook-server packages for Python 3.11 (repo2docker/buildpacks/conda/
# environment.py-3.11-linux-64.lock, 2025-10), which our requirements then upgrade.
BASE_ENVIRONMENT = ["jupyterlab==4.4.9", "notebook==7.4.7", "ipywidgets==8.1.7", "ipykernel==7.0.1"]
WIDGET_LESSON = "notebooks/00_start_here.ipynb"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"]
SCREENSHOTS = ROOT / "test-artifacts" / "binder-check"
RUN_TIMEOUT_MS = 300_000


def step(message: str) -> None:
    print(f"binder-check: {message}", flush=True)


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=True, **kwargs)


def binder_url_path() -> str:
    """The notebook the README's Binder badge opens (lab/tree/...)."""
    badge = re.search(r"mybinder\.org/v2/gh/[^)\s]*\?urlpath=(lab/tree/[^)\s&]+)", (ROOT / "README.md").read_text())
    if not badge:
        raise SystemExit("README.md has no Binder badge with ?urlpath=lab/tree/...")
    return badge.group(1)


def copy_repository(destination: Path) -> None:
    """What repo2docker sees: the files git tracks (and new ones not ignored)."""
    listed = run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                 capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


def check_binder_folder(repo: Path) -> None:
    binder = repo / "binder"
    for winner in ("environment.yml", "Dockerfile", "Pipfile", "pyproject.toml", "setup.py"):
        if (binder / winner).exists():
            raise SystemExit(f"binder/{winner} exists: repo2docker would use it instead of requirements.txt")
    packages = [line.partition("#")[0].strip() for line in (binder / "apt.txt").read_text().splitlines()]
    missing = [p for p in filter(None, packages)
               if subprocess.run(["dpkg", "-s", p], capture_output=True, check=False).returncode != 0]
    if missing:
        raise SystemExit(f"apt.txt names {missing}, not installed here: apt-get install {' '.join(missing)}")
    step(f"apt.txt: {', '.join(filter(None, packages))} installed")


def environment_of(venv: Path) -> dict[str, str]:
    """The environment variables of a shell in the Binder image: its Python first on PATH."""
    return dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", PIP_RETRIES="0",
                PIP_DISABLE_PIP_VERSION_CHECK="1", VIRTUAL_ENV=str(venv))


def make_environment(repo: Path, venv: Path) -> dict[str, str]:
    runtime = (repo / "binder" / "runtime.txt").read_text().strip()
    version = re.fullmatch(r"python-(3\.\d+)", runtime)
    if not version:
        raise SystemExit(f"binder/runtime.txt says {runtime!r}, expected python-3.X")
    python = shutil.which(f"python{version.group(1)}")
    if python is None:
        raise SystemExit(f"runtime.txt asks for Python {version.group(1)}: no python{version.group(1)} on PATH")
    run([python, "-m", "venv", str(venv)])
    env = environment_of(venv)
    step(f"repo2docker's base packages: {' '.join(BASE_ENVIRONMENT)}")
    run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-cache-dir", *BASE_ENVIRONMENT], env=env)
    step("pip install --no-cache-dir -r binder/requirements.txt")
    started = time.monotonic()
    run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-cache-dir", "-r", "binder/requirements.txt"],
        cwd=repo, env=env)
    step(f"  installed in {time.monotonic() - started:.0f} s")
    step("binder/postBuild")
    post_build = repo / "binder" / "postBuild"
    post_build.chmod(0o755)
    run([str(post_build)], cwd=repo, env=env)
    return env


def check_environment(venv: Path, env: dict[str, str]) -> None:
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "check"], env=env)
    torch = run([python, "-c", "import torch; print(torch.__version__)"], env=env, capture_output=True,
                text=True).stdout.strip()
    if not torch.endswith("+cpu"):
        raise SystemExit(f"Binder would install torch {torch}, not PyTorch's CPU build")
    kernels = json.loads(run([python, "-m", "jupyter", "kernelspec", "list", "--json"], env=env,
                             capture_output=True, text=True).stdout)["kernelspecs"]
    if "graphleaf-cpu" not in kernels or "graphleaf-gpu" in kernels:
        raise SystemExit(f"expected the CPU kernel only, found {sorted(kernels)}")
    config = run([python, "-m", "jupyter", "server", "--show-config"], env=env, capture_output=True, text=True).stdout
    if "cull_idle_timeout" not in config:
        raise SystemExit(f"the Jupyter server's configuration does not cull idle kernels:\n{config}")
    listed = run([python, "-m", "jupyter", "server", "extension", "list"], env=env, capture_output=True, text=True)
    extensions = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    if not re.search(r"graphleaf_edu_jupyter\W+enabled", extensions):
        raise SystemExit(f"the save hook (graphleaf_edu_jupyter) is not enabled:\n{extensions}")
    if not (venv / graphleaf_edu_jupyter.LAB_DEFAULTS_FILE).exists():
        raise SystemExit(f"JupyterLab's news prompt is not turned off ({graphleaf_edu_jupyter.LAB_DEFAULTS_FILE})")
    step(f"pip check passes; torch {torch}; kernels {sorted(kernels)}; culling, save hook, quiet lab configured")


RUN_ALL = """async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    await panel.sessionContext.ready;
    window.jupyterapp.commands.execute('notebook:run-all-cells');
    return true;
}"""
ALL_CELLS_RAN = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return !!kernel && kernel.status === 'idle' && [...document.querySelectorAll(
        '.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')].every(prompt => /\\[\\d+\\]/.test(prompt.textContent));
}"""


def open_and_run_all(page, url: str, name: str) -> None:
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.evaluate(RUN_ALL)
    page.wait_for_function(ALL_CELLS_RAN, timeout=RUN_TIMEOUT_MS)


def screenshot(page, name: str, showing: str) -> None:
    page.locator(showing).first.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}.png"))


def check_in_chromium(venv: Path, repo: Path, scratch: Path, port: int | None) -> None:
    from playwright.sync_api import sync_playwright

    landing = binder_url_path()
    with running_lab(repo, scratch, settings=NEW_STUDENT, python=str(venv / "bin" / "python"), port=port) as url, \
            sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            open_and_run_all(page, f"{url}/{landing}?reset", landing)
            if page.get_by_text(NEWS_PROMPT).count():
                raise SystemExit(f"{landing}: JupyterLab asks about Jupyter's news")
            screenshot(page, landing, ".jp-Notebook .jp-Cell")
            step(f"{landing}: ran top to bottom")
            page.evaluate("async () => { await window.jupyterapp.serviceManager.sessions.shutdownAll(); }")

            open_and_run_all(page, f"{url}/lab/tree/{WIDGET_LESSON}?reset", WIDGET_LESSON)
            pictures = page.locator(".jp-OutputArea-output img, .jp-OutputArea-output svg").count()
            if pictures == 0:
                raise SystemExit(f"{WIDGET_LESSON}: no graph picture after Run All")
            page.wait_for_selector(".jp-OutputArea-output .jupyter-widgets", timeout=60_000)
            page.wait_for_function("() => !document.querySelector('.jp-Notebook').innerText"
                                   ".includes('Loading widget...')", timeout=60_000)
            text = page.locator(".jp-Notebook").inner_text()
            if "Error displaying widget" in text:
                raise SystemExit(f"{WIDGET_LESSON}: Error displaying widget")
            widgets = page.locator(".jp-OutputArea-output .jupyter-widgets").count()
            screenshot(page, WIDGET_LESSON, ".jp-OutputArea-output .jupyter-widgets")
            step(f"{WIDGET_LESSON}: {pictures} graph pictures, {widgets} widgets rendered; "
                 f"screenshots in {SCREENSHOTS.relative_to(ROOT)}")
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true", help="check the environment --keep built before")
    parser.add_argument("--port", type=int, help="JupyterLab's port (default: a free one)")
    args = parser.parse_args(argv)
    if args.reuse and not (args.keep and (args.keep / "venv" / "bin" / "python").exists()):
        parser.error("--reuse needs --keep DIR of an earlier build")
    started = time.monotonic()
    work = args.keep or Path(tempfile.mkdtemp(prefix="graphleaf-binder-check-"))
    repo, venv, scratch = work / "repo", work / "venv", work / "lab"
    try:
        if args.reuse:
            env = environment_of(venv)
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
        else:
            shutil.rmtree(work, ignore_errors=True)
            for folder in (repo, scratch):
                folder.mkdir(parents=True)
            copy_repository(repo)
            check_binder_folder(repo)
            env = make_environment(repo, venv)
        check_environment(venv, env)
        check_in_chromium(venv, repo, scratch, args.port)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    step(f"passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
