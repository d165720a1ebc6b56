"""Shared-memory bank conflicts: extra wavefronts when threads of a warp hit the same bank.

Hardware reason: shared memory has 32 banks of 4-byte words; threads of a warp addressing different words of one
bank are served one after the other, each an extra wavefront. Conflicts adding 10% or more of the wavefronts are
flagged. References: PMPP (4th ed.) ch. 5-6 (shared memory, bank conflicts); CUDA C++ Programming Guide,
"Shared Memory"; Nsight Compute's SharedMemoryConflicts rule.
"""

from __future__ import annotations

from tracekit import counters as c
from tracekit.analysis.rules.base import Finding, RuleContext, values
from tracekit.counters import metric_row

RULE_ID = "bank-conflicts"
INPUTS = ("metrics",)
FLAGS: tuple[str, ...] = ("shared-bank-conflicts",)  # the flags it can raise
SHARED_CONFLICT_FRACTION = 0.1  # bank conflicts per shared-memory wavefront


def apply(ctx: RuleContext) -> list[Finding]:
    conflicts, wavefronts = (
        metric_row(ctx.metrics, *c.SHARED_BANK_CONFLICTS),
        metric_row(ctx.metrics, *c.SHARED_WAVEFRONTS),
    )
    if not conflicts or not wavefronts or wavefronts[1] <= 0:
        return []
    share = conflicts[1] / wavefronts[1]
    if share < SHARED_CONFLICT_FRACTION:
        return []
    return [
        Finding(
            "bank-conflicts.conflicts",
            RULE_ID,
            "bank-conflicts.conflicts",
            values(
                ("conflicts", conflicts[1], "count"),
                ("wavefronts", wavefronts[1], "count"),
                ("share", share, "fraction"),
                ("metric", conflicts[0]),
            ),
            metrics=(conflicts[0], wavefronts[0]),
            flag="shared-bank-conflicts",
            advice=("remove-bank-conflicts",),
        )
    ]
