"""The words of `tracekit.analysis.rules.occupancy_gap`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    num,
    pct,
)

TEMPLATES: dict[str, Words] = {
    "occupancy-gap.gap": lambda v: (
        f"Achieved occupancy is {num(v.n('achieved_warps'))} warps per SM ({pct(v.n('achieved_pct'))}, "
        f"{v.s('achieved_source')}), below the theoretical {num(v.n('theoretical_warps'))} "
        f"({pct(v.n('theoretical_pct'))}, {v.s('theoretical_source')})."
    ),
    "occupancy-gap.unexplained": lambda v: (
        "No cause for the occupancy gap is visible in the data (a warp trace would show "
        "imbalance between or within blocks)."
    ),
}
