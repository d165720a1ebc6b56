"""Nsight Compute's own rule results, as evidence, each cross-checked with the verdict's flags.

Hardware reason: Nsight Compute's rules (one Python file per rule in its `sections/` folder, each with an estimated
speedup) read the same counters from their own thresholds; where one suggests an optimization (OPT/WRN), the
verdict must say the same or say why not (its measured cost is below the flag's threshold, a unit is at its bound
so more warps would only queue, or the report lacks the counters the verdict checks with). INF rules describe and
are left out. Reference: Nsight Compute Customization Guide, "Rule System".
"""

from __future__ import annotations

from dataclasses import dataclass

from tracekit import counters as c
from tracekit.analysis.rules.base import Finding, RuleContext, values
from tracekit.analysis.rules.idle_sms import measured_idle
from tracekit.counters import metric_row

RULE_ID = "nsight-cross-check"
INPUTS = ("metrics", "state")
FLAGS: tuple[str, ...] = ()  # the flags it can raise
# Nsight Compute rules and the flag each corresponds to. WorkloadImbalance measures SMs with fewer active cycles
# than the average: SM time idle before the launch ends, which the verdict flags as block-imbalance (uneven blocks,
# from a trace) or tail-effect (SMs idle, from the counters); either agrees.
RULE_FLAGS: dict[str, str | tuple[str, ...]] = {
    "UncoalescedGlobalAccess": "uncoalesced-access",
    "UncoalescedSharedAccess": "shared-bank-conflicts",
    "SharedMemoryConflicts": "shared-bank-conflicts",
    "ThreadDivergence": "branch-divergence",
    "WorkloadImbalance": ("block-imbalance", "tail-effect"),
    "TheoreticalOccupancy": "low-occupancy",
    "AchievedOccupancy": "low-occupancy",
}
# The counters the verdict checks a flag with (any one group present): without them a rule is not contradicted.
FLAG_COUNTERS: dict[str, tuple[tuple[tuple[str, ...], ...], ...]] = {
    "uncoalesced-access": (
        (c.GLOBAL_EXCESSIVE_SECTORS, c.GLOBAL_THEORETICAL_SECTORS),
        (c.GLOBAL_LOAD_SECTORS, c.GLOBAL_LOAD_REQUESTS),
    ),
    "shared-bank-conflicts": ((c.SHARED_BANK_CONFLICTS, c.SHARED_WAVEFRONTS),),
    "branch-divergence": ((c.THREADS_PER_INSTRUCTION,), (c.BRANCH_EFFICIENCY_PCT,)),
}
# WorkloadImbalance prints one message per unit; only the SM side's (SMs, SMSPs, L1 slices) is SM time idle. An
# imbalance between L2 slices is a hot slice, which the verdict reads from the L2 utilizations: no flag.
SM_SIDE_IMBALANCE = ("One or more SMs ", "One or more SMSPs ", "One or more L1 Slices ")
# Advice ids that say more warps would help (the measured sweep can say so without the low-occupancy flag).
MORE_WARPS_ADVICE = frozenset(
    {"sweep-more-occupancy", "run-more-warps-theoretical", "run-more-warps-needed", "raise-theoretical"}
)


@dataclass(frozen=True)
class NsightRule:
    """A rule result Nsight Compute printed for the launch (details page or .ncu-rep), and whether the verdict
    agrees."""

    name: str  # "UncoalescedGlobalAccess"
    rule_type: str | None  # "OPT", "WRN", "INF"
    text: str  # the rule's description, as printed
    estimated_speedup_pct: float | None
    flag: str | None  # the flag it corresponds to (RULE_FLAGS), if any
    agrees: bool | None  # flag raised by the verdict too; None when the rule maps to no flag


def results(ctx: RuleContext) -> list[NsightRule]:
    """The OPT/WRN rule rows (`rule:<Name>`), one per rule and flag it bears on (the message with the largest
    estimated speedup), cross-checked with the flags raised so far; largest estimated speedup first."""
    flags = ctx.state.flags
    rules: dict[tuple[str, tuple[str, ...]], NsightRule] = {}
    for name, text, value in c.rows_with_prefix(ctx.metrics, "rule:"):
        rule_name = name.removeprefix("rule:")
        text = str(text or "")
        kind = text[1:4] if text.startswith("[") and text[4:5] == "]" else None
        body = text[6:] if kind else text
        if kind not in ("OPT", "WRN"):
            continue  # INF rules describe, they do not suggest
        speedup = float(value) if value is not None else None
        related = RULE_FLAGS.get(rule_name)
        candidates = (related,) if isinstance(related, str) else related or ()
        if rule_name == "WorkloadImbalance" and not body.startswith(SM_SIDE_IMBALANCE):
            candidates = ()
        previous = rules.get((rule_name, candidates))
        if previous is not None and (previous.estimated_speedup_pct or 0) >= (speedup or 0):
            continue
        raised = [f for f in candidates if f in flags]
        flag = raised[0] if raised else next(iter(candidates), None)
        agrees = None if flag is None else bool(raised)
        rules[(rule_name, candidates)] = NsightRule(rule_name, kind, body, speedup, flag, agrees)
    return sorted(rules.values(), key=lambda r: -(r.estimated_speedup_pct or 0))


def check(ctx: RuleContext, rule: NsightRule) -> str:
    """Why the verdict agrees or not: `agrees`, `unmapped`, `more-warps-advice`, `block-launch`, `unit-bound`,
    `no-counters` or `below-threshold`."""
    if rule.agrees is True:
        return "agrees"
    if rule.agrees is None:
        return "unmapped"
    state = ctx.state
    if rule.flag == "low-occupancy":
        if MORE_WARPS_ADVICE & set(state.advice):
            return "more-warps-advice"
        if state.mode == "throughput-bound" and state.limiter == "block-launch":
            return "block-launch"
        if state.mode == "throughput-bound":
            return "unit-bound"
    groups = FLAG_COUNTERS.get(rule.flag or "")
    measured = (
        measured_idle(ctx) is not None
        if rule.flag in ("block-imbalance", "tail-effect")
        else groups is None or any(all(metric_row(ctx.metrics, *names) for names in group) for group in groups)
    )
    return "below-threshold" if measured else "no-counters"


def apply(ctx: RuleContext) -> list[Finding]:
    return [
        Finding(
            f"nsight-cross-check.{rule.name}",
            RULE_ID,
            "nsight-cross-check.rule",
            values(
                ("name", rule.name),
                ("rule_type", rule.rule_type),
                ("speedup_pct", rule.estimated_speedup_pct, "%"),
                ("first_sentence", rule.text.split(". ")[0][:300]),
                ("flag", rule.flag),
                ("check", check(ctx, rule)),
            ),
            metrics=(f"rule:{rule.name}",),
        )
        for rule in results(ctx)
    ]
