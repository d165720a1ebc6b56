"""The words of `tracekit.analysis.rules.spills`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    num,
)

TEMPLATES: dict[str, Words] = {
    "spills.local-memory": lambda v: (
        "The kernel uses local memory ("
        + ", ".join(f"{name} = {num(float(value or 0))}" for name, value in v.prefixed(""))
        + "): register spills or local arrays."
    ),
}

ADVICE: dict[str, Words] = {
    "avoid-local-memory": lambda v: (
        "Avoid local memory: fewer live registers (or a higher register limit), no dynamically indexed local arrays."
    ),
}
