"""DRAM or L2? Which memory level a busy L2 stands for.

Hardware reason: every DRAM access passes through L2, and L2 counts both the misses and the fills they cause, so on
a stream L2's utilization reads above DRAM's. With a low L2 read hit rate and DRAM near its peak, the bytes come
from DRAM and DRAM is the bound; with a high hit rate L2 serves the loads itself. References: Nsight Compute
Kernel Profiling Guide, "Memory Workload Analysis"; PMPP (Hwu, Kirk, El Hajj, 4th ed.) ch. 5 (memory hierarchy).
"""

from __future__ import annotations

import polars as pl

from tracekit import counters as c
from tracekit.analysis.rules.base import (
    GRADUAL_SATURATION_FRACTION_OF_ACHIEVABLE,
    GRADUAL_SATURATION_PCT,
    Finding,
    RuleContext,
    UnitUtilization,
    achievable,
    specific,
    unit,
    unit_values,
    values,
)
from tracekit.counters import metric_row

RULE_ID = "dram-vs-l2"
INPUTS = ("metrics", "units", "ceilings")
FLAGS: tuple[str, ...] = ()  # the flags it can raise
# L2 read hit rate below this: most L2 traffic is misses the DRAM must serve.
L2_MISS_STREAM_HIT_RATE_PCT = 50.0


def l2_read_hit_rate(m: pl.DataFrame) -> tuple[str, float] | None:
    return metric_row(m, *c.L2_READ_HIT_RATE_PCT) or metric_row(m, *c.L2_HIT_RATE_PCT)


def attribute(ctx: RuleContext, top: UnitUtilization) -> tuple[UnitUtilization, list[Finding]]:
    """The unit that bounds the launch when `top` does, with the findings that say why."""
    if top.limiter != "l2":
        return top, []
    m = ctx.metrics
    dram, hit = unit(ctx.units, "dram"), l2_read_hit_rate(m)
    measured = achievable(ctx, "dram") if dram is not None else None
    dram_busy = dram is not None and (
        dram.pct >= GRADUAL_SATURATION_PCT
        or (measured is not None and measured.of_achievable >= GRADUAL_SATURATION_FRACTION_OF_ACHIEVABLE)
    )
    if dram is None or hit is None or hit[1] >= L2_MISS_STREAM_HIT_RATE_PCT or not dram_busy:
        if hit is None:
            return top, []
        serves = Finding(
            "dram-vs-l2.l2-serves",
            RULE_ID,
            "dram-vs-l2.l2-serves",
            values(("hit_pct", hit[1], "%"), ("hit_metric", hit[0])),
            metrics=(hit[0],),
        )
        return top, [serves]
    moved = metric_row(m, *c.DRAM_BYTES)
    rate = metric_row(m, *c.DRAM_BYTES_PER_SECOND)
    found = Finding(
        "dram-vs-l2.dram-serves",
        RULE_ID,
        "dram-vs-l2.dram-serves",
        (
            *unit_values("l2", top),
            *values(("hit_pct", hit[1], "%"), ("hit_metric", hit[0])),
            *unit_values("dram", dram),
            *values(
                ("dram_bytes", moved[1] if moved else None, "B"),
                ("dram_bytes_metric", moved[0] if moved else None),
                ("dram_bytes_per_s", rate[1] if rate else None, "B/s"),
                ("dram_rate_metric", rate[0] if rate else None),
            ),
        ),
        metrics=tuple(name for name in (top.metric, hit[0], dram.metric, moved and moved[0], rate and rate[0]) if name),
    )
    return dram, [found]


def apply(ctx: RuleContext) -> list[Finding]:
    """The attribution of the busiest specific unit, when it is L2."""
    top = next(iter(specific(ctx.units)), None)
    return attribute(ctx, top)[1] if top is not None else []
