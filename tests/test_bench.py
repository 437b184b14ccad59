"""`python -m bench`: every section runs (quick sizes), its results are finite JSON whose ratios
agree with its own figures, the goals table judges them right, and only the marked block of the
benchmarks page is rewritten (the committed page holds the table of the committed results). No
wall-clock limits: the figures are checked for consistency, not speed."""
from __future__ import annotations

import json
import math

import nbformat
import pytest

from bench import footprint, notebooks
from bench.__main__ import (
    END,
    PAGE,
    SECTIONS,
    START,
    goals,
    main,
    notebook_goals,
    page_block,
    run_sections,
    widget_goals,
    with_block,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results() -> dict:
    return run_sections(list(SECTIONS), quick=True)


def ratios(value, key: str = ""):
    """Every (key, value) whose key names a ratio, anywhere in a result."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from ratios(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from ratios(v, key)
    elif "vs_" in key or key == "ratio":
        yield key, value


@pytest.mark.parametrize("name", SECTIONS)
def test_section_runs_and_its_ratios_are_finite(results, name):
    section = results["sections"][name]
    assert "error" not in section, section
    found = list(ratios(section))
    assert found, f"{name} reports no ratio"
    for key, value in found:
        if key == "build_vs_torchviz" and value is None:  # torchviz hit its recursion limit
            continue
        assert isinstance(value, float) and math.isfinite(value) and value > 0, (key, value)


def test_results_are_strict_json(results):
    assert json.loads(json.dumps(results, allow_nan=False))["sections"].keys() == set(SECTIONS)


def test_suite_ratios_are_the_notebooks_own_figures(results):
    suite = results["sections"]["notebooks"]
    floor = suite["floor"]["median_s"]
    rows = suite["notebooks"]
    assert [r["notebook"] for r in rows] == [str(p.relative_to(notebooks.NOTEBOOKS)) for p in notebooks.suite_paths()[:1]]
    for row in rows:
        assert row["min_s"] <= row["median_s"] <= row["max_s"]
        assert row["vs_floor"] == pytest.approx(row["median_s"] / floor)
        assert row["peak_rss_mb"] >= row["anon_rss_mb"] > 0
    assert suite["total_vs_floors"] == pytest.approx(suite["total_s"] / (len(rows) * floor))


def test_footprint_reuses_the_suite_kernels_readings(results):
    suite, memory = results["sections"]["notebooks"], results["sections"]["footprint"]
    assert memory["floor"]["peak_rss_mb"] == suite["floor"]["peak_rss_mb"]
    assert [r["peak_rss_mb"] for r in memory["rows"]] == [r["peak_rss_mb"] for r in suite["notebooks"]]
    assert memory["venv_mb"] > sum(p["mb"] for p in memory["largest_packages"]) > 0


def test_footprint_alone_runs_its_own_kernels():
    memory = footprint.run(quick=True)
    assert memory["floor"]["anon_rss_mb"] > 0 and len(memory["rows"]) == 1
    assert memory["heaviest_kernel_mb"] >= memory["rows"][0]["anon_rss_mb"] > 0


def test_kernels_left_open_share_torchs_file_pages_once():
    kernels = [{"anon_rss_mb": 170.0, "file_rss_mb": 130.0}, {"anon_rss_mb": 250.0, "file_rss_mb": 135.0}]
    assert footprint.open_together_mb(kernels) == 170.0 + 250.0 + 135.0
    assert footprint.open_together_mb([]) == 0.0


def test_a_failing_notebook_is_reported_not_raised(tmp_path):
    path = tmp_path / "broken.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise ValueError('half written')")]),
                   path)
    outcome = notebooks.execute_path(path)
    assert isinstance(outcome, str) and "half written" in outcome


def test_goals_cover_every_section_and_the_run(results):
    rows = goals(results)
    assert rows[-1]["measure"] == "whole run, wall time"
    assert {r["met"] for r in rows} <= {"yes", "NO", "-"}
    assert any(r["measure"].startswith("suite time") for r in rows)
    assert sum(r["measure"].startswith("widget p95") for r in rows) == 3


def test_goal_is_judged_on_the_ratio():
    suite = {"floors_in_suite": 4, "floor": {"median_s": 2.0}, "total_s": 12.0, "total_vs_floors": 1.5,
             "total_cpu_vs_floors": 1.2, "goal_ratio": 1.5, "failed": []}
    assert notebook_goals(suite)[0]["met"] == "yes"
    slower = {**suite, "total_s": 12.8, "total_vs_floors": 1.6}
    assert notebook_goals(slower)[0]["met"] == "NO"
    broken = notebook_goals({**suite, "failed": ["07_fix_toolbox.ipynb"]})
    assert broken[-1] == {"measure": "notebooks that fail", "goal": "none", "measured": "07_fix_toolbox.ipynb",
                          "met": "NO"}


def test_notebooks_that_start_worker_interpreters_are_reported_apart():
    floor = {"median_s": 2.0, "cpu_median_s": 2.0}
    rows = [{"notebook": "a.ipynb", "median_s": 2.4, "child_cpu_median_s": 0.1},
            {"notebook": "b.ipynb", "median_s": 2.8, "child_cpu_median_s": 0.3},
            {"notebook": "workers.ipynb", "median_s": 9.0, "child_cpu_median_s": 4.0},
            {"notebook": "broken.ipynb", "error": "DeadKernelError: ..."}]
    split = notebooks.worker_split(rows, floor)
    assert split == {"worker_notebooks": ["workers.ipynb"], "workers_vs_floors": 4.5,
                     "without_workers_n": 2, "without_workers_vs_floors": pytest.approx(1.3)}
    suite = {"floors_in_suite": 3, "floor": floor, "total_s": 14.2, "total_vs_floors": 14.2 / 6,
             "total_cpu_vs_floors": 2.0, "goal_ratio": 1.5, "failed": [], **split}
    measures = {r["measure"]: r for r in notebook_goals(suite)}
    assert measures["suite time without the 1 that start worker interpreters"]["met"] == "yes"
    assert measures["those 1: workers"]["measured"] == "4.50 x"
    assert notebooks.worker_split(rows[:2], floor) == {"worker_notebooks": [], "without_workers_n": 2,
                                                       "without_workers_vs_floors": pytest.approx(1.3)}


def test_the_core_and_the_deep_dives_are_reported_apart():
    floor = {"median_s": 2.0, "cpu_median_s": 2.0}
    rows = [{"notebook": "00_a.ipynb", "median_s": 2.4}, {"notebook": "01_b.ipynb", "median_s": 2.8},
            {"notebook": "deep_dives/c.ipynb", "median_s": 5.0}, {"notebook": "deep_dives/d.ipynb", "error": "..."}]
    groups = {"00_a.ipynb": "core", "01_b.ipynb": "core", "deep_dives/c.ipynb": "deep dive",
              "deep_dives/d.ipynb": "deep dive", "exercises/e.ipynb": "exercise"}
    split = notebooks.group_split(rows, floor, groups)
    assert split == {"groups": {"core": {"n": 2, "vs_floors": pytest.approx(1.3)},
                                "deep dive": {"n": 1, "vs_floors": 2.5}}}
    suite = {"floors_in_suite": 3, "floor": floor, "total_s": 10.2, "total_vs_floors": 1.7,
             "total_cpu_vs_floors": 1.5, "goal_ratio": 1.5, "failed": [], **split}
    measures = {r["measure"]: r for r in notebook_goals(suite)}
    assert (measures["suite time, core (2 notebooks)"]["met"], measures["suite time, deep dive (1 notebooks)"]["met"]) == ("yes", "NO")
    assert set(notebooks.course_groups()) == {p.relative_to(notebooks.NOTEBOOKS).as_posix() for p in notebooks.suite_paths()}


def test_widget_goal_takes_each_explorers_worst_p95_and_skips_the_png_comparison():
    row = {"caches": "cold", "median_s": 0.05}
    section = {"goal_p95_s": 0.150, "explorers": [
        {**row, "explorer": "leaf playground", "p95_s": 0.120},
        {**row, "explorer": "leaf playground", "caches": "warm", "p95_s": 0.160},
        {**row, "explorer": "scenario explorer, PNG", "p95_s": 0.300},
    ]}
    (only,) = widget_goals(section)
    assert only["measure"] == "widget p95, leaf playground (warm caches)" and only["met"] == "NO"


def test_page_block_replaces_only_the_marked_lines(results):
    page = f"# title\n\n## Benchmarks\n\nintro\n\n{START}\nold table\n{END}\n\n## After\n"
    block = page_block(results)
    updated = with_block(page, block)
    assert "old table" not in updated and block in updated
    assert updated.startswith("# title\n\n## Benchmarks\n\nintro\n\n") and updated.endswith(f"{END}\n\n## After\n")
    assert with_block(updated, block) == updated
    assert results["machine"]["cpu"] in block and "whole run, wall time" in block


@pytest.mark.parametrize("page", ["no markers", f"{END}\n{START}\n", f"{START}\n{END}\n{START}\n{END}\n"])
def test_page_without_one_ordered_pair_of_markers_is_refused(page):
    with pytest.raises(ValueError, match="bench:start"):
        with_block(page, "table")


def test_the_benchmarks_page_holds_the_table_of_the_committed_results():
    """What a full run writes, from bench/results.json as committed: the page and the results agree."""
    committed = json.loads((PAGE.parent.parent / "bench" / "results.json").read_text())
    page = PAGE.read_text()
    assert with_block(page, page_block(committed)) == page, "run `make bench` (or restore docs/benchmarks.md's table)"
    assert START not in (PAGE.parent.parent / "README.md").read_text()


def test_unknown_section_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["notebook"])
    assert "choose from notebooks" in capsys.readouterr().err
