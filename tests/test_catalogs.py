"""The package's words come from message catalogs: English by default, Simplified Chinese when asked.

The catalogs are up to date with the code and fully translated (no English fallback under zh_CN); the
language is chosen by the package's own switches, never by the machine's locale; switching it changes
the words and nothing else; importing the package loads no catalog.
"""
from __future__ import annotations

import ast
import dataclasses
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import graphleaf_edu as gl
from graphleaf_edu import i18n

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import catalogs


@pytest.fixture(autouse=True)
def english_after_each_test():
    yield
    i18n.set_language(None)


def speak(lang: str | None) -> None:
    i18n.set_language(lang)


@pytest.mark.parametrize("language", catalogs.LANGUAGES)
def test_the_catalog_holds_every_message_of_the_code_and_the_mo_is_compiled_from_it(language):
    up_to_date = catalogs.updated(language, catalogs.template())
    assert catalogs.po_bytes(up_to_date) == catalogs.po_path(language).read_bytes(), "run make catalogs"
    assert catalogs.mo_bytes(up_to_date) == catalogs.mo_path(language).read_bytes(), "run make catalogs"


@pytest.mark.parametrize("language", catalogs.LANGUAGES)
def test_every_message_is_translated_with_the_same_fields(language):
    catalog = catalogs.read(language)
    assert len([m for m in catalog if m.id]) > 0
    assert catalogs.problems(catalog) == []


def test_the_problem_list_sees_a_missing_a_fuzzy_and_a_wrong_translation():
    from babel.messages.catalog import Catalog

    catalog = Catalog(locale="zh_CN")
    catalog.add("copied at {place}", "")
    catalog.add("sent at {place}", "发送于 {where}")
    catalog.add("old words", "旧的译文", flags=["fuzzy"])
    catalog.add("fine {n}", "好 {n}")
    assert [line.split(":")[0] for line in catalogs.problems(catalog)] == ["untranslated", "fields differ from the English ['place']", "fuzzy (the English changed; check the translation)"]


def called_name(node: ast.AST) -> str | None:
    """``say`` for ``say(...)`` and ``M.say(...)`` (what the extractor sees: the name before the bracket)."""
    if not isinstance(node, ast.Call):
        return None
    return node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)


def marked_calls() -> list[tuple[str, int, str, ast.expr]]:
    """Every call of N_, say and say_n in the package: (file, line, function, first argument); a literal
    said inside an f-string is reported with the f-string as its argument (the extractor cannot see it)."""
    calls = []
    for path in sorted((ROOT / "graphleaf_edu").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for fstring in (node for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)):
            calls += [(str(path.relative_to(ROOT)), node.lineno, called_name(node), fstring) for node in ast.walk(fstring)
                      if called_name(node) in catalogs.KEYWORDS and node.args and isinstance(node.args[0], ast.Constant)]
        for node in ast.walk(tree):
            name = called_name(node)
            if name in catalogs.KEYWORDS and node.args:
                calls.append((str(path.relative_to(ROOT)), node.lineno, name, node.args[0]))
    return calls


def test_marked_messages_are_literals_the_extractor_can_read():
    """An f-string or a built-up string never reaches the catalog: the fields go in as keywords.
    ``say`` may also take a constant, or a choice of constants (marked where defined, with ``N_``)."""
    calls = marked_calls()
    assert calls
    wrong = [f"{file}:{line} {name}(...)" for file, line, name, first in calls
             if not (isinstance(first, ast.Constant) and isinstance(first.value, str))
             and not (name == "say" and not isinstance(first, (ast.JoinedStr, ast.BinOp, ast.Call)))]
    assert wrong == []


def test_english_is_the_default_and_chinese_is_asked_for():
    message = "torch {running} | graphleaf_edu ready | Graphviz dot found"
    assert i18n.language() == "en"
    assert i18n.say(message, running="2.13") == "torch 2.13 | graphleaf_edu ready | Graphviz dot found"
    speak("zh-CN")
    assert i18n.language() == "zh_CN"
    assert i18n.say(message, running="2.13") == "torch 2.13 | graphleaf_edu 已就绪 | 已找到 Graphviz dot"
    speak("en")
    assert i18n.say(message, running="2.13").endswith("ready | Graphviz dot found")


@pytest.mark.parametrize("spelling", ["zh-CN", "zh_CN", "zh", "zh-Hans", "ZH_cn", "zh_CN.UTF-8"])
def test_the_spellings_users_type_name_the_chinese_catalog(spelling):
    assert i18n.normalize(spelling) == "zh_CN"


def test_a_language_without_a_catalog_says_which_there_are():
    with pytest.raises(ValueError, match=r"no words in 'fr'.*en \(English\), zh_CN \(简体中文\)"):
        gl.setup_notebook(lang="fr")
    assert i18n.language() == "en"


def run_python(code: str, **environment: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("LC_", "LANG"))}
    env.pop(i18n.ENV_VAR, None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env | environment)


STATUS = "import graphleaf_edu as gl; from graphleaf_edu import i18n; print(i18n.language())"


def test_the_machine_locale_never_chooses_the_language():
    completed = run_python(STATUS, LANG="zh_CN.UTF-8", LC_ALL="zh_CN.UTF-8", LANGUAGE="zh_CN")
    assert completed.stdout.split() == ["en"]


def test_the_environment_variable_chooses_chinese_and_a_typo_falls_back_to_english_with_a_warning():
    assert run_python(STATUS, GRAPHLEAF_EDU_LANG="zh_CN").stdout.split() == ["zh_CN"]
    typo = run_python(STATUS, GRAPHLEAF_EDU_LANG="zh_TW")
    assert typo.stdout.split() == ["en"]
    assert "GRAPHLEAF_EDU_LANG='zh_TW' ignored, speaking English" in typo.stderr


def test_setup_notebook_switches_the_language_and_says_its_status_line_in_it(capsys):
    gl.setup_notebook(lang="zh-CN")
    assert i18n.language() == "zh_CN"
    status = capsys.readouterr().out
    assert status.startswith("torch ") and "graphleaf_edu 已就绪" in status
    gl.setup_notebook(lang="en")
    assert "graphleaf_edu ready" in capsys.readouterr().out


def test_importing_the_package_loads_no_catalog():
    """The catalogs (and gettext, unless torch brought it) load when the first message is said."""
    completed = run_python(
        "import sys, torch; had_gettext = 'gettext' in sys.modules\n"
        "import graphleaf_edu\n"
        "from graphleaf_edu import i18n\n"
        "print(i18n._catalog.cache_info().currsize, had_gettext or 'gettext' not in sys.modules)\n"
        "i18n.set_language('zh-CN'); i18n.say('x')\n"
        "print(i18n._catalog.cache_info().currsize)",
    )
    assert completed.stdout.split() == ["0", "True", "1"]


def test_graph_pictures_are_the_same_in_every_language():
    """gl.draw's legend and marks stay English (docs/translating.md: nbval compares SVG exactly, and
    Chinese labels would be laid out with whatever CJK font the machine has, or none)."""
    import torch

    pytest.importorskip("torchviz")

    def picture() -> tuple[str, str]:
        leaf = torch.ones(2, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # backward(create_graph=True) warns about a reference cycle
            (leaf ** 3).sum().backward(create_graph=True)  # leaf.grad is non-leaf: the mark says why
        y = leaf * 2
        graph = gl.draw(y, names={"leaf": leaf, "y": y}, highlight=[y, leaf])
        assert ".grad is non-leaf" in graph.source
        return graph.source, graph.svg()

    english = picture()
    speak("zh-CN")
    assert picture() == english


def test_each_pytorch_message_the_package_quotes_gets_a_chinese_gloss_and_none_in_english():
    from graphleaf_edu import errors

    quoted = [errors.GRAPH_LEAVES_MESSAGE, errors.COWARDLY_MESSAGE, *(message for message, _ in errors._GLOSSES)]
    assert all(errors.gloss(message) == "" for message in quoted)
    speak("zh-CN")
    glosses = [errors.gloss(message) for message in quoted]
    assert all(g.startswith("（意思是：") and g.endswith("）") and "\n" not in g for g in glosses), glosses
    assert errors.gloss("RuntimeError: something else") == ""


def test_text_tables_align_chinese_by_the_columns_it_takes():
    from graphleaf_edu.tables import display_width, text_table

    table = text_table(["结果", "x"], [["张量", "1"], ["ok", "22"]]).splitlines()
    assert [display_width(line.split("|")[0]) for line in (table[0], table[2], table[3])] == [5, 5, 5]
    assert table[1] == "-----+---"


def test_a_dataloader_run_reads_the_same_in_both_languages_but_its_words():
    run = {"start_method": "fork", "num_workers": 0, "deepcopy_in_getitem": True, "detach_at_construction": False}
    english = gl.run_loader(**run)
    english_summary = english.summary()
    speak("zh-CN")
    chinese = gl.run_loader(**run)
    fields = ("ok", "error_type", "error_line", "cause_line", "batches", "batch_shape")
    assert [getattr(chinese, f) for f in fields] == [getattr(english, f) for f in fields]
    assert not chinese.ok
    assert chinese.summary().startswith(english_summary + " （意思是：目前只有用户显式创建的张量")
    table = gl.outcome_table([chinese])
    assert table.startswith("启动方式") and "（主进程）" in table


# What may stay English in Chinese text: code in backticks, a line quoting an error (PyTorch's words,
# "RuntimeError: ..."), and words joined by dots, underscores, brackets or "=" (paths, calls, flags).
CODE = re.compile(r"`[^`]*`|^.*\b\w*(?:Error|Exception|Warning): .*$|\S*[._()\[\]=/<>@*]\S*", re.MULTILINE)
ENGLISH_RUN = re.compile(r"\b[A-Za-z]{2,}(?:[ ,;:-]+[A-Za-z]+){2,}\b")


def english_left(text: str) -> list[str]:
    """Runs of three or more English words left in ``text`` once code and quoted errors are set aside."""
    return ENGLISH_RUN.findall(CODE.sub(" ", text))


def test_the_english_check_finds_english_and_spares_code():
    assert english_left("拷贝发生在 train.py:7  copy.deepcopy(model)：`t.detach()` is enough") == []
    assert english_left("RuntimeError: Only Tensors created explicitly by the user\n原因：缓存的激活值") == []
    assert english_left("原因：cached activation in a module attribute") == ["cached activation in a module attribute"]


def views_in(lang: str) -> list[tuple[str, str, object]]:
    """Every scenario x fix view, the fix comparisons and the playground, as (name, text, what must not change)."""
    from graphleaf_edu import views

    speak(lang)
    found = []
    for key, scenario in gl.SCENARIOS.items():
        for fix in scenario.fix_keys():
            view = views.scenario_view(scenario, fix)
            found.append((f"{key}/{fix}", view.text(), (view.ok, view.error_line, view.graph and view.graph.source)))
    for scenario in views.model_scenarios():
        comparison = views.fix_comparison_view(scenario)
        found.append((f"comparison/{scenario.key}", comparison.table(), (comparison.columns, comparison.rows)))
    names = ", ".join(views.playground_namespace())  # code, as is Python's own NameError message
    for expression in (*views.PLAYGROUND_EXAMPLES, "", "x +", "y = x", "undefined * 2", "x.shape"):
        view = views.playground_view(expression)
        text = view.text().replace(names, "").replace("name 'undefined' is not defined", "")
        facts = view.info and dataclasses.replace(view.info, deepcopy_blocker=view.info.deepcopy_blocker is None)
        found.append((f"playground/{expression}", text, (view.ok, facts)))
    for name, task in views.TASKS.items():
        found.append((f"task/{name}", task.status(None), name))
    return found


def test_the_views_say_everything_in_chinese_and_show_the_same_runs():
    english = views_in("en")
    chinese = views_in("zh-CN")
    assert [(name, same) for name, _, same in chinese] == [(name, same) for name, _, same in english]
    left = {name: english_left(text) for name, text, _ in chinese if english_left(text)}
    assert left == {}
    changed = sum(zh != en for (_, zh, _), (_, en, _) in zip(chinese, english, strict=True))
    assert changed == len(english)


def objects_with_every_kind_of_culprit() -> dict[str, object]:
    """Fresh objects whose non-leaf tensors have different causes (and so different words)."""
    import types

    import torch
    from torch import nn

    x = torch.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        leaf_with_graph_grad = torch.ones(2, requires_grad=True)
        (leaf_with_graph_grad ** 3).sum().backward(create_graph=True)
        old_weight_norm = nn.utils.weight_norm(nn.Linear(2, 2))
    cached = nn.Linear(2, 2)
    cached.cache = cached(x)
    keeps_a_list = nn.Linear(2, 2)
    keeps_a_list.seen = [x * 2, x * 3]
    buffered = nn.BatchNorm1d(2)
    buffered.running_mean = x * 2
    optimizer = torch.optim.SGD([x], lr=0.1)
    optimizer.param_groups[0]["momentum"] = x * 0.5
    pruned = nn.utils.prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=0.5)
    dataset = torch.utils.data.TensorDataset(x * 2)
    tensor_with_attribute = torch.ones(2, requires_grad=True)
    tensor_with_attribute.extra = x * 2
    return {
        "tensor": x * 2, "leaf with a non-leaf .grad": leaf_with_graph_grad, "set": {x * 2},
        "cached": cached, "list on a module": keeps_a_list, "buffer": buffered, "optimizer": optimizer,
        "old weight_norm": old_weight_norm, "pruned": pruned, "dataset": dataset,
        "tensor attribute": tensor_with_attribute, "object attribute": types.SimpleNamespace(y=x * 2),
        "container": [x * 2], "logged": {"losses": [x.sum() * 2]}, "kv cache": {"past_key_values": (x * 2,)},
    }


def reports_in(lang: str) -> dict[str, tuple[str, list[tuple[str, str, str]], list[str]]]:
    """Each object's report, its findings' (path, kind, grad_fn), and its fixes and causes."""
    speak(lang)
    found = {}
    for name, obj in objects_with_every_kind_of_culprit().items():
        findings = gl.find_nonleaf(obj)
        found[name] = (findings.report(), [(f.path, f.kind, f.grad_fn) for f in findings],
                       [text for f in findings for text in (f.cause, f.fix)])
    return found


def test_explain_reports_the_same_findings_in_chinese_in_chinese_words():
    english, chinese = reports_in("en"), reports_in("zh-CN")
    assert {name: found for name, (_, found, _) in chinese.items()} == {
        name: found for name, (_, found, _) in english.items()}
    assert all(found for _, found, _ in english.values())
    assert len({kind for _, found, _ in english.values() for _, kind, _ in found}) >= 12
    for name, (report, _, words) in chinese.items():
        english_report, _, english_words = english[name]
        assert report.count("\n") == english_report.count("\n"), name
        assert all(zh != en for zh, en in zip(words, english_words, strict=True)), name
        assert english_left(report) == [], (name, report)


def notes_for(lang: str) -> list[str]:
    import copy

    speak(lang)
    model = objects_with_every_kind_of_culprit()["list on a module"]
    model.cache = model(model.weight.sum(0))
    try:
        with gl.explain_errors():
            copy.deepcopy(model)
    except RuntimeError as error:
        return list(error.__notes__)
    raise AssertionError("copy.deepcopy did not raise")


def test_the_notes_on_an_error_are_chinese_and_say_as_much_as_the_english():
    english, chinese = notes_for("en"), notes_for("zh-CN")
    assert chinese[0].startswith("graphleaf_edu: （意思是：目前只有用户显式创建的张量")
    assert len(chinese) == len(english) + 1  # PyTorch's message glossed first
    assert all(note.startswith("graphleaf_edu: ") for note in chinese)
    assert [note.split("：")[0].split(" ")[1] for note in chinese if "root." in note] == [
        note.split(":")[1].strip() for note in english if "root." in note]
    assert {note: english_left(note) for note in chinese if english_left(note)} == {}


def run_the_runner(*arguments: str, **environment: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != i18n.ENV_VAR} | environment
    return subprocess.run([sys.executable, "-m", "graphleaf_edu", *arguments], capture_output=True, text=True,
                          timeout=120, check=False, env=env)


def test_the_runner_speaks_chinese_with_lang_or_the_environment(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import copy, torch\nmodel = torch.nn.Linear(2, 2)\nmodel.cache = model(torch.ones(1, 2))\n"
                      "copy.deepcopy(model)\n")
    for run in (run_the_runner("--lang", "zh-CN", str(script)), run_the_runner("--lang=zh_CN", str(script)),
                run_the_runner(str(script), GRAPHLEAF_EDU_LANG="zh_CN")):
        assert run.returncode == 1
        assert "graphleaf_edu: root.cache：模块属性里缓存的激活值（grad_fn=AddmmBackward0）" in run.stderr
        assert f"graphleaf_edu: 拷贝发生在 {script}:4  copy.deepcopy(model)" in run.stderr
        assert "RuntimeError: Only Tensors created explicitly by the user (graph leaves)" in run.stderr
    english = run_the_runner(str(script))
    assert "graphleaf_edu: root.cache: cached activation in a module attribute" in english.stderr
    kept_going = run_the_runner("--keep-going", "--lang", "zh-CN", str(script)).stderr.splitlines()
    start = next(n for n, line in enumerate(kept_going) if line.startswith("graphleaf_edu --keep-going: "))
    summary = [kept_going[start].removeprefix("graphleaf_edu --keep-going: "), *kept_going[start + 1:]]
    assert summary[0].startswith("这次运行中有 1 个原因。"), summary
    assert "   原因：模块属性里缓存的激活值（grad_fn=AddmmBackward0）" in summary
    assert english_left("\n".join(summary)) == []
    usage = run_the_runner("--lang", "zh-CN")
    assert usage.returncode == 2 and usage.stderr.startswith("用法：python -m graphleaf_edu")
    unknown = run_the_runner("--lang", "fr", str(script))
    assert unknown.returncode == 2 and "no words in 'fr'" in unknown.stderr


def test_the_gpu_kernels_rules_equate_the_chinese_lines_that_differ_on_a_gpu():
    """nbval's GPU run compares Chinese outputs too: the lines it equates in English, it equates in Chinese."""
    from test_gpu_readiness import sanitized

    from graphleaf_edu import gpu

    speak("zh-CN")
    assert sanitized(i18n.say(gpu.NEEDS_GPU)) == sanitized(i18n.say(gpu.AS_EXPECTED)) == "GPU lesson:"
    status = "torch {running} | graphleaf_edu ready | Graphviz dot found"
    assert sanitized(i18n.say(status, running="2.13")) == sanitized(i18n.say(status, running="2.11"))
    line = "{number}. {where}  ({grad_fn}, shape {shape}, {device})"
    cpu, cuda = (i18n.say(line, number=1, where="root.w", grad_fn="MulBackward0", shape=(3,), device=device)
                 for device in ("cpu", "cuda"))
    assert sanitized(cpu) == sanitized(cuda) != cpu


def test_an_exercise_says_its_title_status_and_the_framework_words_in_chinese():
    from graphleaf_edu.exercises.leaf_flags import check_leaf_flags

    def predict():
        raise NotImplementedError()

    def predict_a_list():
        return []

    english = [check_leaf_flags(answer).message for answer in (3, predict, predict_a_list)]
    speak("zh-CN")
    not_a_function, stub, not_a_dict = (check_leaf_flags(answer) for answer in (3, predict, predict_a_list))
    assert not_a_function.message.startswith("✘ 练习 1 · 预测三个标志 — 再试一次：请传入你的函数本身")
    assert stub.message.startswith("… 练习 1 · 预测三个标志 — 还没完成：predict() 仍然抛出 NotImplementedError")
    assert "应该返回一个以 'c', " in not_a_dict.message
    assert [f.status for f in (not_a_function, stub, not_a_dict)] == ["try again", "not yet", "try again"]
    assert english[0].startswith("✘ Exercise 1 · leaf flags — try again: pass your function itself")


def test_every_message_of_the_message_file_is_in_the_catalog():
    """Every word of graphleaf_edu/messages.toml (the notes, the runner, each cause and fix, ...) is a msgid
    of the catalog: none stays English under zh_CN."""
    from graphleaf_edu import causes, messages

    known = {message.id for message in catalogs.read("zh_CN") if isinstance(message.id, str)}
    words = messages.words()
    said = {f"{name}.{field}": getattr(causes.known(name), field) for name in messages.records("causes")
            for field in ("cause", "fix")}
    assert len(words) > 50 and len(said) > 40
    assert {name: text for name, text in {**words, **said}.items() if text not in known} == {}
