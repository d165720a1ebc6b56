"""Achieved occupancy well below the theoretical is a gap worth explaining; the other rules name its causes.

Hardware reason: the theoretical occupancy is what registers, shared memory and block size allow; warps actually
resident fall short of it when SMs idle (too few blocks, a tail, imbalance) or when slots wait between blocks.
Reference: Nsight Compute Kernel Profiling Guide, "Occupancy" (achieved vs theoretical); PMPP (4th ed.) ch. 4.
"""

from __future__ import annotations

from collections.abc import Iterable

from tracekit.analysis.rules.base import Finding, RuleContext, values

RULE_ID = "occupancy-gap"
INPUTS = ("occupancy",)
FLAGS: tuple[str, ...] = ()  # the flags it can raise
# The findings that explain a gap (a cause of idle or lost warp slots).
CAUSES = frozenset(
    {
        "too-few-blocks.few",
        "partial-wave.partial",
        "idle-sms.idle",
        "idle-sms.idle-explained",
        "trace-tail.tail",
        "block-imbalance.costly",
        "lost-occupancy.end-spread",
        "lost-occupancy.block-gaps",
    }
)


def apply(ctx: RuleContext) -> list[Finding]:
    occ = ctx.occupancy
    if not occ.below_theoretical:
        return []
    return [
        Finding(
            "occupancy-gap.gap",
            RULE_ID,
            "occupancy-gap.gap",
            values(
                ("achieved_warps", occ.achieved_warps, "warps/SM"),
                ("achieved_pct", occ.achieved_pct or 0.0, "%"),
                ("achieved_source", occ.achieved_source),
                ("theoretical_warps", occ.theoretical_warps, "warps/SM"),
                ("theoretical_pct", occ.theoretical_pct or 0.0, "%"),
                ("theoretical_source", occ.theoretical_source),
            ),
        )
    ]


def unexplained(ctx: RuleContext, found: Iterable[Finding]) -> list[Finding]:
    """A gap none of the other findings explains."""
    if not ctx.occupancy.below_theoretical or any(f.id in CAUSES for f in found):
        return []
    return [Finding("occupancy-gap.unexplained", RULE_ID, "occupancy-gap.unexplained")]
