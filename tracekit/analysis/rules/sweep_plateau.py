"""The measured occupancy sweep decides where the counters cannot: on its plateau a limit is reached; below it,
throughput still grows with warps.

Hardware reason (Volkov 2016, ch. 3): throughput = min(n / L, B) at n warps per SM; once the measured throughput
stops growing with warps (95% of its highest), some limit is reached even when no counter reads 80% of its peak.
The model's knee is an idealization, so the measured points decide, not the fit.
"""

from __future__ import annotations

from tracekit.analysis.rules.base import (
    SATURATION_PCT,
    Finding,
    RuleContext,
    ceiling_note,
    specific,
    unit_values,
    values,
)
from tracekit.analysis.rules.saturated_unit import unit_advice

RULE_ID = "sweep-plateau"
INPUTS = ("sweep", "occupancy", "units", "ceilings")
FLAGS: tuple[str, ...] = ()  # the flags it can raise


def apply(ctx: RuleContext) -> list[Finding]:
    """With unit counters: `on-plateau` (names the busiest unit) or nothing. Without: `still-rising` (latency-bound)
    or `plateau-no-unit` (throughput-bound, limiter unknown), or nothing when the sweep cannot tell."""
    sweep, occ = ctx.sweep, ctx.occupancy
    at_95 = sweep.occupancy_at_95pct_warps_per_sm if sweep is not None else None
    plateau = bool(sweep is not None and sweep.plateau_reached and at_95 is not None)
    here = values(
        ("achieved_warps", occ.achieved_warps, "warps/SM"),
        ("achieved_source", occ.achieved_source),
        ("at_95_warps", at_95, "warps/SM"),
        ("plateau", plateau),
    )
    if ctx.units:
        if not (plateau and at_95 is not None and occ.achieved_warps is not None and occ.achieved_warps >= at_95):
            return []
        top = next(iter(specific(ctx.units)), ctx.units[0])
        return [
            Finding(
                "sweep-plateau.on-plateau",
                RULE_ID,
                "sweep-plateau.on-plateau",
                (*here, *unit_values("unit", top), *values(("threshold_pct", SATURATION_PCT, "%")), *ceiling_note(ctx)),
                metrics=(top.metric,),
                limiter=top.limiter,
                advice=("plateau-busiest", unit_advice(top.limiter, "reduce.unit")),
            )
        ]
    if sweep is None or at_95 is None or not occ.achieved_warps:
        return []
    if not plateau or occ.achieved_warps < at_95:
        return [Finding("sweep-plateau.still-rising", RULE_ID, "sweep-plateau.still-rising", here)]
    return [
        Finding("sweep-plateau.plateau-no-unit", RULE_ID, "sweep-plateau.plateau-no-unit", here, advice=("plateau",))
    ]
