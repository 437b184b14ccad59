"""Moving to another torch (docs/moving-torch.md): tools/move_torch.py writes the new release where the
project writes it, and tools/output_diff.py shows what re-executing changed in the stored outputs.

Only torch's CPU build of the supported release is installable here, so the move is rehearsed on a copy of
the files it edits, and the output diff on a repository of its own.
"""
import shutil
import subprocess
import sys

import nbformat
import pytest
from notebook_files import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import move_torch  # maintainer scripts, imported from tools/
import output_diff
import release

EDITED = ("pyproject.toml", "graphleaf_edu/notebook.py")


@pytest.fixture
def copy_of_the_sources(tmp_path):
    for name in EDITED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def next_minor(version: str) -> str:
    major, minor, _ = version.split(".")
    return f"{major}.{int(minor) + 1}.0"


def test_a_move_writes_the_new_release_in_the_source_and_where_the_package_needs_it(copy_of_the_sources):
    root, current = copy_of_the_sources, release.torch()
    new = next_minor(current)
    old, changed = move_torch.move(root, new)
    assert old == current and sorted(p.relative_to(root).as_posix() for p in changed) == sorted(EDITED)
    assert release.torch(root) == new
    pyproject = (root / "pyproject.toml").read_text()
    assert f'"torch>={release.major_minor(new)}",' in pyproject
    notebook = (root / "graphleaf_edu" / "notebook.py").read_text()
    assert f'VERIFIED_TORCH = "{release.major_minor(new)}"' in notebook
    assert f"    '{release.major_minor(new)}'\n" in notebook  # the doctest of VERIFIED_TORCH
    assert f"torch {release.major_minor(new)} | graphleaf_edu ready" in notebook  # the doctest of setup_notebook
    for name in EDITED:
        assert release.major_minor(current) not in (root / name).read_text().replace(current, ""), name

    move_torch.move(root, current)  # and back: byte for byte what it was
    assert all((root / name).read_bytes() == (ROOT / name).read_bytes() for name in EDITED)


def test_moving_to_the_supported_release_changes_nothing_and_a_bad_release_is_refused(copy_of_the_sources):
    assert move_torch.move(copy_of_the_sources, release.torch()) == (release.torch(), [])
    with pytest.raises(SystemExit, match="is not a torch release"):
        move_torch.move(copy_of_the_sources, "2.14")


def test_the_lines_left_to_read_are_what_a_person_must_read():
    """Not what the move rewrites anyway: generated files, stored outputs, the headers the stamp writes."""
    left = move_torch.mentions(ROOT, release.torch())
    assert any(line.startswith("CHANGELOG.md:") for line in left), "a record names the release"
    assert not any(line.startswith(move_torch.GENERATED) for line in left)
    assert not any("Verified with" in line or "graphleaf_edu ready" in line for line in left if ".ipynb" in line)


def notebook_with(stdout: str, picture: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("print(torch.__version__)\nshow()", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=stdout),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": picture, "text/plain": "<graph>"}),
    ])
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A"), cell,
                                           nbformat.v4.new_code_cell("1 + 1")])


def test_the_output_diff_shows_each_changed_cell_and_nothing_else(tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    nbformat.write(notebook_with("9.8.0\n", "<svg>old</svg>"), tmp_path / "lesson.ipynb")
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "outputs"], cwd=tmp_path, check=True)
    assert output_diff.changed_outputs("HEAD", tmp_path) == {}

    nbformat.write(notebook_with("9.9.0\n", "<svg>new</svg>"), tmp_path / "lesson.ipynb")
    (report,) = output_diff.changed_outputs("HEAD", tmp_path).values()
    assert report[0] == "  code cell 1: print(torch.__version__)"
    assert "    -[stdout] 9.8.0" in report and "    +[stdout] 9.9.0" in report
    assert sum(line.startswith("    -[image/svg+xml, ") for line in report) == 1
    assert not any("1 + 1" in line for line in report)
