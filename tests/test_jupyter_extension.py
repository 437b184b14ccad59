"""graphleaf_edu_jupyter: what the save hook keeps and how it is turned on, and JupyterLab's quiet first
screen (no news prompt) in the environments it sets up."""
import copy
import json
import sys
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
from jupyterlab_process import (
    NEW_STUDENT,
    NEWS_PROMPT,
    NOTIFICATION_SETTINGS,
    running_lab,
)

import graphleaf_edu_jupyter

NOTIFICATION_PLUGIN = "@jupyterlab/apputils-extension:notification"
STORED = {"name": "python", "version": "3.11.7", "pygments_lexer": "ipython3"}
KERNEL = {"name": "python", "version": "3.12.1", "pygments_lexer": "ipython3"}


def notebook_model(language_info):
    return {"type": "notebook", "content": {"cells": [], "metadata": {"language_info": dict(language_info)}}}


def test_the_stored_language_info_survives_a_save(tmp_path):
    (tmp_path / "lesson.ipynb").write_text(json.dumps(notebook_model(STORED)["content"]))
    model = notebook_model(KERNEL)
    graphleaf_edu_jupyter.keep_stored_language_info(model=model, path="lesson.ipynb",
                                        contents_manager=SimpleNamespace(root_dir=str(tmp_path)))
    assert model["content"]["metadata"]["language_info"] == STORED


def test_new_files_other_types_and_unreadable_files_are_left_alone(tmp_path):
    manager = SimpleNamespace(root_dir=str(tmp_path))
    (tmp_path / "broken.ipynb").write_text("{not json")
    (tmp_path / "bare.ipynb").write_text(json.dumps({"cells": [], "metadata": {}}))
    for path in ("new.ipynb", "broken.ipynb", "bare.ipynb"):
        model = notebook_model(KERNEL)
        graphleaf_edu_jupyter.keep_stored_language_info(model=model, path=path, contents_manager=manager)
        assert model == notebook_model(KERNEL), path
    text = {"type": "file", "content": "print(1)"}
    graphleaf_edu_jupyter.keep_stored_language_info(model=text, path="x.py", contents_manager=manager)
    assert text == {"type": "file", "content": "print(1)"}
    model = notebook_model(KERNEL)
    unchanged = copy.deepcopy(model)
    graphleaf_edu_jupyter.keep_stored_language_info(model=model, path="new.ipynb", contents_manager=SimpleNamespace())
    assert model == unchanged


def test_enable_writes_the_server_config_that_turns_the_extension_on(tmp_path):
    written = graphleaf_edu_jupyter.enable(prefix=str(tmp_path))
    assert written == tmp_path / "etc" / "jupyter" / "jupyter_server_config.d" / "graphleaf_edu_jupyter.json"
    assert json.loads(written.read_text()) == {"ServerApp": {"jpserver_extensions": {"graphleaf_edu_jupyter": True}}}
    assert graphleaf_edu_jupyter._jupyter_server_extension_points() == [{"module": "graphleaf_edu_jupyter"}]


def test_quiet_first_screen_writes_jupyterlabs_setting_defaults(tmp_path):
    written = graphleaf_edu_jupyter.quiet_first_screen(prefix=str(tmp_path))
    assert written == tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / "graphleaf-edu.json"
    assert json.loads(written.read_text()) == graphleaf_edu_jupyter.LAB_DEFAULTS


def test_the_defaults_name_real_settings_of_the_installed_jupyterlab():
    """Each default is a property of the installed JupyterLab's own schema, with a value it allows."""
    schemas = Path(sys.prefix, "share", "jupyter", "lab", "schemas")
    for plugin, values in graphleaf_edu_jupyter.LAB_DEFAULTS.items():
        package, name = plugin.split(":")
        schema = json.loads((schemas / package / f"{name}.json").read_text())
        jsonschema.validate(values, schema)
        assert set(values) <= set(schema["properties"]), plugin
    notification = json.loads((schemas / "@jupyterlab" / "apputils-extension" / "notification.json").read_text())
    assert notification["properties"]["fetchNews"]["default"] == "none", "JupyterLab's own default asks"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab for the module, serving a first lesson; each test writes the user setting it is about
    into the server's settings folder before it asks (the server reads user settings at every request, a
    page at every load), and the next test writes its own."""
    scratch = tmp_path_factory.mktemp("jupyterlab")
    (scratch / "root").mkdir()
    (scratch / "root" / "lesson.ipynb").write_text(json.dumps(notebook_model(STORED)["content"] | {
        "nbformat": 4, "nbformat_minor": 5}))
    with running_lab(scratch / "root", scratch, settings=NEW_STUDENT) as url:
        yield url, scratch / "lab-settings" / NOTIFICATION_SETTINGS


def test_this_environments_jupyterlab_serves_the_quiet_defaults(lab):
    """tools/make_venv.sh built this environment as it builds `make lab`'s: its server's settings say Never."""
    assert Path(sys.prefix, graphleaf_edu_jupyter.LAB_DEFAULTS_FILE).exists(), "run `make setup`"
    url, user_settings = lab
    user_settings.write_text(json.dumps(NEW_STUDENT[NOTIFICATION_SETTINGS]))
    served = json.loads(urllib.request.urlopen(f"{url}/lab/api/settings/{NOTIFICATION_PLUGIN}").read())
    assert served["schema"]["properties"]["fetchNews"]["default"] == "false"
    assert served["schema"]["properties"]["checkForUpdates"]["default"] is False
    assert served["settings"] == {}


@pytest.mark.browser
@pytest.mark.parametrize("user_setting, prompted", [({}, False), ({"fetchNews": "none"}, True)],
                         ids=["new student", "asked for the prompt"])
def test_a_new_student_meets_no_news_prompt(lab, browser, user_setting, prompted):
    """The first lesson in Chromium: no prompt for a new student; a user setting of "none" still brings it."""
    url, user_settings = lab
    user_settings.write_text(json.dumps(user_setting))
    served = json.loads(urllib.request.urlopen(f"{url}/lab/api/settings/{NOTIFICATION_PLUGIN}").read())
    assert served["settings"] == user_setting, "the server serves the setting this test wrote"
    page = browser.new_page()
    try:
        page.goto(f"{url}/lab/tree/lesson.ipynb")
        page.wait_for_selector(".jp-Notebook", timeout=60_000)
        if prompted:
            page.get_by_text(NEWS_PROMPT).wait_for(timeout=30_000)
        else:
            page.wait_for_timeout(5_000)  # the prompt comes once the lab is restored, within a second here
            assert page.get_by_text(NEWS_PROMPT).count() == 0
    finally:
        page.close()
