"""The words of `tracekit.analysis.rules.needed_occupancy`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit import format as fmt
from tracekit.present.rules.values import (
    V,
    Words,
    dur,
    frac,
    num,
    pct,
)


def _sweep_fit(v: V) -> str:
    gap = v.o("knee_gap")
    return (
        f"The occupancy sweep fits min(n / L, B) with L = {num(v.o('latency') or 0)} (per warp, in the "
        f"throughput's time unit) and B = {num(v.o('throughput_bound') or 0)}: n* = L x B = "
        f"{num(v.n('needed_warps'))} warps per SM are needed to reach the bound"
        + (f" (measured points near the knee fall up to {frac(gap)} below the model)." if gap else ".")
    )


def _sweep_levels(v: V) -> str:
    parts = []
    if v.o("at_90_warps") is not None:
        parts.append(f"90% of the highest measured throughput at {num(v.n('at_90_warps'))}")
    if v.o("at_95_warps") is not None:
        parts.append(f"95% at {num(v.n('at_95_warps'))} warps per SM")
    if v.o("plateau"):
        plateau = "the measured points reach a plateau"
    elif v.o("last_step_gain") is not None and v.o("last_step_high_warps") is not None:
        plateau = (
            f"the plateau is not reached: throughput still grows {frac(v.n('last_step_gain'))} from "
            f"{num(v.n('last_step_low_warps'))} to {num(v.n('last_step_high_warps'))} warps per SM"
        )
    else:
        plateau = "whether a plateau is reached is not measured"
    knee = (
        f"; the model min(n / L, B) puts its knee at {num(v.n('knee_warps'))} (an idealization)"
        if v.o("knee_warps")
        else ""
    )
    return f"Occupancy sweep: {', '.join(parts) or 'no level measured'}; {plateau}{knee}."


def _littles_law(v: V) -> str:
    reach = (
        f", {frac(v.n('unit_of_achievable'))} of what it can reach on this GPU; at the same warp latency about "
        f"{num(v.n('needed_warps'))} warps per SM would reach that ceiling"
        if v.o("unit_of_achievable") is not None
        else f"; at the same warp latency about {num(v.n('needed_warps'))} warps per SM would reach its peak"
    )
    sentence = (
        f"By Little's law the {num(v.n('warps'))} warps per SM now in flight keep the busiest unit, "
        f"{v.s('unit_label')}, at {pct(v.n('unit_pct'))} of peak ({v.s('unit_metric')}){reach} (a lower bound: "
        f"latency grows near saturation)."
    )
    if v.o("device_max_warps") is not None:
        sentence += (
            f" No occupancy can reach that: the device holds at most {num(v.n('device_max_warps'))} warps per SM"
            + (
                "; here the block launch rate, not the units, keeps fewer warps resident."
                if v.o("limiter") == "block-launch"
                else "; near saturation the latency grows instead, which is why the unit is the bound."
                if v.o("throughput_bound")
                else "; only more independent work per warp (ILP) can put that much in flight."
            )
        )
    return sentence


TEMPLATES: dict[str, Words] = {
    "needed-occupancy.sweep-fit": _sweep_fit,
    "needed-occupancy.sweep-levels": _sweep_levels,
    "needed-occupancy.trace-in-flight": lambda v: (
        f"Warp trace: mean warp latency {dur(v.n('latency_ns'))} x throughput "
        f"{fmt.per_ns_rate(v.n('throughput'), 'warps')} per SM = {num(v.n('in_flight'))} warps in flight per "
        f"SM (Little's law)."
    ),
    "needed-occupancy.littles-law": _littles_law,
}

ADVICE: dict[str, Words] = {
    "sweep-rising-ilp": lambda v: (
        "The sweep still rises at its highest occupancy: where the device allows no more warps, "
        "more independent work per warp (ILP) is what adds bytes or instructions in flight."
    ),
    "sweep-more-occupancy": lambda v: (
        f"More occupancy helps: the measured throughput still grows up to {num(v.n('last_step_high_warps'))} warps "
        f"per SM."
    ),
}
