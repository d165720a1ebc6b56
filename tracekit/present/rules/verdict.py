"""The words of the verdict's own findings (`tracekit.analysis.rules.verdict`): the limiter, the ceiling it was
judged by, and why a verdict is undetermined (`REASONS`)."""

from __future__ import annotations

from tracekit.present.rules.values import (
    EXPLAINED,
    V,
    Words,
    achieved_rate,
    against,
    frac,
    label_of,
    pct,
)


def _judged_by(v: V) -> str:
    return f"{label_of(v, 'judged')} {achieved_rate(v, 'judged')}: {against(v, 'judged')}."


def _limiter(v: V) -> str:
    mode, limiter = v.s("mode"), v.o("limiter")
    what = f"{mode} by {limiter}" if limiter else mode if mode != "undetermined" else "undetermined (see the evidence)"
    explained = v.o("explained_by")
    if explained:
        return f"The launch is {what}: SMs wait on {EXPLAINED[explained]}."
    return f"The busy {frac(v.n('busy'))} of the SM time is {what}."


def _no_metrics(v: V) -> str:
    traced = "; the warp trace gives latency and throughput but not the bound to compare them with"
    return "no metrics for this launch" + (traced if v.o("traced") else "") + "."


TEMPLATES: dict[str, Words] = {
    "verdict.no-unit-saturated": lambda v: (
        f"No unit reaches {pct(v.n('threshold_pct'))} of peak"
        + (
            f" or {frac(v.n('at_ceiling_fraction'))} of its measured achievable ceiling"
            if v.o("at_ceiling_fraction") is not None
            else ""
        )
        + f": the busiest is {v.s('unit_label')} at {pct(v.n('unit_pct'))} ({v.s('unit_metric')})."
    ),
    "verdict.judged-by": _judged_by,
    "verdict.no-stall-breakdown": lambda v: (
        "The report has no stall breakdown; by Volkov's rule a launch that reaches no "
        "throughput limit is latency-bound."
    ),
    "verdict.limiter": _limiter,
}

REASONS: dict[str, Words] = {
    "verdict.reason-bursts": lambda v: (
        f"no unit is saturated, yet only {frac(v.n('latency_share'))} of stalled cycles are latency "
        f"stalls: the limit may be reached in bursts, or lie in a unit the report does not measure."
    ),
    "verdict.reason-partial-units": lambda v: (
        f"only {v.s('measured')} measured: without both memory and SM utilization a saturated unit cannot be ruled out."
    ),
    "verdict.reason-no-metrics": _no_metrics,
    "verdict.reason-no-utilization": lambda v: (
        "the metrics include no utilization (% of peak) counters, so no throughput limit can be checked."
    ),
}
