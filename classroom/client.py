"""A student, driven through the same doors a browser uses: the hub's login form and REST API,
the nbgitpuller link, and the Jupyter kernel protocol over the server's websocket.

    student = Student(hub_url, name, password)
    await student.log_in()                      # the login form, then a token from the hub's API
    await student.start_server()                # POST .../server, then the progress stream
    await student.pull(link)                    # the link's page, then the pull it starts
    kernel = await student.open(path)           # a session, as opening the notebook does
    run = await kernel.run_all(cells)           # every code cell queued at once, as "Run All"
"""
from __future__ import annotations

import asyncio
import datetime
import json
import math
import struct
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, urlsplit

import httpx
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

LESSON_TIMEOUT_S = 900
REQUEST_TIMEOUT_S = 600
# A kernel starting on a machine where a whole class starts kernels can take minutes to answer.
KERNEL_READY_TIMEOUT_S = 300
# Status messages the server sends (without a parent) when a kernel dies or is restarted under it.
DEATH = {"dead", "restarting", "autorestarting"}
# How often a connecting notebook asks kernel_info again while the kernel's iopub has not reached it
# yet (the server's own "nudge" asks every 0.5 s).
ASK_AGAIN_S = 0.5


class ClassroomError(RuntimeError):
    """Something a student would have seen go wrong: a refused login, a server that never came, a failed pull."""


class KernelDied(ClassroomError):
    """The server reported the kernel dead or restarting (JupyterLab: "The kernel appears to have died")."""


@dataclass
class CellRun:
    index: int
    status: str  # ok, error, aborted
    expects_error: bool
    error: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "aborted" or (self.status == "error" and not self.expects_error)


@dataclass
class RunAll:
    kernel_ready_s: float
    run_s: float
    cells: list[CellRun] = field(default_factory=list)

    @property
    def failures(self) -> list[CellRun]:
        return [cell for cell in self.cells if cell.failed]


def code_cells(notebook: dict) -> list[tuple[str, bool]]:
    """``(source, expects_error)`` per code cell; a ``raises-exception`` tag lets Run All go on."""
    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        cells.append((source, "raises-exception" in cell.get("metadata", {}).get("tags", [])))
    return cells


class Student:
    def __init__(self, hub_url: str, name: str, password: str):
        self.hub_url, self.name, self.password = hub_url, name, password
        self.http = httpx.AsyncClient(base_url=hub_url, timeout=REQUEST_TIMEOUT_S)
        self.token = ""

    @property
    def server_path(self) -> str:
        return f"/user/{self.name}"

    def _auth(self) -> dict:
        return {"Authorization": f"token {self.token}"}

    async def close(self) -> None:
        await self.http.aclose()

    async def log_in(self) -> None:
        await self.http.get("/hub/login")
        xsrf = self.http.cookies.get("_xsrf", "")
        answer = await self.http.post("/hub/login", data={"username": self.name, "password": self.password,
                                                          "_xsrf": xsrf})
        if answer.status_code != 302:
            raise ClassroomError(f"{self.name}: login refused ({answer.status_code})")
        xsrf = self.http.cookies.get("_xsrf", "")  # a new one, bound to the logged-in session
        answer = await self.http.post(f"/hub/api/users/{self.name}/tokens", headers={"X-XSRFToken": xsrf},
                                      json={"note": "classroom client", "expires_in": 6 * 3600})
        if answer.status_code != 201:
            raise ClassroomError(f"{self.name}: no token from the hub API ({answer.status_code}: {answer.text})")
        self.token = answer.json()["token"]

    async def start_server(self) -> None:
        """Ask the hub for this student's server; returns once the hub says it is ready."""
        answer = await self.http.post(f"/hub/api/users/{self.name}/server", headers=self._auth())
        if answer.status_code not in (201, 202, 400):  # 400: already running
            raise ClassroomError(f"{self.name}: server not started ({answer.status_code}: {answer.text})")
        async with self.http.stream("GET", f"/hub/api/users/{self.name}/server/progress",
                                    headers=self._auth()) as events:
            async for line in events.aiter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:])
                if event.get("ready"):
                    return
                if event.get("failed"):
                    raise ClassroomError(f"{self.name}: server failed to start: {event.get('message')}")
        raise ClassroomError(f"{self.name}: the progress stream ended before the server was ready")

    async def server_is_running(self) -> bool:
        answer = await self.http.get(f"/hub/api/users/{self.name}", headers=self._auth())
        return answer.status_code == 200 and bool(answer.json().get("servers", {}).get("", {}).get("ready"))

    async def pull(self, link: str) -> list[str]:
        """Follow the nbgitpuller link as a browser would (to its page in the student's server), then
        run the pull that page starts; returns git's output lines."""
        page = await self.http.get(link, headers=self._auth(), follow_redirects=True)
        if page.status_code != 200 or "/git-pull" not in page.url.path:
            raise ClassroomError(f"{self.name}: the link led to {page.url} ({page.status_code})")
        query = {key: values[0] for key, values in parse_qs(urlsplit(str(page.url)).query).items()}
        api = {key: query[key] for key in ("repo", "branch", "targetpath") if key in query}
        output = []
        async with self.http.stream("GET", f"{self.server_path}/git-pull/api", params=api,
                                    headers=self._auth()) as events:
            async for line in events.aiter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:])
                if event.get("phase") == "error":
                    raise ClassroomError(f"{self.name}: pull failed: {event.get('message')}\n{event.get('output')}")
                if event.get("phase") == "finished":
                    return output
                output.append(event.get("output", "").rstrip())
        raise ClassroomError(f"{self.name}: the pull's event stream ended without finishing")

    async def contents(self, path: str) -> dict:
        answer = await self.http.get(f"{self.server_path}/api/contents/{quote(path)}", headers=self._auth())
        answer.raise_for_status()
        return answer.json()

    async def notebook(self, path: str) -> dict:
        return (await self.contents(path))["content"]

    async def save_notebook(self, path: str, notebook: dict) -> None:
        answer = await self.http.put(f"{self.server_path}/api/contents/{quote(path)}", headers=self._auth(),
                                     json={"type": "notebook", "format": "json", "content": notebook})
        answer.raise_for_status()

    async def open(self, path: str) -> Kernel:
        """Open a notebook the way JupyterLab does: a session (so a kernel) for its path, then the
        kernel's websocket, ready once kernel_info is answered on both shell and iopub."""
        started = time.perf_counter()
        answer = await self.http.post(f"{self.server_path}/api/sessions", headers=self._auth(), json={
            "path": path, "name": path.rsplit("/", 1)[-1], "type": "notebook", "kernel": {"name": "python3"}})
        answer.raise_for_status()
        session = answer.json()
        kernel = Kernel(self, session["id"], session["kernel"]["id"])
        await kernel.connect()
        kernel.ready_s = time.perf_counter() - started
        return kernel

    async def kernels(self) -> list[dict]:
        answer = await self.http.get(f"{self.server_path}/api/kernels", headers=self._auth())
        answer.raise_for_status()
        return answer.json()


class Kernel:
    """One notebook's kernel, spoken to over the server's websocket (JSON frames, protocol 5.3)."""

    def __init__(self, student: Student, session_id: str, kernel_id: str):
        self.student, self.session_id, self.id = student, session_id, kernel_id
        self.client_session = uuid.uuid4().hex
        self.socket = None
        self.ready_s = 0.0

    async def connect(self, timeout_s: float = KERNEL_READY_TIMEOUT_S) -> None:
        """Open the kernel's websocket; ready once the kernel has answered kernel_info on shell and
        its iopub messages reach this websocket too."""
        url = (self.student.hub_url.replace("http", "ws", 1)
               + f"{self.student.server_path}/api/kernels/{self.id}/channels?session_id={self.client_session}")
        deadline = time.monotonic() + timeout_s
        try:
            self.socket = await asyncio.wait_for(
                websocket_connect(HTTPRequest(url, headers=self.student._auth(), request_timeout=timeout_s),
                                  max_message_size=256 * 2**20), timeout_s)
        except TimeoutError:
            raise ClassroomError(f"{self.student.name}: kernel {self.id}'s websocket did not open "
                                 f"within {timeout_s:.0f} s") from None
        await self._until_iopub_flows(deadline, timeout_s)

    async def _until_iopub_flows(self, deadline: float, timeout_s: float) -> None:
        """Ask kernel_info until one of the requests is answered on shell and its busy/idle status
        arrives on iopub. A shell reply alone proves nothing about iopub: iopub is publish-subscribe,
        and after a restart the server's iopub socket subscribes to the new kernel a moment after
        its shell socket reconnects; what the kernel publishes before that is lost. The server
        checks this itself ("nudge") on each new websocket, except for a kernel it believes busy,
        and a kernel killed mid-execution can stay "busy" in its books through every restart."""
        asked = {await self.send("kernel_info_request", {})}
        replied = heard = False
        ask_again = math.inf  # no reply yet: the kernel is starting or busy, and asking again would only queue
        while not (replied and heard):
            message = await self._next_message(min(deadline, ask_again))
            if message is None:
                if time.monotonic() >= deadline:
                    raise ClassroomError(f"{self.student.name}: kernel {self.id} gave no kernel_info_reply "
                                         f"and iopub status within {timeout_s:.0f} s")
                asked.add(await self.send("kernel_info_request", {}))
                ask_again = time.monotonic() + ASK_AGAIN_S
                continue
            if message["parent_header"].get("msg_id") not in asked:
                continue
            if message.get("channel") == "iopub":
                heard = True
            elif message["header"]["msg_type"] == "kernel_info_reply":
                replied = True
                ask_again = time.monotonic() + ASK_AGAIN_S

    def _message(self, msg_type: str, content: dict) -> dict:
        return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": self.client_session,
                           "username": self.student.name, "version": "5.3",
                           "date": datetime.datetime.now(datetime.UTC).isoformat()},
                "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": []}

    async def send(self, msg_type: str, content: dict) -> str:
        message = self._message(msg_type, content)
        await self.socket.write_message(json.dumps(message))
        return message["header"]["msg_id"]

    async def receive(self, deadline: float, waiting_for: str) -> dict:
        """The next message, or a ClassroomError once ``deadline`` (time.monotonic) has passed."""
        message = await self._next_message(deadline)
        if message is None:
            raise ClassroomError(f"{self.student.name}: kernel {self.id} gave no {waiting_for} in time "
                                 f"(the deadline passed at {time.strftime('%H:%M:%S')})")
        return message

    async def _next_message(self, until: float) -> dict | None:
        """The next message, or None once ``until`` (time.monotonic) has passed; a message not yet
        read then stays queued for the next call."""
        left = until - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            frame = await asyncio.wait_for(self.socket.read_message(), left)
        except TimeoutError:
            return None
        if frame is None:
            raise ClassroomError(f"{self.student.name}: the kernel's websocket closed "
                                 f"(code {self.socket.close_code}, {self.socket.close_reason!r})")
        message = _decode(frame)
        if message["header"]["msg_type"] == "status" and message["content"]["execution_state"] in DEATH:
            raise KernelDied(f"{self.student.name}: kernel {message['content']['execution_state']}")
        return message

    async def execute(self, code: str, timeout_s: float = REQUEST_TIMEOUT_S) -> tuple[str, str]:
        """Run one piece of code; returns (status, text printed or the error's name and value)."""
        msg_id = await self.send("execute_request", _execute_content(code, stop_on_error=True))
        printed, status, idle = [], "", False
        deadline = time.monotonic() + timeout_s
        while not (status and idle):
            message = await self.receive(deadline, f"end of execution within {timeout_s:.0f} s")
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["header"]["msg_type"], message["content"]
            if kind == "stream":
                printed.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                printed.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                printed.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "execute_reply":
                status = content["status"]
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
        return status, "".join(printed)

    async def run_all(self, cells: list[tuple[str, bool]], timeout_s: float = LESSON_TIMEOUT_S) -> RunAll:
        """Queue every cell at once and wait for every reply, as JupyterLab's Run All does; a cell
        tagged ``raises-exception`` does not stop the run, any other error aborts the rest."""
        started = time.perf_counter()
        pending = {}
        for index, (source, expects_error) in enumerate(cells):
            msg_id = await self.send("execute_request", _execute_content(source, stop_on_error=not expects_error))
            pending[msg_id] = CellRun(index, "", expects_error)
        replies, idle = 0, set()
        deadline = time.monotonic() + timeout_s
        while replies < len(pending) or len(idle) < len(pending):
            message = await self.receive(deadline, f"end of Run All ({replies} of {len(pending)} cells "
                                                   f"answered) within {timeout_s:.0f} s")
            cell = pending.get(message["parent_header"].get("msg_id"))
            if cell is None:
                continue
            kind, content = message["header"]["msg_type"], message["content"]
            if kind == "execute_reply":
                cell.status = content["status"]
                if content["status"] == "error":
                    cell.error = f"{content.get('ename')}: {content.get('evalue')}"
                replies += 1
            elif kind == "status" and content["execution_state"] == "idle":
                idle.add(cell.index)
        return RunAll(self.ready_s, time.perf_counter() - started, list(pending.values()))

    async def reconnect_after_death(self, timeout_s: float = KERNEL_READY_TIMEOUT_S) -> None:
        """After a death the server restarts the kernel by itself (JupyterLab: "Kernel Restarting");
        the notebook reconnects, and the kernel is back once it answers kernel_info. Only then may
        the student press Restart: the server does not serialise its own restart and the student's,
        and pressed during its own, Restart starts a second kernel process on the same connection file."""
        self.socket.close()
        await self.connect(timeout_s)

    async def restart(self, timeout_s: float = KERNEL_READY_TIMEOUT_S) -> None:
        """The Restart Kernel menu: the server restarts the process, the notebook reconnects."""
        try:
            answer = await self.student.http.post(f"{self.student.server_path}/api/kernels/{self.id}/restart",
                                                  headers=self.student._auth(), timeout=timeout_s)
        except httpx.TimeoutException:
            raise ClassroomError(f"{self.student.name}: Restart of kernel {self.id} got no answer "
                                 f"within {timeout_s:.0f} s") from None
        if answer.status_code != 200:
            raise ClassroomError(f"{self.student.name}: Restart of kernel {self.id} refused "
                                 f"({answer.status_code}: {answer.text[:200]})")
        self.socket.close()
        await self.connect(timeout_s)

    async def shut_down(self) -> None:
        """Close the notebook and shut its kernel down (deleting the session)."""
        if self.socket:
            self.socket.close()
        answer = await self.student.http.delete(f"{self.student.server_path}/api/sessions/{self.session_id}",
                                                headers=self.student._auth())
        if answer.status_code not in (204, 404):
            answer.raise_for_status()


def _execute_content(code: str, stop_on_error: bool) -> dict:
    return {"code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": stop_on_error}


def _decode(frame: str | bytes) -> dict:
    """A websocket frame as a message dict; binary frames (messages with buffers) carry a table of
    offsets, then the JSON message, then the buffers, which this client never needs."""
    if isinstance(frame, str):
        return json.loads(frame)
    count = struct.unpack("!I", frame[:4])[0]
    offsets = struct.unpack(f"!{count}I", frame[4:4 + 4 * count])
    end = offsets[1] if count > 1 else len(frame)
    return json.loads(frame[offsets[0]:end])
