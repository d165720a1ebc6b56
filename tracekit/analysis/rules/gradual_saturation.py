"""A memory unit at 60-80% of its nominal peak (with a measured profile: at 70-85% of the achievable ceiling of its
access pattern), with most stalls waiting on memory at full occupancy, is memory-bound.

Hardware reason (Volkov 2016, ch. 3, "gradual saturation"): memory latency grows as the load approaches the
throughput limit, so requests queue well before a counter reads 80%; more warps then mostly queue too. 60% is the
lowest utilization at which the H100 verdict set's full-occupancy copies ran (65%, with warp latency ~2x the
unloaded one), while copies at half occupancy (49%) still gained ~30% from more warps. Against the measured stream
ceiling (84% of nominal on the H100) those copies are at 77% and 58%, and 60% of nominal is 71%: so 70% of the
achievable ceiling, which also holds for scattered sectors (whose ceiling is ~62% of nominal, where the nominal 60%
would wait until the unit is already at its ceiling). The calibrated loaded-latency curve (issue 20) is quoted as
the evidence: the latency the launch's DRAM throughput meets against the unloaded one. A measured sweep that gains
10% or more at a higher occupancy overrules it (not the bound yet).
"""

from __future__ import annotations

from tracekit.analysis.rules import memory_attribution
from tracekit.analysis.rules.base import (
    GRADUAL_SATURATION_FRACTION_OF_ACHIEVABLE,
    GRADUAL_SATURATION_PCT,
    SATURATION_FRACTION_OF_ACHIEVABLE,
    SATURATION_PCT,
    Finding,
    RuleContext,
    UnitUtilization,
    Value,
    achievable,
    achievable_values,
    closeness,
    nominal_note,
    unit_values,
    values,
)
from tracekit.analysis.rules.saturated_unit import unit_advice
from tracekit.analysis.stalls import StallBreakdown
from tracekit.analysis.sweep import LEVEL_RELATIVE, SweepFit, measured_levels

RULE_ID = "gradual-saturation"
INPUTS = ("units", "stalls", "occupancy", "sweep", "trace", "metrics", "ceilings")
FLAGS: tuple[str, ...] = ()  # the flags it can raise
MEMORY_STALL_MAJORITY = 0.5
MEMORY_STALL_REASONS = ("long_scoreboard", "lg_throttle", "drain")
# A sweep that measured this much more throughput at a higher occupancy than the launch's own shows that warps, not
# a unit, still limit it (beyond the few percent of run-to-run spread).
HIGHER_OCCUPANCY_GAIN = 0.10


def memory_stall_share(stalls: StallBreakdown) -> float | None:
    stalled = stalls.stalled_cycles_per_issue
    if not stalls.by_reason or not stalled:
        return None
    return sum(stalls.by_reason.get(reason, 0.0) for reason in MEMORY_STALL_REASONS) / stalled


def higher_occupancy_gain(sweep: SweepFit, warps: float) -> float | None:
    """How much more throughput the sweep measured at occupancies above the launch's own level (0.24: 24% more);
    None when no level lies above it."""
    points = sweep.points
    levels = measured_levels(points["occupancy_warps_per_sm"].to_list(), points["throughput"].to_list())
    here = min(levels, key=lambda level: abs(level[0] - warps))
    above = [throughput for occupancy, throughput in levels if occupancy > here[0] * (1 + LEVEL_RELATIVE)]
    if not above or here[1] <= 0:
        return None
    return float(max(above) / here[1] - 1)


def in_gradual_saturation(ctx: RuleContext, u: UnitUtilization) -> bool:
    """The unit's load is where latency grows: 60% of its nominal peak, or 70% of its measured achievable ceiling."""
    measured = achievable(ctx, u.limiter)
    return u.pct >= GRADUAL_SATURATION_PCT or (
        measured is not None and measured.of_achievable >= GRADUAL_SATURATION_FRACTION_OF_ACHIEVABLE
    )


def _ceiling_values(ctx: RuleContext, top: UnitUtilization) -> tuple[Value, ...]:
    """The unit against its measured ceiling and, for DRAM, the calibrated loaded latency at its throughput; the
    nominal note without a measured profile."""
    measured = achievable(ctx, top.limiter)
    if measured is None:
        return nominal_note(ctx)
    found = (
        *achievable_values("ceiling", measured),
        *values(
            ("at_ceiling_fraction", SATURATION_FRACTION_OF_ACHIEVABLE, "fraction"),
            ("gradual_fraction", GRADUAL_SATURATION_FRACTION_OF_ACHIEVABLE, "fraction"),
        ),
    )
    section = ctx.ceilings
    loaded = section.dram_loaded_latency_ns if section is not None else None
    unloaded = section.dram_unloaded_latency_ns if section is not None else None
    if top.limiter == "dram" and loaded and unloaded:
        found += values(
            ("loaded_latency_ns", loaded, "ns"),
            ("unloaded_latency_ns", unloaded, "ns"),
        )
    return found


def apply(ctx: RuleContext) -> list[Finding]:
    """The attribution and the gradual-saturation finding (which names the limiter), or nothing."""
    memory = [u for u in ctx.units if u.limiter in ("dram", "l2") and in_gradual_saturation(ctx, u)]
    memory.sort(key=lambda u: -closeness(ctx, u))
    share = memory_stall_share(ctx.stalls)
    if not memory or share is None or share < MEMORY_STALL_MAJORITY:
        return []
    if ctx.occupancy.below_theoretical:
        return []  # occupancy can still grow as launched: the latency rules decide
    warps = ctx.occupancy.achieved_warps or ctx.trace.mean_occupancy_warps_per_sm
    gain = higher_occupancy_gain(ctx.sweep, warps) if ctx.sweep is not None and warps else None
    if gain is not None and gain >= HIGHER_OCCUPANCY_GAIN:
        return []  # the sweep measured more throughput at a higher occupancy: not the bound yet
    top, found = memory_attribution.attribute(ctx, memory[0])
    found.append(
        Finding(
            "gradual-saturation.memory",
            RULE_ID,
            "gradual-saturation.memory",
            (
                *unit_values("unit", top),
                *values(
                    ("threshold_pct", SATURATION_PCT, "%"),
                    ("gradual_pct", GRADUAL_SATURATION_PCT, "%"),
                    ("memory_stall_share", share, "fraction"),
                    ("reasons", ", ".join(MEMORY_STALL_REASONS)),
                ),
                *_ceiling_values(ctx, top),
            ),
            metrics=(top.metric,),
            limiter=top.limiter,
            advice=("gradual-more-warps-queue", unit_advice(top.limiter, "reduce.memory-bytes")),
        )
    )
    return found
