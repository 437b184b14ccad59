"""classroom/z2jh-values.yaml: the class password comes from a Kubernetes Secret, never from the file.

No Kubernetes here: the hub's side is rehearsed with JupyterHub itself (the classroom environment's, the
6.x the chart must run): the values' ``hub.extraConfig`` runs as the chart's jupyterhub_config.py runs it,
with the variable that ``hub.extraEnv`` fills from the Secret, and the shared-password authenticator
then lets the class list in with that password and nobody else.
"""
import json
import subprocess
import textwrap
import tomllib
from pathlib import Path

import pytest
import yaml

from classroom.settings import ENVIRONMENT

ROOT = Path(__file__).resolve().parent.parent
VALUES = yaml.safe_load((ROOT / "classroom" / "z2jh-values.yaml").read_text())


def password_variable() -> tuple[str, dict]:
    ((name, source),) = VALUES["hub"]["extraEnv"].items()
    return name, source["valueFrom"]["secretKeyRef"]


def test_no_password_is_written_in_the_values():
    def strings_under_password_keys(node, path=""):
        if isinstance(node, dict):
            for key, value in node.items():
                if "password" in str(key).lower() and not isinstance(value, dict):
                    yield f"{path}.{key}"
                yield from strings_under_password_keys(value, f"{path}.{key}")
        elif isinstance(node, list):
            for item in node:
                yield from strings_under_password_keys(item, path)

    assert list(strings_under_password_keys(VALUES)) == []
    assert "SharedPasswordAuthenticator" not in VALUES["hub"]["config"]


def test_the_password_comes_from_the_secret_the_docs_create():
    name, secret = password_variable()
    assert secret == {"name": "class-password", "key": "password"}
    assert f'os.environ["{name}"]' in "".join(VALUES["hub"]["extraConfig"].values())
    docs = (ROOT / "docs" / "classroom.md").read_text()
    assert "kubectl create secret generic class-password" in docs and "--from-literal=password=" in docs
    assert "one class session on a trusted network" in docs


def test_the_image_tag_is_the_release():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert VALUES["singleuser"]["image"]["tag"] == version


HUB_SIDE = textwrap.dedent("""
    import asyncio, json, os, sys
    from traitlets.config import Config
    from jupyterhub.authenticators.shared import SharedPasswordAuthenticator

    values = json.loads(sys.argv[1])
    c = Config(values["hub"]["config"])
    for name in sorted(values["hub"]["extraConfig"]):  # the chart runs them in this order, after hub.config
        exec(values["hub"]["extraConfig"][name], {"c": c})
    assert c.JupyterHub.authenticator_class == "shared-password"
    authenticator = SharedPasswordAuthenticator(config=c)
    password = os.environ[sys.argv[2]]

    async def login(user, given):
        return await authenticator.get_authenticated_user(None, {"username": user, "password": given})

    first = values["hub"]["config"]["Authenticator"]["allowed_users"][0]
    print(json.dumps({
        "student": bool(asyncio.run(login(first, password))),
        "wrong password": bool(asyncio.run(login(first, password + "x"))),
        "not on the list": bool(asyncio.run(login("stranger", password))),
    }))
""")


def hub_side(password: str) -> subprocess.CompletedProcess:
    python = ENVIRONMENT / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: `make classroom-setup` builds the classroom environment")
    name, _ = password_variable()
    return subprocess.run([str(python), "-c", HUB_SIDE, json.dumps(VALUES), name], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", name: password}, check=False)


def test_the_hub_takes_the_secrets_password_and_lets_only_the_class_in():
    done = hub_side("a-class-password-from-the-secret")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"student": True, "wrong password": False, "not on the list": False}


def test_a_short_password_in_the_secret_stops_the_hub():
    done = hub_side("short")
    assert done.returncode != 0 and "must be at least 8 characters long" in done.stderr
