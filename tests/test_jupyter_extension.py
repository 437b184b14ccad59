"""graphleaf_edu_jupyter (the save hook) without a browser: what the hook keeps, and how it is turned on."""
import copy
import json
from types import SimpleNamespace

import graphleaf_edu_jupyter

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
