"""A partial last wave leaves part of the SM time of its wave without blocks: a tail effect.

Hardware reason: blocks run in waves of (blocks per SM x SMs); a grid of 1.25 waves runs its last quarter wave on a
quarter of the slots, so (ceil(w) - w) / ceil(w) of the SM time of ceil(w) waves holds no block. At 20% or more it
is flagged. Reference: Nsight Compute "Launch Statistics" (the tail effect estimate); PMPP (4th ed.) ch. 4.
"""

from __future__ import annotations

import math

from tracekit.analysis.rules.base import Finding, RuleContext, values
from tracekit.analysis.rules.too_few_blocks import few_blocks, waves

RULE_ID = "partial-wave"
INPUTS = ("metrics", "device")
FLAGS: tuple[str, ...] = ("tail-effect",)  # the flags it can raise
# A partial last wave idling this share of the SM time is a tail effect.
TAIL_LOSS_FRACTION = 0.2


def apply(ctx: RuleContext) -> list[Finding]:
    row = waves(ctx)
    if row is None or few_blocks(ctx) or row[1] <= 1 or float(row[1]).is_integer():
        return []
    full = math.ceil(row[1])
    idle = (full - row[1]) / full
    costly = idle >= TAIL_LOSS_FRACTION
    return [
        Finding(
            "partial-wave.partial",
            RULE_ID,
            "partial-wave.partial",
            values(
                ("waves", row[1], "count"),
                ("waves_metric", row[0]),
                ("full_waves", full, "count"),
                ("idle", idle, "fraction"),
            ),
            metrics=(row[0],),
            flag="tail-effect" if costly else None,
            advice=("whole-waves",) if costly else (),
        )
    ]
