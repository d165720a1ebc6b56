"""Blocks arriving faster than the SMs can launch them bound the launch: throughput-bound by the block launch rate.

Hardware reason: an SM launches blocks at a limited rate. With a measured profile (issue 20) that rate is the
calibrated one for the launch's block size (`block_launch_per_s_per_sm`: ~12.2 M blocks/s per SM, ~82 ns per block,
for 64-thread blocks on the H100); without one, about 80 ns per block per SM (issue 11, measured on the team's H100:
the verdict set's small_blocks case ran 16384 64-thread blocks on 132 SMs in 12.45 us = 100 ns per block per SM,
ramp included). Short blocks launched at 70% of that rate or more wait on the block scheduler, not on a unit: the
calibrated rate is a plateau over a long grid, while a launch of ~12 us spends 1-2 us in its launch ramp and drain
(launch overhead ~0.8 us), so a launch-rate-bound grid that short reads ~80% of it. Reference: Volkov 2016, ch. 3
(a throughput limit need not be a functional unit); CUDA C++ Programming Guide, "Hardware Implementation" (blocks
are distributed to SMs as resources free up).
"""

from __future__ import annotations

from tracekit import counters as c
from tracekit.analysis.rules.base import (
    Finding,
    RuleContext,
    Value,
    achievable,
    achievable_values,
    nominal_note,
    values,
)
from tracekit.counters import metric, metric_row

RULE_ID = "block-launch-rate"
INPUTS = ("metrics", "trace", "device", "ceilings")
FLAGS: tuple[str, ...] = ("block-launch-rate",)  # the flags it can raise
BLOCK_LAUNCH_NS_PER_SM = 80.0
BLOCK_LAUNCH_RATE_FRACTION = 0.7


def rate(ctx: RuleContext) -> Finding | None:
    """Blocks launched per SM per ns as a share of the SM's block launch rate, as a finding without a flag (its
    `share` value); None when neither the counters nor the trace give blocks, SMs and a duration."""
    m = ctx.metrics
    ctas = next((row for name in c.CTAS_LAUNCHED if (row := metric_row(m, name)) and row[1] > 0), None)
    sms = metric(m, *c.SM_COUNT) or ctx.device.sm_count
    duration = metric_row(m, *c.DURATION_NS)
    if ctas and sms and duration and duration[1] > 0:
        blocks, span, source = ctas[1], duration[1], "counters"
        cited: tuple[str, ...] = (ctas[0], duration[0])
    elif ctx.device.grid_blocks and ctx.device.sm_count and ctx.trace.span_ns:
        blocks, span, source = float(ctx.device.grid_blocks), ctx.trace.span_ns, "trace"
        sms, cited = ctx.device.sm_count, ()
    else:
        return None
    per_block_ns = span * sms / blocks
    measured = achievable(ctx, "block-launch")
    launch_ns = 1e9 / measured.ceiling_value if measured is not None else BLOCK_LAUNCH_NS_PER_SM
    if measured is not None:
        basis: tuple[Value, ...] = achievable_values("ceiling", measured)
    elif ctx.ceilings is not None:
        basis = nominal_note(ctx) or values(("assumed_rate", True))  # a profile without a block launch rate
    else:
        basis = ()
    return Finding(
        "block-launch-rate.rate",
        RULE_ID,
        "block-launch-rate.rate",
        values(
            ("blocks", blocks, "count"),
            ("sms", int(sms), "count"),
            ("span_ns", span, "ns"),
            ("source", source),
            ("blocks_metric", cited[0] if cited else None),
            ("duration_metric", cited[1] if cited else None),
            ("per_block_ns", per_block_ns, "ns"),
            ("share", launch_ns / per_block_ns, "fraction"),
            ("launch_ns_per_sm", launch_ns, "ns"),
            ("threshold", BLOCK_LAUNCH_RATE_FRACTION, "fraction"),
        )
        + basis,
        metrics=cited,
    )


def bound(found: Finding) -> list[Finding]:
    """The rate as the launch's bound, when it is at BLOCK_LAUNCH_RATE_FRACTION or more."""
    share = found.get("share")
    if not isinstance(share, float) or share < BLOCK_LAUNCH_RATE_FRACTION:
        return []
    return [
        Finding(
            "block-launch-rate.bound",
            RULE_ID,
            "block-launch-rate.bound",
            found.values,
            metrics=found.metrics,
            flag="block-launch-rate",
            limiter="block-launch",
            advice=("fewer-larger-blocks",),
        )
    ]


def apply(ctx: RuleContext) -> list[Finding]:
    found = rate(ctx)
    return bound(found) if found is not None else []
