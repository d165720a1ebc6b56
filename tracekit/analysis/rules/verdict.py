"""The one place that decides a launch's mode and limiter, runs the rules in order and ranks findings by cost.

Volkov's rule (2016, ch. 3): latency is hidden when some throughput limit is reached, not when the units look busy.
The bound rules are tried in this order, the first that fires decides: a saturated unit (`saturated_unit`), a hot
L2 slice (`atomics_contention`), the block launch rate, a tensor launch near its tensor roof (`tensor_roof`),
gradual memory saturation, the measured sweep's plateau;
then the stall split (latency-bound when most stalled cycles wait on latency); with no utilization counters, the
sweep alone. The explaining rules run after, with the verdict in their context (`RuleContext.state`). Last, the
ceiling the verdict was judged by (issue 20): the limiter's unit against its achievable ceiling, or for a launch
bound by no unit the unit nearest its ceiling; its sentence is the last evidence line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from types import ModuleType

from tracekit.analysis.achievable import AchievableUtilization
from tracekit.analysis.launch_ceilings import LIMITER_UNITS
from tracekit.analysis.rules import (
    atomics_contention,
    bank_conflicts,
    barrier_stalls,
    block_imbalance,
    block_launch_rate,
    coalescing,
    divergence,
    gradual_saturation,
    idle_sms,
    launch_overhead,
    lost_occupancy,
    low_occupancy,
    memory_attribution,
    needed_occupancy,
    nsight_rules,
    occupancy_gap,
    partial_wave,
    saturated_unit,
    spills,
    stall_summary,
    sweep_plateau,
    tensor_roof,
    ties,
    too_few_blocks,
    trace_tail,
)
from tracekit.analysis.rules.base import (
    MEMORY_LIMITERS,
    SATURATION_PCT,
    Finding,
    RuleContext,
    Scalar,
    VerdictState,
    achievable_values,
    ceiling_note,
    closeness,
    nominal_note,
    unit,
    unit_values,
    values,
)
from tracekit.analysis.rules.nsight_rules import NsightRule

# The rules in the order the verdict asks them (the one list of them: a new rule joins it here).
# The bound rules, tried in `decide` until one names the limiter (with the helpers they call):
BOUND_RULES: tuple[ModuleType, ...] = (
    saturated_unit,
    memory_attribution,
    ties,
    atomics_contention,
    block_launch_rate,
    tensor_roof,
    gradual_saturation,
    sweep_plateau,
    stall_summary,
)
# The explaining rules, run in `run` with the verdict in their context: occupancy first, its causes as one group,
# then how the memory is accessed, then Nsight's own rules and what the launch itself costs.
OCCUPANCY_RULES: tuple[ModuleType, ...] = (needed_occupancy, low_occupancy)
OCCUPANCY_CAUSES: tuple[ModuleType, ...] = (
    occupancy_gap,
    too_few_blocks,
    partial_wave,
    idle_sms,
    trace_tail,
    block_imbalance,
    lost_occupancy,
)
ACCESS_RULES: tuple[ModuleType, ...] = (coalescing, bank_conflicts, spills, divergence, barrier_stalls)
COST_RULES: tuple[ModuleType, ...] = (nsight_rules, launch_overhead)
RULES: tuple[ModuleType, ...] = BOUND_RULES + OCCUPANCY_RULES + OCCUPANCY_CAUSES + ACCESS_RULES + COST_RULES

RULE_ID = "verdict"
# Latency-bound needs most stalled cycles (the issue cycle itself excluded) to be latency stalls.
LATENCY_STALL_MAJORITY = 0.5


@dataclass(frozen=True)
class Outcome:
    mode: str  # "latency-bound" | "throughput-bound" | "undetermined"
    limiter: str | None
    reason: Finding | None  # why undetermined
    tied: tuple[str, ...]  # limiters within a few points of the limiter
    needed_occupancy_warps_per_sm: float | None
    findings: tuple[Finding, ...]  # every finding, in evidence order
    ranked: tuple[Finding, ...]  # the findings that cost SM time, largest first
    nsight: tuple[NsightRule, ...]
    judged_by: AchievableUtilization | None = None  # the ceiling the verdict was judged by (issue 20)

    @property
    def flags(self) -> list[str]:
        return flags_of(self.findings)

    @property
    def advice(self) -> list[tuple[str, Finding]]:
        """(advice id, the finding it came from), in order, each id once."""
        seen: dict[str, Finding] = {}
        for f in self.findings:
            for advice_id in f.advice:
                seen.setdefault(advice_id, f)
        return list(seen.items())


def flags_of(found: Iterable[Finding]) -> list[str]:
    out: list[str] = []
    for f in found:
        if f.flag and f.flag not in out:
            out.append(f.flag)
    return out


def _advice_ids(found: Iterable[Finding]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a for f in found for a in f.advice))


def _limiter_unit(ctx: RuleContext, found: list[Finding]) -> tuple[str | None, list[Finding], list[str]]:
    """The limiter the last limiter-naming finding names, its ties' findings and tied limiters."""
    limiter = next((f.limiter for f in reversed(found) if f.limiter), None)
    chosen = unit(ctx.units, limiter) if limiter else None
    if chosen is None:
        return limiter, [], []
    return limiter, ties.tied(ctx.units, chosen), [u.limiter for u in ties.tied_units(ctx.units, chosen)]


def _reason(kind: str, *items: tuple[str, Scalar, str]) -> Finding:
    return Finding(f"verdict.reason-{kind}", RULE_ID, f"verdict.reason-{kind}", values(*items))


def decide(ctx: RuleContext) -> tuple[str, str | None, Finding | None, list[str], list[Finding]]:
    """(mode, limiter, why undetermined, tied limiters, the deciding findings in evidence order)."""
    units = ctx.units
    saturated = saturated_unit.apply(ctx)
    if saturated:
        limiter, tied_found, tied = _limiter_unit(ctx, saturated)
        return "throughput-bound", limiter, None, tied, saturated + tied_found + stall_summary.summary(ctx)
    if units:
        hot = atomics_contention.apply(ctx)
        if hot:
            return "throughput-bound", "l2", None, [], hot
    rate = block_launch_rate.rate(ctx) if (units or ctx.sweep is None) else None
    launch_bound = block_launch_rate.bound(rate) if rate is not None else []
    if launch_bound:
        return "throughput-bound", "block-launch", None, [], launch_bound
    tensor = tensor_roof.bound(ctx)
    if tensor:
        limiter, tied_found, tied = _limiter_unit(ctx, tensor)
        return "throughput-bound", limiter, None, tied, tensor + stall_summary.summary(ctx) + tied_found
    if units:
        memory = gradual_saturation.apply(ctx)
        if memory:
            limiter, tied_found, tied = _limiter_unit(ctx, memory)
            return "throughput-bound", limiter, None, tied, memory + stall_summary.summary(ctx) + tied_found
    plateau = sweep_plateau.apply(ctx)
    if units:
        if plateau:
            return "throughput-bound", plateau[0].limiter, None, [], plateau
        top = min(units, key=lambda u: -closeness(ctx, u))  # units[0] without measured ceilings
        found = [
            Finding(
                "verdict.no-unit-saturated",
                RULE_ID,
                "verdict.no-unit-saturated",
                (
                    *unit_values("unit", top),
                    *values(("threshold_pct", SATURATION_PCT, "%")),
                    *ceiling_note(ctx),
                ),
                metrics=(top.metric,),
            )
        ]
        has_memory = any(u.limiter in MEMORY_LIMITERS for u in units)
        has_sm = any(u.limiter not in MEMORY_LIMITERS for u in units)
        if ctx.stalls.available:
            found += stall_summary.summary(ctx)
            latency_share = ctx.stalls.share("latency") or 0.0
            if latency_share >= LATENCY_STALL_MAJORITY:
                return "latency-bound", None, None, [], found
            reason = _reason("bursts", ("latency_share", latency_share, "fraction"))
            return "undetermined", None, reason, [], found
        if has_memory and has_sm:
            found.append(Finding("verdict.no-stall-breakdown", RULE_ID, "verdict.no-stall-breakdown"))
            return "latency-bound", None, None, [], found
        measured = ", ".join(u.label for u in units)
        return "undetermined", None, _reason("partial-units", ("measured", measured, "")), [], found
    if plateau:
        if plateau[0].id == "sweep-plateau.still-rising":
            return "latency-bound", None, None, [], plateau
        return "throughput-bound", None, None, [], plateau
    if ctx.metrics.is_empty():
        return (
            "undetermined",
            None,
            _reason("no-metrics", ("traced", bool(ctx.trace.mean_warp_latency_ns), "")),
            [],
            [],
        )
    return "undetermined", None, _reason("no-utilization"), [], []


def _with_state(ctx: RuleContext, found: list[Finding], needed: float | None = None) -> RuleContext:
    """The context with the flags and advice of `found` (and n*, once known) in its verdict state."""
    state = replace(
        ctx.state,
        flags=tuple(flags_of(found)),
        advice=_advice_ids(found),
        needed_occupancy_warps_per_sm=needed if needed is not None else ctx.state.needed_occupancy_warps_per_sm,
    )
    return replace(ctx, state=state)


def run(ctx: RuleContext) -> Outcome:
    """Every rule in order over one launch's context: the verdict, its findings and their ranking by cost."""
    mode, limiter, reason, tied, found = decide(ctx)
    ctx = _with_state(replace(ctx, state=VerdictState(mode=mode, limiter=limiter)), found)
    if mode == "latency-bound":
        found += stall_summary.largest(ctx)
    needed = needed_occupancy.needed(ctx)
    found += needed_occupancy.apply(ctx)
    ctx = _with_state(ctx, found, needed)
    found += low_occupancy.apply(ctx)
    ctx = _with_state(ctx, found)
    group: list[Finding] = []
    for rule in OCCUPANCY_CAUSES:
        group += rule.apply(ctx)
    found += group + occupancy_gap.unexplained(ctx, group)
    for rule in ACCESS_RULES:
        found += rule.apply(ctx)
    if not any(f.rule == tensor_roof.RULE_ID for f in found):
        found += tensor_roof.apply(ctx)
    ctx = _with_state(ctx, found)
    nsight = nsight_rules.results(ctx)
    found += nsight_rules.apply(ctx)
    if reason is not None:
        found.insert(0, reason)
    costs = [f for f in (idle_sms.cost(ctx), *launch_overhead.apply(ctx)) if f is not None]
    idle_share = next((f.sm_time_fraction or 0.0 for f in costs if f.rule == idle_sms.RULE_ID), 0.0)
    explained = idle_sms.explained_by(ctx.state)
    costs.append(
        Finding(
            "verdict.limiter",
            RULE_ID,
            "verdict.limiter",
            values(
                ("mode", mode), ("limiter", limiter), ("busy", 1 - idle_share, "fraction"), ("explained_by", explained)
            ),
            sm_time_fraction=1 - idle_share,
        )
    )
    ranked = sorted(costs, key=lambda f: -(f.sm_time_fraction or 0.0))
    hot_slice = any(f.rule == atomics_contention.RULE_ID for f in found)  # one L2 slice, not L2's bandwidth
    judged = None if hot_slice else judged_by(ctx, mode, limiter)
    if judged is not None:
        found.append(
            Finding(
                "verdict.judged-by",
                RULE_ID,
                "verdict.judged-by",
                (*achievable_values("judged", judged), *nominal_note(ctx)),
            )
        )
    return Outcome(mode, limiter, reason, tuple(tied), needed, tuple(found), tuple(ranked), tuple(nsight), judged)


def judged_by(ctx: RuleContext, mode: str, limiter: str | None) -> AchievableUtilization | None:
    """The ceiling the verdict was judged by: the limiter's unit against its achievable ceiling (None for a limiter
    without one: a pipe other than FMA and FP64, the issue slots); for a launch no unit bounds, the unit nearest its
    ceiling (which it did not reach); None without ceilings."""
    section = ctx.ceilings
    if section is None:
        return None
    if limiter is not None:
        name = LIMITER_UNITS.get(limiter)
        return section.unit(name) if name is not None else None
    if mode == "throughput-bound":
        return None  # bound by a limit no unit names (the measured sweep's plateau)
    return section.units[0] if section.units else None
