"""Local memory in use: register spills or local arrays.

Hardware reason: local memory is per-thread memory in DRAM (cached in L1/L2); the compiler puts there the
registers it cannot keep (spills) and arrays it cannot index in registers, so every access is a memory access
where a register read was meant. Reference: PMPP (4th ed.) ch. 5 (registers and local memory); CUDA C++ Best
Practices Guide, "Local Memory"; ptxas -v (spill stores / loads).
"""

from __future__ import annotations

from tracekit import counters as c
from tracekit.analysis.rules.base import Finding, RuleContext, Value
from tracekit.counters import metric_row

RULE_ID = "spills"
INPUTS = ("metrics",)
FLAGS: tuple[str, ...] = ("register-spills",)  # the flags it can raise
COUNTERS = (
    c.LOCAL_LOAD_INSTRUCTIONS,
    c.LOCAL_STORE_INSTRUCTIONS,
    c.LOCAL_LOAD_SECTORS,
    c.LOCAL_STORE_SECTORS,
    c.LOCAL_SPILL_REQUESTS,
)


def apply(ctx: RuleContext) -> list[Finding]:
    rows = [row for names in COUNTERS if (row := metric_row(ctx.metrics, *names))]
    used = [(name, value) for name, value in rows if value > 0]
    if not used:
        return []
    return [
        Finding(
            "spills.local-memory",
            RULE_ID,
            "spills.local-memory",
            tuple(Value(name, value, "count") for name, value in used),
            metrics=tuple(name for name, _ in used),
            flag="register-spills",
            advice=("avoid-local-memory",),
        )
    ]
