"""One classroom's fixed facts: its ports, its students' account names and its folders.

Three classrooms can run side by side on one machine, each in its own slice of ports 18600-18799
and with its own account prefix, so a test never touches the class an instructor started:

    class   `make classroom`          hub 18600, single-user servers 18610-18699, accounts glc-*
    bench   `make classroom-bench`    hub 18700, single-user servers 18710-18749, accounts glb-*
    test    tests/test_classroom.py   hub 18750, single-user servers 18760-18799, accounts glt-*

The hub's configuration reads them from ``settings.json`` in the hub's private folder.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Outside root's home (mode 700 here), so the students' servers can run its interpreter.
ENVIRONMENT = Path(os.environ.get("GRAPHLEAF_CLASSROOM_ENV", "/opt/graphleaf-classroom/venv"))
STATE = Path(os.environ.get("GRAPHLEAF_CLASSROOM_STATE", "/tmp/graphleaf-classroom"))
SETTINGS_VARIABLE = "GRAPHLEAF_CLASSROOM_SETTINGS"
COURSE_NAME = "graphleaf-edu"


@dataclass(frozen=True)
class Classroom:
    name: str
    hub_port: int
    server_ports: tuple[int, int]  # first, last (inclusive)
    account_prefix: str
    environment: str = str(ENVIRONMENT)

    @property
    def proxy_api_port(self) -> int:
        return self.hub_port + 1

    @property
    def hub_api_port(self) -> int:
        return self.hub_port + 2

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.hub_port}"

    @property
    def capacity(self) -> int:
        return self.server_ports[1] - self.server_ports[0] + 1

    @property
    def folder(self) -> Path:
        """World-readable: the course repository lives here."""
        return STATE / self.name

    @property
    def hub_folder(self) -> Path:
        """Root only: the hub's database, cookie secret, password, logs and pid files."""
        return self.folder / "hub"

    @property
    def course_repository(self) -> Path:
        return self.folder / "course" / f"{COURSE_NAME}.git"

    @property
    def settings_file(self) -> Path:
        return self.hub_folder / "settings.json"

    def student(self, number: int) -> str:
        return f"{self.account_prefix}student{number:02d}"

    def students(self, count: int) -> list[str]:
        if not 1 <= count <= self.capacity:
            raise ValueError(f"a {self.name} classroom holds 1 to {self.capacity} students "
                             f"(one port each in {self.server_ports[0]}-{self.server_ports[1]}); you asked for {count}")
        return [self.student(n) for n in range(1, count + 1)]


CLASSROOMS = {
    "class": Classroom("class", 18600, (18610, 18699), "glc-"),
    "bench": Classroom("bench", 18700, (18710, 18749), "glb-"),
    "test": Classroom("test", 18750, (18760, 18799), "glt-"),
}
