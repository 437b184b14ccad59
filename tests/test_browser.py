"""The explorers in a real JupyterLab, driven in Chromium by Playwright.

The server's root is a temporary copy of the notebooks (running cells never touches the repo),
plus ``explorers.ipynb``, written here, with one of each explorer. Every notebook that shows an
explorer is run with "Run All"; its widgets must render, then each explorer is clicked through and
each task solved, in the notebook's language: a Chinese twin (``zh-CN/``) is driven by the package's
Chinese words (its catalog) and must say "solved" in Chinese. Its tasks are its English twin's.
A screenshot per notebook goes to ``test-artifacts/screenshots/``.
"""
from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pytest
from chromium import playwright_or_skip
from jupyterlab_process import running_lab
from notebook_files import NOTEBOOKS, ROOT, ZH, all_notebooks, chinese_notebooks

from graphleaf_edu.i18n import say, speaking

sys.path.insert(0, str(ROOT / "tools"))
import predict_prompts

playwright = playwright_or_skip()

pytestmark = pytest.mark.browser

SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
EXPLORERS = {
    "scenario_explorer": ".graphleaf-scenario-explorer",
    "leaf_playground": ".graphleaf-leaf-playground",
    "dataloader_lab": ".graphleaf-dataloader-lab",
    "fix_comparison": ".graphleaf-fix-comparison",
}
OWN_NOTEBOOK = "explorers.ipynb"
RUN_ALL_TIMEOUT_MS = 300_000
WIDGET_TIMEOUT_MS = 30_000
CLICK_TIMEOUT_MS = 20_000


def explorers_in(path: Path) -> list[str]:
    code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    return [name for name in EXPLORERS if re.search(rf"\b{name}\(", code)]


def notebooks_with_explorers() -> list[str]:
    """Our own notebook, every English notebook with an explorer, then every Chinese twin with one."""
    found = [p.relative_to(NOTEBOOKS).as_posix() for p in [*all_notebooks(), *chinese_notebooks()] if explorers_in(p)]
    return [OWN_NOTEBOOK, *found]


def language_of(name: str) -> str:
    """The language a notebook of the lab speaks: a twin under zh-CN/ speaks Chinese."""
    return "zh-CN" if Path(name).parts[0] == ZH else "en"


def said(lang: str, message: str, **fields: object) -> str:
    """What the package says in ``lang``: the words a student sees in a notebook of that language."""
    with speaking(lang):
        return say(message, **fields)


def said_before(lang: str, message: str) -> str:
    """What the package says in ``lang`` before the first ``{field}`` of ``message``."""
    return said(lang, message, **{name: "\0" for name in re.findall(r"{(\w+)", message)}).split("\0")[0]


def without_tags(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def write_own_notebook(path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import graphleaf_edu as gl")]
    notebook.cells += [nbformat.v4.new_code_cell(f"gl.{name}()") for name in EXPLORERS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, path)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("jupyterlab")
    root = scratch / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    write_own_notebook(root / OWN_NOTEBOOK)
    with running_lab(root, scratch) as url:
        yield url, root


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.mark.parametrize("name", notebooks_with_explorers())
def test_explorers_render_and_respond_in_jupyterlab(lab, page, name):
    url, root = lab
    lang, tasks = language_of(name), all_tasks()
    started = time.monotonic()
    open_and_run_all(page, f"{url}/lab/tree/{name}?reset")  # reset: no tab of the previous notebook
    try:
        assert_every_widget_renders(page)
        if name in tasks and english_twin(name) not in SOLVED_AFTER_THE_CHECKS:
            solve_the_task(page, root / name, tasks[name], lang)
        present = explorers_in(root / name)
        assert present, f"{name} shows no explorer"
        for explorer in present:
            CHECKS[explorer](page, page.locator(EXPLORERS[explorer]).first, lang)
        if name in tasks and english_twin(name) in SOLVED_AFTER_THE_CHECKS:
            solve_the_task(page, root / name, tasks[name], lang)
    finally:
        first = page.locator(", ".join(EXPLORERS.values())).first
        if first.count():
            first.scroll_into_view_if_needed()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / screenshot_name(name)))
        shut_down_kernels(page)
    print(f"{name}: {time.monotonic() - started:.1f} s")


def screenshot_name(name: str) -> str:
    """``01_copied_tensors.png``; a Chinese twin's ``zh-CN_01_copied_tensors.png``."""
    path = Path(name)
    return (f"{ZH}_{path.stem}" if path.parts[0] == ZH else path.stem) + ".png"


# --- driving JupyterLab ----------------------------------------------------------------------------

KERNEL_IDLE = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return !!kernel && kernel.status === 'idle';
}"""
ALL_CELLS_RAN = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
    .every(prompt => /\\[\\d+\\]/.test(prompt.textContent))"""


def open_and_run_all(page, notebook_url: str) -> None:
    page.goto(notebook_url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    # The notebook must be the focused widget, or run-all-cells runs nothing; its promise may
    # never settle, so it is not awaited.
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); return true; }")
    page.wait_for_function(ALL_CELLS_RAN, timeout=RUN_ALL_TIMEOUT_MS)
    page.wait_for_function(KERNEL_IDLE, timeout=RUN_ALL_TIMEOUT_MS)


def assert_every_widget_renders(page) -> None:
    outputs = page.locator(".jp-OutputArea-output")
    page.wait_for_function(
        "() => !document.querySelector('.jp-Notebook').innerText.includes('Loading widget...')",
        timeout=WIDGET_TIMEOUT_MS)
    text = page.locator(".jp-Notebook").inner_text()
    assert "Error displaying widget" not in text
    assert "Loading widget..." not in text
    assert outputs.locator(".jupyter-widgets").count() > 0


def shut_down_kernels(page) -> None:
    page.evaluate("async () => { await window.jupyterapp.serviceManager.sessions.shutdownAll(); return true; }")


def image_fingerprint(image) -> tuple[int, int]:
    """(length, hash) of the picture's bytes: a widget image's src is a fresh blob URL on every change."""
    return tuple(image.evaluate("""async (img) => {
        const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
        let hash = 0;
        for (const b of bytes) hash = (hash * 31 + b) | 0;
        return [bytes.length, hash];
    }"""))


def wait_for_text(locator, text: str) -> None:
    playwright.expect(locator).to_contain_text(text, timeout=CLICK_TIMEOUT_MS)


# --- one check per explorer -----------------------------------------------------------------------

def check_scenario_explorer(page, explorer, lang) -> None:
    from graphleaf_edu import SCENARIOS
    from graphleaf_edu.errors import gloss

    scenario = SCENARIOS["model_cache"]
    selects = explorer.locator("select")
    selects.nth(0).select_option(label=said(lang, scenario.title))
    selects.nth(1).select_option(label=f"none: {said(lang, scenario.fix('none').title)}")
    explorer.get_by_role("button", name="deepcopy").click()
    result = explorer.locator(".graphleaf-scenario-result")
    error = "RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol"
    wait_for_text(result, error)  # PyTorch's words, in every language; a Chinese notebook glosses them
    with speaking(lang):
        meaning = gloss(error)
    assert (meaning != "") == (lang != "en")
    wait_for_text(result, meaning)
    image = explorer.locator("img.graphleaf-scenario-graph")
    playwright.expect(image).to_be_visible(timeout=CLICK_TIMEOUT_MS)
    failing = image_fingerprint(image)
    assert failing[0] > 1000

    failing_src = image.get_attribute("src")
    selects.nth(1).select_option(label=f"safe_deepcopy: {said(lang, scenario.fix('safe_deepcopy').title)}")
    wait_for_text(result, "✓ " + said_before(lang, "the copy worked: copied is {type_name}"))
    page.wait_for_function("([img, before]) => img.src !== before",
                           arg=[image.element_handle(), failing_src], timeout=CLICK_TIMEOUT_MS)
    assert image_fingerprint(image) != failing
    assert image.evaluate("img => img.naturalWidth") > 0


def check_leaf_playground(page, explorer, lang) -> None:
    expression = explorer.locator("input[type=text]")
    message = explorer.locator(".graphleaf-playground-message")
    expression.fill("x +")
    expression.press("Enter")
    wait_for_text(message, said_before(lang, "That is not valid Python ({reason}). Try e.g. x * 2."))
    expression.fill("w @ x + b")
    expression.press("Enter")
    wait_for_text(message, said(lang, "{expression} is a non-leaf tensor", expression="w @ x + b"))
    playwright.expect(explorer.locator("img.graphleaf-playground-graph")).to_be_visible(timeout=CLICK_TIMEOUT_MS)


def check_dataloader_lab(page, explorer, lang) -> None:
    status = explorer.locator(".graphleaf-loader-status")
    # Record every text the status shows, so a short "running…" cannot slip between two polls.
    status.evaluate("""el => {
        window.graphleafStatusSeen = [];
        new MutationObserver(() => window.graphleafStatusSeen.push(el.innerText))
            .observe(el, {subtree: true, childList: true, characterData: true});
    }""")
    explorer.get_by_role("button", name=said(lang, "run DataLoader")).click()
    table = explorer.locator(".graphleaf-loader-table")
    wait_for_text(table, said(lang, "detach at construction"))
    running = without_tags(said(lang, "<b>running…</b> (worker processes are starting)"))
    assert any(running in seen for seen in page.evaluate("() => window.graphleafStatusSeen"))
    assert said_before(lang, "latest: {summary}").strip() in status.inner_text()


def check_fix_comparison(page, explorer, lang) -> None:
    from graphleaf_edu import SCENARIOS

    explorer.locator("select").select_option(label=said(lang, SCENARIOS["old_weight_norm"].title))
    wait_for_text(explorer.locator(".graphleaf-fix-table"), "parametrizations")


CHECKS = {
    "scenario_explorer": check_scenario_explorer,
    "leaf_playground": check_leaf_playground,
    "dataloader_lab": check_dataloader_lab,
    "fix_comparison": check_fix_comparison,
}


# --- predict before you see ---------------------------------------------------------------------------

PREDICT_LESSON = "deep_dives/leaves_and_grad_fn.ipynb"  # its answers include tables and pictures


def squeezed(text: str) -> str:
    return " ".join(text.split())


def answer_lines(path: Path) -> list[tuple[int, str, list[str]]]:
    """(code cell number, placeholder line, the answer's own lines) of each cell that answers a prompt.

    An answer's own lines are the stored text lines after the placeholder line that appear nowhere
    else in the notebook (not in a cell's source, not in an output shown unfolded)."""
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    answering = [cell for _, cell in predict_prompts.answer_cells(notebook)]
    elsewhere = squeezed(" ".join([c.source for c in notebook.cells] + [
        o.get("text", "") for c in code if c not in answering for o in c.get("outputs", [])]))
    found = []
    for cell in answering:
        text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
        lines = [squeezed(line) for line in text.splitlines() if line.strip()][1:]
        own = [line for line in lines if line not in elsewhere]
        if own:
            found.append((code.index(cell), squeezed(predict_prompts.placeholder_line(cell)), own))
    return found


def test_a_predict_answer_stays_hidden_until_its_cell_runs(lab, page):
    url, root = lab
    answers = answer_lines(root / PREDICT_LESSON)
    assert len(answers) >= 5, f"{PREDICT_LESSON} folds too few answers: {answers}"
    page.goto(f"{url}/lab/tree/{PREDICT_LESSON}?reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    try:
        shown = squeezed(page.locator(".jp-Notebook").inner_text())
        for _, placeholder, own in answers:
            assert placeholder in shown, f"the folded placeholder {placeholder!r} is not on screen"
            for line in own:
                assert line not in shown, f"an answer shows before its cell runs: {line!r}"
        # Run the cells before a table answer, then that cell: its whole answer appears.
        index, _, own = next(a for a in answers if a[1].startswith("leaf or not"))
        cells = page.locator(".jp-Notebook .jp-CodeCell")
        cells.nth(index).click()
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-above'); return true; }")
        page.wait_for_function(KERNEL_IDLE, timeout=RUN_ALL_TIMEOUT_MS)
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); return true; }")
        for line in own:
            playwright.expect(cells.nth(index).locator(".jp-OutputArea")).to_contain_text(
                re.compile(r"\s+".join(map(re.escape, line.split()))), timeout=CLICK_TIMEOUT_MS)
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "predict-hidden.png"))
        shut_down_kernels(page)


# --- widgets with a task: each lesson's task is solved in the browser -------------------------------------

def solve_with_fix(fix: str):
    def solve(page, explorer, lang) -> None:
        explorer.get_by_role("button", name="deepcopy").click()
        select = explorer.locator("select").nth(1)
        label = next(o for o in select.locator("option").all_inner_texts() if o.startswith(f"{fix}:"))
        select.select_option(label=label)
    return solve


def solve_spawn(page, explorer, lang) -> None:
    explorer.locator("select").first.select_option("spawn")
    explorer.locator("label", has_text=said(lang, "detach at construction")).locator("input").check()
    explorer.get_by_role("button", name=said(lang, "run DataLoader")).click()


def solve_only_times_out(page, explorer, lang) -> None:
    # A fork worker, rows unstacked (batch_size=None), the dataset not detached: the lab's 10-s timeout.
    explorer.locator("select").first.select_option("fork")
    explorer.locator("select").nth(2).select_option(label="None")
    explorer.get_by_role("button", name=said(lang, "run DataLoader")).click()


def solve_spawn_with_deepcopy(page, explorer, lang) -> None:
    # The lab starts with "deepcopy in __getitem__" off, as lesson 03's dataset does; this task wants it on.
    explorer.locator("label", has_text=said(lang, "deepcopy in __getitem__")).locator("input").check()
    solve_spawn(page, explorer, lang)


def solve_with_expression(expression: str):
    def solve(page, explorer, lang) -> None:
        field = explorer.locator("input[type=text]")
        field.fill(expression)
        field.press("Enter")
    return solve


def solve_with_model(scenario: str):
    def solve(page, explorer, lang) -> None:
        from graphleaf_edu import SCENARIOS

        explorer.locator("select").first.select_option(label=said(lang, SCENARIOS[scenario].title))
    return solve


# Each English lesson's explorers with a task, in the order they appear, and how a student solves each.
TASKS = {
    "00_start_here.ipynb": [(".graphleaf-leaf-playground", solve_with_expression("(w @ x + b).detach()"))],
    "01_copied_tensors.ipynb": [(".graphleaf-scenario-explorer", solve_with_fix("detach"))],
    "02_model_cache.ipynb": [(".graphleaf-scenario-explorer", solve_with_fix("safe_deepcopy"))],
    "03_dataloader_workers.ipynb": [(".graphleaf-dataloader-lab", solve_only_times_out)],
    "deep_dives/leaves_and_grad_fn.ipynb": [(".graphleaf-leaf-playground", solve_with_expression("(w @ x + b).detach()"))],
    "deep_dives/intermediate_tensor.ipynb": [(".graphleaf-scenario-explorer", solve_with_fix("detach_clone"))],
    "deep_dives/model_output.ipynb": [(".graphleaf-scenario-explorer", solve_with_fix("detach_clone"))],
    "deep_dives/dataloader_workers.ipynb": [(".graphleaf-dataloader-lab", solve_spawn_with_deepcopy)],
    "deep_dives/model_cache_fixes.ipynb": [(".graphleaf-scenario-explorer", solve_with_fix("custom_deepcopy"))],
    "deep_dives/fix_toolbox.ipynb": [(".graphleaf-fix-comparison", solve_with_model("ema_copy"))],
}


def english_twin(name: str) -> str:
    """The English notebook a name of the lab translates (itself if it is English)."""
    path = Path(name)
    return path.relative_to(ZH).as_posix() if path.parts[0] == ZH else name


def all_tasks() -> dict[str, list]:
    """TASKS, and for every Chinese twin that exists the tasks of its English twin (the same code)."""
    twins = {p.relative_to(NOTEBOOKS).as_posix() for p in chinese_notebooks()}
    return TASKS | {twin: TASKS[english_twin(twin)] for twin in sorted(twins) if english_twin(twin) in TASKS}


EXPLORER_WITH_TASK = re.compile(rf"\b(?:{'|'.join(EXPLORERS)})\([^)]*\btask=\"([^\"]+)\"")


def task_names(path: Path) -> list[str]:
    """The name of each task the notebook's explorers are given (``task="..."``), in the order they appear."""
    code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    return [name for source in code for name in EXPLORER_WITH_TASK.findall(source)]


def test_every_explorer_with_a_task_is_solved_here():
    """Every explorer a lesson gives a task is in TASKS, in English and in every Chinese twin, so the
    browser test solves each one."""
    given = {}
    for path in [*all_notebooks(), *chinese_notebooks()]:
        count = len(task_names(path))
        if count:
            given[path.relative_to(NOTEBOOKS).as_posix()] = count
    assert given == {name: len(solutions) for name, solutions in all_tasks().items()}


# The DataLoader lab's check waits for its first run's table, so the task's run comes after it.
SOLVED_AFTER_THE_CHECKS = {"03_dataloader_workers.ipynb", "deep_dives/dataloader_workers.ipynb"}


def solve_the_task(page, path: Path, solutions: list, lang: str) -> None:
    """Each explorer of the lesson shows its task, not yet solved, in the notebook's language; the
    student's moves make it say solved, in that language too."""
    from graphleaf_edu.views import TASKS as PACKAGE_TASKS

    names = task_names(path)
    assert len(names) == len(solutions), f"{path.name} gives {len(names)} tasks, the test solves {len(solutions)}"
    with_a_task = page.locator(", ".join(EXPLORERS.values())).filter(has=page.locator(".graphleaf-task"))
    for index, ((selector, solve), name) in enumerate(zip(solutions, names, strict=True)):
        task = PACKAGE_TASKS[name]
        explorer = with_a_task.nth(index)
        assert explorer.evaluate("(el, selector) => el.matches(selector)", selector), f"task {index + 1} is not in {selector}"
        explorer.scroll_into_view_if_needed()
        prompt = said(lang, "task: {prompt}", prompt=said(lang, task.prompt))
        playwright.expect(explorer.locator(".graphleaf-task")).to_contain_text(prompt, timeout=CLICK_TIMEOUT_MS)
        assert explorer.locator(".graphleaf-solved").count() == 0, "solved before the student did anything"
        solve(page, explorer, lang)
        solved = explorer.locator(".graphleaf-solved")
        playwright.expect(solved).to_be_visible(timeout=60_000)
        playwright.expect(solved).to_have_text(f"✔ {said(lang, task.solved)}")
