"""Atomics piled on one address: one L2 slice far busier than the average bounds the launch.

Hardware reason: global atomics are executed in the L2 slice that owns the address; atomics on one address
serialize in that slice's atomic unit while the other slices (and the SMs waiting for them) idle, so the L2
average stays low while one slice is saturated. References: PMPP (4th ed.) ch. 9 (atomic operations and
privatization); Nsight Compute Kernel Profiling Guide, "Memory Workload Analysis" (lts__ per-slice metrics).
"""

from __future__ import annotations

from tracekit import counters as c
from tracekit.analysis.rules.base import Finding, RuleContext, values
from tracekit.counters import metric_row

RULE_ID = "atomics-contention"
INPUTS = ("metrics",)
FLAGS: tuple[str, ...] = ("atomic-contention",)  # the flags it can raise
# One L2 slice far busier than the average (atomics on one address serialize in one slice's atomic unit).
HOT_SLICE_PCT = 60.0
HOT_SLICE_FACTOR = 4.0


def apply(ctx: RuleContext) -> list[Finding]:
    m = ctx.metrics
    atomics = metric_row(m, *c.GLOBAL_ATOMIC_INSTRUCTIONS)
    hot, mean = metric_row(m, *c.L2_THROUGHPUT_MAX_PCT), metric_row(m, *c.L2_THROUGHPUT_PCT)
    if not atomics or atomics[1] <= 0 or not hot or not mean or hot[1] < HOT_SLICE_PCT:
        return []
    if mean[1] > 0 and hot[1] / mean[1] < HOT_SLICE_FACTOR:
        return []
    atomic_unit = metric_row(m, *c.L2_ATOMIC_INPUT_MAX_PCT)
    return [
        Finding(
            "atomics-contention.hot-slice",
            RULE_ID,
            "atomics-contention.hot-slice",
            values(
                ("hot_pct", hot[1], "%"),
                ("hot_metric", hot[0]),
                ("mean_pct", mean[1], "%"),
                ("mean_metric", mean[0]),
                ("atomic_unit_pct", atomic_unit[1] if atomic_unit else None, "%"),
                ("atomic_unit_metric", atomic_unit[0] if atomic_unit else None),
                ("atomics", atomics[1], "count"),
                ("atomics_metric", atomics[0]),
            ),
            metrics=tuple(row[0] for row in (hot, mean, atomic_unit, atomics) if row),
            flag="atomic-contention",
            limiter="l2",
            advice=("spread-atomics",),
        )
    ]
