"""`make bench`: every section in order, one table of the goals, the results on disk.

    python -m bench                     every section; writes bench/results.json and the table of docs/benchmarks.md
    python -m bench --quick             a smoke run in about a minute; writes bench/results-quick.json
    python -m bench notebooks graphs    some sections; writes bench/results-partial.json

Only a full run touches the benchmarks page, so re-taking the published numbers is one command.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import io
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

import graphviz
import torch

from bench.harness import format_table

SECTIONS = ("notebooks", "widgets", "copying", "diagnose", "graphs", "footprint", "imports", "notes", "plugin")
BENCH = Path(__file__).resolve().parent
PAGE = BENCH.parent / "docs" / "benchmarks.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
BUDGET_S = 600


class Tee(io.StringIO):
    """Keeps what a section prints while still showing it."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(text)
        return super().write(text)

    def flush(self) -> None:
        self.stream.flush()


def machine() -> dict:
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    cpuinfo = [line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")]
    try:
        dot = ".".join(map(str, graphviz.version()))
    except graphviz.ExecutableNotFound:
        dot = "missing"
    return {
        "cpu": cpuinfo[0].split(":", 1)[1].strip() if cpuinfo else platform.processor(),
        "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
        "ram_gb": round(int(meminfo["MemTotal"].split()[0]) / 2**20, 1),
        "os": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
        "graphviz": dot, "load_average_at_start": os.getloadavg()[0],
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def run_sections(names: list[str], quick: bool) -> dict:
    """Run each section, keeping its result, its printed tables and its wall time; a failing
    section is recorded as its error (the traceback is printed) and the others still run."""
    results: dict = {"machine": machine(), "quick": quick, "sections": {}, "printed": {}, "section_s": {}}
    started = time.perf_counter()
    for name in names:
        print(f"\n== {name} ==", flush=True)
        section_started = time.perf_counter()
        tee = Tee(sys.stdout)
        with contextlib.redirect_stdout(tee):
            try:
                results["sections"][name] = run_section(name, quick, results["sections"])
            except Exception:  # noqa: BLE001 -- one broken section must not lose the others' numbers
                traceback.print_exc(file=sys.stdout)
                results["sections"][name] = {"error": traceback.format_exc().strip().splitlines()[-1]}
        results["printed"][name] = tee.getvalue()
        results["section_s"][name] = time.perf_counter() - section_started
        print(f"({name}: {results['section_s'][name]:.0f} s)", flush=True)
    results["total_s"] = time.perf_counter() - started
    results["goals"] = goals(results)
    return results


def run_section(name: str, quick: bool, done: dict) -> dict:
    module = importlib.import_module(f"bench.{name}")
    suite = done.get("notebooks")
    if name == "footprint" and suite and "error" not in suite:
        return module.run(quick=quick, suite=suite)  # the suite's own kernels, not a second run
    return module.run(quick=quick)


def goal_row(measure: str, value: str, goal: str = "-", met: bool | None = None) -> dict:
    return {"measure": measure, "goal": goal, "measured": value,
            "met": "-" if met is None else ("yes" if met else "NO")}


def goals(results: dict) -> list[dict]:
    """One row per figure the issue names: the goal where it sets one, and whether it is met."""
    rows = []
    for name, section in results["sections"].items():
        if "error" in section:
            rows.append(goal_row(f"{name} section", section["error"][:80], "runs", False))
        else:
            rows += GOAL_ROWS[name](section)
    rows.append(goal_row("whole run, wall time", f"{results['total_s']:.0f} s", f"<= {BUDGET_S} s",
                         results["total_s"] <= BUDGET_S))
    return rows


def notebook_goals(section: dict) -> list[dict]:
    n, floor = section["floors_in_suite"], section["floor"]["median_s"]
    rows = [goal_row(f"suite time, {n} notebooks vs {n} floors of {floor:.1f} s",
                     f"{section['total_s']:.0f} s = {section['total_vs_floors']:.2f} x",
                     f"<= {section['goal_ratio']} x", section["total_vs_floors"] <= section["goal_ratio"])] if n else []
    if n:
        rows.append(goal_row("suite kernel CPU time vs floors", f"{section['total_cpu_vs_floors']:.2f} x"))
    starting, others = section.get("worker_notebooks", []), section.get("without_workers_n", 0)
    if starting and others:
        ratio = section["without_workers_vs_floors"]
        rows.append(goal_row(f"suite time without the {len(starting)} that start worker interpreters",
                             f"{ratio:.2f} x ({others} notebooks)", f"<= {section['goal_ratio']} x",
                             ratio <= section["goal_ratio"]))
        rows.append(goal_row(f"those {len(starting)}: {', '.join(Path(name).stem for name in starting)}",
                             f"{section['workers_vs_floors']:.2f} x"))
    for group, figures in section.get("groups", {}).items():
        rows.append(goal_row(f"suite time, {group} ({figures['n']} notebooks)", f"{figures['vs_floors']:.2f} x",
                             f"<= {section['goal_ratio']} x", figures["vs_floors"] <= section["goal_ratio"]))
    if section["failed"]:
        rows.append(goal_row("notebooks that fail", ", ".join(section["failed"]), "none", False))
    return rows


def widget_goals(section: dict) -> list[dict]:
    goal = section["goal_p95_s"]
    worst: dict[str, dict] = {}
    for row in section["explorers"]:
        if row["explorer"].endswith(", PNG"):  # the rendering the explorers avoid, for comparison
            continue
        if row["explorer"] not in worst or row["p95_s"] > worst[row["explorer"]]["p95_s"]:
            worst[row["explorer"]] = row
    return [goal_row(f"widget p95, {name} ({row['caches']} caches)",
                     f"{row['p95_s'] * 1e3:.0f} ms (median {row['median_s'] * 1e3:.0f} ms)",
                     f"<= {goal * 1e3:.0f} ms", row["p95_s"] <= goal) for name, row in worst.items()]


def copying_goals(section: dict) -> list[dict]:
    memory = {m["model"]: m for m in section["peak_memory"]}
    rows = []
    for r in section["timing"]:
        rows.append(goal_row(f"safe_deepcopy / deepcopy, {r['model']} params", f"{r['safe_vs_deepcopy']:.2f} x",
                             "<= 1.10 x", r["safe_vs_deepcopy"] <= 1.10))
        rows.append(goal_row(f"safe_deepcopy of the cached model / deepcopy of the clean one, {r['model']}",
                             f"{r['safe_cached_vs_deepcopy']:.2f} x (the walk alone: {r['walk_cached_vs_deepcopy']:.2f} x)",
                             "<= 1.10 x", r["safe_cached_vs_deepcopy"] <= 1.10))
        peak = memory.get(r["model"])
        rows.append(goal_row(
            f"safe_deepcopy vs state_dict routes, {r['model']}",
            f"{r['safe_vs_bytesio']:.2f} x BytesIO, {r['safe_vs_load_state_dict']:.2f} x load_state_dict"
            + (f"; peak memory {peak['safe_vs_deepcopy']:.2f} x deepcopy's" if peak else "")))
    return rows


def diagnose_goals(section: dict) -> list[dict]:
    return [goal_row(f"find_nonleaf, {r['case']} ({r['size']:,})",
                     f"{r['find_nonleaf_ms']:.1f} ms = {r['ratio']:.1f} x {r['baseline']}")
            for r in section["rows"] if r["case"].startswith("modules") or r["baseline"] == "is_leaf loop"]


def graph_goals(section: dict) -> list[dict]:
    return [goal_row(f"draw, {r['ops']:,} ops", f"DOT {r['build_s'] * 1e3:.1f} ms, SVG {r['svg_s'] * 1e3:.0f} ms, "
                                               f"PNG {r['png_s'] * 1e3:.0f} ms")
            for r in section["rows"]]


def footprint_goals(section: dict) -> list[dict]:
    budget = section["student_budget_mb"]
    rows = [goal_row("venv on disk", f"{section['venv_mb']:,.0f} MB")]
    if section["heaviest_kernel_mb"] is not None:
        rows.append(goal_row("heaviest notebook kernel, peak RSS", f"{section['heaviest_kernel_mb']:.0f} MB "
                             f"(+ child: <= {section['heaviest_with_child_mb']:.0f} MB)",
                             f"<= {budget} MB", section["heaviest_kernel_mb"] <= budget))
        rows.append(goal_row("every notebook's kernel left open",
                             f"{section['all_kernels_open_mb']:.0f} MB (as many floor kernels: "
                             f"{section['as_many_floors_open_mb']:.0f} MB)",
                             f"<= {budget} MB", section["all_kernels_open_mb"] <= budget))
    return rows


def import_goals(section: dict) -> list[dict]:
    return [goal_row("import graphleaf_edu, added to import torch",
                     f"{section['overhead_ms']:.0f} ms = {section['with_package_vs_torch']:.3f} x torch alone",
                     f"<= {section['goal_ms']:.0f} ms", section["overhead_ms"] <= section["goal_ms"]),
            goal_row("deferred to first use (draw, widgets)", f"{section['deferred_ms']:.0f} ms")]


def notes_goals(section: dict) -> list[dict]:
    names = {"runner": "python -m graphleaf_edu", "origins": "python -m graphleaf_edu --origins",
             "keep_going": "python -m graphleaf_edu --keep-going"}
    return [goal_row(f"{names[name]} / the plain script, {r['loop']} loop", f"{r[f'{name}_vs_plain']:.2f} x CPU "
                     f"(wall {r[f'{name}_wall_vs_plain']:.2f} x)")
            for r in section["rows"] for name in section["variants"]]


def plugin_goals(section: dict) -> list[dict]:
    ratio = section["graphleaf_vs_plain"]
    return [goal_row(f"pytest --graphleaf / plain pytest, {section['tests']} unit tests, whole run",
                     f"{ratio:.3f} x CPU (test loop alone {section['tests_graphleaf_vs_plain']:.3f} x)",
                     f"<= {PLUGIN_GOAL} x", ratio <= PLUGIN_GOAL),
            goal_row("pytest --graphleaf: the same outcomes", "yes" if section["same_outcomes"] else "NO",
                     "yes", section["same_outcomes"])]


PLUGIN_GOAL = 1.05  # "a few percent" (issue 35)

GOAL_ROWS = {"notebooks": notebook_goals, "widgets": widget_goals, "copying": copying_goals,
             "diagnose": diagnose_goals, "graphs": graph_goals, "footprint": footprint_goals,
             "imports": import_goals, "notes": notes_goals, "plugin": plugin_goals}


def goal_table(rows: list[dict]) -> str:
    return format_table(["measure", "goal", "measured", "met"],
                        [[r["measure"], r["goal"], r["measured"], r["met"]] for r in rows])


def page_block(results: dict) -> str:
    m = results["machine"]
    printed = "\n".join(f"== {name} ==\n{text}" for name, text in results["printed"].items())
    return "\n".join([
        (f"Latest full run, {m['date'][:16].replace('T', ' ')} UTC, {results['total_s']:.0f} s: {m['cpu']}, "
         f"{m['usable_cores']} of {m['cores']} cores, {m['ram_gb']} GB RAM, {m['os']}, Python {m['python']}, "
         f"torch {m['torch']}, Graphviz {m['graphviz']}; load average {m['load_average_at_start']:.1f} at start."),
        "",
        _indented(goal_table(results["goals"])),
        "",
        "<details><summary>Every section's tables</summary>",
        "",
        _indented(printed.rstrip()),
        "",
        "</details>",
    ])


def _indented(text: str) -> str:
    return "\n".join(("    " + line).rstrip() for line in text.splitlines())


def with_block(page: str, block: str) -> str:
    """``page`` with the text between the bench markers replaced by ``block``."""
    if page.count(START) != 1 or page.count(END) != 1 or page.index(START) > page.index(END):
        raise ValueError(f"{PAGE.name} needs exactly one {START} line followed by one {END} line; "
                         "add them where the table belongs.")
    head, rest = page.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{block}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"any of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repetition each")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    full = not args.quick and not args.sections
    if full:
        with_block(PAGE.read_text(), "")  # fail now, not after ten minutes
    results = run_sections(args.sections or list(SECTIONS), args.quick)
    print("\n" + goal_table(results["goals"]))
    output = BENCH / ("results.json" if full else "results-quick.json" if args.quick else "results-partial.json")
    output.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    print(f"wrote {output.relative_to(BENCH.parent)}")
    if full:
        PAGE.write_text(with_block(PAGE.read_text(), page_block(results)))
        print(f"updated the table in {PAGE.relative_to(BENCH.parent)}")
    return 1 if any("error" in s for s in results["sections"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
