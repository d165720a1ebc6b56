"""Fewer blocks than one wave of the GPU's block slots leave SMs without warps.

Hardware reason: a block runs on one SM, so a grid of fewer blocks than SMs (or than one wave of block slots) can
never fill the GPU, whatever each block does. Reference: PMPP (4th ed.) ch. 4 (block scheduling); Nsight Compute
"Launch Statistics" (waves per SM).
"""

from __future__ import annotations

from tracekit import counters as c
from tracekit.analysis.rules.base import Finding, RuleContext, values
from tracekit.counters import metric, metric_row

RULE_ID = "too-few-blocks"
INPUTS = ("metrics", "device")
FLAGS: tuple[str, ...] = ("too-few-blocks",)  # the flags it can raise


def waves(ctx: RuleContext) -> tuple[str, float] | None:
    """Nsight's waves per SM (metric id, value)."""
    return metric_row(ctx.metrics, *c.WAVES_PER_SM)


def few_blocks(ctx: RuleContext) -> bool:
    row = waves(ctx)
    grid = metric(ctx.metrics, *c.GRID_BLOCKS) or ctx.device.grid_blocks
    sms = metric(ctx.metrics, *c.SM_COUNT) or ctx.device.sm_count
    if row is not None:
        return row[1] < 1
    return bool(grid and sms and grid < sms)


def apply(ctx: RuleContext) -> list[Finding]:
    if not few_blocks(ctx):
        return []
    row = waves(ctx)
    grid = metric(ctx.metrics, *c.GRID_BLOCKS) or ctx.device.grid_blocks
    sms = metric(ctx.metrics, *c.SM_COUNT) or ctx.device.sm_count
    return [
        Finding(
            "too-few-blocks.few",
            RULE_ID,
            "too-few-blocks.few",
            values(
                ("grid_blocks", grid, "count"),
                ("waves", row[1] if row else None, "count"),
                ("waves_metric", row[0] if row else None),
                ("sms", int(sms or 0), "count"),
            ),
            metrics=(row[0],) if row else (),
            flag="too-few-blocks",
            advice=("launch-more-blocks",),
        )
    ]
