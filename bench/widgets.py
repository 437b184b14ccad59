"""Explorer latency: from a control change to the new output set on the widgets, picture included.

Each explorer is driven from Python (no browser): a change of a dropdown or text box runs its
callback synchronously, so the time until the setter returns is the kernel's share of a click.
"cold" clears every cache before each interaction (a state never seen before); "warm" replays
states already computed (cached views and pictures). The baseline is Graphviz drawing a
one-node SVG: the start-up of ``dot`` that every new picture pays. One more row renders PNG
instead of SVG, the cost the explorers avoid.
The DataLoader lab is timed apart: its runs start real worker processes.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import cycle, islice

import graphviz

from bench.harness import format_table, measure, percentile
from graphleaf_edu import SCENARIOS, views, widgets
from graphleaf_edu.views import common

INTERACTIONS = 100
GOAL_P95_S = 0.150
TYPED_MISTAKES = ("x +", "z * 2", "y = x * 2", "copy.deepcopy(x * 2)")


def scenario_steps(explorer: widgets.ScenarioExplorer) -> list[Callable[[], None]]:
    """Every scenario, then each of its fixes: one control change per step."""
    steps = []
    for scenario in SCENARIOS.values():
        steps.append(lambda scenario=scenario: setattr(explorer.scenario, "value", scenario))
        steps += [lambda fix=fix: setattr(explorer.fix, "value", fix) for fix in scenario.fix_keys()[1:]]
    return steps


def playground_steps(playground: widgets.LeafPlayground) -> list[Callable[[], None]]:
    texts = [*views.PLAYGROUND_EXAMPLES, *TYPED_MISTAKES]
    return [lambda text=text: setattr(playground.expression, "value", text) for text in texts]


def fix_comparison_steps(explorer: widgets.FixComparisonExplorer) -> list[Callable[[], None]]:
    return [lambda scenario=scenario: setattr(explorer.model, "value", scenario) for scenario in views.model_scenarios()]


def time_steps(steps: Iterator[Callable[[], None]], count: int, cold: bool) -> list[float]:
    samples = []
    for step in islice(steps, count):
        if cold:
            views.clear_caches()
        start = time.perf_counter()
        step()
        samples.append(time.perf_counter() - start)
    return samples


@contextmanager
def png_pictures():
    saved = common.picture
    common.picture = lambda graph: graph.png()
    try:
        yield
    finally:
        common.picture = saved


def explorer_rows(count: int) -> list[dict]:
    explorer = widgets.scenario_explorer()
    explorer.deepcopy.click()  # live: every change re-runs and redraws
    explorers = {
        "scenario explorer": scenario_steps(explorer),
        "leaf playground": playground_steps(widgets.leaf_playground()),
        "fix comparison": fix_comparison_steps(widgets.fix_comparison()),
    }
    # One endless walk per explorer, so each step changes the state the previous one left;
    # it starts one step in, as the explorer already shows the state of the first step.
    walks = {name: cycle(steps[1:] + steps[:1]) for name, steps in explorers.items()}
    rows = []
    for name, steps in explorers.items():
        rows.append(row(name, "cold", time_steps(walks[name], count, cold=True)))
        time_steps(walks[name], len(steps), cold=False)  # prime the caches with every state
        rows.append(row(name, "warm", time_steps(walks[name], count, cold=False)))
    with png_pictures():
        rows.append(row("scenario explorer, PNG", "cold", time_steps(walks["scenario explorer"], count, cold=True)))
    return rows


def row(name: str, caches: str, samples: list[float]) -> dict:
    return {"explorer": name, "caches": caches, "interactions": len(samples),
            "median_s": percentile(samples, 0.5), "p95_s": percentile(samples, 0.95), "max_s": max(samples)}


def loader_rows(configs: list[dict], repeats: int) -> list[dict]:
    lab = widgets.dataloader_lab()
    shown: list[float] = []
    lab.status.observe(lambda change: shown.append(time.perf_counter()), "value")
    rows = []
    for config in configs:
        for name, value in config.items():
            getattr(lab, name).value = value
        samples, to_running = [], []
        for _ in range(repeats):
            shown.clear()
            start = time.perf_counter()
            lab.run.click()
            samples.append(time.perf_counter() - start)
            to_running.append(shown[0] - start)
        rows.append({**config, "ok": lab.history[-1].ok, "runs": repeats,
                     "median_s": percentile(samples, 0.5), "p95_s": percentile(samples, 0.95),
                     "running_shown_after_s": max(to_running)})
    return rows


def run(quick: bool = False) -> dict:
    baseline = measure(lambda: graphviz.Source("digraph { a }").pipe(format="svg", quiet=True),
                       repeats=5 if quick else 30, warmup=1).median_s
    count = 5 if quick else INTERACTIONS
    rows = explorer_rows(count)
    for row in rows:
        row["p95_vs_dot_startup"] = row["p95_s"] / baseline
        row["p95_within_goal"] = row["p95_s"] <= GOAL_P95_S
    print(f"one-node SVG from dot (baseline): {baseline * 1000:.1f} ms; goal: p95 <= {GOAL_P95_S * 1000:.0f} ms")
    print(format_table(
        ["explorer", "caches", "n", "median ms", "p95 ms", "max ms", "p95/dot", "p95 in goal"],
        [[r["explorer"], r["caches"], r["interactions"], r["median_s"] * 1000, r["p95_s"] * 1000,
          r["max_s"] * 1000, r["p95_vs_dot_startup"], r["p95_within_goal"]] for r in rows]))

    error_config = {"num_workers": 1, "deepcopy_in_getitem": True, "detach_at_construction": False}
    ok_config = {"num_workers": 1, "deepcopy_in_getitem": False, "detach_at_construction": True}
    if quick:
        configs = [{"start_method": "fork", "num_workers": 0, "deepcopy_in_getitem": True,
                    "detach_at_construction": False}]
    else:
        configs = [{"start_method": method, **config} for method in ("fork", "forkserver", "spawn")
                   for config in (error_config, ok_config)]
    loader = loader_rows(configs, repeats=2 if quick else 5)
    print("\nDataLoader lab (real worker start-up; each run bounded by its timeout):")
    print(format_table(
        ["start method", "workers", "deepcopy in getitem", "detach", "ok", "runs", "median s", "p95 s",
         "'running…' after ms"],
        [[r["start_method"], r["num_workers"], r["deepcopy_in_getitem"], r["detach_at_construction"], r["ok"],
          r["runs"], r["median_s"], r["p95_s"], r["running_shown_after_s"] * 1000] for r in loader]))
    return {"dot_svg_baseline_s": baseline, "goal_p95_s": GOAL_P95_S, "explorers": rows, "dataloader_lab": loader}


if __name__ == "__main__":
    run()
