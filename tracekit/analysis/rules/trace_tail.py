"""The warp trace's tail: the share of the launch that runs after the first SM ran out of work for good.

Hardware reason: once an SM has no block left to take, it idles until the launch ends; the longer that stretch,
the more SM time the launch wastes on fewer SMs. Measured from the trace (`tracekit.analysis.tail`). Reference:
Volkov 2016, ch. 3 (the tail effect); Nsight Compute "Launch Statistics".
"""

from __future__ import annotations

from tracekit.analysis.rules.base import Finding, RuleContext, values

RULE_ID = "trace-tail"
INPUTS = ("trace",)
FLAGS: tuple[str, ...] = ()  # the flags it can raise
TAIL_LOSS_FRACTION = 0.2


def apply(ctx: RuleContext) -> list[Finding]:
    tail = ctx.trace.tail_fraction
    if tail is None or tail < TAIL_LOSS_FRACTION:
        return []
    return [Finding("trace-tail.tail", RULE_ID, "trace-tail.tail", values(("tail", tail, "fraction")))]
