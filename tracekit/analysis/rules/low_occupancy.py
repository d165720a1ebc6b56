"""A latency-bound launch short of warps: low occupancy (more warps) or needs ILP (no more warps can fit).

Hardware reason (Volkov 2016, ch. 3): a latency-bound launch needs n* warps per SM in flight (rules/
needed_occupancy.py). Where the theoretical occupancy (registers, shared memory, block size: the limiter Nsight
names) is below n* and can still be raised, or the launch runs below its theoretical occupancy, more warps help;
where n* exceeds the device's warp slots, only more independent work per warp (ILP) puts that much in flight.
References: PMPP (4th ed.) ch. 4 and 6 (occupancy, resource limits); Nsight Compute "Occupancy" section.
"""

from __future__ import annotations

from tracekit import counters as c
from tracekit.analysis.rules.base import OCCUPANCY_GAP_FRACTION, Finding, RuleContext, values
from tracekit.analysis.rules.needed_occupancy import needed as needed_occupancy
from tracekit.counters import metric

RULE_ID = "low-occupancy"
INPUTS = ("occupancy", "metrics", "state", "sweep", "units")
FLAGS: tuple[str, ...] = ("low-occupancy", "needs-ilp")  # the flags it can raise


def limit_names(ctx: RuleContext) -> str | None:
    """What bounds blocks per SM, every tied limit named (the way Nsight names them)."""
    found = {name: metric(ctx.metrics, *names) for name, names in c.BLOCK_LIMIT_NAMES.items()}
    limits = {name: value for name, value in found.items() if value is not None}
    if not limits:
        return None
    low = min(limits.values())
    return " and ".join(name for name, value in limits.items() if value == low)


def apply(ctx: RuleContext) -> list[Finding]:
    """Only for a latency-bound verdict: the advice that always applies, then the occupancy findings."""
    if ctx.state.mode != "latency-bound":
        return []
    occ = ctx.occupancy
    needed = ctx.state.needed_occupancy_warps_per_sm
    if needed is None:
        needed = needed_occupancy(ctx)
    found = [Finding("low-occupancy.latency", RULE_ID, None, advice=("faster-unit-no-help",))]
    achieved, theoretical, device_max = occ.achieved_warps, occ.theoretical_warps, occ.device_max_warps
    if needed is not None and theoretical is not None and theoretical < needed:
        limiting = limit_names(ctx)
        found.append(
            Finding(
                "low-occupancy.theoretical-below-needed",
                RULE_ID,
                "low-occupancy.theoretical-below-needed",
                values(
                    ("theoretical_warps", theoretical, "warps/SM"),
                    ("limited_by", limiting),
                    ("needed_warps", needed, "warps/SM"),
                ),
            )
        )
        if device_max is None or needed > device_max:
            found.append(Finding("low-occupancy.needs-ilp", RULE_ID, None, flag="needs-ilp", advice=("ilp-full",)))
        if device_max is not None and theoretical < OCCUPANCY_GAP_FRACTION * device_max:
            found.append(
                Finding(
                    "low-occupancy.raise-theoretical",
                    RULE_ID,
                    None,
                    values(("theoretical_pct", occ.theoretical_pct or 0.0, "%"), ("limited_by", limiting)),
                    flag="low-occupancy",
                    advice=("raise-theoretical",),
                )
            )
        if occ.below_theoretical:
            found.append(
                Finding(
                    "low-occupancy.below-theoretical",
                    RULE_ID,
                    None,
                    values(("theoretical_warps", theoretical, "warps/SM")),
                    flag="low-occupancy",
                    advice=("run-more-warps-theoretical",),
                )
            )
        return found
    if needed is not None and achieved is not None and achieved < needed:
        found.append(
            Finding(
                "low-occupancy.below-needed",
                RULE_ID,
                None,
                values(("achieved_warps", achieved, "warps/SM"), ("needed_warps", needed, "warps/SM")),
                flag="low-occupancy",
                advice=("run-more-warps-needed",),
            )
        )
    found.append(Finding("low-occupancy.ilp", RULE_ID, None, advice=("ilp-short",)))
    return found
