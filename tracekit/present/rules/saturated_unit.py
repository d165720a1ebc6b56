"""The words of `tracekit.analysis.rules.saturated_unit`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    achieved_rate,
    amount,
    ceiling_what,
    frac,
    label_of,
    pct,
)


def _at_ceiling(v: V) -> str:
    return (
        f"{label_of(v, 'ceiling')} {achieved_rate(v, 'ceiling')} is {frac(v.n('ceiling_of_achievable'))} of "
        f"{amount(v, 'ceiling', 'ceiling_value')}, {ceiling_what(v, 'ceiling')} on this GPU "
        f"({v.s('ceiling_ceiling_name')}, {v.s('ceiling_ceiling_source')}): at or above the "
        f"{frac(v.n('at_ceiling_fraction'))} at which a unit is at its ceiling, so {v.s('unit_label')} is saturated "
        f"though its counter reads {pct(v.n('unit_pct'))} of the nominal peak ({v.s('unit_metric')}), below "
        f"{pct(v.n('threshold_pct'))}."
    )


_DRAM = (
    "Move fewer bytes to and from DRAM: coalesce accesses, reuse data through shared memory or L2, use narrower "
    "types, fuse kernels."
)


TEMPLATES: dict[str, Words] = {
    "saturated-unit.unit": lambda v: (
        f"{v.s('unit_label')} throughput is {pct(v.n('unit_pct'))} of peak ({v.s('unit_metric')}), above the "
        f"{pct(v.n('threshold_pct'))} at which a unit counts as saturated."
    ),
    "saturated-unit.no-breakdown": lambda v: (
        f"The report has no per-unit breakdown behind {v.s('unit_metric')}, so the saturated "
        f"unit inside {v.s('unit_label')} is not named."
    ),
    "saturated-unit.issue-pipe": lambda v: (
        f"The issue slots ({pct(v.n('issue_pct'))}) are full of the {v.s('pipe_label')}'s instructions "
        f"({pct(v.n('pipe_pct'))}): the {v.s('pipe_label')} is the limiter, the issue slots are saturated with it."
    ),
    "saturated-unit.at-ceiling": _at_ceiling,
}

ADVICE: dict[str, Words] = {
    "reduce.dram": lambda v: _DRAM,
    "reduce.l2": lambda v: (
        "Send fewer requests to L2: improve L1 reuse and locality, coalesce, avoid atomics on hot lines."
    ),
    "reduce.l1/shared": lambda v: (
        "Reduce L1/shared-memory wavefronts: remove bank conflicts, use wider (vector) accesses, fewer redundant loads."
    ),
    "reduce.issue": lambda v: (
        "Issue fewer instructions: vectorize loads, hoist index arithmetic, unroll, use wider math."
    ),
    "reduce.memory": lambda v: "Move fewer bytes through the memory system: coalesce, reuse, use narrower types.",
    "reduce.pipe": lambda v: (
        f"Issue less work to the {v.s('unit_label')}: use cheaper or fewer instructions, or move work to an idle pipe."
    ),
    "reduce.unit": lambda v: f"Issue less work to the {v.s('unit_label')}.",
    "reduce.memory-bytes": lambda v: "Move fewer bytes through the memory system.",
    "saturated-no-more-occupancy": lambda v: (
        f"More occupancy will not help: {v.s('unit_label')} is saturated (latency is already hidden)."
    ),
}
