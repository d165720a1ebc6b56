"""The words of `tracekit.analysis.rules.sweep_plateau`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    frac,
    num,
    pct,
)


def _on_plateau(v: V) -> str:
    return (
        f"The launch runs {num(v.n('achieved_warps'))} warps per SM ({v.s('achieved_source')}), at or past the "
        f"{num(v.n('at_95_warps'))} where the measured sweep reaches 95% of its highest throughput: a throughput limit "
        f"is reached although no counter shows {pct(v.n('threshold_pct'))} of peak"
        + (
            f" nor any unit {frac(v.n('at_ceiling_fraction'))} of its measured achievable ceiling"
            if v.o("at_ceiling_fraction") is not None
            else ""
        )
        + f"; the busiest unit is "
        f"{v.s('unit_label')} at {pct(v.n('unit_pct'))} ({v.s('unit_metric')})."
    )


def _still_rising(v: V) -> str:
    return (
        f"The launch runs {num(v.n('achieved_warps'))} warps per SM ({v.s('achieved_source')}); the measured "
        f"sweep reaches 95% of its highest throughput only at {num(v.n('at_95_warps'))}"
        + ("" if v.o("plateau") else " and still rises at its highest occupancy")
        + ": throughput still grows with warps."
    )


def _plateau_no_unit(v: V) -> str:
    return (
        f"The launch runs {num(v.n('achieved_warps'))} warps per SM ({v.s('achieved_source')}), at or past the "
        f"{num(v.n('at_95_warps'))} where the measured sweep reaches 95% of its highest throughput: throughput is on "
        f"its plateau; the report names no unit, so the limiter is unknown."
    )


TEMPLATES: dict[str, Words] = {
    "sweep-plateau.on-plateau": _on_plateau,
    "sweep-plateau.still-rising": _still_rising,
    "sweep-plateau.plateau-no-unit": _plateau_no_unit,
}

ADVICE: dict[str, Words] = {
    "plateau-busiest": lambda v: (
        f"More occupancy will not help: the measured sweep is on its plateau; {v.s('unit_label')} is the busiest unit."
    ),
    "plateau": lambda v: "More occupancy will not help: the measured sweep is on its plateau.",
}
