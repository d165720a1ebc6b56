"""Barrier stalls: warps waiting at __syncthreads for the slowest warp of their block.

Hardware reason: a barrier holds every warp of the block until the last one arrives, so uneven work between
barriers turns into stall cycles (`stall_barrier`); 30% or more of the stalled cycles is flagged. References: PMPP
(4th ed.) ch. 4 (barrier synchronization); Nsight Compute Kernel Profiling Guide, "Warp Stall Reasons" (barrier).
"""

from __future__ import annotations

from tracekit.analysis.rules.base import Finding, RuleContext, values

RULE_ID = "barrier-stalls"
INPUTS = ("stalls",)
FLAGS: tuple[str, ...] = ("barrier-stalls",)  # the flags it can raise
BARRIER_STALL_SHARE = 0.3


def apply(ctx: RuleContext) -> list[Finding]:
    stalls = ctx.stalls
    if not stalls.available:
        return []
    stalled = stalls.stalled_cycles_per_issue
    barrier = (stalls.by_reason or {}).get("barrier")
    if not barrier or not stalled or barrier / stalled < BARRIER_STALL_SHARE:
        return []
    metric = stalls.metric_names.get("barrier")
    return [
        Finding(
            "barrier-stalls.barrier",
            RULE_ID,
            "barrier-stalls.barrier",
            values(
                ("barrier_cycles", barrier, "cycles/issue"),
                ("stalled_cycles", stalled, "cycles/issue"),
                ("share", barrier / stalled, "fraction"),
                ("metric", metric),
            ),
            metrics=(metric,) if metric else (),
            flag="barrier-stalls",
            advice=("sync-less",),
        )
    ]
