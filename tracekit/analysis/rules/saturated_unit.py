"""A unit at or above 80% of its nominal peak, or at 85% of the achievable ceiling of its access pattern, bounds the
launch: throughput-bound, by that unit.

Hardware reason (Volkov 2016, ch. 3): latency is hidden when some throughput limit is reached, not when units look
busy; sustained throughput rarely exceeds 80-90% of the nominal peak (DRAM refresh and turnarounds, issue
conflicts), so 80% is where the limit is reached. What a unit can really reach depends on the access pattern: on the
H100 a stream plateaus at ~84% of nominal DRAM bandwidth and random 32-byte sectors at ~62% (issue 20, measured by
`tracekit calibrate`), so with a measured profile a unit at AT_CEILING_FRACTION (85%) of its achievable ceiling is
saturated however far it is from 80% of nominal (a scattered gather at 60% of nominal is at 97% of its ceiling).
When the issue slots are full of one pipe's instructions, that pipe is the limiter. References: Nsight Compute
Kernel Profiling Guide, "GPU Speed Of Light Throughput"; the Empirical Roofline Toolkit (Berkeley Lab) for
measured ceilings.
"""

from __future__ import annotations

from tracekit.analysis.rules import memory_attribution, tensor_roof
from tracekit.analysis.rules.base import (
    MEMORY_LIMITERS,
    SATURATION_FRACTION_OF_ACHIEVABLE,
    SATURATION_PCT,
    Finding,
    RuleContext,
    UnitUtilization,
    achievable,
    achievable_values,
    closeness,
    nominal_note,
    specific,
    unit,
    unit_values,
    values,
)

RULE_ID = "saturated-unit"
INPUTS = ("units", "metrics", "ceilings")
FLAGS: tuple[str, ...] = ()  # the flags it can raise
KNOWN_ADVICE = ("dram", "l2", "l1/shared", "issue", "memory")  # limiters with their own advice (present.rules)


def unit_advice(limiter: str, fallback: str) -> str:
    """The advice id for work on `limiter`: its own where one is written, else `fallback`."""
    return f"reduce.{limiter}" if limiter in KNOWN_ADVICE else fallback


def at_ceiling(ctx: RuleContext, u: UnitUtilization) -> bool:
    """The unit is at its measured achievable ceiling (never true without a measured profile)."""
    measured = achievable(ctx, u.limiter)
    return measured is not None and measured.of_achievable >= SATURATION_FRACTION_OF_ACHIEVABLE


def _unit_finding(ctx: RuleContext, u: UnitUtilization) -> Finding:
    """Why the unit counts as saturated: its share of the nominal peak, or of its measured ceiling when that is what
    puts it there."""
    measured = achievable(ctx, u.limiter)
    if u.pct < SATURATION_PCT and measured is not None:
        return Finding(
            "saturated-unit.at-ceiling",
            RULE_ID,
            "saturated-unit.at-ceiling",
            (
                *unit_values("unit", u),
                *achievable_values("ceiling", measured),
                *values(
                    ("threshold_pct", SATURATION_PCT, "%"),
                    ("at_ceiling_fraction", SATURATION_FRACTION_OF_ACHIEVABLE, "fraction"),
                ),
            ),
            metrics=(u.metric,),
        )
    return Finding(
        "saturated-unit.unit",
        RULE_ID,
        "saturated-unit.unit",
        (*unit_values("unit", u), *values(("threshold_pct", SATURATION_PCT, "%")), *nominal_note(ctx)),
        metrics=(u.metric,),
    )


def apply(ctx: RuleContext) -> list[Finding]:
    saturated = [u for u in ctx.units if u.pct >= SATURATION_PCT or at_ceiling(ctx, u)]
    if not saturated:
        return []
    # nearest what it can reach first (the counters' order where no measured ceiling reorders them)
    saturated.sort(key=lambda u: -closeness(ctx, u))
    named = specific(saturated)
    top = (named or saturated)[0]
    # a tensor launch right of the ridge near its tensor roof is bound by the tensor pipe: the shared-memory and L2
    # traffic that feeds the MMAs grows with them (rules/tensor_roof.py)
    roof = tensor_roof.on_tensor_roof(ctx)
    pipe = unit(named, "tensor")
    if roof is not None and pipe is not None and roof.of_achievable >= tensor_roof.NEAR_ROOF_FRACTION:
        top = pipe
    found = [_unit_finding(ctx, u) for u in saturated]
    if not named:
        found.append(
            Finding(
                "saturated-unit.no-breakdown",
                RULE_ID,
                "saturated-unit.no-breakdown",
                unit_values("unit", top),
                metrics=(top.metric,),
            )
        )
    if top.limiter == "issue":
        # A pipe that takes one warp instruction per cycle saturates the issue slots with it: name the pipe.
        pipe = next((u for u in named if u.limiter not in ("issue", *MEMORY_LIMITERS)), None)
        if pipe is not None:
            found.append(
                Finding(
                    "saturated-unit.issue-pipe",
                    RULE_ID,
                    "saturated-unit.issue-pipe",
                    (*unit_values("issue", top), *unit_values("pipe", pipe)),
                    metrics=(top.metric, pipe.metric),
                )
            )
            top = pipe
    chosen, attribution = memory_attribution.attribute(ctx, top)
    found += attribution
    found.append(
        Finding(
            "saturated-unit.limiter",
            RULE_ID,
            None,
            unit_values("unit", chosen),
            metrics=(chosen.metric,),
            limiter=chosen.limiter,
            advice=("saturated-no-more-occupancy", unit_advice(chosen.limiter, "reduce.pipe")),
        )
    )
    return found
