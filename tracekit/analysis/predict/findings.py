"""A prediction step's finding: its template and values, which `tracekit.present.rules` words when a view shows it."""

from __future__ import annotations

from tracekit.analysis.predict.types import Finding
from tracekit.analysis.rules.base import Scalar, values


def finding(
    step: str,
    template: str,
    *items: tuple[str, Scalar, str] | tuple[str, Scalar],
    value: float | None = None,
    unit: str | None = None,
) -> Finding:
    """One step's finding: `template` (a `predict.*` template of `tracekit.present.rules.predict`) over `items`
    (name, value, unit); its sentence is empty until the prediction is worded."""
    return Finding(step, template, values(*items), "", value, unit)
