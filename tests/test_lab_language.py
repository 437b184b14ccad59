"""JupyterLab in Chinese for those who choose it: the student environment's language pack is installed,
English stays the default, and a student's choice of 中文 turns the menus Chinese (Chromium)."""
import json
import urllib.request

import pytest
from jupyterlab_process import running_lab

TRANSLATION_PLUGIN = "@jupyterlab/translation-extension:plugin"
CHINESE = "zh_CN"


def served(url: str, path: str) -> dict:
    with urllib.request.urlopen(f"{url}{path}") as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab for the module; ``locale_setting`` is the user settings file a choice of language writes."""
    scratch = tmp_path_factory.mktemp("jupyterlab")
    with running_lab(scratch, scratch) as url:
        yield url, scratch / "lab-settings" / f"{TRANSLATION_PLUGIN.replace(':', '/')}.jupyterlab-settings"


def test_the_chinese_pack_is_served_and_english_stays_the_default(lab):
    url, locale_setting = lab
    assert not locale_setting.exists(), "no test left a choice of language behind"
    packs = served(url, "/lab/api/translations")["data"]
    setting = served(url, f"/lab/api/settings/{TRANSLATION_PLUGIN}")
    chinese = served(url, f"/lab/api/translations/{CHINESE}")["data"]
    assert CHINESE in packs, f"jupyterlab-language-pack-zh-cn is not installed: {sorted(packs)}"
    assert "中文" in packs[CHINESE]["nativeName"]
    assert setting["schema"]["properties"]["locale"]["default"] == "en"  # graphleaf_edu_jupyter's default
    assert setting["settings"] == {}  # a new student has chosen nothing
    assert chinese["jupyterlab"]["Edit"] == ["编辑"]


def menu_bar(page) -> list[str]:
    page.wait_for_selector(".lm-MenuBar-itemLabel", timeout=60_000)
    return page.locator(".lm-MenuBar-itemLabel").all_inner_texts()


@pytest.mark.browser
def test_a_new_student_sees_english_menus_and_can_choose_chinese(lab, browser):
    url, locale_setting = lab
    assert not locale_setting.exists(), "no test left a choice of language behind"
    try:
        page = browser.new_context(locale="zh-CN").new_page()  # a browser set to Chinese changes nothing
        try:
            page.goto(f"{url}/lab")
            assert menu_bar(page)[:2] == ["File", "Edit"]
            page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
            page.locator(".lm-Menu-itemLabel", has_text="Language").click()
            choice = page.locator(".lm-Menu-itemLabel", has_text="中文")
            choice.first.wait_for(timeout=10_000)
            choice.first.click()
            page.locator(".jp-Dialog-button.jp-mod-accept").click()  # "Change and reload"
            page.wait_for_function("() => document.querySelector('.lm-MenuBar-itemLabel')?.innerText === '文件'",
                                   timeout=60_000)
            assert menu_bar(page)[:2] == ["文件", "编辑"]
        finally:
            page.context.close()
        assert served(url, f"/lab/api/settings/{TRANSLATION_PLUGIN}")["settings"] == {"locale": CHINESE}
        assert locale_setting.exists(), "the choice is the user settings file this module's fixture names"
    finally:
        locale_setting.unlink(missing_ok=True)  # the server's next student has chosen nothing again
