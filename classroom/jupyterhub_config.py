"""JupyterHub configuration of a graphleaf-edu classroom (run by ``python -m classroom start``).

One Unix account per student, created beforehand; a shared password; each student's server a
local process (LocalProcessSpawner) on a port of this classroom's range; idle servers culled by
jupyterhub-idle-culler running as a hub service. Everything listens on 127.0.0.1.
The facts (ports, folders) come from the settings file named by GRAPHLEAF_CLASSROOM_SETTINGS.
"""
import json
import os
import socket
from pathlib import Path
from typing import ClassVar

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Tuple

c = get_config()  # noqa: F821 -- provided by JupyterHub when it loads this file

settings = json.loads(Path(os.environ["GRAPHLEAF_CLASSROOM_SETTINGS"]).read_text())
hub_folder = Path(settings["hub_folder"])
environment = Path(settings["environment"])
first_port, last_port = settings["server_ports"]


class RangePortSpawner(LocalProcessSpawner):
    """LocalProcessSpawner whose servers listen on a free port of this classroom's range
    (JupyterHub's own choice is any free port of the machine)."""

    port_range = Tuple((first_port, last_port), help="first and last port (inclusive)").tag(config=True)
    ports_given: ClassVar[set[int]] = set()  # shared by every spawner of this hub: chosen, maybe not yet bound

    async def start(self):
        if not self.port:
            self.port = self.free_port()
        return await super().start()

    def free_port(self) -> int:
        first, last = self.port_range
        for port in range(first, last + 1):
            if port in self.ports_given:
                continue
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:  # a server from before a hub restart, or another program
                    continue
            self.ports_given.add(port)
            return port
        raise RuntimeError(f"no free port left in {first}-{last} for {self.user.name}'s server")

    def clear_state(self):
        self.ports_given.discard(self.port)
        self.port = 0
        super().clear_state()


# The hub, its proxy and every server on the loopback interface only.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = settings["hub_port"]
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = settings["hub_port"] + 2
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings['hub_port'] + 1}"
c.ConfigurableHTTPProxy.command = [settings["proxy_command"]]
c.ConfigurableHTTPProxy.pid_file = str(hub_folder / "proxy.pid")

# The hub's private files; the servers outlive a hub restart (nobody's kernel is lost with it).
c.JupyterHub.db_url = f"sqlite:///{hub_folder / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(hub_folder / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(hub_folder / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = False

# Students log in with the class's shared password; only the accounts made for this class.
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = (hub_folder / "password").read_text().strip()
c.Authenticator.allowed_users = set(settings["students"])

c.JupyterHub.spawner_class = RangePortSpawner
c.Spawner.cmd = [str(environment / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
# A class starts together: 30 servers importing JupyterLab at once on 2 cores take minutes, not seconds.
c.Spawner.start_timeout = 600
c.Spawner.http_timeout = 600
c.JupyterHub.concurrent_spawn_limit = 0
# The hub's PATH may name folders a student cannot read (root's pyenv): set the students' own.
c.Spawner.environment = {"PATH": f"{environment / 'bin'}:/usr/local/bin:/usr/bin:/bin"}
c.Spawner.args = [
    # An idle kernel holds torch (a few hundred MB): each server shuts one down after 20 idle minutes.
    "--MappingKernelManager.cull_idle_timeout=1200",
    "--MappingKernelManager.cull_interval=120",
    "--MappingKernelManager.cull_connected=False",
    # Kernels talk to their server over Unix sockets in the student's private runtime folder. Over
    # TCP (the default) 30 servers picking free loopback ports for ever-new kernels collided: a
    # server got another kernel's messages ("Invalid Signature") and closed a notebook's websocket.
    "--KernelManager.transport=ipc",
    # A kernel that dies in its first seconds is restarted on new "ports" (new socket files) by
    # default, a guard against TCP port clashes that Unix sockets in a private folder cannot have;
    # a notebook's restored connection still points at the old files and never hears the new kernel.
    "--KernelRestarter.random_ports_until_alive=False",
    # Kernels starting together on a busy machine can take over a minute to answer.
    "--MappingKernelManager.kernel_info_timeout=300",
]

# Idle servers are stopped after an hour (their files stay in the student's home).
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [str(environment / "bin" / "python"), "-m", "jupyterhub_idle_culler",
                f"--timeout={settings['cull_timeout_s']}", f"--cull-every={settings['cull_every_s']}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
