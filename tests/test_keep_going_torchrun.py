"""``torchrun --nproc-per-node 2 -m graphleaf_edu --keep-going`` on a DistributedDataParallel job (gloo, CPU;
tests/note_scripts/ddp_job.py): every rank keeps going, rank 0 prints one summary naming the ranks each cause
was met on (paths through the wrapper, ``root.module.…``), the job's exit status follows torchrun's rule, and
the patched job is the hand-fixed one and runs clean."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from script_runs import SCRIPTS
from test_keep_going import entries, summary
from test_keep_going_changes import HAND_FIXED

from graphleaf_edu import messages as M
from graphleaf_edu import ranks


def torchrun(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """The documented command, on a port of its own: torchrun's default (29500) is every job's, so two test
    runs at once on one machine would meet at one rendezvous."""
    return subprocess.run([str(Path(sys.executable).with_name("torchrun")), "--nproc-per-node", "2",
                           "--master-port", str(free_port()), "-m", "graphleaf_edu", "--keep-going", *options,
                           "ddp_job.py"], cwd=folder, capture_output=True, text=True, timeout=600, check=False)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_under_torchrun_each_rank_keeps_going_and_one_summary_names_the_ranks(tmp_path):
    shutil.copy(SCRIPTS / "ddp_job.py", tmp_path / "ddp_job.py")
    run = torchrun(tmp_path, "--patch", "fix.diff")
    assert {"rank 0: reached the end", "rank 1: reached the end"} <= set(run.stdout.splitlines()), run.stderr[-3000:]
    assert run.returncode == 1, "torchrun's rule: a rank that exits non-zero fails the job"
    found = entries(summary(run))  # one summary: summary() asserts a single header
    assert sorted(found) == ["root.module.last_logits", "root[0..1] (2 tensors)"]
    assert M.say(M.KG_RANKS, ranks="0, 1") in found["root.module.last_logits"]
    assert M.say(M.KG_RANKS, ranks="0") in found["root[0..1] (2 tensors)"]
    assert found["root[0..1] (2 tensors)"][-2:] == ["losses.append(loss)", "→ losses.append(loss.detach())"]
    subprocess.run(["git", "apply", "fix.diff"], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "ddp_job.py").read_text() == (HAND_FIXED / "ddp_job.py").read_text()
    clean = torchrun(tmp_path)
    assert clean.returncode == 0 and summary(clean) == [M.KG_NONE], clean.stderr[-3000:]
    assert sorted(clean.stdout.splitlines()) == sorted(run.stdout.splitlines()), "what the fixed job prints"


def test_the_ranks_folder_is_never_one_an_earlier_job_left(monkeypatch):
    """torchrun's run id defaults to ``none`` and process ids wrap: the agent is named by its start time too."""
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    started = ranks._started(os.getppid())
    assert started.isdigit()
    this_job = ranks._folder()
    assert this_job.name.endswith(f"-none-{os.getppid()}-{started}-0")
    monkeypatch.setattr(ranks, "_started", lambda pid: str(int(started) + 1))  # the same pid, a later agent
    assert ranks._folder() != this_job
