"""How many warps per SM hide the latency: Little's law, n* = latency x throughput bound.

Hardware reason (Volkov 2016, ch. 3; Little's law): the warps in flight equal warp latency times warp throughput,
so reaching a unit's bound needs about (warps now) x (100 / its % of peak) warps at the same latency, a lower
bound since latency grows near saturation; with a measured profile (issue 20) the bound is what the unit can really
reach, its achievable ceiling for the access pattern, when that is nearer than the nominal peak. A measured
occupancy sweep gives n* = L x B directly, from the fit
throughput ~ min(n / L, B), and says whether its points reach a plateau. Reference: PMPP (4th ed.) ch. 4
(occupancy and latency tolerance).
"""

from __future__ import annotations

from tracekit.analysis.rules.base import (
    Finding,
    RuleContext,
    UnitUtilization,
    achievable,
    closeness,
    nominal_note,
    specific,
    unit_values,
    values,
)

RULE_ID = "needed-occupancy"
INPUTS = ("sweep", "trace", "occupancy", "units", "state", "ceilings")
FLAGS: tuple[str, ...] = ()  # the flags it can raise


def needed(ctx: RuleContext) -> float | None:
    """n*, warps per SM: the sweep's knee, else the busiest unit's Little's-law estimate."""
    sweep = ctx.sweep
    if sweep is not None and sweep.needed_occupancy_warps_per_sm is not None:
        return sweep.needed_occupancy_warps_per_sm
    warps = ctx.occupancy.achieved_warps
    busiest = _busiest(ctx)
    if warps is None or busiest is None or closeness(ctx, busiest) <= 0:
        return None
    if achievable(ctx, busiest.limiter) is None:
        return warps * 100.0 / busiest.pct  # against the nominal peak
    return warps / closeness(ctx, busiest)


def _busiest(ctx: RuleContext) -> UnitUtilization | None:
    """The unit nearest what it can reach (its measured ceiling or its nominal peak)."""
    units = specific(ctx.units) or list(ctx.units)
    return min(units, key=lambda u: -closeness(ctx, u)) if units else None


def _sweep_findings(ctx: RuleContext) -> list[Finding]:
    sweep = ctx.sweep
    assert sweep is not None
    fit = Finding(
        "needed-occupancy.sweep-fit",
        RULE_ID,
        "needed-occupancy.sweep-fit",
        values(
            ("latency", sweep.latency, ""),
            ("throughput_bound", sweep.throughput_bound, ""),
            ("needed_warps", sweep.needed_occupancy_warps_per_sm, "warps/SM"),
            ("knee_gap", sweep.knee_gap_fraction, "fraction"),
        ),
    )
    low, high = sweep.last_step_warps_per_sm or (None, None)
    advice: tuple[str, ...] = ()
    if not sweep.plateau_reached and high is not None:
        achieved = ctx.occupancy.achieved_warps
        advice = (
            ("sweep-rising-ilp",) if achieved is not None and achieved >= high * 0.95 else ("sweep-more-occupancy",)
        )
    levels = Finding(
        "needed-occupancy.sweep-levels",
        RULE_ID,
        "needed-occupancy.sweep-levels",
        values(
            ("at_90_warps", sweep.occupancy_at_90pct_warps_per_sm, "warps/SM"),
            ("at_95_warps", sweep.occupancy_at_95pct_warps_per_sm, "warps/SM"),
            ("plateau", bool(sweep.plateau_reached)),
            ("last_step_gain", sweep.last_step_gain_fraction, "fraction"),
            ("last_step_low_warps", low, "warps/SM"),
            ("last_step_high_warps", high, "warps/SM"),
            ("knee_warps", sweep.needed_occupancy_warps_per_sm, "warps/SM"),
        ),
        advice=advice,
    )
    return [fit, levels]


def apply(ctx: RuleContext) -> list[Finding]:
    sweep = ctx.sweep
    if sweep is not None and sweep.needed_occupancy_warps_per_sm is not None:
        return _sweep_findings(ctx)
    found: list[Finding] = []
    trace = ctx.trace
    if trace.mean_warp_latency_ns and trace.throughput_warps_per_ns_per_sm:
        found.append(
            Finding(
                "needed-occupancy.trace-in-flight",
                RULE_ID,
                "needed-occupancy.trace-in-flight",
                values(
                    ("latency_ns", trace.mean_warp_latency_ns, "ns"),
                    ("throughput", trace.throughput_warps_per_ns_per_sm, "warps/ns/SM"),
                    ("in_flight", trace.mean_warp_latency_ns * trace.throughput_warps_per_ns_per_sm, "warps/SM"),
                ),
            )
        )
    n = needed(ctx)
    busiest = _busiest(ctx)
    if n is None or busiest is None or ctx.occupancy.achieved_warps is None:
        return found
    measured = achievable(ctx, busiest.limiter)
    reach = (
        values(("unit_of_achievable", measured.of_achievable, "fraction"))
        if measured is not None and measured.of_achievable * 100.0 > busiest.pct
        else nominal_note(ctx)
    )
    device_max = ctx.occupancy.device_max_warps
    found.append(
        Finding(
            "needed-occupancy.littles-law",
            RULE_ID,
            "needed-occupancy.littles-law",
            (
                *values(("warps", ctx.occupancy.achieved_warps, "warps/SM")),
                *unit_values("unit", busiest),
                *values(
                    ("needed_warps", n, "warps/SM"),
                    ("device_max_warps", device_max if device_max is not None and n > device_max else None, "warps/SM"),
                    ("throughput_bound", ctx.state.mode == "throughput-bound"),
                    ("limiter", ctx.state.limiter),
                ),
                *reach,
            ),
            metrics=(busiest.metric,),
        )
    )
    return found
