"""A prediction step's finding: its values, worded by `tracekit.analysis.rules.render` (the one sentence-writer)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from tracekit.analysis.predict.types import Finding
from tracekit.analysis.rules import render
from tracekit.analysis.rules.base import Finding as RuleFinding
from tracekit.analysis.rules.base import Scalar, Value, values

# Off while `what_to_try` screens candidate changes: only the few it returns are worded (the sentences were most of
# the screening's cost), and they are worded after (`worded`).
_WORDED: ContextVar[bool] = ContextVar("worded", default=True)


@contextmanager
def unworded() -> Iterator[None]:
    """Findings made inside carry their values but no sentence (`text` empty)."""
    token = _WORDED.set(False)
    try:
        yield
    finally:
        _WORDED.reset(token)


def worded(found: Finding) -> Finding:
    """The finding with its sentence (one made inside `unworded` carries only its values)."""
    return found if found.text else replace(found, text=_sentence(found.template, found.values))


def _sentence(template: str, vals: tuple[Value, ...]) -> str:
    return render.sentence(RuleFinding(template, "predict", template, vals)) or ""


def finding(
    step: str,
    template: str,
    *items: tuple[str, Scalar, str] | tuple[str, Scalar],
    value: float | None = None,
    unit: str | None = None,
) -> Finding:
    """One step's finding: `template` (a `predict.*` entry of render.TEMPLATES) over `items` (name, value, unit)."""
    vals = values(*items)
    text = _sentence(template, vals) if _WORDED.get() else ""
    return Finding(step, template, vals, text, value, unit)
