"""tests/fresh_venv.py's cached layers are built once, even when two processes need one at the same time (two
pytest-xdist workers, or two runs): the second waits on the layer's lock, then uses what the first built."""
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# One process asking for the layer "probe"; its filling waits until the test lets it finish.
RACER = """\
import sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
import fresh_venv
fresh_venv.CACHE = Path({cache!r})
folder, name = Path({folder!r}), sys.argv[1]

def populate(venv):
    with open(folder / "built.log", "a") as log:
        log.write(name + "\\n")
    while not (folder / "go").exists():
        time.sleep(0.05)

(folder / f"asking-{{name}}").touch()
print(fresh_venv.cached_layer("probe", "one key", [], populate))
"""


def wait_for(path: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def test_two_processes_that_need_a_layer_at_once_build_it_once(tmp_path):
    script = tmp_path / "racer.py"
    script.write_text(RACER.format(tests=str(TESTS), cache=str(tmp_path / "cache"), folder=str(tmp_path)))
    first = subprocess.Popen([sys.executable, str(script), "first"], stdout=subprocess.PIPE, text=True)
    try:
        wait_for(tmp_path / "built.log")  # the first is filling the layer, holding its lock
        second = subprocess.Popen([sys.executable, str(script), "second"], stdout=subprocess.PIPE, text=True)
        try:
            wait_for(tmp_path / "asking-second")
            time.sleep(0.5)  # the second reaches the lock (where it waits) before the first may finish
            assert second.poll() is None, "the second must wait for the layer the first is building"
            (tmp_path / "go").touch()
            outputs = [process.communicate(timeout=120)[0] for process in (first, second)]
        finally:
            second.kill()
    finally:
        (tmp_path / "go").touch()
        first.kill()
    assert [first.returncode, second.returncode] == [0, 0]
    assert (tmp_path / "built.log").read_text().split() == ["first"]  # built once, by the first
    layer = Path(outputs[0].strip())
    assert outputs[1] == outputs[0] and (layer / "complete").read_text() == "one key"
    assert [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")] == [layer.name]
