"""What ``find_nonleaf`` reports: each ``Finding``, the ``Findings`` list and its report in words.

A report says what breaks the copy, where (the path from ``root``), why and the fix, worded for the
error the user met: ``copy.deepcopy``'s graph-leaves error or torch.multiprocessing's refusal
(``error_kind``). Objects the walk could not look inside are named, so that a report never claims
more than the walk saw.
"""
from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from graphleaf_edu import messages as M
from graphleaf_edu.errors import COWARDLY
from graphleaf_edu.i18n import say, say_n
from graphleaf_edu.paths import expression, render_path
from graphleaf_edu.stored_values import Node

_ERROR_KINDS = ("deepcopy", "multiprocessing")

@dataclass(frozen=True, eq=False)
class Finding:
    """One tensor that makes ``copy.deepcopy`` raise, as ``find_nonleaf`` reports it: ``resolve(root, path) is tensor``.

    ``kind`` names the cause in a short stable word (``graphleaf_edu.causes``); ``cause`` says it in
    words and ``fix`` is the fix that fits it. ``line()`` is the one-line form (path, cause, fix) for logs and grep.

    Attributes:
        path: where the tensor is, written after ``root`` (``".cache"``, ``"['state'][0]"``).
        tensor: the tensor itself (not a copy).
        grad_fn: the name of its backward node.
        cause: why it is there, in words; kind: the same as a short stable word.
        fix: what to change in the code that stores it.

    Example:
        >>> model = torch.nn.Linear(2, 2)
        >>> model.cache = model(torch.ones(1, 2))
        >>> finding = gl.find_nonleaf(model)[0]
        >>> finding.path, finding.grad_fn, finding.kind
        ('.cache', 'AddmmBackward0', 'cached-activation')
        >>> print(finding.line())
        root.cache: cached activation in a module attribute (grad_fn=AddmmBackward0) | fix: store ...
    """

    path: str
    tensor: torch.Tensor
    grad_fn: str
    cause: str
    fix: str
    kind: str = ""

    @property
    def where(self) -> str:
        """The Python expression that names the tensor, in terms of ``root``."""
        return expression(self.path)

    def line(self) -> str:
        return say("{where}: {cause} (grad_fn={grad_fn}) | fix: {fix}", where=self.where, cause=self.cause,
                   grad_fn=self.grad_fn, fix=self.fix)

    def __repr__(self) -> str:
        return (
            f"Finding(path={self.path!r}, grad_fn={self.grad_fn!r}, "
            f"shape={shape_of(self.tensor)}, cause={self.cause!r})"
        )


@dataclass(frozen=True)
class OpaqueObject:
    """An object on deepcopy's way that the walk could not look inside, and why.

    ``error`` is what ``copy.deepcopy`` raises there when it cannot copy the object at all (a
    generator, a lock): then nothing makes the copy work but leaving the object out.
    """

    path: str
    type_name: str
    reason: str
    error: Exception | None = field(default=None, repr=False, compare=False)

    @property
    def blocks_copy(self) -> bool:
        return self.error is not None

    def line(self) -> str:
        return f"{expression(self.path)} ({self.type_name}) {self.reason}"


class Judgement(Protocol):
    """What ``graphleaf_edu.causes`` says of one culprit: its ``Cause``."""

    @property
    def kind(self) -> str: ...

    @property
    def cause(self) -> str: ...

    @property
    def fix(self) -> str: ...


class Findings(list[Finding]):
    """The non-leaf tensors reachable from one object, shortest path first.

    A list of ``Finding``; ``report()`` says what breaks the copy and how to fix each finding,
    ``explain()`` prints it. ``opaque`` lists the objects whose copy the walk could not look inside;
    a non-leaf hidden there is not in the list, so ``report()`` names them instead of claiming success.
    ``uncopyable`` are those of them that ``copy.deepcopy`` cannot copy at all (a generator, a lock):
    then ``report()`` says that ``safe_deepcopy`` cannot copy the object either.

    Example:
        >>> x = torch.ones(2, requires_grad=True)
        >>> findings = gl.find_nonleaf({"w": x, "y": x * 2})
        >>> len(findings), findings[0].path
        (1, "['y']")
        >>> print(gl.find_nonleaf({"w": x}).report())
        Nothing to fix: no non-leaf tensor is reachable from this dict, so copy.deepcopy(root) will not raise the graph-leaves error.
    """

    def __init__(self, findings: Iterable[Finding] = (), subject: str = "object",
                 opaque: Iterable[OpaqueObject] = ()):
        super().__init__(findings)
        self.subject = subject
        self.opaque = tuple(opaque)

    @classmethod
    def of_walk(cls, nodes: list[Node], judged: Sequence[tuple[int, Judgement]],
                unseen: Sequence[tuple[int, str | Exception]], subject: str) -> Findings:
        """The report of one walk: each culprit (node index, its cause) named by its path, then each
        object not looked inside (node index, why: a reason, or the error deepcopy raises there)."""
        written = [render_path(nodes, index) for index in [*(i for i, _ in judged), *(i for i, _ in unseen)]]
        found = [
            Finding(path, nodes[index][0], grad_fn_name(nodes[index][0]) or "None", said.cause, said.fix, said.kind)
            for (index, said), path in zip(judged, written)  # culprits are non-leaf: they have a grad_fn
        ]
        opaque = []
        for (index, why), path in zip(unseen, written[len(found):]):
            type_name = type(nodes[index][0]).__qualname__
            if isinstance(why, str):
                opaque.append(OpaqueObject(path, type_name, why))
            else:
                reason = say(M.DEEPCOPY_RAISES_HERE, error_type=type(why).__name__, error=why)
                opaque.append(OpaqueObject(path, type_name, reason, why))
        return cls(found, subject=subject, opaque=opaque)

    def lines(self) -> list[str]:
        """One line per finding (path, cause, fix), then one per object not looked inside or not copyable."""
        return [finding.line() for finding in self] + [
            say(M.CANNOT_COPY_LINE if o.blocks_copy else M.NOT_LOOKED_INSIDE_LINE, line=o.line()) for o in self.opaque
        ]

    def report(self, error: str | BaseException = "deepcopy") -> str:
        """What breaks the copy, where, and the fix for each finding.

        ``error`` words it for the error the user got: ``"deepcopy"`` (the graph-leaves error) or
        ``"multiprocessing"`` (torch.multiprocessing's "Cowardly refusing to serialize ..."); an
        exception is recognised by its message.
        """
        kind = error_kind(error)
        if not self:
            return self._nothing_found(kind)
        count = say_n("{n} non-leaf tensor", "{n} non-leaf tensors", len(self))
        header = M.MULTIPROCESSING_REFUSES if kind == "multiprocessing" else M.DEEPCOPY_FAILS
        lines = [say(header, subject=self.subject, count=count), ""]
        for number, finding in enumerate(self, 1):
            tensor = finding.tensor
            lines += [
                say("{number}. {where}  ({grad_fn}, shape {shape}, {device})", number=number, where=finding.where,
                    grad_fn=finding.grad_fn, shape=shape_of(tensor), device=tensor.device.type),
                say("   cause: {cause}", cause=finding.cause),
                say("   fix:   {fix}", fix=finding.fix),
            ]
        lines += self._opaque_lines()
        if self.uncopyable:
            closing = M.SAFE_DEEPCOPY_CANNOT
        else:
            closing = M.SAFE_DEEPCOPY_SENDS if kind == "multiprocessing" else M.SAFE_DEEPCOPY_COPIES
        return "\n".join([*lines, "", say(closing)])

    @property
    def uncopyable(self) -> tuple[OpaqueObject, ...]:
        """The objects ``copy.deepcopy`` cannot copy at all (``safe_deepcopy`` neither)."""
        return tuple(o for o in self.opaque if o.blocks_copy)

    def _nothing_found(self, kind: str) -> str:
        if self.uncopyable:
            return "\n".join([say(M.NO_NONLEAF_BUT_UNCOPYABLE, subject=self.subject), *self._opaque_lines()[1:]])
        if not self.opaque:
            action = M.CAN_SEND if kind == "multiprocessing" else M.WILL_NOT_RAISE
            return say(M.NOTHING_TO_FIX, subject=self.subject, action=say(action))
        return "\n".join([say(M.NOTHING_SEEN, subject=self.subject), *self._opaque_lines()[1:]])

    def _opaque_lines(self) -> list[str]:
        """A blank line, then each section: what cannot be copied, what was not looked inside."""
        lines = []
        for title, objects in ((M.CANNOT_BE_COPIED, self.uncopyable),
                               (M.NOT_LOOKED_INSIDE, tuple(o for o in self.opaque if not o.blocks_copy))):
            if objects:
                lines += ["", say(title), *(f"- {o.line()}" for o in objects)]
        return lines

    def explain(self, error: str | BaseException = "deepcopy") -> None:
        """Print ``report(error)``."""
        print(self.report(error))

    def __repr__(self) -> str:
        if not self:
            return "Findings([])" if not self.opaque else f"Findings([], opaque={list(self.opaque)!r})"
        return "Findings([\n" + "".join(f"    {finding!r},\n" for finding in self) + "])"

    def _repr_html_(self) -> str:
        if not self:
            return "<p>" + html.escape(self.report()).replace("\n", "<br>") + "</p>"
        header = "".join(f"<th>{name}</th>" for name in ("#", say("path"), "grad_fn", say("shape"), say("cause"),
                                                          say("fix")))
        rows = "".join(
            f"<tr><td>{number}</td><td><code>{html.escape(f.where)}</code></td>"
            f"<td>{html.escape(f.grad_fn)}</td><td>{shape_of(f.tensor)}</td>"
            f"<td>{html.escape(f.cause)}</td><td>{html.escape(f.fix)}</td></tr>"
            for number, f in enumerate(self, 1)
        )
        return f"<table><tr>{header}</tr>{rows}</table>"


def error_kind(error: str | BaseException) -> str:
    """``"multiprocessing"`` for torch.multiprocessing's refusal, ``"deepcopy"`` otherwise."""
    if isinstance(error, BaseException):
        return "multiprocessing" if COWARDLY in str(error) else "deepcopy"
    if error not in _ERROR_KINDS:
        raise ValueError(say("error= takes one of {kinds} or the exception itself, got {error!r}", kinds=_ERROR_KINDS,
                             error=error))
    return error


def grad_fn_name(t: torch.Tensor) -> str | None:
    """The name of ``t``'s backward node (``"MulBackward0"``), or None for a leaf."""
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def shape_of(t: torch.Tensor) -> tuple[int | None, ...]:
    """``tuple(t.shape)``, with None for the ragged dimensions of a nested tensor."""
    if t.is_nested and type(t) is torch.Tensor:  # strided nested tensors have no sizes()
        sizes = t._nested_tensor_size().tolist()
        ragged = tuple(None if len({row[d] for row in sizes}) > 1 else sizes[0][d] for d in range(t.dim() - 1))
        return (len(sizes), *ragged) if sizes else (0,)
    return tuple(dimension if isinstance(dimension, int) else None for dimension in t.shape)
