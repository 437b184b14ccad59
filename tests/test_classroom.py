"""A real JupyterHub class of two students, and its bad days (`make classroom`'s quick variant).

One hub for the module (classroom "test": ports 18750-18799, accounts glt-*), made and removed by
the fixture whatever happens: accounts, homes and processes never outlive the tests. Each student
goes through the doors a browser uses (login form, hub API, nbgitpuller link, kernel websocket).
Needs root (one Unix account per student), as `make test` has in CI; skipped otherwise.
"""
from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pwd
import signal
import socket
import subprocess
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from classroom import accounts, course, hub
from classroom.client import Kernel, KernelDied, Student, code_cells
from classroom.settings import CLASSROOMS, COURSE_NAME

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="a classroom makes Unix accounts: needs root (CI runs as root)"),
]

CLASSROOM = CLASSROOMS["test"]
FIRST_LESSON = f"{COURSE_NAME}/notebooks/00_start_here.ipynb"
LONG_LESSON = f"{COURSE_NAME}/notebooks/deep_dives/what_deepcopy_does.ipynb"
# Every student action of a test is bounded: a stuck kernel or server fails its test with a message.
ACTION_TIMEOUT_S = 240
CULL_TIMEOUT_S = 20


@pytest.fixture(scope="module")
def class_of_two():
    # One test classroom per machine (its ports and accounts are fixed): a second `make test` on the
    # same machine (another checkout) waits here instead of stopping this one's hub.
    CLASSROOM.folder.parent.mkdir(parents=True, exist_ok=True)
    with open(CLASSROOM.folder.parent / f"{CLASSROOM.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            names = hub.start(CLASSROOM, 2, cull_timeout_s=3600)
            yield names
        finally:
            hub.stop(CLASSROOM)


def as_student(name: str, action, timeout_s: float = ACTION_TIMEOUT_S):
    """Run ``action(student)`` with a logged-in student in a fresh event loop; fails (never hangs)
    when the action takes longer than ``timeout_s``."""
    async def session():
        student = Student(CLASSROOM.url, name, hub.password(CLASSROOM))
        try:
            await student.log_in()
            return await action(student)
        finally:
            await student.close()

    async def bounded():
        try:
            return await asyncio.wait_for(session(), timeout_s)
        except TimeoutError:
            pytest.fail(f"{name}: {action.__name__} did not finish within {timeout_s:.0f} s")
    return asyncio.run(bounded())


def live_processes(uid: int, part_of_command: str) -> list[psutil.Process]:
    """The account's processes, zombies left out (a server outliving a hub restart is reparented,
    and its new parent may reap it late), whose command line contains ``part_of_command``."""
    found = []
    for process in accounts.processes(uid):
        try:
            if process.status() != psutil.STATUS_ZOMBIE and part_of_command in " ".join(process.cmdline()):
                found.append(process)
        except psutil.Error:  # ended meanwhile
            continue
    return found


def kernel_processes(uid: int, kernel_id: str) -> list[psutil.Process]:
    return live_processes(uid, kernel_id)


def single_user_servers(uid: int) -> list[psutil.Process]:
    return live_processes(uid, "jupyterhub-singleuser")


def test_the_class_logs_in_pulls_and_runs_a_lesson_at_once(class_of_two):
    """The quick variant of `make classroom-bench`: both students at once, through the bench's own code."""
    from bench.classroom import MemorySampler, class_session

    uids = {pwd.getpwnam(name).pw_uid: name for name in class_of_two}
    with MemorySampler(uids) as sampler:
        phase = asyncio.run(class_session(CLASSROOM, class_of_two, hub.password(CLASSROOM), [FIRST_LESSON],
                                          pull=True, sampler=sampler, timeout_s=ACTION_TIMEOUT_S))
    assert phase["failures"] == []
    assert phase["students"] == 2 and phase["run_all_s"]["n"] == 2
    lesson = phase["lessons"]["00_start_here.ipynb"]
    assert lesson["kernel_cpu_s"]["n"] == 2 and lesson["kernel_cpu_s"]["median"] > 0
    # a server and a kernel that imported torch hold tens of MB at least, and cost CPU seconds
    assert phase["reading_along_pss_mb"]["median"] > 50 and phase["cpu_s"]["median"] > 1
    for name in class_of_two:
        clone = Path(pwd.getpwnam(name).pw_dir) / COURSE_NAME
        assert (clone / "notebooks" / "00_start_here.ipynb").stat().st_uid == pwd.getpwnam(name).pw_uid
        assert not (clone / "instructor").exists(), "the class receives the student-only tree"


def test_each_student_runs_as_their_own_account_from_the_classroom_environment(class_of_two):
    first, second = class_of_two

    async def probe(student: Student):
        kernel = await student.open(FIRST_LESSON)
        try:
            return await kernel.execute(
                "import os, sys, graphleaf_edu\n"
                f"print(os.getuid(), sys.prefix, graphleaf_edu.__file__.startswith(sys.prefix))\n"
                f"os.listdir({str(Path(pwd.getpwnam(second).pw_dir))!r})")
        finally:
            await kernel.shut_down()

    status, printed = as_student(first, probe)
    uid, prefix, installed = printed.splitlines()[0].split()
    assert (int(uid), prefix, installed) == (pwd.getpwnam(first).pw_uid, CLASSROOM.environment, "True")
    assert status == "error" and "PermissionError" in printed, "a student cannot read another's home"


def test_a_kernel_that_dies_mid_lesson_comes_back_with_a_restart(class_of_two):
    name = class_of_two[0]
    uid = pwd.getpwnam(name).pw_uid

    async def lesson_with_a_crash(student: Student):
        notebook = await student.notebook(LONG_LESSON)
        kernel = await student.open(LONG_LESSON)
        try:
            assert (await kernel.execute("progress = 'half way'"))[0] == "ok"
            running = asyncio.ensure_future(kernel.run_all([("import time; time.sleep(120)", False)], timeout_s=60))
            await asyncio.sleep(1)
            [process] = kernel_processes(uid, kernel.id)
            process.send_signal(signal.SIGKILL)  # what the out-of-memory killer does
            with pytest.raises(KernelDied):
                await running  # the server tells the notebook its kernel died
            await kernel.reconnect_after_death(timeout_s=120)  # the server restarts it by itself
            after_autorestart = kernel_processes(uid, kernel.id)
            await kernel.restart(timeout_s=120)  # then the student presses Restart
            after_restart = await kernel.execute("print('progress' in globals())", timeout_s=60)
            processes = kernel_processes(uid, kernel.id)
            rerun = await kernel.run_all(code_cells(notebook), timeout_s=120)
            return process.pid, after_autorestart, processes, after_restart, rerun, await student.server_is_running()
        finally:
            await kernel.shut_down()

    dead_pid, after_autorestart, processes, after_restart, rerun, server_running = as_student(
        name, lesson_with_a_crash)
    assert not psutil.pid_exists(dead_pid) or psutil.Process(dead_pid).status() == psutil.STATUS_ZOMBIE
    assert [p.pid for p in after_autorestart] != [dead_pid] and len(after_autorestart) == 1
    assert len(processes) == 1, f"one kernel process after the restart, not {[p.cmdline() for p in processes]}"
    assert after_restart == ("ok", "False\n"), "a restart gives a fresh kernel: Run All again to rebuild it"
    assert rerun.failures == [] and len(rerun.cells) > 5
    assert server_running


def instructor_publishes(tmp_path: Path, change) -> None:
    """The instructor's next commit to the course repository: clone, change, commit, push."""
    work = tmp_path / "instructor-clone"
    subprocess.run(["git", "clone", "--quiet", str(CLASSROOM.course_repository), str(work)], check=True)
    change(work)
    subprocess.run(["git", "add", "--all"], cwd=work, check=True)
    subprocess.run(["git", *course.AUTHOR, "commit", "--quiet", "-m", "course update"], cwd=work, check=True)
    subprocess.run(["git", "push", "--quiet", "origin", "main"], cwd=work, check=True)


def add_markdown(path: Path, text: str, at_end: bool) -> None:
    notebook = nbformat.read(path, as_version=4)
    cell = nbformat.v4.new_markdown_cell(text)
    if at_end:
        notebook.cells.append(cell)
    else:
        notebook.cells.insert(0, cell)
    nbformat.write(notebook, path)


def test_a_students_changes_survive_a_re_pull(class_of_two, tmp_path):
    name = class_of_two[1]
    edited, deleted = "notebooks/01_copied_tensors.ipynb", "notebooks/deep_dives/intermediate_tensor.ipynb"
    link = course.pull_link(CLASSROOM.url, CLASSROOM.course_repository)

    async def edit(student: Student):
        notebook = await student.notebook(f"{COURSE_NAME}/{edited}")
        notebook["cells"].append(nbformat.v4.new_code_cell("my_answer = 42  # the student's own work"))
        await student.save_notebook(f"{COURSE_NAME}/{edited}", notebook)
        answer = await student.http.delete(f"{student.server_path}/api/contents/{COURSE_NAME}/{deleted}",
                                           headers={"Authorization": f"token {student.token}"})
        assert answer.status_code == 204

    as_student(name, edit)

    def update(work: Path) -> None:
        add_markdown(work / edited, "A note the instructor added at the top.", at_end=False)
        (work / "notebooks" / "ERRATA.md").write_text("Lesson 04: a typo fixed.\n")

    instructor_publishes(tmp_path, update)
    as_student(name, lambda student: student.pull(link))

    clone = Path(pwd.getpwnam(name).pw_dir) / COURSE_NAME
    notebook = nbformat.read(clone / edited, as_version=4)  # still a valid notebook after the merge
    sources = [cell.source for cell in notebook.cells]
    assert "my_answer = 42  # the student's own work" in sources, "the student's cell survives"
    assert sources[0] == "A note the instructor added at the top.", "the instructor's change arrives"
    assert (clone / "notebooks" / "ERRATA.md").exists(), "a new file arrives"
    assert (clone / deleted).exists(), "a file the student deleted is restored"


def test_a_hub_restart_loses_nobodys_work(class_of_two):
    name = class_of_two[0]
    uid = pwd.getpwnam(name).pw_uid
    saved = f"{COURSE_NAME}/notebooks/my_notes.ipynb"

    async def work(student: Student):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("work = 41")])
        await student.save_notebook(saved, json.loads(nbformat.writes(notebook)))
        kernel = await student.open(saved)
        assert (await kernel.execute("work = 41", timeout_s=120))[0] == "ok"
        kernel.socket.close()
        return kernel.session_id, kernel.id

    session_id, kernel_id = as_student(name, work)
    [server] = single_user_servers(uid)

    hub.restart_hub(CLASSROOM)

    async def after(student: Student):
        assert await student.server_is_running()
        assert kernel_id in {k["id"] for k in await student.kernels()}
        kernel = Kernel(student, session_id, kernel_id)
        await kernel.connect()
        try:
            return await kernel.execute("print(work + 1)", timeout_s=60), await student.notebook(saved)
        finally:
            await kernel.shut_down()

    (status, printed), notebook = as_student(name, after)
    assert (status, printed) == ("ok", "42\n"), "the kernel kept its state through the hub restart"
    assert notebook["cells"][0]["source"] == "work = 41"
    assert server.is_running(), "the same server process served the student before and after"


def test_the_idle_culler_stops_idle_servers_and_keeps_their_files(class_of_two):
    """The class's culler (an hour in a real class) with a 20-second timeout: both servers, idle
    since the tests before, are stopped by it; the students' files stay. Runs last but one: it
    leaves the class without servers."""
    uids = {name: pwd.getpwnam(name).pw_uid for name in class_of_two}
    assert all(single_user_servers(uid) for uid in uids.values())
    hub.restart_hub(CLASSROOM, cull_timeout_s=CULL_TIMEOUT_S)
    hub_process = psutil.Process(int((CLASSROOM.hub_folder / "jupyterhub.pid").read_text()))
    culler = [p for p in hub_process.children() if "jupyterhub_idle_culler" in " ".join(p.cmdline())]
    assert len(culler) == 1 and f"--timeout={CULL_TIMEOUT_S}" in culler[0].cmdline(), "the culler is a hub service"

    deadline = time.monotonic() + CULL_TIMEOUT_S + 120
    while any(single_user_servers(uid) for uid in uids.values()):
        if time.monotonic() > deadline:
            pytest.fail(f"idle servers still running {CULL_TIMEOUT_S + 120} s after the culler started "
                        f"(timeout {CULL_TIMEOUT_S} s):\n{hub.log_tail(CLASSROOM)}")
        time.sleep(1)

    async def server_state(student: Student):
        return await student.server_is_running()

    assert not any(as_student(name, server_state) for name in class_of_two), "the hub knows they were stopped"
    log = (CLASSROOM.hub_folder / "hub.log").read_text()
    assert "DELETE /hub/api/users/" in log and "(idle-culler@127.0.0.1)" in log, "stopped by the culler's request"
    for name in class_of_two:
        clone = Path(pwd.getpwnam(name).pw_dir) / COURSE_NAME
        assert (clone / "notebooks" / "00_start_here.ipynb").exists(), "a culled student's files stay"


def test_stopping_leaves_no_process_account_or_home(class_of_two):
    homes = [pwd.getpwnam(name).pw_dir for name in class_of_two]
    uids = [pwd.getpwnam(name).pw_uid for name in class_of_two]
    removed = hub.stop(CLASSROOM)
    assert sorted(removed) == sorted(class_of_two)
    assert accounts.ours(CLASSROOM.account_prefix) == []
    assert not any(os.path.exists(home) for home in homes)
    assert not any(accounts.processes(uid) for uid in uids)
    assert not CLASSROOM.folder.exists()
    for port in [CLASSROOM.hub_port, CLASSROOM.proxy_api_port, CLASSROOM.hub_api_port,
                 *range(CLASSROOM.server_ports[0], CLASSROOM.server_ports[1] + 1)]:
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, f"something still listens on {port}"
