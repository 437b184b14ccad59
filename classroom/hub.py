"""Start, restart and stop a classroom's JupyterHub; stopping leaves no process, account or home.

    start(classroom, students)   environment, proxy, course repository, accounts, then the hub
    restart_hub(classroom)       the hub (and its proxy) only: students' servers and kernels live on
    stop(classroom)              hub, proxy, culler, every student process, the accounts and homes,
                                 the classroom's folder; the environment in /opt stays (a cache)
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

from classroom import accounts, course, environment
from classroom.settings import ROOT, Classroom

CONFIG = ROOT / "classroom" / "jupyterhub_config.py"
PROXY_FOLDER = ROOT / "classroom"
PROXY = PROXY_FOLDER / "node_modules" / ".bin" / "configurable-http-proxy"
READY_TIMEOUT_S = 120
STOP_TIMEOUT_S = 20
CULL_TIMEOUT_S = 3600


def require_root() -> None:
    if os.geteuid() != 0:
        raise PermissionError("a classroom makes one Unix account per student and runs their servers as them: "
                              "run it as root (sudo make classroom)")


def ensure_proxy() -> Path:
    """configurable-http-proxy from npm, at the versions package-lock.json pins (npm ci again only
    when the lock's content changes)."""
    lock = PROXY_FOLDER / "package-lock.json"
    stamp = PROXY_FOLDER / "node_modules" / ".graphleaf-lock-sha256"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if PROXY.exists() and stamp.exists() and stamp.read_text() == digest:
        return PROXY
    if not shutil.which("npm"):
        raise RuntimeError("npm (Node.js >= 20) is needed for configurable-http-proxy: install Node.js 20 or newer")
    print("installing configurable-http-proxy with npm ci", flush=True)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PROXY_FOLDER, check=True)
    stamp.write_text(digest)
    return PROXY


def start(classroom: Classroom, students: int, cull_timeout_s: int = CULL_TIMEOUT_S) -> list[str]:
    """A running hub with ``students`` accounts made and the course published; returns their names."""
    require_root()
    names = classroom.students(students)
    environment.ensure(Path(classroom.environment))
    ensure_proxy()
    stop(classroom)  # what a crashed run may have left
    classroom.folder.mkdir(parents=True)
    os.chmod(classroom.folder, 0o755)
    classroom.hub_folder.mkdir(mode=0o700)
    password = classroom.hub_folder / "password"
    password.touch(mode=0o600)
    password.write_text(secrets.token_urlsafe(12) + "\n")
    course.publish(classroom.course_repository)
    accounts.create(names, classroom.course_repository)
    classroom.settings_file.write_text(json.dumps({
        "hub_port": classroom.hub_port, "server_ports": classroom.server_ports, "students": names,
        "hub_folder": str(classroom.hub_folder), "environment": classroom.environment, "proxy_command": str(PROXY),
        **_culling(cull_timeout_s)}, indent=1) + "\n")
    launch_hub(classroom)
    return names


def _culling(timeout_s: int) -> dict:
    return {"cull_timeout_s": timeout_s, "cull_every_s": max(1, min(300, timeout_s // 2))}


def password(classroom: Classroom) -> str:
    return (classroom.hub_folder / "password").read_text().strip()


def launch_hub(classroom: Classroom) -> None:
    env = {**os.environ, "GRAPHLEAF_CLASSROOM_SETTINGS": str(classroom.settings_file)}
    with open(classroom.hub_folder / "hub.log", "a") as log:
        hub = subprocess.Popen([str(Path(classroom.environment) / "bin" / "jupyterhub"), "-f", str(CONFIG)],
                               cwd=classroom.hub_folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if hub.poll() is not None:
            raise RuntimeError(f"the hub exited with {hub.returncode}:\n{log_tail(classroom)}")
        try:
            with urllib.request.urlopen(f"{classroom.url}/hub/api/", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the hub did not answer on {classroom.url} within {READY_TIMEOUT_S} s:\n{log_tail(classroom)}")


def log_tail(classroom: Classroom, lines: int = 30) -> str:
    log = classroom.hub_folder / "hub.log"
    return "\n".join(log.read_text().splitlines()[-lines:]) if log.exists() else "(no hub log)"


def _process_from_pid_file(path: Path, name: str) -> psutil.Process | None:
    try:
        process = psutil.Process(int(path.read_text().strip()))
        return process if name in " ".join(process.cmdline()) else None
    except (FileNotFoundError, ValueError, psutil.Error):
        return None


def stop_hub(classroom: Classroom) -> None:
    """Stop the hub, its proxy and its services; the students' servers (other uids) keep running."""
    hub = _process_from_pid_file(classroom.hub_folder / "jupyterhub.pid", "jupyterhub")
    helpers = []
    if hub:
        try:
            helpers = [child for child in hub.children(recursive=True) if child.uids().real == 0]
        except psutil.Error:
            pass
        # The services first: the hub stops the culler with SIGINT and waits 10 s before trying
        # SIGTERM, and the culler does not stop on SIGINT, so a hub stopping it itself took 20 s.
        for helper in helpers:
            try:
                helper.terminate()
            except psutil.NoSuchProcess:
                continue
        psutil.wait_procs(helpers, timeout=STOP_TIMEOUT_S)
        hub.send_signal(signal.SIGTERM)
        try:
            hub.wait(STOP_TIMEOUT_S)
        except psutil.TimeoutExpired:
            hub.kill()
    proxy = _process_from_pid_file(classroom.hub_folder / "proxy.pid", "configurable-http-proxy")
    for process in [*helpers, *([proxy] if proxy else [])]:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs([*helpers, *([proxy] if proxy else [])], timeout=STOP_TIMEOUT_S)
    for process in alive:
        process.kill()


def restart_hub(classroom: Classroom, cull_timeout_s: int | None = None) -> None:
    """Stop and start the hub (and its proxy and culler); with ``cull_timeout_s``, the culler's new
    idle timeout."""
    stop_hub(classroom)
    if cull_timeout_s is not None:
        settings = json.loads(classroom.settings_file.read_text())
        classroom.settings_file.write_text(json.dumps({**settings, **_culling(cull_timeout_s)}, indent=1) + "\n")
    launch_hub(classroom)


def stop(classroom: Classroom) -> list[str]:
    """Everything ``start`` made, gone; returns the accounts removed."""
    require_root()
    stop_hub(classroom)
    removed = accounts.remove(classroom.account_prefix)
    log = classroom.hub_folder / "hub.log"
    if log.exists():  # the hub's and the students' servers' log, kept for a look after the run
        shutil.copy(log, classroom.folder.parent / f"{classroom.name}-last-hub.log")
    shutil.rmtree(classroom.folder, ignore_errors=True)
    return removed
