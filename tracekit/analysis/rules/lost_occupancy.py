"""Warp slots lost within and between blocks, from the warp trace.

Hardware reason: a block's slots are freed only when its last warp ends, so finished warps waiting for their block
hold slots (imbalance within blocks), and the gap between a block's end and the next block's start on an SM holds
none. Lost occupancy of 10% of the theoretical or more costs time where occupancy is what the launch lacks
(latency-bound). Reference: Volkov 2016, ch. 3; `tracekit.analysis.blocks`.
"""

from __future__ import annotations

from tracekit.analysis.rules.base import Finding, RuleContext, values

RULE_ID = "lost-occupancy"
INPUTS = ("trace", "occupancy", "state")
FLAGS: tuple[str, ...] = ("block-imbalance", "block-launch-gaps")  # the flags it can raise
LOST_OCCUPANCY_FRACTION = 0.1
KINDS = (
    ("end-spread", "lost_to_end_spread_warps_per_sm", "block-imbalance", "balance-warps"),
    ("block-gaps", "lost_to_block_gaps_warps_per_sm", "block-launch-gaps", "fewer-longer-blocks"),
)


def apply(ctx: RuleContext) -> list[Finding]:
    found = []
    theoretical = ctx.occupancy.theoretical_warps
    gap = ctx.occupancy.below_theoretical
    for kind, attribute, flag, advice in KINDS:
        lost = getattr(ctx.trace, attribute)
        if lost is None or lost <= 0:
            continue
        large = theoretical is not None and lost >= LOST_OCCUPANCY_FRACTION * theoretical
        if not (large or gap):
            continue
        # Lost occupancy costs time only where occupancy is what the launch lacks.
        costly = large and ctx.state.mode == "latency-bound"
        found.append(
            Finding(
                f"lost-occupancy.{kind}",
                RULE_ID,
                f"lost-occupancy.{kind}",
                values(("lost_warps", lost, "warps/SM")),
                flag=flag if costly else None,
                advice=(advice,) if costly else (),
            )
        )
    return found
