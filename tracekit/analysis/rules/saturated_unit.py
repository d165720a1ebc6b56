"""A unit at or above 80% of its peak bounds the launch: throughput-bound, by that unit.

Hardware reason (Volkov 2016, ch. 3): latency is hidden when some throughput limit is reached, not when units look
busy; sustained throughput rarely exceeds 80-90% of the nominal peak (DRAM refresh and turnarounds, issue
conflicts), so 80% is where the limit is reached. When the issue slots are full of one pipe's instructions, that
pipe is the limiter. Reference: Nsight Compute Kernel Profiling Guide, "GPU Speed Of Light Throughput".
"""

from __future__ import annotations

from tracekit.analysis.rules import memory_attribution
from tracekit.analysis.rules.base import (
    MEMORY_LIMITERS,
    SATURATION_PCT,
    Finding,
    RuleContext,
    specific,
    unit_values,
    values,
)

RULE_ID = "saturated-unit"
INPUTS = ("units", "metrics")
FLAGS: tuple[str, ...] = ()  # the flags it can raise
KNOWN_ADVICE = ("dram", "l2", "l1/shared", "issue", "memory")  # limiters with their own advice (rules.render)


def unit_advice(limiter: str, fallback: str) -> str:
    """The advice id for work on `limiter`: its own where one is written, else `fallback`."""
    return f"reduce.{limiter}" if limiter in KNOWN_ADVICE else fallback


def apply(ctx: RuleContext) -> list[Finding]:
    saturated = [u for u in ctx.units if u.pct >= SATURATION_PCT]
    if not saturated:
        return []
    named = specific(saturated)
    top = (named or saturated)[0]
    found = [
        Finding(
            "saturated-unit.unit",
            RULE_ID,
            "saturated-unit.unit",
            (*unit_values("unit", u), *values(("threshold_pct", SATURATION_PCT, "%"))),
            metrics=(u.metric,),
        )
        for u in saturated
    ]
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
