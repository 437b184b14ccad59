"""The package's words in the user's language: English by default, Simplified Chinese when asked.

The language is chosen by ``gl.setup_notebook(lang="zh-CN")``, ``python -m graphleaf_edu --lang zh-CN``,
``set_language`` or the ``GRAPHLEAF_EDU_LANG`` environment variable (``zh_CN``), never by the
machine's locale, so that what a notebook stores is the same on every machine. The catalogs
(``locale/<lang>/LC_MESSAGES/graphleaf_edu.mo``, compiled by ``make catalogs``) load on first use.

    N_(text)             marks a constant for the catalogs; it is translated where it is said
    say(text, **fields)  the text in the current language, its ``{fields}`` filled in
    say_n(one, many, n, **fields)   the same, for a count (``{n}`` is filled in too)

A bottom layer: it imports nothing from the package.

    >>> say("copied at {place}", place="train.py:7")
    'copied at train.py:7'
"""
from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gettext import NullTranslations

__all__ = ["ENV_VAR", "LANGUAGES", "N_", "language", "normalize", "say", "say_n", "set_language", "speaking"]

DOMAIN = "graphleaf_edu"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
ENV_VAR = "GRAPHLEAF_EDU_LANG"
DEFAULT = "en"
LANGUAGES = {"en": "English", "zh_CN": "简体中文"}
# What users type, lower-cased with "-" read as "_" -> the catalog's name.
_SPELLINGS = {
    "en": "en", "en_us": "en", "en_gb": "en", "english": "en",
    "zh": "zh_CN", "zh_cn": "zh_CN", "zh_hans": "zh_CN", "zh_hans_cn": "zh_CN", "chinese": "zh_CN",
}

_chosen: str | None = None


def normalize(lang: str) -> str:
    """``"zh-CN"``, ``"zh_CN"``, ``"zh-Hans"``, ``"zh"`` -> ``"zh_CN"``; ``"en"``, ``"en-US"`` -> ``"en"``.

    Raises:
        ValueError: a language the package has no catalog for (the message lists those it has).
    """
    key = lang.strip().replace("-", "_").lower().partition(".")[0]  # "zh_CN.UTF-8" -> "zh_cn"
    if key not in _SPELLINGS:
        known = ", ".join(f"{code} ({name})" for code, name in LANGUAGES.items())
        raise ValueError(f"graphleaf_edu has no words in {lang!r}; it speaks {known}, e.g. lang='zh-CN'")
    return _SPELLINGS[key]


def set_language(lang: str | None) -> str:
    """Speak ``lang`` from now on in this process (None: back to ``GRAPHLEAF_EDU_LANG`` or English).

    Returns the language now spoken, as its catalog name (``"en"``, ``"zh_CN"``)."""
    global _chosen
    _chosen = None if lang is None else normalize(lang)
    return language()


@contextlib.contextmanager
def speaking(lang: str) -> Iterator[None]:
    """Speak ``lang`` inside the ``with`` block only (for words that must not change with the language,
    such as a picture's labels), then whatever was spoken before."""
    global _chosen
    before = _chosen
    _chosen = normalize(lang)
    try:
        yield
    finally:
        _chosen = before


def language() -> str:
    """The language the package speaks now: the one set, else ``GRAPHLEAF_EDU_LANG``, else English."""
    if _chosen is not None:
        return _chosen
    return _from_environment(os.environ.get(ENV_VAR, ""))


@cache
def _from_environment(value: str) -> str:
    if not value.strip():
        return DEFAULT
    try:
        return normalize(value)
    except ValueError as unknown:  # never let a typo in a variable hide the error being explained
        warnings.warn(f"{ENV_VAR}={value!r} ignored, speaking English: {unknown}", stacklevel=3)
        return DEFAULT


def N_(message: str) -> str:
    """Mark ``message`` for the catalogs without translating it yet (a module constant is made at
    import time, before a language is chosen); ``say`` translates it when it is said."""
    return message


def say(message: str, /, **fields: object) -> str:
    """``message`` in the current language, with its ``{fields}`` filled in: the one way a message
    reaches a user (a message without fields is returned as it is, braces and all)."""
    text = _catalog(language()).gettext(message)
    return text.format(**fields) if fields else text


def say_n(singular: str, plural: str, n: int, /, **fields: object) -> str:
    """``singular`` or ``plural`` as the language counts ``n``, with ``{n}`` and ``{fields}`` filled in."""
    return _catalog(language()).ngettext(singular, plural, n).format(n=n, **fields)


@cache
def _catalog(lang: str) -> NullTranslations:
    import gettext  # here, not at the top: importing the package costs nothing for the words

    if lang == DEFAULT:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[lang])
