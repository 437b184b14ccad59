"""The package's words, read from the one file they are written in: ``graphleaf_edu/messages.toml``.

The notes added to an error (``graphleaf_edu.on_error``), the runner's words (``python -m
graphleaf_edu``), the ``--keep-going`` summary, the README's error index (``tools/error_index.py``),
``explain``'s report (``graphleaf_edu.findings``), ``safe_deepcopy``, ``check_copyable``, each cause and
its fix (``graphleaf_edu.causes``) and Exercise 1's hints are data, not code: ``M.COPIED_AT`` is the
English message of that name (from any section of words, such as ``[notes]``), ``records("causes")`` the
records of a section of tables (``[causes.CACHED]``). Each message reaches the user through
``graphleaf_edu.i18n.say`` (re-exported here as ``say``), which fills in its ``{fields}`` and translates
it; ``tools/catalogs.py`` extracts the file's strings for the catalogs. The file is read on first use,
not at import. A bottom layer: it imports only ``i18n``.

    >>> from graphleaf_edu import messages as M
    >>> M.say(M.SENT_AT, place="train.py:72  queue.put(logits)")
    'sent at train.py:72  queue.put(logits)'
"""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Final

from graphleaf_edu.i18n import say

# CLONE_RULE, the one message the lessons print (`messages.say(messages.CLONE_RULE)`), comes from __getattr__.
__all__ = ["CLONE_RULE", "FILE", "NAMES", "Record", "records", "say", "words"]  # noqa: F822

FILE: Final = Path(__file__).resolve().parent / "messages.toml"
# The fields of a record that hold names, not words: never translated (tools/catalogs.py skips them).
NAMES: Final = frozenset({"kind", "grad_fn"})

NOTE_PREFIX = "graphleaf_edu: "  # a name, the same in every language (notes are found by it)
KG_PREFIX = "graphleaf_edu --keep-going: "
KG_RULE = "=" * 72  # the line above the summary's header: the script's own output ends there

Record = dict[str, str | bool]  # one [section.NAME] table: its fields' words, names and flags


@cache
def _read() -> tuple[dict[str, str], dict[str, dict[str, Record]]]:
    """The file read once: its messages by name (the sections of words merged), its sections of records."""
    import tomllib  # here, not at the top: importing the package reads no words

    messages: dict[str, str] = {}
    tables: dict[str, dict[str, Record]] = {}
    for section, content in tomllib.loads(FILE.read_text(encoding="utf-8")).items():
        if all(isinstance(value, str) for value in content.values()):
            repeated = sorted(messages.keys() & content.keys())
            if repeated:
                raise ValueError(f"{FILE.name}: [{section}] repeats the names {repeated}; a name is unique in the file")
            messages.update(content)
        else:
            tables[section] = content
    return messages, tables


def words() -> dict[str, str]:
    """Every message of the sections of words, by name (a copy)."""
    return dict(_read()[0])


def records(section: str) -> dict[str, Record]:
    """The ``[section.NAME]`` tables of ``section``, by NAME in the file's order (``records("causes")``)."""
    return _read()[1][section]


def __getattr__(name: str) -> str:
    """``M.COPIED_AT``: the English message of that name, to be said with ``say`` (PEP 562)."""
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return _read()[0][name]
    except KeyError:
        raise AttributeError(f"{FILE.name} has no message named {name!r}") from None
