"""The package's message catalogs: extract every message from the code, update each language's ``.po``
and compile it to the ``.mo`` the package loads (``make catalogs``; docs/translating.md).

    python tools/catalogs.py           extract, update, compile; then list what still needs a translator
    python tools/catalogs.py --check   change nothing; exit 1 if a catalog is stale or incomplete

A message reaches the catalogs by being written in ``graphleaf_edu/messages.toml`` (every string of it but
the names ``graphleaf_edu.messages.NAMES``), as a literal inside ``N_(...)``, ``say(...)`` or
``say_n(..., ...)`` (graphleaf_edu/i18n.py), or as an exercise's title in ``@exercise(...)``. The files carry no dates or line numbers, so running
this twice changes nothing and a moved line makes no diff. They carry no ``#`` comments either: a
note for the translator is a ``# Translators:`` comment in the code (it reaches the ``.po`` as ``#.``),
and the previous English of a changed message (``#| msgid``) is not kept, as it outlives the change
and ends up above an unrelated message.
"""
from __future__ import annotations

import io
import re
import sys
import tomllib
from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "graphleaf_edu"
LOCALE_DIR = PACKAGE / "locale"
DOMAIN = "graphleaf_edu"
LANGUAGES = ("zh_CN",)
# The exercises' titles are marked by the decorator that names them: @exercise("Exercise 1 · ...").
KEYWORDS = {"N_": None, "say": None, "say_n": (1, 2), "exercise": None}
TRANSLATOR_COMMENTS = ("Translators:",)
TOML_TABLE = re.compile(r"^\[(?P<name>[\w.]+)\]\s*(#.*)?$")
TOML_KEY = re.compile(r"^(?P<key>\w+)\s*=\s*(?P<value>.*)$")
# Fixed, so that the files change only when their messages do.
DATE = datetime(2026, 12, 1, tzinfo=UTC)
HEADER = "# The words of graphleaf_edu ({language}). Written by tools/catalogs.py; translate the msgstr lines.\n#"
HEADER_FIELDS = {
    "version": tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"],
    "msgid_bugs_address": "https://github.com/graphleaf-edu/graphleaf-edu/issues",
    "last_translator": "graphleaf-edu <https://github.com/graphleaf-edu/graphleaf-edu>",
    "language_team": "Simplified Chinese <https://github.com/graphleaf-edu/graphleaf-edu>",
}
FIELD = re.compile(r"\{([^{}]*)\}")


def po_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(language: str) -> Path:
    return po_path(language).with_suffix(".mo")


def template() -> Catalog:
    """Every message the package's code marks, in the order the files and lines give them."""
    catalog = Catalog(project="graphleaf-edu", domain=DOMAIN, creation_date=DATE, fuzzy=False,
                      header_comment=HEADER.format(language="template"), **HEADER_FIELDS)
    found = extract_from_dir(str(PACKAGE), method_map=METHODS, keywords=KEYWORDS, comment_tags=TRANSLATOR_COMMENTS,
                             strip_comment_tags=True)
    for filename, lineno, message, comments, context in sorted(found, key=lambda hit: (hit[0], hit[1])):
        catalog.add(message, None, [(f"graphleaf_edu/{filename}", lineno)], auto_comments=comments,
                    context=context)
    return catalog


def extract_toml(fileobj: IO[bytes], keywords: object, comment_tags: Collection[str],
                 options: object) -> Iterator[tuple[int, str, str, list[str]]]:
    """Babel's extraction method for ``messages.toml``: each string of the file, at the line of its key,
    but the values of the fields that are names (``graphleaf_edu.messages.NAMES``: ``kind``, ``grad_fn``).
    A ``# Translators:`` comment right above a key reaches the ``.po`` as ``#.``."""
    from graphleaf_edu.messages import NAMES

    text = fileobj.read().decode("utf-8")
    lines: dict[tuple[str, ...], tuple[int, list[str]]] = {}  # (table..., key) -> its line, its comments
    table: tuple[str, ...] = ()
    above: list[str] = []
    closing = ""  # inside a multi-line string: the quotes that end it
    for number, line in enumerate(text.splitlines(), 1):
        if closing:
            closing = "" if closing in line else closing
            continue
        stripped = line.strip()
        key, header = TOML_KEY.match(line), TOML_TABLE.match(line)
        if stripped.startswith("#"):
            comment = stripped.lstrip("#").strip()
            above = [*above, comment] if above or comment.startswith(tuple(comment_tags)) else []
            continue
        if header:
            table = tuple(header["name"].split("."))
        elif key:
            lines[(*table, key["key"])] = number, above
            quotes = key["value"][:3]
            if quotes in ("\"\"\"", "'''") and quotes not in key["value"][3:]:
                closing = quotes
        above = []

    def strings(value: object, path: tuple[str, ...]) -> Iterator[tuple[int, str, str, list[str]]]:
        if isinstance(value, dict):
            for name, inner in value.items():
                yield from strings(inner, (*path, name))
        elif isinstance(value, str) and path[-1] not in NAMES:
            number, comments = lines[path]
            yield number, "", value, comments

    yield from strings(tomllib.loads(text), ())


# The package's words: its message file and its Python code.
METHODS = [("messages.toml", extract_toml), ("**.py", "python")]


def updated(language: str, source: Catalog) -> Catalog:
    """The language's catalog with ``source``'s messages: translations kept, new ones empty, a changed
    English message kept as a fuzzy guess for the translator, messages gone from the code dropped."""
    path = po_path(language)
    if path.exists():
        with path.open("rb") as file:
            catalog = read_po(file, locale=language, domain=DOMAIN)
    else:
        catalog = Catalog(locale=language, domain=DOMAIN, project="graphleaf-edu", fuzzy=False)
    catalog.header_comment = HEADER.format(language=language)
    for name, value in HEADER_FIELDS.items():
        setattr(catalog, name, value)
    catalog.update(source, update_header_comment=False)
    for message in catalog:
        message.user_comments = []  # a stale previous msgid read back as a comment ("# | msgid ...")
        message.previous_id = []
    catalog.creation_date = catalog.revision_date = DATE
    catalog.obsolete.clear()
    return catalog


def po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, catalog, width=0, include_lineno=False, ignore_obsolete=True, include_previous=False)
    return out.getvalue()


def mo_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def read(language: str) -> Catalog:
    with po_path(language).open("rb") as file:
        return read_po(file, locale=language, domain=DOMAIN)


def problems(catalog: Catalog) -> list[str]:
    """Each message the translator still owes: missing, a fuzzy guess, or ``{fields}`` that differ."""
    found = []
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if not all(strings):
            found.append(f"untranslated: {ids[0]!r}")
        elif message.fuzzy:
            found.append(f"fuzzy (the English changed; check the translation): {ids[0]!r}")
        elif {f for s in strings for f in fields(s)} != set(fields(ids[0])) | set(fields(ids[-1])):
            found.append(f"fields differ from the English {sorted(fields(ids[0]))}: {ids[0]!r}")
    return found


def fields(text: str) -> list[str]:
    return sorted(FIELD.findall(text.replace("{{", "").replace("}}", "")))


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    source = template()
    failed = False
    for language in LANGUAGES:
        catalog = updated(language, source)
        po, mo = po_bytes(catalog), mo_bytes(catalog)
        for path, content in ((po_path(language), po), (mo_path(language), mo)):
            if path.exists() and path.read_bytes() == content:
                continue
            if check:
                print(f"{path.relative_to(ROOT)} is stale: run make catalogs")
                failed = True
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
                print(f"wrote {path.relative_to(ROOT)}")
        owed = problems(catalog)
        total = sum(1 for message in catalog if message.id)
        print(f"{language}: {total - len(owed)} of {total} messages translated")
        for line in owed:
            print(f"  {line}")
        failed |= bool(owed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
