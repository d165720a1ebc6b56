"""Branch divergence: fewer than 90% of a warp's 32 threads active per executed instruction.

Hardware reason: a warp executes one instruction for all its threads; threads that took the other branch sit idle
(SIMT), so the active threads per instruction measure the lanes doing work. Branch efficiency alone misleads: a
kernel without branches reads 0% (0 of 0), and divergent branches may cost little. References: PMPP (4th ed.)
ch. 4 (control divergence); Nsight Compute's ThreadDivergence rule (`smsp__thread_inst_executed_per_inst_executed`).
"""

from __future__ import annotations

from tracekit import counters as c
from tracekit.analysis.rules.base import Finding, RuleContext, values
from tracekit.ceilings.devices import WARP_SIZE
from tracekit.counters import metric_row

RULE_ID = "divergence"
INPUTS = ("metrics",)
FLAGS: tuple[str, ...] = ("branch-divergence",)  # the flags it can raise
DIVERGENCE_THREADS_FRACTION = 0.9  # fewer than 90% of 32 threads active per instruction


def apply(ctx: RuleContext) -> list[Finding]:
    m = ctx.metrics
    threads, branch = metric_row(m, *c.THREADS_PER_INSTRUCTION), metric_row(m, *c.BRANCH_EFFICIENCY_PCT)
    branches = metric_row(m, *c.BRANCH_INSTRUCTIONS)
    threshold = DIVERGENCE_THREADS_FRACTION * WARP_SIZE
    if threads and threads[1] < threshold:
        return [
            Finding(
                "divergence.threads",
                RULE_ID,
                "divergence.threads",
                values(("threads", threads[1], "count"), ("warp_size", WARP_SIZE, "count"), ("metric", threads[0])),
                metrics=(threads[0],),
                flag="branch-divergence",
                advice=("reduce-divergence",),
            )
        ]
    if not branch or branch[1] >= 100 * DIVERGENCE_THREADS_FRACTION:
        return []
    efficiency = values(("efficiency_pct", branch[1], "%"), ("metric", branch[0]))
    # 0% branch efficiency is what a kernel without branches reads (0 of 0): count the branches first.
    if branches is not None and branches[1] <= 0:
        return [
            Finding(
                "divergence.no-branches",
                RULE_ID,
                "divergence.no-branches",
                (*efficiency, *values(("branches_metric", branches[0]))),
                metrics=(branch[0], branches[0]),
            )
        ]
    if branches is None and branch[1] <= 0:
        return [
            Finding(
                "divergence.no-branch-count", RULE_ID, "divergence.no-branch-count", efficiency, metrics=(branch[0],)
            )
        ]
    if threads is not None and threads[1] >= threshold:
        return [
            Finding(
                "divergence.cheap",
                RULE_ID,
                "divergence.cheap",
                (
                    *efficiency,
                    *values(
                        ("threads", threads[1], "count"),
                        ("warp_size", WARP_SIZE, "count"),
                        ("threads_metric", threads[0]),
                    ),
                ),
                metrics=(branch[0], threads[0]),
            )
        ]
    return [
        Finding(
            "divergence.branch-efficiency",
            RULE_ID,
            "divergence.branch-efficiency",
            efficiency,
            metrics=(branch[0],),
            flag="branch-divergence",
            advice=("reduce-divergence",),
        )
    ]
