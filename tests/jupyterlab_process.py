"""A throwaway JupyterLab for the browser tests: its own root, settings, runtime folder and port.

``running_lab(root, scratch)`` yields the server's URL and always stops it by handle: the server's
process group gets SIGTERM (SIGKILL if it lingers), and any kernel whose connection file is in our
runtime folder is killed too, so no kernel outlives a failed test. A SIGTERM sent to pytest
meanwhile unwinds through the same ``finally``.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

READY_TIMEOUT_S = 60
STOP_TIMEOUT_S = 15

NOTIFICATION_SETTINGS = "@jupyterlab/apputils-extension/notification.jupyterlab-settings"
# Settings that keep the lab quiet and every cell in the DOM (no virtual scrolling).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    NOTIFICATION_SETTINGS: {"fetchNews": "false", "checkForUpdates": False},
}
# A new student has no answer to the news prompt of their own: what the environment's defaults then show.
NEW_STUDENT = {NOTIFICATION_SETTINGS: {}}
NEWS_PROMPT = "Would you like to get notified about official Jupyter news?"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_lab(root: Path, scratch: Path, settings: dict | None = None, python: str = sys.executable,
                port: int | None = None) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 without a token; ``scratch`` holds settings, runtime files and the log.

    ``settings`` (settings file -> values) are added to ``LAB_SETTINGS``; ``python`` is the environment
    whose JupyterLab runs (this one by default); ``port`` is a free one unless given.
    """
    port = port or free_port()
    runtime = scratch / "runtime"
    env = _environment(scratch, runtime, {**LAB_SETTINGS, **(settings or {})})
    command = [
        python, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}",
        "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1", "--ServerApp.token=",
        "--ServerApp.password=", "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}",
    ]
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with open(scratch / "jupyterlab.log", "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_until_ready(url, server, scratch / "jupyterlab.log")
            yield url
        finally:
            _stop(server, runtime)
            signal.signal(signal.SIGTERM, previous)


def _environment(scratch: Path, runtime: Path, lab_settings: dict) -> dict[str, str]:
    settings = scratch / "lab-settings"
    for name, values in lab_settings.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(scratch / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(runtime),
        CUDA_VISIBLE_DEVICES="",
    )


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def _wait_until_ready(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/status", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"JupyterLab did not answer within {READY_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def _stop(server: subprocess.Popen, runtime: Path) -> None:
    kernels = _our_kernel_pids(runtime)
    for sig, wait_s in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    for pid in kernels | _our_kernel_pids(runtime):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _our_kernel_pids(runtime: Path) -> set[int]:
    """Kernels started by this server: their command line names a connection file in ``runtime``."""
    pids = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            arguments = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.startswith(str(runtime).encode()) and arg.endswith(b".json") for arg in arguments):
            pids.add(int(cmdline.parent.name))
    return pids
