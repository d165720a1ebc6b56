"""The words of `tracekit.analysis.rules.ties`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    num,
    pct,
    unit_group,
)


def _tied(v: V) -> str:
    names = ", ".join(unit_group(v, f"tied{i}") for i in range(int(v.n("count"))))
    return (
        f"Within {num(v.n('points'))} points of the limiter, {v.s('unit_label')} at {pct(v.n('unit_pct'))}, "
        f"also: {names}."
    )


TEMPLATES: dict[str, Words] = {
    "tied-limiters.tied": _tied,
}
