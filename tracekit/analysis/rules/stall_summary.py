"""Where warps spend their stall cycles: the launch's stall breakdown in one sentence, and its largest reason.

Hardware reason: a warp that is not issuing waits on something; the stall reasons (Nsight Compute's
`smsp__average_warps_issue_stalled_*`) split those cycles into latency (long/short scoreboard, wait, barrier),
bandwidth (LSU/MIO/TEX/math-pipe throttle) and other. Volkov 2016, ch. 3: latency-bound warps wait on latency,
throughput-bound ones queue at a saturated unit. Reference: Nsight Compute Kernel Profiling Guide, "Warp Stall
Reasons".
"""

from __future__ import annotations

from tracekit.analysis.rules.base import Finding, RuleContext, values

RULE_ID = "stall-summary"
INPUTS = ("stalls", "state")
FLAGS: tuple[str, ...] = ()  # the flags it can raise
GROUPS = ("latency", "bandwidth", "other")


def summary(ctx: RuleContext) -> list[Finding]:
    """The breakdown: cycles per issued instruction, group shares of the stalled cycles, the three largest."""
    stalls = ctx.stalls
    if not stalls.available:
        return []
    first = next(iter(stalls.metric_names.values()), None)
    items = [
        ("total_cycles_per_issue", stalls.total_cycles_per_issue, "cycles/issue"),
        ("source", stalls.source, ""),
        ("example_metric", first, ""),
        *((f"share_{group}", stalls.share(group) or 0.0, "fraction") for group in GROUPS),
        *((f"reason:{reason}", cycles, "cycles/issue") for reason, cycles in stalls.dominant(3)),
    ]
    return [
        Finding(
            "stall-summary.breakdown",
            RULE_ID,
            "stall-summary.breakdown",
            values(*items),
            metrics=tuple(stalls.metric_names.values()),
        )
    ]


def largest(ctx: RuleContext) -> list[Finding]:
    """The largest stall reason, for a latency-bound launch (what its warps wait on)."""
    stalls = ctx.stalls
    if not stalls.available:
        return []
    return [
        Finding(
            "stall-summary.largest",
            RULE_ID,
            "stall-summary.largest",
            values(("reason", reason), ("cycles_per_issue", cycles, "cycles/issue"), ("metric", metric)),
            metrics=(metric,) if metric else (),
        )
        for reason, cycles in stalls.dominant(1)
        for metric in (stalls.metric_names.get(reason),)
    ]


def apply(ctx: RuleContext) -> list[Finding]:
    return summary(ctx) + (largest(ctx) if ctx.state.mode == "latency-bound" else [])
