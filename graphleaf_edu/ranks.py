"""``torchrun … -m graphleaf_edu --keep-going SCRIPT``: every rank keeps going, rank 0 prints one summary.

torchrun starts one runner per rank (``RANK``, ``WORLD_SIZE``, ``TORCHELASTIC_RUN_ID`` in its
environment). At exit each rank writes its causes (tensors left out) to a folder of the run's own
in the temporary directory (named by the run and its agent process: never an earlier job's); rank 0
reads (and removes) every rank's, merges the same cause met on several ranks (noting the ranks) and
prints the summary; the other ranks wait until it has, so that a rank's
non-zero exit (which makes torchrun stop the others) cannot cut the summary short. Each rank exits
with its own status, and torchrun's rules make the job's status from them. One machine: the ranks
share the temporary directory.
"""
from __future__ import annotations

import dataclasses
import os
import pickle
import tempfile
import time
from pathlib import Path

from graphleaf_edu.keep_going_report import Failure

_WAIT_S = 300.0  # how long a rank waits for the others at exit
_POLL_S = 0.05


def rank() -> int | None:
    """This process' rank under torchrun, else None."""
    if "TORCHELASTIC_RUN_ID" not in os.environ or "RANK" not in os.environ:
        return None
    return int(os.environ["RANK"])


def gathered(failures: list[Failure]) -> tuple[list[Failure], list[int]] | None:
    """On rank 0: every rank's failures, merged, and the ranks that did not report in time; on the
    other ranks: None, once rank 0 has read theirs."""
    own, world = int(os.environ["RANK"]), int(os.environ.get("WORLD_SIZE", "1"))
    folder = _folder()
    folder.mkdir(exist_ok=True)
    _write(folder / f"rank-{own}.pickle", [_portable(failure, own) for failure in failures])
    done = folder / "summarised"
    if own != 0:
        _wait_for(lambda: done.exists())
        return None
    _wait_for(lambda: all((folder / f"rank-{r}.pickle").exists() for r in range(world)))
    merged: dict[tuple[object, ...], Failure] = {}
    missing = []
    for r in range(world):
        path = folder / f"rank-{r}.pickle"
        if not path.exists():
            missing.append(r)
            continue
        reported = pickle.loads(path.read_bytes())
        path.unlink()
        for failure in reported:
            key = (failure.operation, failure.place, failure.finding.where, failure.finding.kind, failure.handled)
            if key in merged:
                merged[key].ranks |= failure.ranks
                merged[key].times = max(merged[key].times, failure.times)
            else:
                merged[key] = failure
    return list(merged.values()), missing


def summarised() -> None:
    """Rank 0 has printed the summary: the other ranks may exit."""
    _write(_folder() / "summarised", [])


def _folder() -> Path:
    """This attempt's: its run id, its torchrun agent (the ranks' parent) and the agent's restart count. A
    run id is reused (torchrun's default is ``none``) and so is a process id, so the agent is named by
    its id and its start time: a folder an earlier job left behind (its ``summarised`` mark, its ranks'
    causes) is never this one's."""
    agent, restart = os.getppid(), os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    name = f"graphleaf_edu-keep-going-{os.environ['TORCHELASTIC_RUN_ID']}-{agent}-{_started(agent)}-{restart}"
    return Path(tempfile.gettempdir()) / name


def _started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (Linux's /proc); empty where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]  # field 22, counted after the command's name


def _portable(failure: Failure, own: int) -> Failure:
    """The failure without its tensor (it stays in this process), marked with this rank."""
    return dataclasses.replace(failure, finding=dataclasses.replace(failure.finding, tensor=None), ranks={own})


def _write(path: Path, value: object) -> None:
    partial = path.with_suffix(".partial")
    partial.write_bytes(pickle.dumps(value))
    partial.replace(path)  # whole or absent for the reader


def _wait_for(ready: object) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not ready() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(_POLL_S)
