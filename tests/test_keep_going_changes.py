"""``--keep-going --patch FILE`` on training scripts with two to four causes each (tests/note_scripts; among them
containers built at the copy, checkpoint_dict.py; a hook object's dict that the model keeps under another
name, monitor_alias.py): each
cause names the line that stored it and its change; the diff applies with ``git apply`` and ``patch -p1``;
the patched script is the hand-fixed one (tests/note_scripts/hand_fixed), runs clean, and prints what the
hand-fixed script prints, which is what the keep-going run printed too. Also: a script that does not
compile, a folder with a ``__main__.py``. Under torchrun: tests/test_keep_going_torchrun.py."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from script_runs import SCRIPTS, line_of, run_script
from test_keep_going import entries, starting, summary

from graphleaf_edu import messages as M
from graphleaf_edu import places, storing

HAND_FIXED = SCRIPTS / "hand_fixed"

JOBS = {  # script -> (its runner options, the modules it imports from its folder, {title: (stored, changed)})
    "probe_ema.py": ((), (), {
        "root.body.features": ("module.features = output", "module.features = output.detach()"),
        "root.act._forward_hooks[0].seen['tanh']": ("self.seen.update(tanh=out)", "self.seen.update(tanh=out.detach())"),
        "root.last_logits": ("self.last_logits = logits", "self.last_logits = logits.detach()"),
    }),
    "fork_then_log.py": ((), (), {
        "root.rows": ("self.rows = encoder(x)", "self.rows = encoder(x).detach()"),
        "the Tensor itself: " + M.HOW_PICKLED: ("monitor.put(preds)", "monitor.put(preds.detach())"),
        "root.losses[0..1] (2 tensors)": ("self.losses.append(loss)", "self.losses.append(loss.detach())"),
    }),
    "checkpoint_dict.py": ((), (), {  # containers built at the copy: a dict display, a tuple, a list
        "root['losses'][0..2] (3 tensors)": ("losses.append(loss)", "losses.append(loss.detach())"),
        "root[1][0..2] (3 tensors)": ("norms.append(out.norm())", "norms.append(out.norm().detach())"),
        "root[1]": ("last = copy.deepcopy([step, out])", "last = copy.deepcopy([step, out.detach()])"),
    }),
    "monitor_alias.py": ((), (), {  # the hook object's dict, found through the model's other name for it
        "root.last_features": ("self.last_features = features", "self.last_features = features.detach()"),
        "root.monitor_stats['head_out']": ('self.stats["head_out"] = output', 'self.stats["head_out"] = output.detach()'),
        "root['losses'][0..1] (2 tensors)": ("losses.append(loss)", "losses.append(loss.detach())"),
    }),
    "byol_job.py": (("--library", "byol_lite.py"), ("byol_lite.py",), {
        "root.memory['hidden']": ('self.memory["hidden"] = output', 'self.memory["hidden"] = output.detach()'),
        "root.projection": ("self.projection = z", "self.projection = z.detach()"),
    }),
}


def python(script: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *options, script.name], cwd=script.parent, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """Each job's keep-going run, and the folder where its diff was applied to a copy of its files."""
    found = {}
    for script, (options, companions, _) in JOBS.items():
        patch = tmp_path_factory.mktemp("patch") / "fix.diff"
        run = run_script(script, options=("--keep-going", "--patch", str(patch), *options))
        copy = tmp_path_factory.mktemp(script.removesuffix(".py"))
        for name in (script, *companions):
            shutil.copy(SCRIPTS / name, copy / name)
        subprocess.run(["patch", "-p1", "--dry-run", "-i", str(patch)], cwd=copy, check=True, capture_output=True)
        subprocess.run(["git", "apply", str(patch)], cwd=copy, check=True, capture_output=True)
        found[script] = (run, copy)
    return found


@pytest.mark.parametrize("script", JOBS)
def test_every_cause_names_its_storing_line_and_its_change(jobs, script):
    run, _ = jobs[script]
    assert run.stdout.splitlines()[-1] == "reached the end" and run.returncode == 1, run.stderr[-3000:]
    found = entries(summary(run))
    expected = JOBS[script][2]
    assert sorted(found) == sorted(expected)
    for title, (stored, changed) in expected.items():
        block = found[title]
        where = line_of(script, stored).split("  ", 1)[0]
        assert block[-3:] == [M.say(M.KG_CHANGE_AT, where=where), stored, f"→ {changed}"], block
        at_the_site = tuple(M.say(said, place=f"{where}  {stored}") for said in (M.COPIED_AT, M.SENT_AT))
        if any(line.startswith(at_the_site) for line in block):  # stored by the line that copied or sent it
            assert not any(line.startswith("stored at ") for line in block), block
        else:
            assert starting(block, "stored at ").startswith(f"stored at {where} in ")


@pytest.mark.parametrize("script", JOBS)
def test_the_patched_script_is_the_hand_fixed_one_and_prints_what_it_prints(jobs, script):
    run, copy = jobs[script]
    assert (copy / script).read_text() == (HAND_FIXED / script).read_text()
    for name in JOBS[script][1]:
        assert (copy / name).read_text() == (SCRIPTS / name).read_text(), "library code is never changed"
    hand_fixed = python(copy / script)
    assert hand_fixed.returncode == 0, hand_fixed.stderr[-2000:]
    assert run.stdout == hand_fixed.stdout, "the keep-going run printed what the fixed script prints"
    clean = python(copy / script, "-m", "graphleaf_edu", "--keep-going", *JOBS[script][0])
    assert clean.stdout == hand_fixed.stdout and clean.returncode == 0
    assert summary(clean) == [M.KG_NONE]


def test_a_copy_made_in_code_the_user_does_not_own_points_to_the_storing_line(jobs):
    run, _ = jobs["byol_job.py"]
    for block in entries(summary(run)).values():
        assert M.say(M.COPIED_AT, place=line_of("byol_job.py", "byol = BYOL(encoder)")) in block
        assert M.say(M.KG_IN_LIBRARY, module="byol_lite") in block


def test_the_summary_names_the_patch_and_the_fork_datasets_detaching(jobs):
    run, _ = jobs["fork_then_log.py"]
    lines = summary(run)
    assert lines[-1] == M.KG_FORK_DETACHED
    assert any(line.startswith(M.say(M.KG_PATCH_WRITTEN, file="").split(":")[0]) for line in lines)


def test_a_script_that_does_not_compile_gets_pythons_own_error_and_status(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\nx = (\nprint(x)\n")
    plain = python(broken)
    for options in (("--keep-going",), ()):
        run = python(broken, "-m", "graphleaf_edu", *options)
        assert (run.returncode, run.stdout, run.stderr) == (plain.returncode, plain.stdout, plain.stderr)
        assert "graphleaf_edu" not in run.stderr


def test_a_folder_runs_its_main_as_python_runs_it(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "helper.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    (job / "__main__.py").write_text("import copy, torch\nfrom helper import model\n"
                                     "model.cache = model(torch.ones(1, 2))\ncopy.deepcopy(model)\nprint('done')\n")
    run = subprocess.run([sys.executable, "-m", "graphleaf_edu", "--keep-going", "job"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.stdout == "done\n" and run.returncode == 1
    assert list(entries(summary(run))) == ["root.cache"]



def test_a_dict_call_at_the_copy_is_read_as_a_display_is(tmp_path):
    job = tmp_path / "job.py"
    job.write_text("import copy\n\n\ndef keep(out):\n    return copy.deepcopy(dict(step=1, out=out))\n")
    store = storing.storing_line({"step": 1, "out": None}, "root['out']", [], places.Frame(str(job), 5, "keep"))
    assert store is not None and store.edit is not None
    assert store.edit.after == "    return copy.deepcopy(dict(step=1, out=out.detach()))"
