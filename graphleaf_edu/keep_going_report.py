"""The summary ``python -m graphleaf_edu --keep-going`` prints at exit, after the script's own output: a rule
that sets it apart, one header line (the prefix, the number of causes, what the script's printed results are
worth), one block per cause.

Each block names the tensor's path (or, for the object copied or sent itself, what it was), its cause,
the lines that copied or sent, stored and created it, and the change to the storing line where one is
safe (``graphleaf_edu.storing``), else the fix in words. The advice is said once, at the end.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from graphleaf_edu import messages as M
from graphleaf_edu import on_error, places
from graphleaf_edu.errors import COWARDLY, GRAPH_LEAVES, WORKER_ERROR, error_line
from graphleaf_edu.findings import Finding
from graphleaf_edu.i18n import say, say_n
from graphleaf_edu.storing import Edit, Store

_STACK_OUT = "stack(): functions with out=... arguments don't support automatic differentiation"
_LAST_INDEX = re.compile(r"\[(\d+)\](?!.*\[\d+\])")


@dataclass
class Failure:
    """One cause, as the summary says it: what, where it was copied or sent, stored, created, and its fix."""

    operation: str  # M.COPIED_AT, M.SENT_AT or M.CHECKED_AT
    place: str | None
    root_type: str
    how: str  # how the root was reached, in words
    finding: Finding
    created: str | None
    store: Store | None = None
    library: str | None = None  # the module that made the copy, where it is code the user does not own
    handled: bool = False
    times: int = 1
    ranks: set[int] = field(default_factory=set)


def summary(failures: list[Failure], stopped_by: BaseException | None = None, fork_detached: bool = False,
            patch: str | None = None, missing_ranks: list[int] | None = None) -> str:
    if not failures:
        lines = [M.say(M.KG_NONE)]
    else:
        groups = grouped(failures)
        lines = [say_n(
            "{n} cause in this run. The script went on with the tensor detached where it was copied or sent, so "
            "what it printed above is what a fixed run prints, unless it computed gradients through that copy.",
            "{n} causes in this run. The script went on with each tensor detached where it was copied or sent, so "
            "what it printed above is what a fixed run prints, unless it computed gradients through such a copy.",
            len(groups))]
        for number, (failure, group) in enumerate(groups, 1):
            lines += ["", *_entry(number, failure, group)]
        lines += ["", *_advice(failures, patch)]
    if fork_detached:
        lines += ["", M.say(M.KG_FORK_DETACHED)]
    if missing_ranks:
        lines += ["", say("rank {ranks} did not report its causes in time (it stopped before the end of its run)",
                          ranks=", ".join(map(str, missing_ranks)))]
    if stopped_by is not None:
        lines += ["", M.say(M.KG_STOPPED, error=error_line(stopped_by)), *_limits_met(stopped_by)]
    return f"{M.KG_RULE}\n{M.KG_PREFIX}" + "\n".join(lines)


def edits(failures: list[Failure]) -> list[Edit]:
    """The changes the summary shows, each once, in file and line order."""
    found = {(f.store.edit.filename, f.store.edit.lineno): f.store.edit
             for f in failures if f.store is not None and f.store.edit is not None}
    return [found[key] for key in sorted(found)]


def grouped(failures: list[Failure]) -> list[tuple[Failure, on_error.FindingGroup]]:
    """Failures at the same line, of the same kind, grouped by their index (``root.losses[0..19]``)."""
    by_place: dict[tuple[Any, ...], list[Failure]] = {}
    for failure in failures:
        key = (failure.operation, failure.place, failure.root_type, failure.how, failure.handled)
        by_place.setdefault(key, []).append(failure)
    result = []
    for same_place in by_place.values():
        same_place.sort(key=_list_order)  # one list's items together, whichever copy met them first
        first_of = {id(f.finding): f for f in same_place}
        for group in on_error.grouped([f.finding for f in same_place]):
            result.append((first_of[id(group.first)], group))
    return result


def _list_order(failure: Failure) -> tuple[str, int, str]:
    """A path without its last index, then that index (``root.maps[10]`` after ``root.maps[9]``)."""
    where = failure.finding.where
    match = _LAST_INDEX.search(where)
    return (where, -1, "") if match is None else (where[:match.start()], int(match.group(1)), where[match.end():])


def _entry(number: int, failure: Failure, group: on_error.FindingGroup) -> list[str]:
    finding = group.first
    if group.where == "root":
        lines = [M.say(M.KG_ITSELF, number=number, type_name=failure.root_type, how=failure.how)]
    else:
        tensors = M.say(" ({count} tensors)", count=group.count) if group.count > 1 else ""
        if failure.root_type[:1].lower() in "aeiou":
            root_is = say("root is an {type_name}: {how}", type_name=failure.root_type, how=failure.how)
        else:
            root_is = say("root is a {type_name}: {how}", type_name=failure.root_type, how=failure.how)
        lines = [f"{number}. {group.where}{tensors}", f"   {root_is}"]
    times = M.say(M.KG_TIMES, times=failure.times) if failure.times > 1 else ""
    lines.append("   " + say("cause: {cause} (grad_fn={grad_fn})", cause=finding.cause, grad_fn=finding.grad_fn))
    lines.append("   " + M.say(failure.operation, place=(failure.place or M.say(M.KG_NO_USER_LINE)) + times))
    if failure.ranks:
        lines.append("   " + M.say(M.KG_RANKS, ranks=", ".join(map(str, sorted(failure.ranks)))))
    if failure.library:
        lines.append("   " + M.say(M.KG_IN_LIBRARY, module=failure.library))
    if failure.store is not None and places.frame_place(failure.store.frame) != failure.place:  # not the sending line itself
        lines.append("   " + say("stored at {place}", place=places.function_place(failure.store.frame)))
    if failure.created:
        lines.append(f"   {failure.created}")
    edit = failure.store.edit if failure.store is not None else None
    if edit is not None:
        where = f"{places.shown_path(edit.filename)}:{edit.lineno}"
        lines += ["   " + M.say(M.KG_CHANGE_AT, where=where), f"       {edit.before.strip()}", f"     → {edit.after.strip()}"]
    else:
        lines.append("   " + say("fix: {fix}", fix=finding.fix))
    if failure.handled:
        lines.append("   " + M.say(M.KG_HANDLED))
    return lines


def _advice(failures: list[Failure], patch: str | None) -> list[str]:
    changed = bool(edits(failures))
    lines = [M.say(M.KG_CHANGES_KEEP)] if changed else []
    lines.append(M.say(M.CLONE_RULE))
    if changed:
        lines.append(M.say(M.KG_PATCH_WRITTEN, file=patch) if patch else M.say(M.KG_PATCH_HINT))
    return lines


def _limits_met(error: BaseException) -> list[str]:
    text = "\n".join(str(e) for e in on_error.chain_of(error))
    if WORKER_ERROR in text and _STACK_OUT in text:
        return [M.say(M.KG_LIMIT_WORKER_STACK)]
    if GRAPH_LEAVES in text or COWARDLY in text:
        return [M.say(M.KG_LIMIT_UNREACHED)]
    return []
