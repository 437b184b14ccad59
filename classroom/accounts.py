"""The students' Unix accounts: made before class, removed with their homes and processes after.

Every account carries a marker in its comment field, so removal never touches an account this
module did not make, whatever its name.
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
from pathlib import Path

import psutil

MARKER = "graphleaf-edu classroom student"
STOP_TIMEOUT_S = 10


def ours(prefix: str) -> list[pwd.struct_passwd]:
    """The accounts this module made whose names start with ``prefix``."""
    return sorted((entry for entry in pwd.getpwall()
                   if entry.pw_name.startswith(prefix) and entry.pw_gecos == MARKER), key=lambda e: e.pw_name)


def create(names: list[str], course_repository: Path) -> None:
    """One account and home per student; its git config trusts the course repository, which
    root owns ("detected dubious ownership" otherwise, and nbgitpuller's clone fails)."""
    for name in names:
        try:
            existing = pwd.getpwnam(name)
        except KeyError:
            existing = None
        if existing and existing.pw_gecos != MARKER:
            raise RuntimeError(f"a Unix account named {name} exists and was not made for a classroom; "
                               "choose another prefix or remove it")
        if not existing:
            subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash",
                            "--comment", MARKER, name], check=True, capture_output=True, text=True)
        entry = pwd.getpwnam(name)
        home = Path(entry.pw_dir)
        os.chmod(home, 0o700)
        gitconfig = home / ".gitconfig"
        gitconfig.write_text(f"[safe]\n\tdirectory = {course_repository}\n")
        os.chown(gitconfig, entry.pw_uid, entry.pw_gid)


def processes(uid: int) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["uids"]):
        try:
            if process.info["uids"] and process.info["uids"].real == uid:
                found.append(process)
        except psutil.Error:
            continue
    return found


def stop_processes(uids: list[int]) -> None:
    """SIGTERM each process of the accounts (by pid), SIGKILL what is left after a grace period."""
    running = [process for uid in uids for process in processes(uid)]
    for process in running:
        _signal(process, signal.SIGTERM)
    _, alive = psutil.wait_procs(running, timeout=STOP_TIMEOUT_S)
    for process in alive:
        _signal(process, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=STOP_TIMEOUT_S)


def _signal(process: psutil.Process, number: int) -> None:
    try:
        process.send_signal(number)
    except psutil.NoSuchProcess:
        pass


def remove(prefix: str) -> list[str]:
    """Stop every process of this classroom's accounts, then delete the accounts and their homes."""
    entries = ours(prefix)
    stop_processes([entry.pw_uid for entry in entries])  # all at once: a class stops in seconds
    removed = []
    for entry in entries:
        done = subprocess.run(["userdel", "--remove", entry.pw_name], capture_output=True, text=True, check=False)
        if done.returncode not in (0, 12):  # 12: the home was already gone
            raise RuntimeError(f"userdel {entry.pw_name} failed: {done.stderr.strip()}")
        shutil.rmtree(entry.pw_dir, ignore_errors=True)
        removed.append(entry.pw_name)
    leftovers = [entry.pw_name for entry in ours(prefix)]
    if leftovers:
        raise RuntimeError(f"accounts still present after removal: {', '.join(leftovers)}")
    return removed

