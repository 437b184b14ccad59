"""A scenario: code that breaks ``copy.deepcopy`` (or a queue), its real error, and its fixes.

A scenario's code is two ordinary functions of a catalog module: ``setup()`` builds the objects
and returns them by name; a fix's copy function takes some of them (by parameter name) and
returns the copy. ``code(fix)`` shows exactly those functions and what they use, read from the
module (``shown_code``). Warnings raised while they run are recorded in ``Outcome.warnings``,
never printed, so notebook outputs stay deterministic.

    >>> outcome = SCENARIOS["model_cache"].run("detach_at_source")
    >>> outcome.ok, outcome.error_line
    (True, None)
"""
from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from graphleaf_edu.errors import error_line, warning_line
from graphleaf_edu.i18n import say
from graphleaf_edu.scenarios.source import script, shown_code

__all__ = ["NONE", "ExpectedError", "Fix", "Outcome", "Scenario", "require_scenario"]

NONE = "none"
Setup = Callable[[], dict[str, Any]]


@dataclass(frozen=True)
class ExpectedError:
    """The real exception a scenario raises: its type and a substring of its message."""

    type: type[BaseException]
    contains: str

    def matches(self, error: BaseException | None) -> bool:
        return isinstance(error, self.type) and self.contains in str(error)


@dataclass(frozen=True)
class Fix:
    """One way out of a scenario: ``copy`` makes the copy; ``setup``, if given, replaces the scenario's setup.

    Attributes:
        key: its name within the scenario (``"none"`` is the plain ``copy.deepcopy``).
        title: what it does, in a few words; cost: what it costs or changes.
        copy: the function that makes the copy (its source is what lessons show: ``copy_code``).
        setup: a different setup (the class rewritten with the fix), or ``None``.
        mutates_original: the fix changes the original object (a cost worth knowing).

    Example:
        >>> fix = gl.SCENARIOS["intermediate_tensor"].fix("detach_clone")
        >>> fix.title
        'detach().clone()'
        >>> print(fix.copy_code)
        def detach_clone_y(y):
            return y.detach().clone()
        <BLANKLINE>
    """

    key: str
    title: str
    copy: Callable[..., Any]
    cost: str
    setup: Setup | None = None
    mutates_original: bool = False

    @property
    def copy_code(self) -> str:
        """The source of the copy function."""
        return inspect.getsource(self.copy)


@dataclass(frozen=True, eq=False)
class Outcome:
    """What running one fix of one scenario did, as ``Scenario.run`` returns it.

    Attributes:
        scenario: the scenario's key; fix: the fix's key.
        ok: the copy was made.
        error: the scenario's error when the copy failed, else ``None``.
        error_line: ``"Type: first line"`` of that error (deterministic), else ``None``.
        copied: the copy (``None`` when it failed); original: what was copied.
        namespace: what the setup and the copy bound; code: the code that ran.
        warnings: the warnings raised, one line each.

    Example:
        >>> outcome = gl.SCENARIOS["model_cache"].run("none")
        >>> outcome.ok, outcome.error_line
        (False, 'RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy ...')
        >>> gl.SCENARIOS["model_cache"].run("safe_deepcopy").ok
        True
    """

    scenario: str
    fix: str
    ok: bool
    error: BaseException | None
    error_line: str | None
    copied: Any
    original: Any
    namespace: dict[str, Any]
    code: str
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    """A failure: ``setup()`` builds ``target``; copying it without a fix raises ``error``.

    ``culprit`` is the path, as ``find_nonleaf`` writes it, of the non-leaf tensor inside ``target``
    that causes the error ("" when ``target`` is that tensor). The code is real Python (functions in
    ``graphleaf_edu.scenarios.catalog``); ``code(fix)`` is its source, exactly what ``run(fix)`` runs.

    Attributes:
        key: its name in ``SCENARIOS``; title and summary: what happens, in words.
        setup: builds the objects; target: the name of the one being copied.
        culprit: where the non-leaf tensor is inside the target.
        error: the exception expected without a fix (its type and part of its message).
        fixes: every ``Fix``, the first being ``"none"`` (plain ``copy.deepcopy``).
        source: where the scenario comes from.

    Example:
        >>> scenario = gl.SCENARIOS["intermediate_tensor"]
        >>> scenario.fix_keys()
        ['none', 'detach_clone', 'detach', 'safe_deepcopy']
        >>> scenario.run().error_line
        'RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy ...'
        >>> scenario.run("detach_clone").ok
        True
    """

    key: str
    title: str
    summary: str
    setup: Setup
    target: str
    culprit: str
    error: ExpectedError
    fixes: tuple[Fix, ...]
    source: str

    def __post_init__(self) -> None:
        keys = self.fix_keys()
        if not keys or keys[0] != NONE or len(set(keys)) != len(keys):
            raise ValueError(f"scenario {self.key!r}: fixes need unique keys, the first being {NONE!r}; got {keys}")

    def fix_keys(self) -> list[str]:
        return [fix.key for fix in self.fixes]

    def fix(self, key: str = NONE) -> Fix:
        for fix in self.fixes:
            if fix.key == key:
                return fix
        raise KeyError(say("scenario {scenario!r} has no fix {fix!r}; choose one of {fixes}", scenario=self.key, fix=key,
                           fixes=self.fix_keys()))

    def code(self, fix: str = NONE) -> str:
        """The exact code that ``run(fix)`` runs: its setup and copy functions, and what they use."""
        chosen = self.fix(fix)
        return shown_code(self._setup_of(chosen), chosen.copy).text

    def script(self, fix: str = NONE) -> str:
        """The same code as ``code(fix)``, written as a student's script: the classes it uses, the
        setup's statements and ``copied = ...`` (what the explorers show)."""
        chosen = self.fix(fix)
        return script(self._setup_of(chosen), chosen.copy)

    def namespace(self, fix: str = NONE) -> dict[str, Any]:
        """What the shown code binds, and the objects a fresh run of the setup (of ``fix``) returns."""
        namespace, _ = self._run_setup(self.fix(fix))
        return namespace

    def run(self, fix: str = NONE) -> Outcome:
        """Run the setup and the copy; the scenario's own error is returned in the outcome, not raised."""
        chosen = self.fix(fix)
        namespace, recorded = self._run_setup(chosen)
        error = None
        try:
            with _recording(recorded):
                namespace["copied"] = _call(chosen.copy, namespace)
        except self.error.type as raised:
            error = raised
        return Outcome(
            scenario=self.key,
            fix=chosen.key,
            ok=error is None,
            error=error,
            error_line=error_line(error) if error else None,
            copied=namespace.get("copied"),
            original=namespace[self.target],
            namespace=namespace,
            code=self.code(chosen.key),
            warnings=tuple(recorded),
        )

    def reproduce(self) -> None:
        """Raise the real error, from the scenario's own code (for a notebook cell that shows it)."""
        __tracebackhide__ = True  # IPython shows the scenario's frames, not these
        fix = self.fix(NONE)
        namespace, _ = self._run_setup(fix)
        _call(fix.copy, namespace)
        raise AssertionError(say(
            "scenario {scenario!r} did not fail on torch {torch}: expected {error_type} containing {contains!r}. "
            "What it teaches needs updating.", scenario=self.key, torch=torch.__version__,
            error_type=self.error.type.__name__, contains=self.error.contains))

    def _setup_of(self, fix: Fix) -> Setup:
        return fix.setup or self.setup

    def _run_setup(self, fix: Fix) -> tuple[dict[str, Any], list[str]]:
        setup = self._setup_of(fix)
        recorded: list[str] = []
        with _recording(recorded):
            made = setup()
        return {**shown_code(setup, fix.copy).namespace(), **made}, recorded


def require_scenario(scenario: object) -> None:
    """Raise a ``TypeError`` that says what to pass, unless ``scenario`` is a ``Scenario`` (not its key)."""
    if not isinstance(scenario, Scenario):
        raise TypeError(say("pass a Scenario, e.g. SCENARIOS['model_cache'], not {type_name} {scenario!r}",
                            type_name=type(scenario).__name__, scenario=scenario))


def _call(copy: Callable[..., Any], namespace: dict[str, Any]) -> Any:
    """``copy(...)`` with each parameter taken, by name, from what the setup made."""
    __tracebackhide__ = True
    names = list(inspect.signature(copy).parameters)
    missing = [name for name in names if name not in namespace]
    if missing:
        raise TypeError(say("{function}() takes {missing}, which the scenario's setup does not return",
                            function=copy.__name__, missing=missing))
    return copy(*(namespace[name] for name in names))


@contextlib.contextmanager
def _recording(lines: list[str]) -> Iterator[None]:
    """Record the warnings raised inside, as ``"Category: first line"``, into ``lines``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            lines.extend(warning_line(w) for w in caught)
