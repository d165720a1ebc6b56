"""The first line every view of a launch shows (CLI, report, dashboard, notebook): the verdict in plain words, or
what costs more of the time than the busy part; and why a verdict cannot be told, as that line says it."""

from __future__ import annotations

from collections.abc import Sequence

from tracekit.analysis.achievable import AchievableUtilization
from tracekit.analysis.launch_ceilings import judges
from tracekit.analysis.rules.base import SATURATION_PCT, UnitUtilization, specific, unit
from tracekit.analysis.rules.verdict import Outcome
from tracekit.ceilings.types import NOMINAL
from tracekit.present.rules.sentences import sentence
from tracekit.present.rules.values import EXPLAINED, V, Words, frac, pct

# Pipe families written as NVIDIA writes them (FMA, ALU, FP64), not as the metric ids spell them.
_ACRONYMS = frozenset({"fma", "alu", "fp64", "fp16", "fp32", "xu", "lsu", "adu", "cbu", "tma", "sm"})
# Why a verdict is undetermined, as the headline says it.
_HEADLINE_REASONS: dict[str, Words] = {
    "verdict.reason-no-metrics": lambda v: (
        "a warp trace alone shows occupancy and latency, not which unit binds"
        if v.o("traced")
        else "the launch has no counters, so nothing shows which unit binds"
    ),
    "verdict.reason-no-utilization": lambda v: (
        "the counters give no unit's share of its peak, so no unit can be checked against its limit"
    ),
    "verdict.reason-partial-units": lambda v: (
        f"only {v.s('measured')} measured, so a saturated unit elsewhere cannot be ruled out"
    ),
    "verdict.reason-bursts": lambda v: (
        f"no unit is at its limit, yet only {frac(v.n('latency_share'))} of the stalled cycles wait on latency"
    ),
}


def _limit(u: UnitUtilization, judged: AchievableUtilization | None) -> tuple[str, str]:
    """(", 94.9% of what this GPU reaches", " - at the hardware limit"). A unit is at its limit at the nominal peak's
    saturation threshold (rules.base.SATURATION_PCT) or at its measured ceiling; the measured share is named when it
    is the nearer of the two (as rules.base.closeness takes the larger)."""
    measured = judged if judged is not None and judged.ceiling_source != NOMINAL else None
    at_limit = u.pct >= SATURATION_PCT or (measured is not None and measured.at_ceiling)
    if measured is not None and measured.unit.startswith("tensor_"):
        # the tensor pipe's roof is its type's FLOP/s (rules/tensor_roof.py): always named, busy cycles are not FLOPs
        kind = measured.unit.removeprefix("tensor_")
        reach = f", {frac(measured.of_achievable)} of the {kind} tensor roof"
        return reach, " - at the hardware limit" if at_limit else " - near its roof"
    nearer = measured is not None and measured.of_achievable > u.pct / 100.0
    reach = f", {frac(measured.of_achievable)} of what this GPU reaches" if measured is not None and nearer else ""
    return reach, " - at the hardware limit" if at_limit else " - below its ceiling, where latency grows with load"


def _throughput_headline(outcome: Outcome, units: Sequence[UnitUtilization]) -> str:
    if any(f.rule == "atomics-contention" for f in outcome.findings):
        return "Throughput-bound: atomics on the same addresses drain through one L2 slice"
    if outcome.limiter is None:
        return "Throughput-bound: the measured occupancy sweep is on its plateau - more warps add no throughput"
    judged = outcome.judged_by
    if judged is not None and not judges(outcome.limiter, judged.unit):
        judged = None
    bound = unit(units, outcome.limiter)
    if bound is None:
        name = "the SMs' block launch rate" if outcome.limiter == "block-launch" else outcome.limiter
        reach = f" at {frac(judged.of_achievable)} of what this GPU reaches" if judged is not None else ""
        return f"Throughput-bound: {name}{reach}"
    tied = [u for u in (unit(units, t) for t in outcome.tied) if u is not None and u is not bound]
    also = f" ({', '.join(f'{unit_name(u.label)} {pct(u.pct)}' for u in tied)})" if tied else ""
    reach, limit = _limit(bound, judged)
    return f"Throughput-bound: {unit_name(bound.label, start=True)} at {pct(bound.pct)} of its peak{reach}{also}{limit}"


def _latency_headline(outcome: Outcome, units: Sequence[UnitUtilization]) -> str:
    named = next((f for f in outcome.findings if f.id == "verdict.no-unit-saturated"), None)
    metric = named.get("unit_metric") if named is not None else None
    top = next((u for u in units if u.metric == metric), None) or next(iter(specific(units)), None)
    if top is None:
        return "Latency-bound: throughput still rises with occupancy - warps wait on latency, not on a unit"
    judged = outcome.judged_by
    reach = (
        f", {frac(judged.of_achievable)} of what this GPU reaches"
        if judged is not None
        and judged.ceiling_source != NOMINAL
        and judges(top.limiter, judged.unit)
        and judged.of_achievable > top.pct / 100.0
        else ""
    )
    return (
        f"Latency-bound: no unit near its limit (busiest: {unit_name(top.label)} at {pct(top.pct)} of its peak{reach}) "
        "- warps wait on latency"
    )


def verdict_headline(outcome: Outcome, units: Sequence[UnitUtilization]) -> str:
    """The verdict in plain words: the mode, then the unit that binds and how near its limit, or why it cannot be
    told ("Throughput-bound: L1/shared at 98.1% of its peak (tensor pipe 97%) - at the hardware limit"). It is the
    limiter finding's sentence."""
    limiter = next((f for f in outcome.ranked if f.id == "verdict.limiter"), None)
    explained = limiter.get("explained_by") if limiter is not None else None
    if outcome.mode == "undetermined":
        why = outcome.reason
        text = _HEADLINE_REASONS[why.id](V(why)) if why is not None else "the data cannot tell which unit binds"
        return f"Undetermined: {text}"
    if outcome.mode == "throughput-bound":
        if explained:
            return f"Throughput-bound: SMs wait on {EXPLAINED[str(explained)]}"
        return _throughput_headline(outcome, units)
    return _latency_headline(outcome, units)


def headline(outcome: Outcome, units: Sequence[UnitUtilization]) -> str:
    """The first line every view of a launch shows (CLI, report, dashboard, notebook): what costs the most time.
    That is the verdict in plain words (`verdict_headline`) unless idle SMs or launch overhead cost more of the
    time than the busy part; then that finding's sentence leads."""
    lead = outcome.ranked[0] if outcome.ranked else None
    if lead is not None and lead.id != "verdict.limiter":
        return sentence(lead) or ""
    return verdict_headline(outcome, units)


def unit_name(label: str, start: bool = False) -> str:
    """A unit's label in a sentence: "FMA pipe", "L1/shared", "issue slots" ("Issue slots" at its start)."""
    first, _, rest = label.partition(" ")
    name = f"{first.upper()} {rest}".strip() if first.lower() in _ACRONYMS else label
    return name[:1].upper() + name[1:] if start else name
