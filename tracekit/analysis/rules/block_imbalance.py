"""Blocks of uneven duration cost SM time when SMs sit idle before the launch ends.

Hardware reason: an SM that drew long blocks finishes last while the others idle; block durations spreading by
50% or more (relative, (p90 - p10) / median) are imbalanced, but the spread costs time only where SMs are measured
idle (on a saturated GPU the warp schedulers spread durations without idling anything). Reference: Nsight
Compute's WorkloadImbalance rule; PMPP (4th ed.) ch. 4 (block scheduling).
"""

from __future__ import annotations

from tracekit.analysis.rules.base import Finding, RuleContext, values
from tracekit.analysis.rules.idle_sms import TAIL_LOSS_FRACTION, costly_idle

RULE_ID = "block-imbalance"
INPUTS = ("trace", "metrics", "state")
FLAGS: tuple[str, ...] = ("block-imbalance",)  # the flags it can raise
IMBALANCE_SPREAD = 0.5


def apply(ctx: RuleContext) -> list[Finding]:
    spread = ctx.trace.block_imbalance_spread
    if spread is None or spread < IMBALANCE_SPREAD:
        return []
    if costly_idle(ctx):
        return [
            Finding(
                "block-imbalance.costly",
                RULE_ID,
                "block-imbalance.costly",
                values(("spread", spread, "fraction")),
                flag="block-imbalance",
                advice=("balance-blocks-refill",),
            )
        ]
    return [
        Finding(
            "block-imbalance.free",
            RULE_ID,
            "block-imbalance.free",
            values(("spread", spread, "fraction"), ("threshold", TAIL_LOSS_FRACTION, "fraction")),
        )
    ]
