"""The words of `tracekit.analysis.rules.bank_conflicts`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    frac,
    num,
)

TEMPLATES: dict[str, Words] = {
    "bank-conflicts.conflicts": lambda v: (
        f"Shared-memory bank conflicts add {num(v.n('conflicts'))} of {num(v.n('wavefronts'))} wavefronts "
        f"({frac(v.n('share'))}; {v.s('metric')})."
    ),
}

ADVICE: dict[str, Words] = {
    "remove-bank-conflicts": lambda v: "Remove shared-memory bank conflicts: pad arrays or swizzle indices.",
}
