"""A prediction step's finding: its values, worded by `tracekit.analysis.rules.render` (the one sentence-writer)."""

from __future__ import annotations

from tracekit.analysis.predict.types import Finding
from tracekit.analysis.rules import render
from tracekit.analysis.rules.base import Finding as RuleFinding
from tracekit.analysis.rules.base import Scalar, values


def finding(
    step: str,
    template: str,
    *items: tuple[str, Scalar, str] | tuple[str, Scalar],
    value: float | None = None,
    unit: str | None = None,
) -> Finding:
    """One step's finding: `template` (a `predict.*` entry of render.TEMPLATES) over `items` (name, value, unit)."""
    vals = values(*items)
    text = render.sentence(RuleFinding(template, "predict", template, vals)) or ""
    return Finding(step, template, vals, text, value, unit)
